"""External loads on bodies, given as functions of time (OpenSim's ExternalForce, e.g. ground
reaction forces), as the forward simulations apply them.

Each load l acts on body `body[l]`: a force F_l(t) expressed in the frame of body
`force_frame[l]`, applied at a point p_l(t) expressed in the frame of body `point_frame[l]`,
and a free torque T_l(t) expressed in the force's frame (engine body indices, 0 = the world
or OpenSim's ground). At a state with poses from `engine.kinematics` the load is the world
wrench at the body's COM (the engine's `xfrc_applied`, MuJoCo's mj_applyFT convention)

  F_w = R_f F,  T_w = R_f T + (o_p + R_p p - c_body) x F_w

with R_f, R_p the frames' rotations, o_p the point frame's origin and c_body the COM: a point
given in ground stays fixed in ground while the body moves under it (what OpenSim's
ExternalForce::computeForce does with a point expressed in ground), a point given in the body
moves with it. The nine components of each load are piecewise polynomials of time
(`engine.piecewise`), evaluated in JAX, so an error-controlled integrator reads them at every
stage time; `load_wrenches` is shared with inverse dynamics (osim/inverse_dynamics.py).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.piecewise import PiecewisePolynomial, evaluate_padded, pad_polynomials


class BodyLoads(NamedTuple):
    """n loads: body, force_frame, point_frame (n,) int32 engine body indices, and their 9 n
    components over time (load-major: force xyz, point xyz, torque xyz) as one padded table
    of piecewise polynomials (`engine.piecewise.pad_polynomials`: breaks, origins,
    coefficients)."""

    body: jax.Array
    force_frame: jax.Array
    point_frame: jax.Array
    breaks: jax.Array
    origins: jax.Array
    coefficients: jax.Array

    @property
    def n_loads(self) -> int:
        return self.body.shape[0]


def body_loads(body, force_frame, point_frame,
               components: list[PiecewisePolynomial]) -> BodyLoads:
    """`BodyLoads` from the frames (n,) and the 9 n component functions of time."""
    frames = [np.asarray(x, dtype=np.int32).reshape(-1) for x in (body, force_frame,
                                                                  point_frame)]
    n = frames[0].size
    if any(f.size != n for f in frames) or len(components) != 9 * n:
        raise ValueError(f"body_loads: {n} loads need {n} force and point frames and {9 * n} "
                         f"component functions, got {[f.size for f in frames[1:]]} and "
                         f"{len(components)}")
    tables = pad_polynomials(components) if n else (np.zeros((0, 0)), np.zeros((0, 1)),
                                                    np.zeros((0, 1, 1)))
    return BodyLoads(*(jnp.asarray(f) for f in frames), *(jnp.asarray(t) for t in tables))


def load_values(loads: BodyLoads, t) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(force, point, torque), each (n, 3) in its frame, at time t (s)."""
    x = jnp.full(loads.breaks.shape[0], t, dtype=loads.origins.dtype)
    value = evaluate_padded(loads.breaks, loads.origins, loads.coefficients, x)[0]
    parts = value.reshape(loads.n_loads, 3, 3)
    return parts[:, 0], parts[:, 1], parts[:, 2]


def load_wrenches(n_body: int, kin, body, force_frame, point_frame, force, point,
                  torque) -> jax.Array:
    """(n_body, 6) world force and torque at each body's COM (the engine's xfrc_applied) of
    loads (n, 3) on `body` with force/torque in `force_frame` and point in `point_frame`
    (module docstring), at the poses `kin` (`engine.kinematics`)."""
    rot_f = kin.body_rot_world[force_frame]            # (n, 3, 3); ground = I
    rot_p = kin.body_rot_world[point_frame]
    force_w = jnp.einsum("lij,lj->li", rot_f, force)
    torque_w = jnp.einsum("lij,lj->li", rot_f, torque)
    point_w = kin.body_pos_world[point_frame] + jnp.einsum("lij,lj->li", rot_p, point)
    arm = point_w - kin.body_com_world[body]
    wrench = jnp.concatenate([force_w, torque_w + jnp.cross(arm, force_w)], axis=-1)
    return jnp.zeros((n_body, 6), force.dtype).at[body].add(wrench)


def wrenches_at(loads: BodyLoads, n_body: int, kin, values) -> jax.Array:
    """`load_wrenches` of `loads` with component values (force, point, torque)."""
    return load_wrenches(n_body, kin, loads.body, loads.force_frame, loads.point_frame,
                         *values)


def musculoskeletal_wrenches(msm, loads: BodyLoads, values, q) -> jax.Array:
    """`wrenches_at` for a `MusculoskeletalModel` at its state's q (its coordinates when
    coupled: the skeleton's positions follow from them)."""
    from myotwin.engine.coupling import full_positions
    from myotwin.engine.kinematics import kinematics

    q_full = q if msm.coordinates is None else full_positions(msm.coordinates, q)
    return wrenches_at(loads, msm.skeleton.n_body, kinematics(msm.skeleton, q_full), values)
