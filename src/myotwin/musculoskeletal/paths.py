"""The muscles' paths at a skeleton state: length l_MT, lengthening speed v_MT and moment arms.

  l_MT = L_p(q),   r = -dL_p/dq (n_v, n_muscles) in velocity coordinates,   v_MT = -r^T qd,

for the path p of each muscle (`myotwin.paths`: MuJoCo ten_length, -ten_J^T, ten_velocity).
The muscles act on the skeleton as qfrc = r F (`myotwin.muscle.generalized_forces`). With
the "opensim" coupling (`model.py`) the force acts through OpenSim's point-force moment arm
instead (`generalized_force_moment_arms`: the path points held on their bodies), while v_MT
stays dL/dt: OpenSim's muscle states see the path through its length l_MT(q) (the tendon
length is l_MT(q) minus the fiber's), which a tendon-force state integrates as dL/dt. With this
coupling -dL/dq is not formed: l_MT and v_MT come from one forward-mode pass of the lengths
along qd (one tangent, not the n_v of -dL/dq), and the point-force moment arms reuse that pass's
current paths (`lengths_speeds_and_force_arms` of the model's paths: the wraps solved once).
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
    jac = None if c is None else full_jacobian(c, q)
    if msm.coupling == "opensim" and not isinstance(paths, PathSet):
        # -dL/dq is not needed: dL/dt is one jvp of the lengths along the dofs' velocity
        # qd_f = J qd, the forces act through the point-force moment arms
        qd_f = qd if jac is None else jac @ qd
        lengths, speeds, arms = paths.lengths_speeds_and_force_arms(msm.skeleton, q_f, qd_f)
        arms = take(arms, index, axis=1)
        if jac is not None:
            arms = jac.T @ arms
        return take(lengths, index), take(speeds, index), arms
    lengths, arms = lengths_and_moment_arms(msm.skeleton, q_f)
    length, arms = take(lengths, index), take(arms, index, axis=1)
    if jac is not None:   # moment arms w.r.t. the coordinates: -dL/dq = J^T (-dL/dq_f)
        arms = jac.T @ arms
    return length, -(qd @ arms), arms
