"""How musculotendon forces enter the skeleton.

Sign convention (docs/conventions.md, STYLE 8): the moment arm is r = -dL/dq (n_v, n_muscles)
in velocity coordinates, where L is the musculotendon path length, and the tendon force F is a
tension (F > 0 pulls the path's ends together). By virtual work, a tension F on a path of
length L does work -F dL = -F (dL/dq) dq, so the generalized force is

    qfrc_muscle = -(dL/dq)^T F = r F        (n_v,),

i.e. "the muscle force enters the skeleton as -(dL/dq)^T F". It delivers the power
qfrc . qd = -F dL/dt = -F v_MT, the `musculotendon_power_W` of `MuscleOutputs`. This equals
MuJoCo's actuator force on a tendon transmission, qfrc_actuator = ten_J^T force with
ten_J = dL/dq and force = -F (MuJoCo muscles pull with negative force).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from myotwin.scalars import require_real_numbers


def generalized_forces(moment_arms, tendon_forces) -> jax.Array:
    """(n_v,) generalized forces r @ F from moment arms r = -dL/dq (n_v, n_muscles) and tendon
    forces F (n_muscles,) (N, tension > 0)."""
    for name, value in (("moment_arms", moment_arms), ("tendon_forces", tendon_forces)):
        require_real_numbers("generalized_forces", name, value)   # a tension of True: 1 N
    r = jnp.asarray(moment_arms, dtype=float)
    f = jnp.asarray(tendon_forces, dtype=float)
    if r.ndim != 2 or f.shape != (r.shape[1],):
        raise ValueError(f"generalized_forces: moment_arms must be (n_v, n_muscles) and "
                         f"tendon_forces (n_muscles,), got {r.shape} and {f.shape}")
    return r @ f
