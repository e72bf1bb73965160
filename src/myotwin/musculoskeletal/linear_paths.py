"""Muscle lengths linear in the joint positions: MuJoCo muscles with a joint transmission (on a
hinge or slide) or on a fixed tendon, which have no spatial path.

For such a muscle MuJoCo's actuator length is gear x L with (mj_transmission)
  joint transmission:   L = qpos of the joint (absolute, not q - ref),
  fixed tendon:         L = sum_i c_i qpos_(j_i) over the tendon's joints (MuJoCo ten_length),
and its moment gear x dL/dqd. Here, as for a spatial path, L(q) = c_q . q and dL/dqd = c_v
(constant), so the muscle's moment arm is r = -c_v, its lengthening speed v_MT = c_v . qd and
its generalized force r F; the gear is folded into the muscle (`mjcf.mujoco_muscles`).
The length's unit is the joint's (rad for a hinge), so a hinge muscle's "length" l_MT and
fiber lengths are angles scaled by 1 / gear, as in MuJoCo.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.scalars import require_real_numbers

_STATIC = {"static": True}


@dataclasses.dataclass(frozen=True)
class LinearPaths:
    """k length sources L = coef_q . q (a JAX pytree).

    coef_q (k, n_q): coefficients at the joints' qpos addresses; coef_v (k, n_v): the same at
    their dof addresses (dL/dqd). Static: names (k,) (the actuator or tendon each came from,
    for messages and `musculoskeletal_model`'s `paths`)."""

    coef_q: jax.Array
    coef_v: jax.Array
    names: tuple[str, ...] = dataclasses.field(metadata=_STATIC)

    @property
    def n_paths(self) -> int:
        return len(self.names)


jax.tree_util.register_dataclass(LinearPaths, data_fields=["coef_q", "coef_v"],
                                 meta_fields=["names"])


def linear_path_state(paths: LinearPaths, q: jax.Array,
                      qd: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(l (k,), v (k,), r (n_v, k)) at q (n_q,), qd (n_v,): lengths, lengthening speeds and
    moment arms r = -dL/dq."""
    coef_q = paths.coef_q.astype(q.dtype)
    coef_v = paths.coef_v.astype(q.dtype)
    return coef_q @ q, coef_v @ qd, -coef_v.T


def linear_paths(coef_q, coef_v, names) -> LinearPaths:
    """A `LinearPaths` from (k, n_q) and (k, n_v) coefficient arrays and k names. ValueError
    for names that are not k distinct strings (a string is not a sequence of names) and
    coefficients that are not finite real numbers (not bools) of those shapes."""
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        raise ValueError(f"linear_paths: names must be a sequence of strings, got {names!r}")
    names = tuple(names)
    if len(set(names)) != len(names):
        raise ValueError(f"linear_paths: names must be distinct, got {list(names)}")
    for what, coef in (("coef_q", coef_q), ("coef_v", coef_v)):
        require_real_numbers("linear_paths", what, coef)
        shape = np.shape(coef)
        if len(shape) != 2 or shape[0] != len(names):
            raise ValueError(f"linear_paths: {what} has shape {shape}, expected "
                             f"({len(names)}, n), one row per name")
        if (not isinstance(coef, jax.core.Tracer)      # (a traced value is not known yet)
                and not np.all(np.isfinite(np.asarray(coef, dtype=np.float64)))):
            raise ValueError(f"linear_paths: {what} must be finite")
    f64 = lambda x: jnp.asarray(x, dtype=jnp.float64)  # noqa: E731
    return LinearPaths(f64(coef_q), f64(coef_v), names)
