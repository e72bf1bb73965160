"""The muscles' paths at a skeleton state: length l_MT, lengthening speed v_MT and moment arms.

  l_MT = L_p(q),   r = -dL_p/dq (n_v, n_muscles) in velocity coordinates,   v_MT = -r^T qd,

for the path p of each muscle (`myotwin.paths`: MuJoCo ten_length, -ten_J^T, ten_velocity),
or L = c . q for a muscle on a joint or a fixed tendon (`linear_paths.py`).
The muscles act on the skeleton as qfrc = r F (`myotwin.muscle.generalized_forces`). With
the "opensim" coupling (`model.py`) the force acts through OpenSim's point-force moment arm
instead (`generalized_force_moment_arms`: the path points held on their bodies), and v_MT is
OpenSim's lengthening speed (GeometryPath::getLengtheningSpeed: the speeds of the current
path's points as if fixed on their bodies; -r^T qd with that r except where OpenSim's reported
tangent points are stale, `paths/opensim_path.py`). Where OpenSim's cylinders and ellipsoids
wrap this is not dL/dt (their tangent points are a construction, not the geodesic; 0.6 % for
arm26's BIClong): a state that integrates v_MT (a tendon force, as OpenSim's
DeGrooteFregly2016Muscle) then follows OpenSim, and one that reads l_MT(q) (a fiber length, as
OpenSim's Thelen and Millard muscles) does not use v_MT. No derivative of the wraps is taken:
l_MT, r and v_MT come from one solve of the current paths (`lengths_force_arms_and_speeds`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.coupling import full_jacobian, full_positions
from myotwin.engine.rows import take
from myotwin.musculoskeletal.linear_paths import linear_path_state
from myotwin.musculoskeletal.model import MusculoskeletalModel, linear_index
from myotwin.paths.on_model import lengths_and_moment_arms
from myotwin.paths.pathset import PathSet


def skeleton_path_state(skeleton, coordinates, q: jax.Array, qd: jax.Array, opensim: bool,
                        path_rows=None) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(l (n_paths,) m, v (n_paths,) m/s, r (n_coordinates, n_paths)) of every path of
    `skeleton` at coordinates q, speeds qd (`coordinates`: an `engine.CoordinateCoupling` or
    None): with opensim True, OpenSim's lengthening speeds and point-force moment arms (for
    OpenSim-semantics paths; MJCF paths always give -dL/dq), else -dL/dq and -r^T qd (module
    docstring). path_rows: the MJCF paths' (lengths, ten_J) at q if the caller has them
    (`engine.stages`; used without coupled coordinates, so that one traced position stage
    serves the paths and the skeleton's dynamics)."""
    paths = skeleton.paths
    q_f = q if coordinates is None else full_positions(coordinates, q)
    jac = None if coordinates is None else full_jacobian(coordinates, q)
    if opensim and not isinstance(paths, PathSet):
        # -dL/dq is not needed: the forces act through the point-force moment arms, and
        # OpenSim's lengthening speed is that of the same points (along qd_f = J qd)
        qd_f = qd if jac is None else jac @ qd
        lengths, arms, speeds = paths.lengths_force_arms_and_speeds(skeleton, q_f, qd_f)
        return lengths, speeds, (arms if jac is None else jac.T @ arms)
    if path_rows is not None and coordinates is None and isinstance(paths, PathSet):
        lengths, arms = path_rows[0], -path_rows[1].T
    else:
        lengths, arms = lengths_and_moment_arms(skeleton, q_f)
    if jac is not None:   # moment arms w.r.t. the coordinates: -dL/dq = J^T (-dL/dq_f)
        arms = jac.T @ arms
    return lengths, -(qd @ arms), arms


def path_state(msm: MusculoskeletalModel, q: jax.Array, qd: jax.Array,
               path_rows=None) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(l_MT (n_muscles,) m, v_MT (n_muscles,) m/s, r (n_v, n_muscles) m or m/rad: the moment
    arms through which the muscle forces act, -dL/dq (and v_MT = dL/dt = -r^T qd) unless the
    coupling is "opensim" (module docstring). path_rows: as in `skeleton_path_state`."""
    spatial = np.asarray(msm.muscle_path, dtype=np.int64)
    linear = np.asarray(linear_index(msm), dtype=np.int64)
    parts = []
    if np.any(spatial >= 0):
        lengths, speeds, arms = skeleton_path_state(msm.skeleton, msm.coordinates, q, qd,
                                                    msm.coupling == "opensim", path_rows)
        parts.append((spatial, (lengths, speeds, arms)))
    if np.any(linear >= 0):   # muscles on a joint or a fixed tendon (linear_paths.py)
        parts.append((linear, linear_path_state(msm.linear_paths, q, qd)))
    if not parts:   # no muscles (model.py): nothing pulls
        none = jnp.zeros((0,), jnp.result_type(q, qd))
        return none, none, jnp.zeros((qd.shape[-1], 0), none.dtype)
    if len(parts) == 1:
        index, (lengths, speeds, arms) = parts[0]
        return take(lengths, index), take(speeds, index), take(arms, index, axis=1)
    (i_s, (l_s, v_s, r_s)), (i_l, (l_l, v_l, r_l)) = parts
    is_lin = i_l >= 0                                                # static
    pick = lambda a, b, axis=0: jnp.where(  # noqa: E731
        is_lin if axis == 0 else is_lin[None, :], take(b, np.maximum(i_l, 0), axis=axis),
        take(a, np.maximum(i_s, 0), axis=axis))
    return pick(l_s, l_l), pick(v_s, v_l), pick(r_s, r_l, axis=1)
