"""Contact of a fiber with a fixed rigid cylinder: rational penalty on the current radius.

Gfrerer & Simeon 2021, Sec. 3.3 (Eqs. 50-51), with the traction law of Sec. 2.4 (Eqs. 42-44)
and the quadrature of Sec. 4.3 (Eq. 65). At each contact quadrature point x_k of the centreline

  d_k = |(x_k - y_0) - ((x_k - y_0) . t) t|       distance to the cylinder axis (y_0, unit t)
  r_k = r_0 sqrt(|A_1| / |a_1|)                   current fiber radius (Eq. 21)
  g_k = d_k / (R + r_k) - 1                       dimensionless gap (Eq. 51)
  F(g) = -kappa g / (1 + gamma g) for -1/gamma < g < 0, 0 for g >= 0          (Eq. 44)

and the fiber receives the line force F(g_k) n_k per unit *current* length, n_k the unit vector
from the axis to x_k (pushing the fiber out of the cylinder), integrated as in Eq. (65):
sum_k F n_k . xi(x_k) |a_1(x_k)| w_k h. kappa (N/m) is the penalty stiffness, F'(0^-) = -kappa;
gamma (dimensionless) bounds the penetration: F -> infinity as g -> -1/gamma, and gaps
g <= -1/gamma are inadmissible (the formula would change sign there). The cylinder axis is an
infinite line, as in Eq. (51) (the seed's cylinders have no end caps).

`safeguard_fraction` implements the step scaling of Sec. 4.4 (Eqs. 69-73) for this contact: the
largest delta in (0, 1] such that the lower bound e_eps(delta) of eps = 1 + gamma g stays above
delta_bar eps(0) at every contact point, with the bound of Eqs. (72)-(73) (distance can shrink
by at most delta |dx|, the stretch by at most delta |d a_1|). Choice where the seed leaves room:
the min/max of Eq. (72) are taken per contact quadrature point rather than per element -- the
contact force lives only at those points, the bound stays valid (it is Eq. 72 with E a single
point) and is tighter, and e_eps(0) = eps(0) exactly so the ratio test (71) is well defined. The
"other fiber" terms of Eqs. (72)-(73) vanish for a fixed rigid cylinder (radius R, no motion).
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.arguments import jit_naming_refusals
from myotwin.fiber import hermite
from myotwin.fiber.cable import FiberModel, check_shapes, dof_shapes, element_h, per_element
from myotwin.scalars import as_real


@dataclasses.dataclass(frozen=True)
class CylinderContact:
    """A fixed rigid cylinder and its penalty (a JAX pytree).

    Leaves: point_m (3,) a point on the axis; axis (3,) unit axis direction; radius_m (R);
    kappa_N_per_m (penalty stiffness); gamma (barrier parameter, max penetration g = -1/gamma).
    Static: name.
    """

    point_m: jax.Array
    axis: jax.Array
    radius_m: jax.Array
    kappa_N_per_m: jax.Array
    gamma: jax.Array
    name: str = dataclasses.field(default="cylinder", metadata={"static": True})


jax.tree_util.register_dataclass(
    CylinderContact, data_fields=["point_m", "axis", "radius_m", "kappa_N_per_m", "gamma"],
    meta_fields=["name"])


def make_cylinder_contact(point_m, axis, radius_m: float, kappa_N_per_m: float, gamma: float,
                          name: str = "cylinder") -> CylinderContact:
    """Validated `CylinderContact` (axis normalised). Raises ValueError naming the field
    (radius_m and kappa_N_per_m finite numbers > 0, gamma >= 0; a bool is not a number)."""
    point = np.asarray(point_m, dtype=np.float64)
    ax = np.asarray(axis, dtype=np.float64)
    if point.shape != (3,) or not np.all(np.isfinite(point)):
        raise ValueError(f"cylinder '{name}': point_m must be 3 finite numbers, got {point_m!r}")
    if ax.shape != (3,) or not np.all(np.isfinite(ax)) or np.linalg.norm(ax) == 0:
        raise ValueError(f"cylinder '{name}': axis must be a finite non-zero 3-vector, "
                         f"got {axis!r}")
    for field, value, rule in (("radius_m", radius_m, "> 0"),
                               ("kappa_N_per_m", kappa_N_per_m, "> 0"), ("gamma", gamma, ">= 0")):
        x = as_real(value)
        if x is None or not math.isfinite(x) or (x <= 0 if rule == "> 0" else x < 0):
            raise ValueError(f"cylinder '{name}': {field} = {value!r} must be a finite number "
                             f"{rule}")
    f64 = lambda v: jnp.asarray(v, jnp.float64)  # noqa: E731
    return CylinderContact(point_m=f64(point), axis=f64(ax / np.linalg.norm(ax)),
                           radius_m=f64(radius_m), kappa_N_per_m=f64(kappa_N_per_m),
                           gamma=f64(gamma), name=str(name))


def rational_penalty(g, kappa, gamma):
    """Contact line force magnitude F(g) >= 0 of Eq. (44), N/m (valid for g > -1/gamma)."""
    g_neg = jnp.minimum(g, 0.0)
    return -kappa * g_neg / (1.0 + gamma * g_neg)


def axis_offset(contact: CylinderContact, x):
    """Component of x - y_0 normal to the axis, (..., 3), and its length d (...)."""
    p = x - contact.point_m
    p_perp = p - jnp.sum(p * contact.axis, axis=-1, keepdims=True) * contact.axis
    d = jnp.sqrt(jnp.maximum(jnp.sum(p_perp * p_perp, axis=-1), 1e-300))
    return p_perp, d


def _point_quantities(model: FiberModel, contact: CylinderContact, q_e, h, ref_norm, r0):
    x, a1 = hermite.interpolate(q_e, h, model.qc_phi, model.qc_dphi)
    a1_norm = jnp.sqrt(jnp.sum(a1 * a1, axis=-1))
    r = r0 * jnp.sqrt(ref_norm / a1_norm)
    p_perp, d = axis_offset(contact, x)
    g = d / (contact.radius_m + r) - 1.0
    return p_perp / d[:, None], g, a1_norm


def element_contact_force(model: FiberModel, contact: CylinderContact, q_e, h, ref_norm, r0):
    """External contact force of one element on its 12 dofs (12,), and eps = 1 + gamma g.

    q_e (12,) element dofs, h element length in theta, ref_norm and r0 (n_qp_contact,) the
    reference |A_1| and r_0 at the contact points. Returns (force (12,) in N, eps (n_qpc,)).
    """
    n, g, a1_norm = _point_quantities(model, contact, q_e, h, ref_norm, r0)
    f = rational_penalty(g, contact.kappa_N_per_m, contact.gamma)
    line_force = (f * a1_norm)[:, None] * n  # per unit theta
    zero = jnp.zeros_like(line_force)
    force = hermite.gather_virtual_work(line_force, zero, h, model.qc_phi, model.qc_dphi,
                                        model.qc_w)
    return force, 1.0 + contact.gamma * g


@jit_naming_refusals(("q",))
def contact_state(model: FiberModel, contact: CylinderContact, q):
    """Gaps g and line forces F(g) (N per current metre) at the contact points (n_el, n_qpc).
    q (n_dof,) (ValueError naming it otherwise)."""
    check_shapes("contact_state", f"fiber '{model.name}': n_dof = {model.n_dof}",
                 dof_shapes(model, q=q))
    def one(q_e, h, ref_norm, r0):
        _, g, _ = _point_quantities(model, contact, q_e, h, ref_norm, r0)
        return g, rational_penalty(g, contact.kappa_N_per_m, contact.gamma)

    return jax.vmap(one)(per_element(model, q), element_h(model), model.qc_ref_norm,
                         model.qc_r0_m)


def bound_data(model: FiberModel, contact: CylinderContact, q, dq):
    """Inputs of the bound (72)-(73) per contact point: d, |dx|, |a_1|, |d a_1| (n_el, n_qpc).

    d is the distance to the axis at q, dx and d a_1 the changes of position and tangent for
    the full update dq. Traceable (called inside the jitted safeguard evaluation).
    """
    def one(q_e, dq_e, h):
        x, a1 = hermite.interpolate(q_e, h, model.qc_phi, model.qc_dphi)
        dx, da1 = hermite.interpolate(dq_e, h, model.qc_phi, model.qc_dphi)
        _, d = axis_offset(contact, x)
        return (d, jnp.linalg.norm(dx, axis=-1), jnp.linalg.norm(a1, axis=-1),
                jnp.linalg.norm(da1, axis=-1))

    return jax.vmap(one)(per_element(model, q), per_element(model, dq), element_h(model))


def eps_lower_bound(delta, d, dx, a1, da1, r0, ref_norm, radius, gamma):
    """e_eps(delta) of Eqs. (72)-(73) at single points (NumPy, broadcasting); -inf if invalid."""
    a_low = a1 - delta * da1
    d_low = d - delta * dx
    with np.errstate(divide="ignore", invalid="ignore"):
        r_up = r0 * np.sqrt(ref_norm / a_low)
        e = 1.0 + gamma * (d_low / (r_up + radius) - 1.0)
    return np.where((a_low > 0) & (d_low > 0), e, -np.inf)


def safeguard_fraction(model: FiberModel, contact: CylinderContact, q, dq,
                       delta_bar: float, n_bisect: int = 60,
                       data=None) -> tuple[float, tuple[int, int]]:
    """Largest delta in [0, 1] with e_eps(delta) >= delta_bar eps(0) at every contact point.

    Eqs. (69)-(73): the Newton update q + delta dq then keeps every gap admissible (eps > 0)
    and lets eps shrink by at most the factor delta_bar per iteration. Returns delta and the
    (element, point) that limits it ((-1, -1) if delta = 1). `data`: precomputed
    `bound_data(model, contact, q, dq)` (q and dq are then not used). Without data, q and dq
    must be (n_dof,) (ValueError naming the argument).
    """
    if data is None:
        check_shapes("safeguard_fraction", f"fiber '{model.name}': n_dof = {model.n_dof}",
                     dof_shapes(model, q=q, dq=dq))
        data = jax.jit(bound_data)(model, contact, q, dq)
    d, dx, a1, da1 = (np.asarray(a) for a in data)
    r0, ref_norm = np.asarray(model.qc_r0_m), np.asarray(model.qc_ref_norm)
    radius, gamma = float(contact.radius_m), float(contact.gamma)
    eps0 = eps_lower_bound(0.0, d, dx, a1, da1, r0, ref_norm, radius, gamma)
    target = delta_bar * eps0

    def ok(delta):
        return eps_lower_bound(delta, d, dx, a1, da1, r0, ref_norm, radius, gamma) >= target

    if np.all(ok(1.0)):
        return 1.0, (-1, -1)
    lo = admissible_fractions(ok, d.shape, n_bisect)
    worst = np.unravel_index(np.argmin(lo), lo.shape)
    return float(lo[worst]), (int(worst[0]), int(worst[1]))


def admissible_fractions(ok, shape, n_bisect: int) -> np.ndarray:
    """Per entry of `shape`, the largest delta in [0, 1] with ok(delta) True there, by a
    vectorised bisection (n_bisect halvings); ok maps a scalar or an array of deltas of that
    shape to a bool array of that shape. Used by the safeguards of one fiber and of systems."""
    lo, hi = np.zeros(shape), np.ones(shape)
    fine = ok(hi)
    lo[fine] = 1.0
    for _ in range(n_bisect):
        mid = 0.5 * (lo + hi)
        good = ok(mid)
        lo = np.where(good, mid, lo)
        hi = np.where(good | fine, hi, mid)
    return lo
