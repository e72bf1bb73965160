"""Quaternion and spatial-vector algebra in MuJoCo's conventions.

Quaternions are (w, x, y, z), Hamilton product, rotating body-frame vectors into the parent
frame (MuJoCo's mju_mulQuat, mju_rotVecQuat, mju_quat2Mat, mju_axisAngle2Quat).
Spatial vectors are angular-first, 6 = (angular, linear), expressed in world axes about a
reference point (MuJoCo's "com-based" cdof/cvel/cacc convention; Featherstone 2008 §2).
All functions broadcast over leading axes. Small matrix-vector products are written as
unrolled elementwise products and sums (`dot_last`) rather than `einsum`/`@`/`sum`: XLA fuses
those into its neighbouring kernels (engine.md "Performance").
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def quat_mul(a: jax.Array, b: jax.Array) -> jax.Array:
    """Hamilton product a*b of (..., 4) quaternions (mju_mulQuat)."""
    aw, ax, ay, az = jnp.moveaxis(a, -1, 0)
    bw, bx, by, bz = jnp.moveaxis(b, -1, 0)
    return jnp.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        axis=-1,
    )


def quat_normalize(q: jax.Array) -> jax.Array:
    """q / |q| for (..., 4) quaternions (mju_normalize4, without its zero-norm fallback)."""
    return q / jnp.linalg.norm(q, axis=-1, keepdims=True)


def quat_from_axis_angle(axis: jax.Array, angle: jax.Array) -> jax.Array:
    """(cos a/2, sin a/2 * axis) for a unit (..., 3) axis (mju_axisAngle2Quat)."""
    half = 0.5 * jnp.asarray(angle)[..., None]
    return jnp.concatenate([jnp.cos(half), jnp.sin(half) * axis], axis=-1)


def quat_to_mat(q: jax.Array) -> jax.Array:
    """(..., 3, 3) rotation matrix of a unit (..., 4) quaternion (mju_quat2Mat)."""
    w, x, y, z = jnp.moveaxis(q, -1, 0)
    rows = [
        [w * w + x * x - y * y - z * z, 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), w * w - x * x + y * y - z * z, 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), w * w - x * x - y * y + z * z],
    ]
    return jnp.stack([jnp.stack(r, axis=-1) for r in rows], axis=-2)


def dot_last(a: jax.Array, b: jax.Array) -> jax.Array:
    """Sum over the (short) last axis of a * b, written as a chain of elementwise products and
    additions (a_0 b_0 + a_1 b_1 + ...): no reduction op, so it fuses everywhere, including
    under `vmap`, where XLA would hand a small reduction to a slow library kernel."""
    n = jnp.broadcast_shapes(a.shape, b.shape)[-1]
    out = a[..., 0] * b[..., 0]
    for k in range(1, n):
        out = out + a[..., k] * b[..., k]
    return out


def mat_vec(mat: jax.Array, v: jax.Array) -> jax.Array:
    """(..., n) products of (..., n, m) matrices with (..., m) vectors (fusible form)."""
    return dot_last(mat, v[..., None, :])


def quat_rotate(q: jax.Array, v: jax.Array) -> jax.Array:
    """Rotate (..., 3) vectors by unit (..., 4) quaternions (mju_rotVecQuat)."""
    return mat_vec(quat_to_mat(q), v)


def cross_motion(v: jax.Array, s: jax.Array) -> jax.Array:
    """Spatial motion cross product v x s of (..., 6) vectors (mju_crossMotion)."""
    w, v0 = v[..., :3], v[..., 3:]
    a, l0 = s[..., :3], s[..., 3:]
    return jnp.concatenate([jnp.cross(w, a), jnp.cross(w, l0) + jnp.cross(v0, a)], axis=-1)


def cross_force(v: jax.Array, f: jax.Array) -> jax.Array:
    """Spatial force cross product v x* f of (..., 6) vectors (mju_crossForce)."""
    w, v0 = v[..., :3], v[..., 3:]
    n, f0 = f[..., :3], f[..., 3:]
    return jnp.concatenate([jnp.cross(w, n) + jnp.cross(v0, f0), jnp.cross(w, f0)], axis=-1)


def apply_inertia(
    mass: jax.Array, com: jax.Array, inertia_com: jax.Array, v: jax.Array
) -> jax.Array:
    """Spatial inertia times motion: (..., 6) momentum of a rigid body with spatial velocity v.

    mass (...,), com (..., 3) the COM relative to the reference point, inertia_com (..., 3, 3)
    the rotational inertia about the COM in world axes. Linear momentum h = m (v0 + w x c),
    angular momentum about the reference point L = I_c w + c x h (Featherstone 2008 Eq. 2.63).
    """
    w, v0 = v[..., :3], v[..., 3:]
    h = mass[..., None] * (v0 + jnp.cross(w, com))
    ang = mat_vec(inertia_com, w) + jnp.cross(com, h)
    return jnp.concatenate([ang, h], axis=-1)


def quat_integrate(q: jax.Array, omega: jax.Array, dt) -> jax.Array:
    """Rotate (..., 4) quaternions by body-frame angular velocities omega (..., 3) over dt:
    normalise(q) * (cos(|w| dt / 2), sin(|w| dt / 2) w / |w|) (mju_quatIntegrate).

    Written with sin(x)/|w| made safe at w = 0 so that gradients stay finite there.
    """
    sq = dot_last(omega, omega)[..., None]
    tiny = sq < 1e-30
    norm = jnp.sqrt(jnp.where(tiny, 1.0, sq))
    half = 0.5 * dt * norm
    coef = jnp.where(tiny, 0.5 * dt, jnp.sin(half) / norm)
    w = jnp.where(tiny, 1.0, jnp.cos(half))
    qrot = jnp.concatenate([w, coef * omega], axis=-1)
    return quat_mul(quat_normalize(q), qrot)
