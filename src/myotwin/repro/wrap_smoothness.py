"""`wrap-smoothness`: seed Fig. 4 (Wang et al. 2022 §3.3) -- the energy of a double pendulum
whose inertial muscle wraps on and off a cylinder, with the mass points placed by the
wrapping library (Jacobian jumps at wrap on/off) and by the wrap network (smooth).

Scene (SI; the seed gives no numbers: "the masses of the proximal bone, the distal bone, and
the muscle are set to be equal", §4.2): shoulder hinge at the world origin and elbow hinge,
both about world y, gravity -z; two uniform rods of length 0.3 m and mass 1 kg hanging along
-z at q = 0. A cylinder of radius 3 cm at the elbow, fixed to the upper arm, axis along y.
The muscle (1 kg, 20 equal mass points at the midpoints alpha_k = (k + 1/2)/20) runs from an
origin fixed in the world at (4 cm, 0, 0), next to the shoulder (the seed's body A), over the
cylinder on its +x side (side site direction +x of the upper arm, the seed's body B), to an
insertion on the forearm (C) at (4 cm, 0, -15 cm) from the elbow. Flexing the elbow (q2 >
0.08 rad at q1 = 0) wraps the muscle on the cylinder. Released from rest at q = (0.5, 0.6)
rad, the pendulum swings and the muscle wraps on and off every half swing. No damping, no
muscle force: gravity on the bones and the mass points only, so the energy is conserved.

Dynamics: the seed's Eq. 7 for this one muscle, written here (the engine's muscle-mass terms
are in myotwin.inertia.dynamics; this module keeps its own few lines so that the figure does
not depend on which position model a Model carries):
    M_total = M(q) + sum_k m_k J_k^T J_k,    J_k = d x_k / dq  (jax.jacfwd),
    f_total = -c(q, qd) + sum_k J_k^T m_k (g - Jdot_k qd)   (Jdot_k qd: nested jvp, the QVV),
    E = 1/2 qd^T M_total qd + V_bones(q) - sum_k m_k g . x_k(q),
with M, c, V_bones from the engine. x_k(q): the origin, the insertion and the cylinder frame
from the engine's kinematics; in the surface frame S (wrap_network.surface_rotation) the point
comes from `wrap_network.library_mass_points` (MuJoCo-exact wrap, differentiated exactly,
piecewise) or `wrap_network.network_mass_point` (the shipped network). RK4 at dt = 1 ms.

Energy jump: max over steps of |E_{n+1} - E_n|. Within a wrap state the library's dynamics
conserve E to RK4 accuracy (~1e-12 J per step here); at wrap on/off its Jacobian, hence
M_total and the kinetic energy, jump while qd is continuous (seed Fig. 4b). The network's x_k
is C-infinity, so E is conserved to integrator accuracy throughout (Fig. 4c). The full run
also repeats both at dt = 0.5 ms: the library's jumps stay, the network's shrink.

Writes summary.json ({"max_energy_jump_library", "max_energy_jump_network", ...}) and
wrap_smoothness.png (energies; x of five mass points and their derivatives vs the elbow
angle near wrap onset, seed Fig. 4b-e).
"""

from __future__ import annotations

import pathlib
import time
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.repro.output import prepare_output, pyplot, write_summary
from myotwin.scalars import as_real

#: Scene (see the module docstring), SI.
LINK_LENGTH_M = 0.3
LINK_MASS_KG = 1.0
MUSCLE_MASS_KG = 1.0
N_POINTS = 20
RADIUS_M = 0.03
ORIGIN_WORLD_M = (0.04, 0.0, 0.0)
INSERTION_FOREARM_M = (0.04, 0.0, -0.15)
Q0_RAD = (0.5, 0.6)
DT_S = 1e-3
QUICK = dict(duration_s=2.0, refine=False)
FULL = dict(duration_s=10.0, refine=True)
#: Five mass points plotted in the zoom (seed Fig. 4d-e shows five).
PLOT_POINTS = (2, 6, 10, 14, 18)


class Pendulum(NamedTuple):
    """The skeleton (`engine.Model`) and the muscle geometry: cylinder centre (3,) in the
    upper arm's frame, rotation S -> upper arm (3, 3), mass-point fractions and masses (n,)."""

    model: object
    center_upper: jax.Array
    rot_s_upper: jax.Array
    alphas: jax.Array
    masses: jax.Array


def build_pendulum() -> Pendulum:
    """The double pendulum of the module docstring."""
    from myotwin import engine
    from myotwin.inertia.wrap_network import surface_rotation

    ell, m = LINK_LENGTH_M, LINK_MASS_KG
    rod = (m * ell ** 2 / 12.0, m * ell ** 2 / 12.0, 1e-4)   # about x, y; small about the axis
    b = engine.ModelBuilder("wrap_pendulum", contact=False)
    b.add_body("upper", pos=(0, 0, 0), mass=m, com=(0, 0, -ell / 2), inertia=rod)
    b.add_joint("upper", "hinge", name="shoulder", axis=(0, 1, 0))
    b.add_body("fore", "upper", pos=(0, 0, -ell), mass=m, com=(0, 0, -ell / 2), inertia=rod)
    b.add_joint("fore", "hinge", name="elbow", axis=(0, 1, 0))
    center = np.array([0.0, 0.0, -ell])
    rot = surface_rotation(axis=(0, 1, 0), side_direction=(1, 0, 0),
                           origin_direction=np.asarray(ORIGIN_WORLD_M) - center)
    alphas = (np.arange(N_POINTS) + 0.5) / N_POINTS
    return Pendulum(b.build(), jnp.asarray(center), jnp.asarray(rot), jnp.asarray(alphas),
                    jnp.full(N_POINTS, MUSCLE_MASS_KG / N_POINTS))


def pendulum_mjcf(p: Pendulum) -> str:
    """The same scene as MJCF with the muscle as a spatial tendon (origin site in the world,
    the cylinder geom with sidesite, insertion site), the cylinder geom's frame oriented as the
    network's surface frame S (so `inertia.with_muscle_mass(..., position_model="network")`,
    which uses the geom frame as S, sees this module's S). For the viewer and the cross-check
    against the engine's muscle-mass dynamics (tests/inertia/test_wrap_network.py)."""
    import mujoco

    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, np.asarray(p.rot_s_upper, dtype=np.float64).reshape(-1))
    ell, m = LINK_LENGTH_M, LINK_MASS_KG
    inertia = f"{m * ell ** 2 / 12!r} {m * ell ** 2 / 12!r} 0.0001"
    f = " ".join
    center = np.asarray(p.center_upper)
    side = center + np.asarray(p.rot_s_upper)[:, 1] * 2.0 * RADIUS_M
    return f"""<mujoco model="wrap_pendulum">
  <compiler angle="radian"/>
  <option gravity="0 0 -9.81"><flag contact="disable"/></option>
  <worldbody>
    <site name="origin" pos="{f(map(repr, ORIGIN_WORLD_M))}"/>
    <body name="upper">
      <inertial pos="0 0 {-ell / 2!r}" mass="{m!r}" diaginertia="{inertia}"/>
      <joint name="shoulder" type="hinge" axis="0 1 0"/>
      <geom name="cylinder" type="cylinder" size="{RADIUS_M!r} 0.05"
            pos="{f(map(repr, center.tolist()))}" quat="{f(map(repr, quat.tolist()))}"/>
      <site name="side" pos="{f(map(repr, side.tolist()))}"/>
      <body name="fore" pos="0 0 {-ell!r}">
        <inertial pos="0 0 {-ell / 2!r}" mass="{m!r}" diaginertia="{inertia}"/>
        <joint name="elbow" type="hinge" axis="0 1 0"/>
        <site name="insertion" pos="{f(map(repr, INSERTION_FOREARM_M))}"/>
      </body>
    </body>
  </worldbody>
  <tendon>
    <spatial name="muscle">
      <site site="origin"/><geom geom="cylinder" sidesite="side"/><site site="insertion"/>
    </spatial>
  </tendon>
</mujoco>
"""


def surface_ends(p: Pendulum, q):
    """(x_ori_S, x_ins_S (3,), centre (3,), rotation S -> world (3, 3)) at q (2,)."""
    from myotwin import engine

    kin = engine.kinematics(p.model, q)
    rot_u, pos_u = kin.body_rot_world[1], kin.body_pos_world[1]
    rot_f, pos_f = kin.body_rot_world[2], kin.body_pos_world[2]
    center = pos_u + rot_u @ p.center_upper
    rot = rot_u @ p.rot_s_upper
    ins = pos_f + rot_f @ jnp.asarray(INSERTION_FOREARM_M)
    return rot.T @ (jnp.asarray(ORIGIN_WORLD_M) - center), rot.T @ (ins - center), center, rot


def position_model(p: Pendulum, variant: str, params=None) -> Callable:
    """q (2,) -> mass-point world positions (n, 3) by the library or the network (variant
    "library" or "network"; params: a `wrap_network.WrapNetwork`, checked)."""
    from myotwin.inertia import wrap_network as wn

    if variant not in ("library", "network"):
        raise ValueError(f"wrap_smoothness: variant must be 'library' or 'network', got "
                         f"{variant!r}")
    if variant == "network":
        if not isinstance(params, wn.WrapNetwork):
            raise TypeError(f"wrap_smoothness: the network variant needs params, a "
                            f"wrap_network.WrapNetwork, got {type(params).__name__}")
        wn.check_params(params, "wrap_smoothness: params")

    def positions(q):
        x_ori, x_ins, center, rot = surface_ends(p, q)
        if variant == "library":
            xs = wn.library_mass_points(x_ori, x_ins, p.alphas, RADIUS_M).x_alpha
        else:
            xs = wn.network_mass_point(params, x_ori, x_ins, p.alphas, RADIUS_M)
        return center + xs @ rot.T

    return positions


def equations(p: Pendulum, positions: Callable):
    """(acceleration(q, qd) -> qdd, energy(q, qd) -> E) of seed Eq. 7 for this muscle."""
    from myotwin import engine

    g = p.model.gravity

    def terms(q, qd):
        jac = jax.jacfwd(positions)(q)                                   # (n, 3, 2)
        mass = engine.mass_matrix(p.model, q) + jnp.einsum("k,kia,kib->ab", p.masses, jac, jac)
        jdot_qd = jax.jvp(lambda q_: jax.jvp(positions, (q_,), (qd,))[1], (q,), (qd,))[1]
        force = -engine.bias_forces(p.model, q, qd) + jnp.einsum(
            "kia,ki->a", jac, p.masses[:, None] * (g[None, :] - jdot_qd))
        return mass, force

    def acceleration(q, qd):
        mass, force = terms(q, qd)
        return jnp.linalg.solve(mass, force)

    def energy(q, qd):
        jac = jax.jacfwd(positions)(q)
        mass = engine.mass_matrix(p.model, q) + jnp.einsum("k,kia,kib->ab", p.masses, jac, jac)
        weight = -jnp.sum(p.masses[:, None] * positions(q) * g[None, :])
        return 0.5 * qd @ mass @ qd + engine.potential_energy(p.model, q) + weight

    return acceleration, energy


def rk4_rollout(acceleration: Callable, q0, qd0, dt: float, n_steps: int):
    """(q (n+1, 2), qd (n+1, 2)) by classical RK4; the four stages run as a scan over the
    Butcher coefficients so that the (large) acceleration graph is compiled once."""
    from myotwin.engine.arguments import check_step_count

    check_step_count("wrap_smoothness.rk4_rollout", n_steps)
    a_coef = jnp.array([0.0, 0.5, 0.5, 1.0])
    b_coef = jnp.array([1.0, 2.0, 2.0, 1.0]) / 6.0

    def step(y, _):
        def stage(carry, coef):
            k_prev, total = carry
            ys = y + coef[0] * dt * k_prev
            n = ys.shape[0] // 2
            k = jnp.concatenate([ys[n:], acceleration(ys[:n], ys[n:])])
            return (k, total + coef[1] * k), None

        (_, total), _ = jax.lax.scan(stage, (jnp.zeros_like(y), jnp.zeros_like(y)),
                                     jnp.stack([a_coef, b_coef], axis=1))
        y1 = y + dt * total
        return y1, y1

    y0 = jnp.concatenate([jnp.asarray(q0), jnp.asarray(qd0)])
    _, ys = jax.lax.scan(step, y0, None, length=n_steps)
    ys = jnp.concatenate([y0[None], ys])
    return ys[:, :2], ys[:, 2:]


def simulate(p: Pendulum, variant: str, params, duration_s: float, dt: float) -> dict:
    """Rollout of one variant: time, q, qd, energy, wrap state along the trajectory."""
    from myotwin.inertia import wrap_network as wn

    for name, v in (("duration_s", duration_s), ("dt", dt)):
        number = as_real(v)
        if number is None or not (np.isfinite(number) and number > 0.0):
            raise ValueError(f"wrap_smoothness.simulate: {name} must be a finite number > 0 "
                             f"(s), got {v!r}")
    positions = position_model(p, variant, params)
    acceleration, energy = equations(p, positions)
    n_steps = int(round(duration_s / dt))
    t0 = time.perf_counter()
    q, qd = jax.jit(rk4_rollout, static_argnums=(0, 3, 4))(
        acceleration, jnp.asarray(Q0_RAD), jnp.zeros(2), dt, n_steps)
    e = jax.jit(jax.vmap(energy))(q, qd)

    def state(q_):
        x_ori, x_ins, _, _ = surface_ends(p, q_)
        pp = wn.library_mass_points(x_ori, x_ins, p.alphas, RADIUS_M)
        return x_ori, x_ins, pp.wrapped, pp.wrap_length / pp.total_length

    x_ori, x_ins, wrapped, ratio = jax.jit(jax.vmap(state))(q)
    e = np.asarray(e)
    return {"t": np.arange(n_steps + 1) * dt, "q": np.asarray(q), "qd": np.asarray(qd), "E": e,
            "wrapped": np.asarray(wrapped), "wrap_ratio": np.asarray(ratio),
            "in_domain": wn.in_training_domain(np.asarray(x_ori), np.asarray(x_ins),
                                               np.full(n_steps + 1, RADIUS_M)),
            "wall_s": time.perf_counter() - t0}


def jump_stats(run: dict) -> dict:
    """Largest step-to-step energy change, overall, at wrap switches and elsewhere (J)."""
    d_e = np.abs(np.diff(run["E"]))
    switch = run["wrapped"][1:] != run["wrapped"][:-1]
    return {"max_energy_jump_J": float(d_e.max()),
            "max_jump_at_wrap_switch_J": float(d_e[switch].max()) if switch.any() else 0.0,
            "max_jump_elsewhere_J": float(d_e[~switch].max()) if (~switch).any() else 0.0,
            "n_wrap_switches": int(switch.sum()),
            "energy_drift_J": float(run["E"][-1] - run["E"][0]),
            "initial_energy_J": float(run["E"][0])}


def zoom(p: Pendulum, params, n: int = 401) -> dict:
    """x (world) of the plotted mass points and dx/dq2 vs the elbow angle at q1 = 0, around
    wrap onset, by the library and the network (seed Fig. 4d-e)."""
    q2 = np.linspace(0.0, 0.16, n)
    out = {"q2": q2}
    for variant in ("library", "network"):
        pos = position_model(p, variant, params)

        def xz(q2_):
            q = jnp.stack([0.0, q2_])
            return pos(q)[:, 0], jax.jacfwd(lambda s: pos(jnp.stack([0.0, s]))[:, 0])(q2_)

        x, dx = jax.jit(jax.vmap(xz))(jnp.asarray(q2))
        out[variant] = (np.asarray(x), np.asarray(dx))
    return out


def _plot(out_dir: pathlib.Path, runs: dict, z: dict) -> None:
    plt = pyplot()

    fig, ax = plt.subplots(2, 2, figsize=(12, 8))
    for col, variant in enumerate(("library", "network")):
        r = runs[variant]
        a = ax[0, col]
        a.plot(r["t"], r["E"] - r["E"][0], color="C1", label="total E - E(0)")
        sw = np.flatnonzero(r["wrapped"][1:] != r["wrapped"][:-1])
        for i in sw:
            a.axvline(r["t"][i + 1], color="0.8", lw=0.6, zorder=0)
        a.set(xlabel="t (s)", ylabel="energy change (J)",
              title=f"{variant}: total energy (grey: wrap on/off)")
        a.grid(alpha=0.3)
    for i, k in enumerate(PLOT_POINTS):
        c = f"C{i}"
        ax[1, 0].plot(z["q2"], z["library"][0][:, k] * 1e3, color=c, ls="-",
                      label=f"alpha = {(k + 0.5) / N_POINTS:.3f}")
        ax[1, 0].plot(z["q2"], z["network"][0][:, k] * 1e3, color=c, ls=":")
        ax[1, 1].plot(z["q2"], z["library"][1][:, k], color=c, ls="-")
        ax[1, 1].plot(z["q2"], z["network"][1][:, k], color=c, ls=":")
    ax[1, 0].set(xlabel="elbow angle q2 (rad), q1 = 0", ylabel="x of mass point (mm)",
                 title="positions: library (solid), network (dotted)")
    ax[1, 0].legend(fontsize=7)
    ax[1, 1].set(xlabel="elbow angle q2 (rad), q1 = 0", ylabel="dx / dq2 (m/rad)",
                 title="Jacobians: library jumps at wrap onset, network smooth")
    for a in ax[1]:
        a.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out_dir / "wrap_smoothness.png", dpi=120)
    plt.close(fig)


def run(out_dir: pathlib.Path, quick: bool = False) -> dict:
    """Both rollouts (and the dt study when not quick); writes summary.json and the figure."""
    out_dir = prepare_output(out_dir)
    from myotwin.inertia import wrap_network as wn

    cfg = QUICK if quick else FULL
    p = build_pendulum()
    params = wn.load_params()
    runs = {v: simulate(p, v, params, cfg["duration_s"], DT_S) for v in ("library", "network")}
    stats = {v: jump_stats(r) for v, r in runs.items()}
    net = runs["network"]
    summary = {
        "max_energy_jump_library": stats["library"]["max_energy_jump_J"],
        "max_energy_jump_network": stats["network"]["max_energy_jump_J"],
        "jump_ratio_library_over_network": stats["library"]["max_energy_jump_J"]
        / max(stats["network"]["max_energy_jump_J"], 1e-300),
        "library": stats["library"],
        "network": stats["network"],
        "network_trajectory_in_training_domain": bool(net["in_domain"].all()),
        "q2_range_rad": {v: [float(r["q"][:, 1].min()), float(r["q"][:, 1].max())]
                         for v, r in runs.items()},
        "wall_s": {v: r["wall_s"] for v, r in runs.items()},
        "setup": {"duration_s": cfg["duration_s"], "dt_s": DT_S, "integrator": "rk4",
                  "link_length_m": LINK_LENGTH_M, "link_mass_kg": LINK_MASS_KG,
                  "muscle_mass_kg": MUSCLE_MASS_KG, "n_points": N_POINTS,
                  "radius_m": RADIUS_M, "q0_rad": Q0_RAD, "energy_unit": "J"},
        "quick": bool(quick),
    }
    positions_net = jax.jit(jax.vmap(position_model(p, "network", params)))
    positions_lib = jax.jit(jax.vmap(position_model(p, "library")))
    dev = np.linalg.norm(np.asarray(positions_net(net["q"])) - np.asarray(positions_lib(net["q"])),
                         axis=-1)
    summary["network_vs_library_position_m"] = {"max": float(dev.max()),
                                                "rms": float(np.sqrt(np.mean(dev ** 2)))}
    if cfg["refine"]:
        fine = {v: jump_stats(simulate(p, v, params, cfg["duration_s"], DT_S / 2))
                for v in ("library", "network")}
        summary["dt_half"] = {"dt_s": DT_S / 2, **{v: s for v, s in fine.items()}}
    _plot(out_dir, runs, zoom(p, params))
    write_summary(out_dir, summary)
    return summary
