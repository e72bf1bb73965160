"""`energy-qvv`: energy of double pendulums with an inertial muscle, with and without the
quadratic velocity vector of the muscle mass points (Wang et al. 2022 §4.3, Fig. 8).

Two planar double pendulums (two uniform 0.4 m, 1 kg bones on hinges; seed §4.2: "the masses
of the proximal bone, the distal bone, and the muscle are set to be equal"), each with one
1 kg muscle:
  type2: a via-point path (Type II, the seed's EOL construction) from the shoulder pivot
         through a via point on bone 1 to an insertion on bone 2, 10 uniform mass points;
  type3: a cylinder wrap (Type III, library positions) around a cylinder at the elbow on
         bone 1, 20 uniform mass points; the end points lie on one side of the cylinder and the
         side site on the other, so MuJoCo forces the path around the cylinder for elbow angles
         within about +-0.9 rad: the wrap stays on for the whole run (checked), because with
         library positions the Jacobian jumps when the wrap switches (seed Fig. 4; the network
         variant is `wrap-smoothness`).
Released from rest at q = (0.8, 0) rad, no damping, integrated with RK4 (dt 1 ms) for 10 s
(quick: 2 s), once with Eq. 7 complete and once with the points' QVV -M_a Jdot qd dropped
(`inertia.without_qvv`; the bones keep theirs, as in the seed's ablation). The energy is the
system's true T + V (engine energies, muscle points included) in both runs.

Summary: {"type2": {"with_qvv_rel_drift", "without_qvv_rel_drift", ...}, "type3": {...}} with
rel_drift = max_t |E(t) - E(0)| / (E(0) - E_rest) (E_rest: the hanging rest state), plus
checks that the run is what it claims (type2: no mass point crosses the via point, whose alpha
moves with the elbow; type3: the wrap is active at every step). Acceptance (issue 4): with
QVV <= 1e-4, without clearly larger. Figure energy_qvv.png (seed Fig. 8: kinetic, potential and
total energy, with and without QVV, both muscle types).
"""

from __future__ import annotations

import pathlib

import numpy as np

from myotwin.repro.output import prepare_output, pyplot, write_summary

BONE_LENGTH_M = 0.4
BONE_MASS_KG = 1.0
MUSCLE_MASS_KG = 1.0
Q0 = (0.8, 0.0)
N_POINTS = {"type2": 10, "type3": 20}


def _rod(m: float, ln: float) -> str:
    i = m * ln * ln / 12.0
    return f'mass="{m!r}" diaginertia="{i!r} {i!r} {1e-6 * i!r}"'


def double_pendulum_mjcf(muscles=("type2",)) -> str:
    """MJCF of the double pendulum with the muscles named in `muscles` ("type1": straight
    shoulder -> bone 2; "type2": via point; "type3": elbow cylinder wrap). Hinges about -y,
    bones along -z; no mass on the muscles (give it with `with_muscle_mass`)."""
    ln = BONE_LENGTH_M
    tendons = {
        "type1": '<spatial name="type1"><site site="origin"/><site site="insertion"/></spatial>',
        "type2": ('<spatial name="type2"><site site="origin"/><site site="via"/>'
                  '<site site="insertion"/></spatial>'),
        "type3": ('<spatial name="type3"><site site="cyl_origin"/><geom geom="elbow_cyl" '
                  'sidesite="cyl_side"/><site site="cyl_insertion"/></spatial>'),
    }
    return f"""<mujoco model="double_pendulum_{'_'.join(muscles)}">
  <compiler angle="radian"/>
  <option gravity="0 0 -9.81"/>
  <worldbody>
    <site name="origin" pos="0 0 0"/>
    <body name="bone1" pos="0 0 0">
      <joint name="shoulder" type="hinge" axis="0 -1 0"/>
      <inertial pos="0 0 {-ln / 2!r}" {_rod(BONE_MASS_KG, ln)}/>
      <site name="via" pos="0.03 0 -0.3"/>
      <site name="cyl_origin" pos="-0.05 0 {-ln + 0.2!r}"/>
      <site name="cyl_side" pos="0.1 0 {-ln!r}"/>
      <geom name="elbow_cyl" type="cylinder" pos="0 0 {-ln!r}"
            quat="0.70710678118654757 -0.70710678118654757 0 0" size="0.03 0.05"
            contype="0" conaffinity="0"/>
      <body name="bone2" pos="0 0 {-ln!r}">
        <joint name="elbow" type="hinge" axis="0 -1 0"/>
        <inertial pos="0 0 {-ln / 2!r}" {_rod(BONE_MASS_KG, ln)}/>
        <site name="insertion" pos="0.03 0 -0.2"/>
        <site name="cyl_insertion" pos="-0.13 0 -0.15"/>
      </body>
    </body>
  </worldbody>
  <tendon>{''.join(tendons[m] for m in muscles)}</tendon>
</mujoco>"""


def inertial_pendulum(kind: str):
    """Engine Model of the double pendulum with the 1 kg muscle `kind` ("type2"/"type3")."""
    import mujoco

    from myotwin import engine, inertia

    model = engine.compile_model(mujoco.MjModel.from_xml_string(double_pendulum_mjcf((kind,))))
    return inertia.with_muscle_mass(model, kind, MUSCLE_MASS_KG, N_POINTS[kind])


def _energies(model, q, qd):
    import jax

    from myotwin import engine

    kin = jax.jit(jax.vmap(engine.kinetic_energy, in_axes=(None, 0, 0)))(model, q, qd)
    pot = jax.jit(jax.vmap(engine.potential_energy, in_axes=(None, 0)))(model, q)
    return np.asarray(kin), np.asarray(pot)


def _run_kind(kind: str, duration_s: float, dt_s: float) -> tuple[dict, dict]:
    import jax
    import jax.numpy as jnp

    from myotwin import engine, inertia
    from myotwin.inertia.path_fraction import path_pieces, piece_layout

    model = inertial_pendulum(kind)
    n = round(duration_s / dt_s)
    rest = float(engine.potential_energy(model, jnp.zeros(2)))
    out, curves = {}, {}
    for label, m in (("with_qvv", model), ("without_qvv", inertia.without_qvv(model))):
        q, qd = engine.rollout(m, jnp.asarray(Q0), jnp.zeros(2), jnp.zeros(0), dt_s, n,
                               engine.Integrator.RK4)
        kin, pot = _energies(model, q, qd)     # the true energy (muscle points included)
        total = kin + pot
        out[f"{label}_rel_drift"] = float(np.max(np.abs(total - total[0])) / (total[0] - rest))
        curves[label] = (kin, pot, total)
        if label == "with_qvv":
            q_with = q
    q = q_with

    @jax.jit
    def geometry(q):
        kin = engine.kinematics(model, q)
        layout = piece_layout(model.paths, (0,))
        anchors = inertia.path_anchors(model.paths, kin, layout.wraps)
        pieces = path_pieces(model.paths, anchors, layout)
        active = pieces.arcs.active[0] if layout.wraps else jnp.asarray(True)
        return pieces.row_end[0] / pieces.path_length[0], active

    ends, active = jax.vmap(geometry)(q)
    ends, active = np.asarray(ends), np.asarray(active)
    alphas = np.asarray(model.muscle_mass.point_alpha)
    out["elbow_range_rad"] = [float(np.min(q[:, 1])), float(np.max(q[:, 1]))]
    if kind == "type2":  # alpha of the via point moves with the elbow; no point may cross it
        via = ends[:, 0]
        out["via_point_alpha_range"] = [float(via.min()), float(via.max())]
        out["min_alpha_gap_to_via_point"] = float(np.min(np.abs(via[:, None] - alphas[None])))
        out["no_point_crosses_via"] = bool(all(
            np.all(np.sign(via - a) == np.sign(via[0] - a)) for a in alphas))
    else:
        out["wrap_always_active"] = bool(np.all(active))
    return out, curves


def _plot(out_dir: pathlib.Path, t: np.ndarray, curves: dict) -> None:
    plt = pyplot()

    fig, ax = plt.subplots(2, 2, figsize=(11, 7), sharex=True)
    for row, kind in enumerate(("type2", "type3")):
        for col, label in enumerate(("without_qvv", "with_qvv")):
            kin, pot, total = curves[kind][label]
            a = ax[row, col]
            a.plot(t, kin, color="C0", label="kinetic")
            a.plot(t, pot, color="C3", label="potential")
            a.plot(t, total, color="C1", lw=2, label="total")
            a.set_title(f"{kind.replace('type', 'Type ')} muscle, "
                        f"{label.replace('_', ' ').replace('qvv', 'QVV')}", fontsize=10)
            a.grid(alpha=0.3)
            if row == 1:
                a.set_xlabel("t (s)")
            if col == 0:
                a.set_ylabel("energy (J)")
    ax[0, 0].legend(fontsize=8)
    fig.suptitle("Double pendulum with a 1 kg inertial muscle, RK4 1 ms (seed Fig. 8)")
    fig.tight_layout()
    fig.savefig(out_dir / "energy_qvv.png", dpi=120)
    plt.close(fig)


def run(out_dir: pathlib.Path, quick: bool = False) -> dict:
    """Run both pendulums with and without QVV; write summary.json and energy_qvv.png."""
    out_dir = prepare_output(out_dir)
    duration, dt = (2.0, 1e-3) if quick else (10.0, 1e-3)
    summary, curves = {}, {}
    for kind in ("type2", "type3"):
        summary[kind], curves[kind] = _run_kind(kind, duration, dt)
    with_ok = all(summary[k]["with_qvv_rel_drift"] <= 1e-4 for k in ("type2", "type3"))
    clearly = all(summary[k]["without_qvv_rel_drift"] >= 100 * summary[k]["with_qvv_rel_drift"]
                  for k in ("type2", "type3"))
    summary["acceptance"] = {"with_qvv_drift_le_1e-4": with_ok,
                             "without_qvv_at_least_100x_larger": clearly,
                             "type2_no_via_crossing": summary["type2"]["no_point_crosses_via"],
                             "type3_wrap_always_active": summary["type3"]["wrap_always_active"]}
    summary["run"] = {"integrator": "rk4", "dt_s": dt, "duration_s": duration, "q0_rad": Q0,
                      "bone_mass_kg": BONE_MASS_KG, "muscle_mass_kg": MUSCLE_MASS_KG,
                      "n_points": N_POINTS,
                      "rel_drift": "max |E(t) - E(0)| / (E(0) - E_rest)"}
    _plot(out_dir, np.arange(round(duration / dt) + 1) * dt, curves)
    write_summary(out_dir, summary)
    return summary
