"""The muscles' paths at a skeleton state: length l_MT, lengthening speed v_MT and moment arms.

  l_MT = L_p(q),   r = -dL_p/dq (n_v, n_muscles) in velocity coordinates,   v_MT = -r^T qd,

for the path p of each muscle (`myotwin.paths`: MuJoCo ten_length, -ten_J^T, ten_velocity).
The muscles act on the skeleton as qfrc = r F (`myotwin.muscle.generalized_forces`). With
the "opensim" coupling (`model.py`) the force acts through OpenSim's point-force moment arm
instead (`generalized_force_moment_arms`: the path points held on their bodies), while v_MT
stays dL/dt: OpenSim's muscle states see the path through its length l_MT(q) (the tendon
length is l_MT(q) minus the fiber's), which a tendon-force state integrates as dL/dt.
"""

from __future__ import annotations

import jax
import numpy as np

from myotwin.engine.coupling import full_jacobian, full_positions
from myotwin.engine.rows import take
from myotwin.musculoskeletal.model import MusculoskeletalModel
from myotwin.paths.on_model import lengths_and_moment_arms
from myotwin.paths.pathset import PathSet


def path_state(msm: MusculoskeletalModel, q: jax.Array,
               qd: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(l_MT (n_muscles,) m, v_MT = dL/dt (n_muscles,) m/s, r (n_v, n_muscles) m or m/rad:
    the moment arms through which the muscle forces act, -dL/dq unless the coupling is
    "opensim")."""
    index = np.asarray(msm.muscle_path, dtype=np.int64)
    paths = msm.skeleton.paths
    c = msm.coordinates
    q_f = q if c is None else full_positions(c, q)
    lengths, arms = lengths_and_moment_arms(msm.skeleton, q_f)
    length, arms = take(lengths, index), take(arms, index, axis=1)
    jac = None if c is None else full_jacobian(c, q)
    if jac is not None:   # moment arms w.r.t. the coordinates: -dL/dq = J^T (-dL/dq_f)
        arms = jac.T @ arms
    speed = -(qd @ arms)
    if msm.coupling == "opensim" and not isinstance(paths, PathSet):
        arms = take(paths.generalized_force_moment_arms(msm.skeleton, q_f), index, axis=1)
        if jac is not None:
            arms = jac.T @ arms
    return length, speed, arms
