"""One fiber (cable) muscle: the compiled `FiberModel` pytree and its element forces.

Gfrerer & Simeon 2021, Secs. 2.3 and 4.1. Weak form of one fiber (Eq. 38), per element and
discretised by Gauss quadrature in theta:

  integral  [ A_0 S^11 a_1 . xi' + (rho A_0 x_tt - b) . xi ] |A_1| dtheta  = contact + ends,

with A_0 = pi r_0(theta)^2, S^11 from `material.stress_s11`, xi' = d xi / dtheta and b the
external *line* force per unit reference length (N/m; the seed's b_z = -1000 N/m of Sec. 5.2,
equal to A_0 b_0 for a body force b_0 per reference volume). Integration is over the reference
arc length dS = |A_1| dtheta, consistent with the pre-integration of Eq. (38) over the
undeformed cross-section. This fixes the signs of Eqs. (54)-(57), which are not consistent in our
copy: here every element returns "inertia + internal - external" so that the discrete equation
of motion is  M a + f_int(q, v) - f_ext = 0.
Mass matrix (Eq. 55): M = integral rho A_0 N^T N |A_1| dtheta, consistent and constant; it is
never stored -- its action is evaluated per element from the current leaves (rho, r_0) so that
gradients reach them.

Dofs: see `hermite` (6 per node: position, then dx/dtheta). Boundary conditions per end:
FREE, PINNED (position fixed or prescribed; the tangent is free, so no moment -- a cable has no
bending stiffness anyway) or CLAMPED (position and tangent). Prescribed end motion is given per
step as the values of the fixed dofs (`time_stepping.FiberLoads.fixed_values`).
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.fiber import hermite
from myotwin.fiber.material import CableMaterial, axial_force, stress_s11
from myotwin.scalars import as_real, is_integer, require_real_numbers

_STATIC = {"static": True}


class EndCondition(enum.IntEnum):
    """Boundary condition at one end of a fiber."""

    FREE = 0
    PINNED = 1  # position fixed (or prescribed)
    CLAMPED = 2  # position and tangent dx/dtheta fixed (or prescribed)


@dataclasses.dataclass(frozen=True)
class FiberModel:
    """Immutable discretised fiber (a JAX pytree). Shapes in model terms:

    Leaves (float64): node_theta (n_node,) element boundaries in theta; ref_q (n_dof,) reference
    centreline X in Hermite dofs (stress-free state); rho_kg_m3 density; material
    (`CableMaterial`); for the bulk quadrature (n_qp points per element): qp_xi, qp_w (n_qp,)
    on [0, 1], qp_phi, qp_dphi (n_qp, 4), qp_theta, qp_ref_norm (= |A_1|), qp_r0_m,
    qp_gamma_m (n_el, n_qp); the same for the contact quadrature (n_qp_contact points): qc_*.
    Static: name, n_el, n_qp, n_qp_contact, ends (start, end) `EndCondition` values and
    fixed_dofs (sorted global dof indices held by the boundary conditions).
    """

    node_theta: jax.Array
    ref_q: jax.Array
    rho_kg_m3: jax.Array
    material: CableMaterial
    qp_xi: jax.Array
    qp_w: jax.Array
    qp_phi: jax.Array
    qp_dphi: jax.Array
    qp_theta: jax.Array
    qp_ref_norm: jax.Array
    qp_r0_m: jax.Array
    qp_gamma_m: jax.Array
    qc_xi: jax.Array
    qc_w: jax.Array
    qc_phi: jax.Array
    qc_dphi: jax.Array
    qc_theta: jax.Array
    qc_ref_norm: jax.Array
    qc_r0_m: jax.Array
    name: str = dataclasses.field(metadata=_STATIC)
    n_el: int = dataclasses.field(metadata=_STATIC)
    n_qp: int = dataclasses.field(metadata=_STATIC)
    n_qp_contact: int = dataclasses.field(metadata=_STATIC)
    ends: tuple[int, int] = dataclasses.field(metadata=_STATIC)
    fixed_dofs: tuple[int, ...] = dataclasses.field(metadata=_STATIC)

    @property
    def n_node(self) -> int:
        return self.n_el + 1

    @property
    def n_dof(self) -> int:
        return hermite.DOF_PER_NODE * (self.n_el + 1)

    def free_mask(self) -> np.ndarray:
        """(n_dof,) bool: True for dofs not held by a boundary condition."""
        mask = np.ones(self.n_dof, dtype=bool)
        mask[list(self.fixed_dofs)] = False
        return mask


jax.tree_util.register_dataclass(
    FiberModel,
    data_fields=[f.name for f in dataclasses.fields(FiberModel) if not f.metadata.get("static")],
    meta_fields=[f.name for f in dataclasses.fields(FiberModel) if f.metadata.get("static")])


def check_shapes(function: str, what: str, arrays: dict) -> None:
    """ValueError naming `function`, the argument, its shape and the expected one unless each
    array of `arrays` (name -> (value, expected shape)) has that shape; `what` says what fixes
    it. Unchecked, JAX clamps out-of-range gather indices: a q too short or too long gave
    silent garbage. Shapes are static under jit, so inside a jitted function the check runs
    once per compilation, at trace time (as `engine.arguments.checked`). Each must hold real
    numbers (`scalars.require_real_numbers`: a bool tracer would compute as 0 and 1)."""
    for name, (value, shape) in arrays.items():
        require_real_numbers(function, name, value)
        got = tuple(int(n) for n in np.shape(value))
        if got != tuple(shape):
            raise ValueError(f"{function}: {name} has shape {got}, expected {tuple(shape)} "
                             f"({what})")


def dof_shapes(model: FiberModel, **arrays) -> dict:
    """{name: (value, (n_dof,))} for `check_shapes`."""
    return {name: (value, (model.n_dof,)) for name, value in arrays.items()}


def _fixed_dofs(ends, n_el: int) -> tuple[int, ...]:
    per_end = {EndCondition.FREE: (), EndCondition.PINNED: (0, 1, 2),
               EndCondition.CLAMPED: (0, 1, 2, 3, 4, 5)}
    last = hermite.DOF_PER_NODE * n_el
    return tuple(sorted([d for d in per_end[ends[0]]] + [last + d for d in per_end[ends[1]]]))


def _sample(fiber: str, name: str, value, theta: np.ndarray) -> np.ndarray:
    """A number or a callable of theta (array -> array) evaluated at `theta`, validated finite;
    ValueError naming the fiber and `name` for anything else (an array, a bool)."""
    if not callable(value):
        number = as_real(value)
        if number is None:
            raise ValueError(f"fiber '{fiber}': {name} must be a number or a callable of "
                             f"theta, got {value!r}")
        value = lambda th: np.full_like(th, number)  # noqa: E731
    out = np.asarray(value(theta), dtype=np.float64)
    if out.shape != theta.shape:
        raise ValueError(f"fiber '{fiber}': {name}(theta) must return shape {theta.shape}, got "
                         f"{out.shape}")
    if not np.all(np.isfinite(out)):
        raise ValueError(f"fiber '{fiber}': {name} is not finite at theta = "
                         f"{theta[~np.isfinite(out)][0]:.6g}")
    return out


def _end_conditions(fiber: str, ends) -> tuple[EndCondition, EndCondition]:
    """(start, end) as EndConditions; ValueError naming the fiber unless each is an
    EndCondition or one of their integer values (int() truncated 1.7 to PINNED, and True is
    no condition)."""
    values = [int(e) for e in EndCondition]
    items = None if isinstance(ends, (str, bytes)) else ends
    try:
        items = tuple(items)
    except TypeError:
        items = None
    if items is None or len(items) != 2 or not all(
            is_integer(e) and int(e) in values for e in items):
        raise ValueError(f"fiber '{fiber}': ends must be (start, end), each an EndCondition "
                         f"(FREE, PINNED, CLAMPED) or its value {values}, got {ends!r}")
    return tuple(EndCondition(int(e)) for e in items)


def compile_fiber(
    reference: Callable[[jax.Array], jax.Array],
    n_elements: int,
    *,
    r0_m: float | Callable[[np.ndarray], np.ndarray],
    gamma_m: float | Callable[[np.ndarray], np.ndarray],
    material: CableMaterial,
    rho_kg_m3: float,
    ends: tuple[EndCondition, EndCondition] = (EndCondition.PINNED, EndCondition.PINNED),
    n_qp: int = 4,
    n_qp_contact: int = 5,
    node_theta: np.ndarray | None = None,
    name: str = "fiber",
) -> FiberModel:
    """Discretise a fiber into `n_elements` cubic Hermite elements, validated in NumPy.

    reference: X(theta) -> (3,) for scalar theta in [0, 1], JAX-traceable (the nodal tangents
      are its jax.jacfwd); the stress-free state is its Hermite interpolant.
    r0_m, gamma_m: initial radius (m, > 0) and muscle fraction (in [0, 1]) as numbers or
      vectorised callables of theta. rho_kg_m3 > 0. A bool is not a number. material: a
      `CableMaterial` (TypeError otherwise). ends: (start, end) conditions, each an
      `EndCondition` or its integer value (1.7 or True are refused, not truncated).
    n_qp: Gauss points per element for mass, stress and loads; n_qp_contact for contact.
    node_theta: optional increasing element boundaries from 0 to 1 (default uniform).
    Raises ValueError naming the offending argument and value.
    """
    if not is_integer(n_elements) or n_elements < 1:
        raise ValueError(f"fiber '{name}': n_elements must be an integer >= 1, got {n_elements!r}")
    rho = as_real(rho_kg_m3)
    if rho is None or not (math.isfinite(rho) and rho > 0):
        raise ValueError(f"fiber '{name}': rho_kg_m3 = {rho_kg_m3!r} must be a finite number "
                         f"> 0")
    if not isinstance(material, CableMaterial):
        raise TypeError(f"fiber '{name}': material must be a CableMaterial (make_material or "
                        f"table1_material), got {type(material).__name__}")
    ends = _end_conditions(name, ends)
    if node_theta is None:
        node_theta = np.linspace(0.0, 1.0, n_elements + 1)
    node_theta = np.asarray(node_theta, dtype=np.float64)
    if (node_theta.shape != (n_elements + 1,) or node_theta[0] != 0.0 or node_theta[-1] != 1.0
            or np.any(np.diff(node_theta) <= 0)):
        raise ValueError(f"fiber '{name}': node_theta must increase strictly from 0 to 1 with "
                         f"n_elements + 1 = {n_elements + 1} entries")
    ref_x, ref_t = jax.jit(jax.vmap(lambda th: (reference(th), jax.jacfwd(reference)(th))))(
        jnp.asarray(node_theta))
    ref_x, ref_t = np.asarray(ref_x, np.float64), np.asarray(ref_t, np.float64)
    if ref_x.shape != (n_elements + 1, 3) or not np.all(np.isfinite(ref_x)) \
            or not np.all(np.isfinite(ref_t)):
        raise ValueError(f"fiber '{name}': reference(theta) must return finite (3,) positions")
    ref_q = np.concatenate([ref_x, ref_t], axis=1).reshape(-1)
    h = np.diff(node_theta)
    tables = {}
    for key, n in (("qp", n_qp), ("qc", n_qp_contact)):
        xi, w = hermite.gauss_legendre(n)
        phi, dphi = hermite.shape_functions(xi), hermite.shape_derivatives(xi)
        theta = node_theta[:-1, None] + h[:, None] * xi[None, :]
        _, a1 = hermite.evaluate(ref_q, node_theta, theta.reshape(-1))
        ref_norm = np.linalg.norm(a1, axis=-1).reshape(theta.shape)
        if np.any(ref_norm <= 0.0):
            raise ValueError(f"fiber '{name}': reference tangent |A_1| vanishes at theta = "
                             f"{theta[ref_norm <= 0][0]:.6g}")
        r0 = _sample(name, "r0_m", r0_m, theta)
        if np.any(r0 <= 0):
            raise ValueError(f"fiber '{name}': r0_m must be > 0, got "
                             f"{float(r0[r0 <= 0][0])!r} at theta = {theta[r0 <= 0][0]:.6g}")
        tables[key] = dict(xi=xi, w=w, phi=phi, dphi=dphi, theta=theta, ref_norm=ref_norm, r0=r0)
        if key == "qp":
            gm = _sample(name, "gamma_m", gamma_m, theta)
            bad = (gm < 0) | (gm > 1)
            if np.any(bad):
                raise ValueError(f"fiber '{name}': gamma_m must lie in [0, 1], got "
                                 f"{gm[bad][0]!r} at theta = {theta[bad][0]:.6g}")
            tables[key]["gamma"] = gm
    f64 = lambda a: jnp.asarray(a, dtype=jnp.float64)  # noqa: E731
    qp, qc = tables["qp"], tables["qc"]
    return FiberModel(
        node_theta=f64(node_theta), ref_q=f64(ref_q), rho_kg_m3=f64(rho),
        material=material,
        qp_xi=f64(qp["xi"]), qp_w=f64(qp["w"]), qp_phi=f64(qp["phi"]), qp_dphi=f64(qp["dphi"]),
        qp_theta=f64(qp["theta"]), qp_ref_norm=f64(qp["ref_norm"]), qp_r0_m=f64(qp["r0"]),
        qp_gamma_m=f64(qp["gamma"]),
        qc_xi=f64(qc["xi"]), qc_w=f64(qc["w"]), qc_phi=f64(qc["phi"]), qc_dphi=f64(qc["dphi"]),
        qc_theta=f64(qc["theta"]), qc_ref_norm=f64(qc["ref_norm"]), qc_r0_m=f64(qc["r0"]),
        name=str(name), n_el=int(n_elements), n_qp=int(n_qp), n_qp_contact=int(n_qp_contact),
        ends=(int(ends[0]), int(ends[1])), fixed_dofs=_fixed_dofs(ends, int(n_elements)),
    )


def straight_reference(start_m, end_m) -> Callable[[jax.Array], jax.Array]:
    """X(theta) = start + theta (end - start): a straight stress-free fiber."""
    p0, p1 = jnp.asarray(start_m, jnp.float64), jnp.asarray(end_m, jnp.float64)
    return lambda theta: p0 + theta * (p1 - p0)


def element_h(model: FiberModel) -> jax.Array:
    """Element lengths in theta (n_el,)."""
    return model.node_theta[1:] - model.node_theta[:-1]


def element_forces(model: FiberModel, q_e, v_e, a_e, h, ref_norm, r0, gamma, alpha, line_force):
    """Generalised forces of one element on its 12 dofs (Eqs. 38, 55-57), each (12,).

    q_e, v_e, a_e (12,): dofs, their velocities and accelerations; h: element length in theta;
    ref_norm, r0, gamma (n_qp,): |A_1|, r_0 and gamma_M at the bulk quadrature points; alpha:
    activation; line_force (n_qp, 3): external line force per reference length (N/m).
    Returns (inertia, internal, external): M_e a_e, f_int,e (stress), f_ext,e (line force).
    """
    phi, dphi, w = model.qp_phi, model.qp_dphi, model.qp_w
    area0 = math.pi * r0**2
    _, a1 = hermite.interpolate(q_e, h, phi, dphi)
    _, a1_dot = hermite.interpolate(v_e, h, phi, dphi)
    acc, _ = hermite.interpolate(a_e, h, phi, dphi)
    s11 = stress_s11(model.material, gamma, alpha, a1, a1_dot, ref_norm)
    zero = jnp.zeros_like(a1)
    dS = ref_norm[:, None]  # reference arc length per unit theta
    internal = hermite.gather_virtual_work(zero, (area0 * s11)[:, None] * a1 * dS,
                                           h, phi, dphi, w)
    inertia = hermite.gather_virtual_work((model.rho_kg_m3 * area0)[:, None] * acc * dS, zero,
                                          h, phi, dphi, w)
    external = hermite.gather_virtual_work(line_force * dS, zero, h, phi, dphi, w)
    return inertia, internal, external


def per_element(model: FiberModel, q) -> jax.Array:
    """Gather global dofs (n_dof,) (or (..., n_dof)) into element dofs (n_el, 12)."""
    return jnp.asarray(q)[..., hermite.element_dof_index(model.n_el)]


def assemble_vector(model: FiberModel, r_e) -> jax.Array:
    """Scatter-add element vectors (n_el, 12) into a global vector (n_dof,)."""
    idx = hermite.element_dof_index(model.n_el)
    return jnp.zeros(model.n_dof, r_e.dtype).at[idx].add(r_e)


def assemble_banded(model: FiberModel, k_e) -> jax.Array:
    """Scatter-add element matrices (n_el, 12, 12) into LAPACK band storage (23, n_dof).

    ab[BANDWIDTH + i - j, j] = K[i, j] (scipy.linalg.solve_banded layout with l = u = 11).
    """
    bw = hermite.BANDWIDTH
    a = np.arange(hermite.DOF_PER_ELEMENT)
    rows = np.broadcast_to(bw + a[:, None] - a[None, :], (model.n_el, 12, 12))
    cols = hermite.element_dof_index(model.n_el)[:, None, :] + 0 * a[:, None]
    return jnp.zeros((2 * bw + 1, model.n_dof), k_e.dtype).at[rows, cols].add(k_e)


def banded_to_dense(ab, n_dof: int) -> np.ndarray:
    """Dense (n_dof, n_dof) matrix of band storage (23, n_dof) (for tests and small problems)."""
    ab = np.asarray(ab)
    bw = hermite.BANDWIDTH
    dense = np.zeros((n_dof, n_dof))
    for j in range(n_dof):
        for i in range(max(0, j - bw), min(n_dof, j + bw + 1)):
            dense[i, j] = ab[bw + i - j, j]
    return dense


@jax.jit
def mass_matrix_banded(model: FiberModel) -> jax.Array:
    """Consistent mass matrix (Eq. 55) in band storage (23, n_dof), in kg (or kg m per theta)."""
    zero = jnp.zeros(hermite.DOF_PER_ELEMENT)

    def m_e(q_e, h, ref_norm, r0, gamma):
        def inertia(a_e):
            return element_forces(model, q_e, zero, a_e, h, ref_norm, r0, gamma, 0.0,
                                  jnp.zeros((model.n_qp, 3)))[0]
        return jax.jacfwd(inertia)(zero)

    k_e = jax.vmap(m_e)(per_element(model, model.ref_q), element_h(model), model.qp_ref_norm,
                        model.qp_r0_m, model.qp_gamma_m)
    return assemble_banded(model, k_e)


def gravity_line_force(model: FiberModel, gravity_m_s2) -> jax.Array:
    """Line force of gravity rho A_0 g at the bulk quadrature points (n_el, n_qp, 3), N/m.
    gravity_m_s2: 3 numbers (m/s^2); a concrete value must be finite."""
    g = jnp.asarray(gravity_m_s2, jnp.float64)
    if g.shape != (3,) or (not isinstance(g, jax.core.Tracer)
                           and not bool(jnp.all(jnp.isfinite(g)))):
        raise ValueError(f"fiber '{model.name}': gravity_m_s2 must be 3 finite numbers (m/s^2), "
                         f"got {np.asarray(g).tolist() if g.size < 10 else g.shape}")
    area0 = math.pi * model.qp_r0_m**2
    return (model.rho_kg_m3 * area0)[..., None] * g


def line_force_at_quadrature(model: FiberModel, b: Callable[[np.ndarray], np.ndarray]):
    """A line force b(theta) -> (n, 3) (N per reference metre) sampled at the bulk quadrature
    points: (n_el, n_qp, 3), the `FiberLoads.line_force` layout. Call it per time for b(theta, t).
    """
    theta = np.asarray(model.qp_theta).reshape(-1)
    out = np.asarray(b(theta), dtype=np.float64)
    if out.shape != (theta.size, 3) or not np.all(np.isfinite(out)):
        raise ValueError(f"fiber '{model.name}': line force b(theta) must return finite "
                         f"({theta.size}, 3) values, got shape {out.shape}")
    return out.reshape(model.n_el, model.n_qp, 3)


def axial_force_at_quadrature(model: FiberModel, q, v, alpha) -> jax.Array:
    """Axial force N (n_el, n_qp) in N (tension > 0) at the bulk quadrature points.
    q, v (n_dof,) (ValueError naming the argument otherwise)."""
    check_shapes("axial_force_at_quadrature", f"fiber '{model.name}': n_dof = {model.n_dof}",
                 dof_shapes(model, q=q, v=v))
    def one(q_e, v_e, h, ref_norm, r0, gamma):
        _, a1 = hermite.interpolate(q_e, h, model.qp_phi, model.qp_dphi)
        _, a1_dot = hermite.interpolate(v_e, h, model.qp_phi, model.qp_dphi)
        s11 = stress_s11(model.material, gamma, alpha, a1, a1_dot, ref_norm)
        return axial_force(s11, r0, a1, ref_norm)

    return jax.vmap(one)(per_element(model, q), per_element(model, v), element_h(model),
                         model.qp_ref_norm, model.qp_r0_m, model.qp_gamma_m)
