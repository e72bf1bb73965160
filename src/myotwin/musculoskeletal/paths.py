"""The muscles' paths at a skeleton state: length l_MT, lengthening speed v_MT and moment arms.

  l_MT = L_p(q),   r = -dL_p/dq (n_v, n_muscles) in velocity coordinates,   v_MT = -r^T qd,

for the path p of each muscle (`myotwin.paths`: MuJoCo ten_length, -ten_J^T, ten_velocity).
The muscles act on the skeleton as qfrc = r F (`myotwin.muscle.generalized_forces`).
"""

from __future__ import annotations

import jax
import numpy as np

from myotwin.engine.rows import take
from myotwin.musculoskeletal.model import MusculoskeletalModel
from myotwin.paths.on_model import lengths_and_moment_arms


def path_state(msm: MusculoskeletalModel, q: jax.Array,
               qd: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(l_MT (n_muscles,) m, v_MT (n_muscles,) m/s, r (n_v, n_muscles) m or m/rad)."""
    index = np.asarray(msm.muscle_path, dtype=np.int64)
    lengths, arms = lengths_and_moment_arms(msm.skeleton, q)
    length, arms = take(lengths, index), take(arms, index, axis=1)
    return length, -(qd @ arms), arms
