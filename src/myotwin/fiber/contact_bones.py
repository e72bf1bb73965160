"""Contact of fibers with bone cylinders that move with the skeleton's bodies.

Gfrerer & Simeon 2021, Sec. 3.3 (Eqs. 50-51): bones are right circular cylinders; a contact
point x_k of a fiber has the gap g = d / (R + r_x) - 1 with d its distance to the cylinder
axis (point y_0, unit direction t; an infinite line as in Eq. 51) and r_x the current fiber
radius (Eq. 21); the fiber receives F(g) n_k per unit current length (Eq. 44, n_k the unit
vector from the axis to x_k), integrated as in Eq. (65). Same law as the fixed cylinder of
part 1 (`contact_cylinder`), now with the axis carried by a body of the skeleton:

  y_0(q) = p_b(q) + R_b(q) y_0,local,   t(q) = R_b(q) t_local.

Reaction on the skeleton (Newton's third law, Eq. 49b in spirit): the bone receives -f_k at
the axis point y_k = y_0 + s_k t, s_k = (x_k - y_0) . t, a material point of the body. Its
virtual work gives the generalised force

  tau = sum_k (d y_k / d q)^T (-f_k) = P(q)^T G,   P = d(y_0, t)/dq (6, n_v),
  G = -(sum_k f_k, sum_k s_k f_k)  (6,),

with f_k = F(g_k) n_k |a_1| w_k h the weighted point force. `element_force` returns the
element's fiber force and its G per cylinder, both smooth functions of the element dofs and of
the cylinder pose (y_0, t), so one forward-mode linearisation gives every tangent block.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.fiber import hermite
from myotwin.scalars import as_real, is_integer


@dataclasses.dataclass(frozen=True)
class BoneCylinder:
    """A rigid cylinder fixed to a body of the skeleton (a JAX pytree).

    Leaves: point_local_m (3,) a point of the axis and axis_local (3,) its unit direction, both
    in the body frame; radius_m R; kappa_N_per_m, gamma: rational penalty (Eq. 44).
    Static: body (skeleton body index, 0 = world), name, fibers (indices of the fibers it
    touches).
    """

    point_local_m: jax.Array
    axis_local: jax.Array
    radius_m: jax.Array
    kappa_N_per_m: jax.Array
    gamma: jax.Array
    body: int = dataclasses.field(default=0, metadata={"static": True})
    name: str = dataclasses.field(default="bone", metadata={"static": True})
    fibers: tuple[int, ...] = dataclasses.field(default=(), metadata={"static": True})


jax.tree_util.register_dataclass(
    BoneCylinder, data_fields=["point_local_m", "axis_local", "radius_m", "kappa_N_per_m",
                               "gamma"], meta_fields=["body", "name", "fibers"])


def make_bone_cylinder(point_local_m, axis_local, radius_m: float, kappa_N_per_m: float,
                       gamma: float, *, body: int = 0, name: str = "bone",
                       fibers=()) -> BoneCylinder:
    """Validated `BoneCylinder` (axis normalised); `fibers` is fixed by `compile_system`.

    Raises ValueError naming the cylinder and field (a bool is neither a number nor a body).
    """
    point = np.asarray(point_local_m, dtype=np.float64)
    ax = np.asarray(axis_local, dtype=np.float64)
    if point.shape != (3,) or not np.all(np.isfinite(point)):
        raise ValueError(f"bone cylinder '{name}': point_local_m must be 3 finite numbers, "
                         f"got {point_local_m!r}")
    if ax.shape != (3,) or not np.all(np.isfinite(ax)) or np.linalg.norm(ax) == 0:
        raise ValueError(f"bone cylinder '{name}': axis_local must be a finite non-zero "
                         f"3-vector, got {axis_local!r}")
    for field, value in (("radius_m", radius_m), ("kappa_N_per_m", kappa_N_per_m),
                         ("gamma", gamma)):
        x = as_real(value)
        if x is None or not (math.isfinite(x) and x > 0):
            raise ValueError(f"bone cylinder '{name}': {field} = {value!r} must be finite "
                             f"and > 0")
    if not is_integer(body) or body < 0:
        raise ValueError(f"bone cylinder '{name}': body must be an integer >= 0 (a skeleton "
                         f"body index, 0 = world), got {body!r}")
    f64 = lambda v: jnp.asarray(v, jnp.float64)  # noqa: E731
    return BoneCylinder(f64(point), f64(ax / np.linalg.norm(ax)), f64(radius_m),
                        f64(kappa_N_per_m), f64(gamma), body=int(body), name=str(name),
                        fibers=tuple(int(f) for f in fibers))


def element_force(cyl: BoneCylinder, pose, x_e, h, qc_phi, qc_dphi, qc_w, ref_norm, r0):
    """Fiber force (12,) of one cylinder on one element, its reaction G (6,), eps (n_qc,).

    pose (6,): world axis point y_0 and unit direction t; x_e (12,) element dofs; h element
    length in theta; qc_* contact quadrature tables; ref_norm, r0 (n_qc,) |A_1| and r_0 there.
    """
    y0, t = pose[:3], pose[3:]
    c = hermite.element_coefficients(x_e, h)
    x = qc_phi @ c
    a1 = qc_dphi @ c / h
    a1_norm = jnp.sqrt(jnp.sum(a1 * a1, axis=-1))
    r = r0 * jnp.sqrt(ref_norm / a1_norm)
    p = x - y0
    s = p @ t
    p_perp = p - s[:, None] * t
    d = jnp.sqrt(jnp.maximum(jnp.sum(p_perp * p_perp, axis=-1), 1e-300))
    g = d / (cyl.radius_m + r) - 1.0
    g_neg = jnp.minimum(g, 0.0)
    magnitude = -cyl.kappa_N_per_m * g_neg / (1.0 + cyl.gamma * g_neg)
    f_point = (magnitude * a1_norm * qc_w * h / d)[:, None] * p_perp  # weighted point forces
    rows = qc_phi.T @ f_point
    scale = jnp.array([1.0, h, 1.0, h])
    force = (rows * scale[:, None]).reshape(12)
    reaction = -jnp.concatenate([jnp.sum(f_point, axis=0), jnp.sum(s[:, None] * f_point,
                                                                   axis=0)])
    return force, reaction, 1.0 + cyl.gamma * g


def bound_inputs(pose, x, dx, a1, da1):
    """Per contact point: distance d to the axis, |dx|, |a_1|, |d a_1|, axial coordinate s.

    pose (6,); x, dx, a1, da1 (..., 3) positions / tangents and their full Newton changes.
    """
    y0, t = pose[:3], pose[3:]
    p = x - y0
    s = p @ t
    d = np.linalg.norm(p - s[..., None] * t, axis=-1)
    return (d, np.linalg.norm(dx, axis=-1), np.linalg.norm(a1, axis=-1),
            np.linalg.norm(da1, axis=-1), s)
