"""`pai2010`: the two-bone, one-muscle model of Pai 2010 against its closed form (seed §4.1).

Wang et al. 2022 §4.1 (Fig. 6) checks their framework against Pai 2010 ("Muscle mass in
musculoskeletal models", J. Biomech. 43): two uniform bones and one uniform muscle, all of the
same mass. The model, as the seed's author encoded it (notes §2.2; Pai's text is not
available): planar; bone 1 (length L1 = l L) pinned at the shoulder O; bone 2 (length L)
pinned at the elbow; both uniform slender rods; the muscle a uniform line mass from the fixed
pivot O to an insertion on bone 2 at d = r L from the elbow (biarticular). Angles phi from the
downward vertical, phi2 relative.

Closed form (Lagrange, derived here; with m1, m2, mm the masses; equals the notes' I1 + I2 + Im
in their units, checked in tests/inertia):
  T = 1/2 a w1^2 + 1/2 b w12^2 + c w1 w12 cos(phi2),  w12 = w1 + w2,
    a = m1 L1^2 / 3 + m2 L1^2 + mm L1^2 / 3,  b = m2 L^2 / 3 + mm d^2 / 3,
    c = m2 L1 L / 2 + mm L1 d / 3,
  M = [[a + b + 2c cos phi2, b + c cos phi2], [b + c cos phi2, b]],
  V = -g (k1 cos phi1 + k2 cos(phi1 + phi2)),  k1 = (m1/2 + m2 + mm/2) L1,  k2 = m2 L/2 + mm d/2,
  M phidd = -(phid2 dM/dphi2 phid - (0, 1/2 phid' dM/dphi2 phid)) - dV/dphi.
The muscle part alone is the uniform straight muscle's closed form (notes §2.4):
  M_mus = (mm/3)(Jo'Jo + Ji'Ji) + (mm/6)(Jo'Ji + Ji'Jo) with Jo = 0 here (O fixed).

The engine model: the MJCF built by `pai_mjcf` (hinges about -y so that phi > 0 swings the
bones towards +x), the muscle a straight spatial tendon O -> insertion with its mass in 2
Gauss-Legendre points (exact for a uniform straight muscle, `inertia.PointRule.GAUSS`).

Outputs (summary.json):
  max_abs_angle_error_rad: engine RK4 rollout (dt 1 ms, 1 s) vs the closed-form ODE integrated
    by scipy's DOP853 (rtol = atol = 1e-13), released from rest at phi = (pi/2, 0) with
    L = l L = 1 m, r = 0.1, unit masses (acceptance <= 1e-8);
  straight_muscle_max_rel_error: `inertia.muscle_mass_matrix` vs the closed-form M_mus over
    a grid of configurations (acceptance <= 1e-8);
  phi1_zero_time_s (with and without the muscle) and phi2 there, against the notes' §2.3
    values 0.682 / 0.724 s and -0.567 / -0.591 rad (3 digits; the seed's "0.3 s" uses unknown
    initial conditions and is not reproduced);
  midpoint_rule: relative error of M_mus with n midpoint points (-> 1/(4 n^2), notes §2.4);
  muscle_share_of_shoulder_inertia at phi2 = 0 (notes: ~15 %).
Figures: pai2010_angles.png (seed Fig. 6b: angles with the muscle, and with its mass lumped
equally onto the bones), pai2010_convergence.png (midpoint rule error vs n).
"""

from __future__ import annotations

import math
import pathlib
from typing import NamedTuple

import numpy as np

from myotwin.repro.output import prepare_output, pyplot, write_summary

GRAVITY = 9.81


class PaiParams(NamedTuple):
    """Bone 2 length L (m), bone-1/bone-2 length ratio l, insertion ratio r (d = r L), masses
    (kg) of bone 1, bone 2 and the muscle."""

    length_m: float = 1.0
    ratio_l: float = 1.0
    ratio_r: float = 0.1
    mass1_kg: float = 1.0
    mass2_kg: float = 1.0
    muscle_kg: float = 1.0


def pai_mjcf(p: PaiParams = PaiParams()) -> str:
    """MJCF of the two-bone model with the muscle as a straight tendon (no mass in the MJCF;
    give it with `with_muscle_mass`). Rods along -z, hinges about -y."""
    l1, l2, d = p.ratio_l * p.length_m, p.length_m, p.ratio_r * p.length_m

    def rod(m, ln):
        i = m * ln * ln / 12.0
        return f'mass="{m!r}" diaginertia="{i!r} {i!r} {1e-6 * i!r}"'

    return f"""<mujoco model="pai2010">
  <compiler angle="radian"/>
  <option gravity="0 0 {-GRAVITY!r}"/>
  <worldbody>
    <site name="origin" pos="0 0 0"/>
    <body name="bone1" pos="0 0 0">
      <joint name="shoulder" type="hinge" axis="0 -1 0"/>
      <inertial pos="0 0 {-l1 / 2!r}" {rod(p.mass1_kg, l1)}/>
      <body name="bone2" pos="0 0 {-l1!r}">
        <joint name="elbow" type="hinge" axis="0 -1 0"/>
        <inertial pos="0 0 {-l2 / 2!r}" {rod(p.mass2_kg, l2)}/>
        <site name="insertion" pos="0 0 {-d!r}"/>
      </body>
    </body>
  </worldbody>
  <tendon><spatial name="muscle"><site site="origin"/><site site="insertion"/></spatial></tendon>
</mujoco>"""


def _coefficients(p: PaiParams, with_muscle: bool = True):
    l1, l2, d = p.ratio_l * p.length_m, p.length_m, p.ratio_r * p.length_m
    mm = p.muscle_kg if with_muscle else 0.0
    a = p.mass1_kg * l1**2 / 3 + p.mass2_kg * l1**2 + mm * l1**2 / 3
    b = p.mass2_kg * l2**2 / 3 + mm * d**2 / 3
    c = p.mass2_kg * l1 * l2 / 2 + mm * l1 * d / 3
    k1 = (p.mass1_kg / 2 + p.mass2_kg + mm / 2) * l1
    k2 = p.mass2_kg * l2 / 2 + mm * d / 2
    return a, b, c, k1, k2


def closed_form_mass_matrix(p: PaiParams, phi2: float, with_muscle: bool = True) -> np.ndarray:
    """(2, 2) closed-form M(phi2) (kg m^2) of bones (and muscle)."""
    a, b, c, _, _ = _coefficients(p, with_muscle)
    cs = math.cos(phi2)
    return np.array([[a + b + 2 * c * cs, b + c * cs], [b + c * cs, b]])


def closed_form_muscle_matrix(p: PaiParams, phi2: float) -> np.ndarray:
    """(2, 2) the uniform muscle's part of M: (mm/3) J_ins' J_ins (origin fixed)."""
    return closed_form_mass_matrix(p, phi2, True) - closed_form_mass_matrix(p, phi2, False)


def closed_form_acceleration(p: PaiParams, phi, phid, with_muscle: bool = True) -> np.ndarray:
    """(2,) phidd of the closed-form equations of motion (module docstring)."""
    a, b, c, k1, k2 = _coefficients(p, with_muscle)
    phi1, phi2 = phi
    m = closed_form_mass_matrix(p, phi2, with_muscle)
    dm = -math.sin(phi2) * np.array([[2 * c, c], [c, 0.0]])
    phid = np.asarray(phid, dtype=np.float64)
    velocity = phid[1] * dm @ phid - np.array([0.0, 0.5 * phid @ dm @ phid])
    s12 = math.sin(phi1 + phi2)
    grav = GRAVITY * np.array([k1 * math.sin(phi1) + k2 * s12, k2 * s12])
    return np.linalg.solve(m, -velocity - grav)


def closed_form_energy(p: PaiParams, phi, phid, with_muscle: bool = True) -> float:
    """Kinetic plus potential energy (J) of the closed form (zero potential at the pivot)."""
    _, _, _, k1, k2 = _coefficients(p, with_muscle)
    m = closed_form_mass_matrix(p, phi[1], with_muscle)
    return 0.5 * phid @ m @ phid - GRAVITY * (k1 * math.cos(phi[0])
                                              + k2 * math.cos(phi[0] + phi[1]))


def closed_form_rollout(p: PaiParams, phi0, times, with_muscle: bool = True) -> np.ndarray:
    """(n, 2) angles at `times` from rest at phi0, DOP853 with rtol = atol = 1e-13."""
    from scipy.integrate import solve_ivp

    def rhs(_, y):
        return np.concatenate([y[2:], closed_form_acceleration(p, y[:2], y[2:], with_muscle)])

    sol = solve_ivp(rhs, (times[0], times[-1]), np.concatenate([phi0, [0.0, 0.0]]),
                    method="DOP853", t_eval=times, rtol=1e-13, atol=1e-13)
    return sol.y[:2].T


def engine_model(p: PaiParams, n_points: int = 2, rule: str = "gauss"):
    """The engine Model of `pai_mjcf` with the muscle mass in n_points (default: 2 Gauss
    points, exact for the uniform straight muscle)."""
    import mujoco

    from myotwin import engine, inertia

    model = engine.compile_model(mujoco.MjModel.from_xml_string(pai_mjcf(p)))
    return inertia.with_muscle_mass(model, "muscle", p.muscle_kg, n_points, rule=rule)


def _first_zero(t, phi1):
    k = int(np.argmax(phi1 <= 0.0))
    if phi1[k] > 0.0 or k == 0:
        return float("nan"), k
    frac = phi1[k - 1] / (phi1[k - 1] - phi1[k])
    return float(t[k - 1] + frac * (t[k] - t[k - 1])), k


def run(out_dir: pathlib.Path, quick: bool = False) -> dict:
    """Closed-form checks of the Pai 2010 model; writes summary.json and two figures."""
    import jax

    out_dir = prepare_output(out_dir)
    import dataclasses

    import jax.numpy as jnp

    from myotwin import engine, inertia

    p = PaiParams()
    model = engine_model(p)
    duration, dt = (0.8, 1e-3) if quick else (1.0, 1e-3)
    phi0 = np.array([math.pi / 2, 0.0])
    q, _, t = engine.simulate(model, jnp.asarray(phi0), jnp.zeros(2), jnp.zeros(0), duration,
                              dt, "rk4")
    q, t = np.asarray(q), np.asarray(t)
    ref = closed_form_rollout(p, phi0, t)
    angle_err = float(np.max(np.abs(q - ref)))
    bones = dataclasses.replace(model, muscle_mass=None)
    q_bones = np.asarray(engine.simulate(bones, jnp.asarray(phi0), jnp.zeros(2), jnp.zeros(0),
                                         duration, dt, "rk4")[0])
    ref_bones = closed_form_rollout(p, phi0, t, with_muscle=False)
    angle_err_bones = float(np.max(np.abs(q_bones - ref_bones)))

    # the straight muscle's mass matrix over a grid of configurations
    mus = jax.jit(inertia.muscle_mass_matrix)
    rng = np.random.default_rng(0)
    grid = [(rng.uniform(-np.pi, np.pi), phi2) for phi2 in np.linspace(-np.pi, np.pi, 25)]
    rel = [np.max(np.abs(np.asarray(mus(model, jnp.array(c))) - closed_form_muscle_matrix(p, c[1])))
           / np.max(np.abs(closed_form_muscle_matrix(p, c[1]))) for c in grid]
    # midpoint-rule convergence (notes §2.4): error -> 1/(4 n^2) of the muscle's diagonal
    ns = [1, 2, 4, 8, 16, 32] if quick else [1, 2, 4, 8, 16, 32, 64, 128]
    conv = []
    for n in ns:
        mid = engine_model(p, n, "midpoint")
        m_mid = np.asarray(jax.jit(inertia.muscle_mass_matrix)(mid, jnp.array([0.3, 0.7])))
        exact = closed_form_muscle_matrix(p, 0.7)
        conv.append(float(np.max(np.abs(m_mid - exact)) / np.max(np.abs(exact))))

    # times at which phi1 first reaches 0 (notes §2.3: 0.682 s with, 0.724 s without muscle)
    t_fine = np.linspace(0.0, 1.0, 100001)
    zeros = {}
    for key, with_m in (("with_muscle", True), ("without_muscle", False)):
        phis = closed_form_rollout(p, phi0, t_fine, with_m)
        tz, k = _first_zero(t_fine, phis[:, 0])
        zeros[key] = {"phi1_zero_time_s": tz, "phi2_at_that_time_rad": float(phis[k, 1])}
    share = closed_form_muscle_matrix(p, 0.0)[0, 0] / closed_form_mass_matrix(p, 0.0, False)[0, 0]

    summary = {
        "max_abs_angle_error_rad": angle_err,
        "max_abs_angle_error_rad_bones_only": angle_err_bones,
        "straight_muscle_max_rel_error": float(np.max(rel)),
        "acceptance": {"closed_forms_le_1e-8": bool(max(angle_err, float(np.max(rel))) <= 1e-8)},
        "rollout": {"duration_s": duration, "dt_s": dt, "integrator": "rk4",
                    "phi0_rad": phi0.tolist(), "reference": "scipy DOP853 rtol=atol=1e-13"},
        "phi1_first_zero": zeros,
        "notes_reference_phi1_zero_time_s": {"with_muscle": 0.682, "without_muscle": 0.724},
        "midpoint_rule": {"n_points": ns, "max_rel_error": conv},
        "muscle_share_of_shoulder_inertia_at_phi2_0": float(share),
        "params": p._asdict(),
    }
    _plot(out_dir, t, q, q_bones, ns, conv)
    write_summary(out_dir, summary)
    return summary


def _plot(out_dir, t, q, q_bones, ns, conv) -> None:
    plt = pyplot()

    fig, ax = plt.subplots(figsize=(6.5, 4))
    for j, c in enumerate(("C0", "C1")):
        ax.plot(t, q[:, j], color=c, label=f"phi{j + 1}, muscle with mass")
        ax.plot(t, q_bones[:, j], color=c, ls=":", label=f"phi{j + 1}, muscle mass lumped "
                "equally onto the bones (= no muscle: equal masses)")
    ax.axhline(0.0, color="0.6", lw=0.8)
    ax.set(xlabel="t (s)", ylabel="angle (rad)", title="Pai 2010 two bones, one muscle "
           "(seed Fig. 6b), engine RK4")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_dir / "pai2010_angles.png", dpi=120)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(5, 4))
    ns = np.asarray(ns, dtype=float)
    ax.loglog(ns, conv, "o-", label="midpoint points: max rel. error of M_mus")
    ax.loglog(ns, conv[0] * ns[0] ** 2 / ns**2, "k--", lw=0.8, label="slope -2")
    ax.set(xlabel="mass points n", ylabel="relative error", title="uniform straight muscle")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out_dir / "pai2010_convergence.png", dpi=120)
    plt.close(fig)
