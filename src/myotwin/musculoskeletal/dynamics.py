"""Right-hand side of a skeleton driven by Hill-type muscles.

With the muscles' paths at (q, qd) (`paths.path_state`: l_MT, v_MT, r) and their states
(activation a, tendon state s), `myotwin.muscle.dynamics` gives each muscle's tendon force F
(N, tension), da/dt (from the excitation u) and ds/dt; the muscles act on the skeleton as the
generalized force r F (the muscle enters the skeleton as -(dL/dq)^T F, docs/conventions.md;
with the "opensim" coupling r is OpenSim's point-force moment arm, `model.py`), added to the
skeleton's own forces (actuators with ctrl, passive, contact, limits, muscle mass
points) in `engine.forward_dynamics`:

  d/dt (q, qd, a, s) = (qd, forward_dynamics(q, qd, ctrl, qfrc_applied + r F), da/dt, ds/dt)

(the q rate is the velocity qd in velocity coordinates; the integrators move q on its
manifold, `engine.integrators`). With coupled coordinates (`model.py`) q and qd are the
coordinates and the skeleton's accelerations are `engine.coupled_dynamics`'s.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from myotwin.engine.coupled_dynamics import coupled_forward_dynamics
from myotwin.engine.dynamics import forward_dynamics_from_kinematics
from myotwin.engine.kinematics import kinematics
from myotwin.engine.stages import reads_path_rows
from myotwin.engine.tendons import mjcf_paths, path_rows_from_kinematics
from myotwin.muscle.musculotendon import MuscleDynamics, dynamics
from myotwin.musculoskeletal.model import MusculoskeletalModel
from myotwin.musculoskeletal.paths import path_state
from myotwin.musculoskeletal.state import MusculoskeletalState
from myotwin.paths.pathset import PathSet


def muscle_drive(msm: MusculoskeletalModel, state: MusculoskeletalState, excitation,
                 path_rows=None) -> tuple[MuscleDynamics, jax.Array]:
    """(the muscles' `MuscleDynamics` (forces, energies, powers, state rates), their
    generalized force r F (n_v,)) at `state` for excitation u (scalar or (n_muscles,));
    path_rows: the skeleton's MJCF path rows at state.q if the caller has them
    (`paths.path_state`)."""
    length, speed, arms = path_state(msm, state.q, state.qd, path_rows)
    dyn = dynamics(msm.muscles, excitation, state.activation, length, speed, state.tendon_state)
    return dyn, arms @ dyn.outputs.tendon_force_N


def _skeleton_ctrl(msm: MusculoskeletalModel, ctrl, dtype):
    return jnp.zeros(msm.skeleton.n_u, dtype) if ctrl is None else ctrl


def rates(msm: MusculoskeletalModel, state: MusculoskeletalState, excitation, ctrl=None,
          qfrc_applied=None, xfrc_applied=None,
          damping_dt=None) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(qdd (n_v,), da/dt, ds/dt (n_muscles,) each) at `state` (module docstring); ctrl (n_u,)
    drives the skeleton's own actuators (zeros if None), qfrc_applied / xfrc_applied and
    damping_dt (MuJoCo Euler's implicit damping; not with coupled coordinates) as in
    `engine.forward_dynamics`."""
    # one position stage for the paths and the skeleton (traced once, differentiated once;
    # engine/stages.py)
    kin = rows = None
    if msm.coordinates is None:
        kin = kinematics(msm.skeleton, state.q)
        # rows only where something reads them: the muscles on MJCF paths or a force term of
        # the skeleton (an OpenSim path set's muscles read their own paths)
        if mjcf_paths(msm.skeleton) is not None and (
                isinstance(msm.skeleton.paths, PathSet) or reads_path_rows(msm.skeleton)):
            rows = path_rows_from_kinematics(msm.skeleton, kin)
    dyn, qfrc = muscle_drive(msm, state, excitation, rows)
    applied = qfrc if qfrc_applied is None else qfrc + qfrc_applied
    ctrl = _skeleton_ctrl(msm, ctrl, state.qd.dtype)
    if msm.coordinates is not None:   # coupled coordinates: qfrc_applied on the coordinates
        if damping_dt is not None:
            raise ValueError("damping_dt (MuJoCo Euler's implicit damping) needs the skeleton's "
                             "own coordinates, not coupled ones")
        qdd = coupled_forward_dynamics(msm.skeleton, msm.coordinates, state.q, state.qd, ctrl,
                                       qfrc=applied, xfrc_applied=xfrc_applied)
    else:
        qdd = forward_dynamics_from_kinematics(msm.skeleton, kin, state.q, state.qd, ctrl,
                                               qfrc_applied=applied, xfrc_applied=xfrc_applied,
                                               damping_dt=damping_dt, path_rows=rows)
    return qdd, dyn.activation_rate, dyn.tendon_state_rate


def state_derivative(msm: MusculoskeletalModel, state: MusculoskeletalState, excitation,
                     ctrl=None, qfrc_applied=None, xfrc_applied=None) -> MusculoskeletalState:
    """d state / dt as a `MusculoskeletalState` whose q field is the velocity qd (n_v,)."""
    qdd, da, ds = rates(msm, state, excitation, ctrl, qfrc_applied, xfrc_applied)
    return MusculoskeletalState(state.qd, qdd, da, ds)
