"""Quaternion and spatial-vector algebra in MuJoCo's conventions.

Quaternions are (w, x, y, z), Hamilton product, rotating body-frame vectors into the parent
frame (MuJoCo's mju_mulQuat, mju_rotVecQuat, mju_quat2Mat, mju_axisAngle2Quat).
Spatial vectors are angular-first, 6 = (angular, linear), expressed in world axes about a
reference point (MuJoCo's "com-based" cdof/cvel/cacc convention; Featherstone 2008 §2).
All functions broadcast over leading axes. Small matrix-vector products are written as
unrolled elementwise products and sums (`dot_last`) rather than `einsum`/`@`/`sum`: XLA fuses
those into its neighbouring kernels (engine.md "Performance").

The products here (`dot_last`, `cross`, `quat_mul`, `quat_to_mat`, `cross_motion` and
`cross_force`; `apply_inertia` through the `cross` it calls) carry custom JVP rules. Their
values are the unrolled component forms. Their tangents never slice the tangent: for a
bilinear f(a, b) the tangent f(ta, b) + f(a, tb) is written as A(b) ta + B(a) tb with the
partner matrices A(b)[..., i, j] = sum_k T[i, j, k] b_k and B(a) likewise, where T is the
map's constant table (derived from the function itself on basis vectors). The partner
matrices are products of the table with the *primal* (`_partner_matrix`), which reverse mode
never transposes; each product with a tangent is one broadcast multiply-and-sum
(`_apply_partner`), n_out n_a terms, and so is its transpose. A quadratic form is treated the
same way with its polarised table. Through the component form, reverse mode would spend one
pad kernel per component slice. Until the thirteenth session the rule multiplied tangent and
primal against the whole table inside the tangent (n_out n_a n_b terms, in the transposed
pass too); the partner form cut the reverse-mode gradient of `benchmarks/inertial.py`'s 1 s
rollout from 17.3-18.3 to 15.1-15.3 ms, and `jax.jacfwd` of its forward dynamics (the
implicit integrators' Newton Jacobians) got faster too (engine.md "Performance", thirteenth
session).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import SymbolicZero


def _is_zero(t) -> bool:
    return type(t) is SymbolicZero


def _basis_table(evaluate) -> np.ndarray:
    """Evaluate `evaluate()` (a function of NumPy basis vectors) once, as constants."""
    with jax.ensure_compile_time_eval():
        return np.asarray(evaluate(), dtype=np.float64)


def _partner_matrix(table: np.ndarray, x: jax.Array) -> jax.Array:
    """(..., out..., n_j) sum_k table[out..., j, k] x[..., k] for a constant table."""
    extra = (None,) * (table.ndim - 1)
    return jnp.sum(jnp.asarray(table, x.dtype) * x[(..., *extra, slice(None))], axis=-1)


def _apply_partner(mat: jax.Array, t: jax.Array, n_out: int) -> jax.Array:
    """sum_j mat[..., out..., j] t[..., j] (the tangent's linear map; transposes to one
    multiply-and-sum)."""
    return jnp.sum(mat * t[(..., *((None,) * n_out), slice(None))], axis=-1)


def _with_rule(fn, jvp, table):
    """`fn` as a custom_jvp function with `jvp` (symbolic zeros on) and its `table`."""
    wrapped = functools.wraps(fn)(jax.custom_jvp(fn))
    wrapped.defjvp(jvp, symbolic_zeros=True)
    wrapped.table = table
    return wrapped


def _bilinear(n_a: int, n_b: int):
    """Decorator: `fn(a, b)`, bilinear in (..., n_a) and (..., n_b) vectors, gets the JVP
    sum_jk T[..., j, k] (ta_j b_k + a_j tb_k) with its table T[out..., j, k] = fn(e_j, e_k)."""

    def wrap(fn):
        @functools.lru_cache(maxsize=None)
        def table() -> np.ndarray:
            t = _basis_table(lambda: fn(np.eye(n_a)[:, None, :], np.eye(n_b)[None, :, :]))
            return np.moveaxis(t, (0, 1), (-2, -1))          # (out..., n_a, n_b)

        def jvp(primals, tangents):
            (a, b), (ta, tb) = primals, tangents
            out = fn(a, b)
            tab = table()
            n_out = tab.ndim - 2
            t = jnp.zeros(out.shape, out.dtype)
            if not _is_zero(ta):
                t = t + _apply_partner(_partner_matrix(tab, b), ta, n_out)
            if not _is_zero(tb):
                t = t + _apply_partner(_partner_matrix(np.swapaxes(tab, -1, -2), a), tb, n_out)
            return out, t

        return _with_rule(fn, jvp, table)

    return wrap


def _quadratic(n: int):
    """Decorator: `fn(q)`, a quadratic form in (..., n) vectors, gets the JVP
    2 sum_jk Q[..., j, k] tq_j q_k with its symmetric table Q (polarisation of fn)."""

    def wrap(fn):
        @functools.lru_cache(maxsize=None)
        def table() -> np.ndarray:
            e = np.eye(n)
            pair = _basis_table(lambda: fn(e[:, None, :] + e[None, :, :]))   # f(e_j + e_k)
            single = _basis_table(lambda: fn(e))                              # f(e_j)
            q = 0.5 * (pair - single[:, None] - single[None, :])
            return np.moveaxis(q, (0, 1), (-2, -1))         # (out..., n, n), symmetric

        def jvp(primals, tangents):
            (q,), (tq,) = primals, tangents
            out = fn(q)
            if _is_zero(tq):
                return out, jnp.zeros(out.shape, out.dtype)
            tab = 2.0 * table()
            return out, _apply_partner(_partner_matrix(tab, q), tq, tab.ndim - 2)

        return _with_rule(fn, jvp, table)

    return wrap


@_bilinear(4, 4)
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


@_quadratic(4)
def quat_to_mat(q: jax.Array) -> jax.Array:
    """(..., 3, 3) rotation matrix of a unit (..., 4) quaternion (mju_quat2Mat)."""
    w, x, y, z = jnp.moveaxis(q, -1, 0)
    rows = [
        [w * w + x * x - y * y - z * z, 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), w * w - x * x + y * y - z * z, 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), w * w - x * x - y * y + z * z],
    ]
    return jnp.stack([jnp.stack(r, axis=-1) for r in rows], axis=-2)


@jax.custom_jvp
def dot_last(a: jax.Array, b: jax.Array) -> jax.Array:
    """Sum over the (short) last axis of a * b, written as a chain of elementwise products and
    additions (a_0 b_0 + a_1 b_1 + ...): no reduction op, so it fuses everywhere, including
    under `vmap`, where XLA would hand a small reduction to a slow library kernel. Its
    tangent is a sum over the last axis (module docstring)."""
    n = jnp.broadcast_shapes(a.shape, b.shape)[-1]
    out = a[..., 0] * b[..., 0]
    for k in range(1, n):
        out = out + a[..., k] * b[..., k]
    return out


def _dot_last_jvp(primals, tangents):
    a, b = primals
    ta, tb = tangents
    out = dot_last(a, b)
    t = jnp.zeros(out.shape, out.dtype)
    if not _is_zero(ta):
        t = t + jnp.sum(ta * b, axis=-1)
    if not _is_zero(tb):
        t = t + jnp.sum(a * tb, axis=-1)
    return out, t


dot_last.defjvp(_dot_last_jvp, symbolic_zeros=True)


@_bilinear(3, 3)
def cross(a: jax.Array, b: jax.Array) -> jax.Array:
    """Cross product a x b of (..., 3) vectors (jnp.cross's value), its three components
    stacked on the last axis. Under `vmap`, jnp.cross's result came out of XLA as a
    component-major (..., 3, n) buffer, transposed back in the kernels reading it (the frog's
    batched trace, engine.md "Performance", eleventh session)."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return jnp.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def mat_vec(mat: jax.Array, v: jax.Array) -> jax.Array:
    """(..., n) products of (..., n, m) matrices with (..., m) vectors (fusible form)."""
    return dot_last(mat, v[..., None, :])


def mat_mat(a: jax.Array, b: jax.Array) -> jax.Array:
    """a @ b for a (n, m) matrix or (m,) vector and a (m, k) matrix, written like `dot_last`
    as a chain of elementwise products and additions over the (short) m. XLA's CPU backend
    hands a dot of two matrices to a YNNPACK library fusion, which keeps the loop around it
    from being compiled whole (jax_setup.py), and under `vmap` a reduction to a slow YNNPACK
    reduce; this form fuses with its neighbours (engine.md "Performance", tenth session)."""
    if a.shape[-1] == 0:
        return jnp.zeros(a.shape[:-1] + b.shape[1:], dtype=jnp.result_type(a, b))
    out = a[..., 0, None] * b[0]
    for j in range(1, a.shape[-1]):
        out = out + a[..., j, None] * b[j]
    return out


def quat_rotate(q: jax.Array, v: jax.Array) -> jax.Array:
    """Rotate (..., 3) vectors by unit (..., 4) quaternions (mju_rotVecQuat)."""
    return mat_vec(quat_to_mat(q), v)


@_bilinear(6, 6)
def cross_motion(v: jax.Array, s: jax.Array) -> jax.Array:
    """Spatial motion cross product v x s of (..., 6) vectors (mju_crossMotion)."""
    w, v0 = v[..., :3], v[..., 3:]
    a, l0 = s[..., :3], s[..., 3:]
    return jnp.concatenate([jnp.cross(w, a), jnp.cross(w, l0) + jnp.cross(v0, a)], axis=-1)


@_bilinear(6, 6)
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
    h = mass[..., None] * (v0 + cross(w, com))
    ang = mat_vec(inertia_com, w) + cross(com, h)
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
