"""Hermite elements, quadrature, material law, mass matrix and the exact tangent of one fiber.

References outside our code: polynomial calculus (Gauss exactness, cubic interpolation), the
closed forms of an incompressible bar in uniaxial tension (neo-Hooke N = A_0 mu (lambda -
lambda^-2), Trouton's viscous stress 3 eta lambda_dot / lambda, Cauchy stress times current area
A_0 / lambda), the rigid-body mass rho pi r_0^2 L, and central finite differences of the
residual for the tangent.
"""

import math
import re

import jax.numpy as jnp
import numpy as np
import pytest

from myotwin import fiber
from myotwin.fiber import hermite
from myotwin.fiber.assembly import residual_only
from myotwin.fiber.material import axial_force, force_stretch


def test_gauss_legendre_exact_to_degree_2n_minus_1():
    # integral_0^1 xi^k = 1/(k+1) exactly (round-off 1e-14) for k <= 2n-1; degree 2n is not
    # (its error falls from 8.3e-2 at n = 1 to 1.4e-6 at n = 5; checked for n <= 4).
    for n in range(1, 9):
        xi, w = fiber.gauss_legendre(n)
        for k in range(2 * n):
            assert np.sum(w * xi**k) == pytest.approx(1.0 / (k + 1), abs=1e-14), (n, k)
        if n <= 4:
            assert abs(np.sum(w * xi ** (2 * n)) - 1.0 / (2 * n + 1)) > 1e-6, n


def test_hermite_interpolates_cubics_exactly():
    # A cubic curve is reproduced exactly from nodal positions and d/dtheta (Eq. 52-53) on a
    # non-uniform mesh; round-off only (1e-14).
    coeff = np.array([[0.3, -1.0, 2.0], [1.2, 0.5, -0.7], [-0.4, 2.0, 0.1], [0.9, -0.3, 0.6]])
    curve = lambda t: coeff[0] + t * coeff[1] + t**2 * coeff[2] + t**3 * coeff[3]  # noqa: E731
    dcurve = lambda t: coeff[1] + 2 * t * coeff[2] + 3 * t**2 * coeff[3]  # noqa: E731
    nodes = np.array([0.0, 0.15, 0.5, 0.55, 1.0])
    q = np.concatenate([np.stack([curve(t) for t in nodes]),
                        np.stack([dcurve(t) for t in nodes])], axis=1).reshape(-1)
    theta = np.linspace(0, 1, 37)
    x, xt = fiber.evaluate(q, nodes, theta)
    np.testing.assert_allclose(x, np.stack([curve(t) for t in theta]), atol=1e-14)
    np.testing.assert_allclose(xt, np.stack([dcurve(t) for t in theta]), atol=1e-13)


def test_uniaxial_forces_match_incompressible_bar_closed_forms():
    # Reference length L = 2.5 m (|A_1| = L) to exercise the 1/|A_1|^2 scaling of Eq. (30).
    mat = fiber.table1_material(sigma0_Pa=250.0)
    L, r0, lam, lam_dot, alpha = 2.5, 0.03, 1.37, 0.8, 0.6
    area0 = math.pi * r0**2
    a1 = np.array([0.0, L * lam, 0.0])
    a1_dot = np.array([0.0, L * lam_dot, 0.0])
    for gamma, mu, eta in ((1.0, 1e5, 1e3), (0.0, 1e6, 1e4)):
        s11 = fiber.stress_s11(mat, gamma, alpha, jnp.asarray(a1), jnp.asarray(a1_dot), L)
        n = float(axial_force(s11, r0, jnp.asarray(a1), L))
        bell = math.exp(-(abs((lam / 1.3 - 1) / 0.3) ** 4))
        expected = (area0 * mu * (lam - lam**-2)          # neo-Hooke, uniaxial
                    + area0 / lam * 3 * eta * lam_dot / lam  # Trouton x current area
                    + area0 / lam * gamma * alpha * 3e5 * bell  # active Cauchy x area
                    + area0 / lam * 250.0)                    # prestress Cauchy x area
        assert n == pytest.approx(expected, rel=1e-13), f"axial force, gamma_M = {gamma}"
    r = fiber.radius(r0, jnp.asarray(a1), L)
    assert float(math.pi * r**2 * lam) == pytest.approx(area0, rel=1e-14), "volume (Eq. 21)"


def test_force_stretch_bell_shape():
    mat = fiber.table1_material()
    assert float(force_stretch(mat, 1.3)) == 1.0
    for s in (1 - 0.3, 1 + 0.3):  # |(lambda/lambda_opt - 1)/Delta_W| = 1 -> e^-1
        assert float(force_stretch(mat, 1.3 * s)) == pytest.approx(math.exp(-1), rel=1e-14)


def test_rational_penalty_properties():
    kappa, gamma = 2e5, 8.0
    assert float(fiber.rational_penalty(0.01, kappa, gamma)) == 0.0
    assert float(fiber.rational_penalty(-1 / (2 * gamma), kappa, gamma)) == pytest.approx(
        kappa / gamma, rel=1e-14)  # -kappa g/(1+gamma g) at g = -1/(2 gamma)
    h = 1e-9  # F'(0^-) = -kappa (linear penalty at first contact), truncation O(h kappa gamma)
    assert float(fiber.rational_penalty(-h, kappa, gamma)) / h == pytest.approx(kappa, rel=1e-7)
    assert float(fiber.rational_penalty(-0.999 / gamma, kappa, gamma)) > 100 * kappa / gamma


def test_mass_matrix_carries_the_rigid_mass():
    # u M u for a unit translation is the fiber mass rho pi r0^2 L (r0 varying: the integral
    # of a quadratic in theta, exact with 4 Gauss points); round-off 1e-14.
    L, rho = 0.8, 1060.0
    model = fiber.compile_fiber(fiber.straight_reference([0, 0, 0], [0, 0, L]), 7,
                                r0_m=lambda t: 0.02 + 0.01 * t, gamma_m=0.5,
                                material=fiber.table1_material(), rho_kg_m3=rho)
    mass = fiber.banded_to_dense(fiber.mass_matrix_banded(model), model.n_dof)
    exact = rho * math.pi * L * (0.02**2 + 0.02 * 0.01 + 0.01**2 / 3)
    for axis in range(3):
        u = np.zeros(model.n_dof)
        u[axis::6] = 1.0
        assert u @ mass @ u == pytest.approx(exact, rel=1e-13), f"translation along {axis}"
    np.testing.assert_allclose(mass, mass.T, atol=1e-15)


def test_tangent_matches_central_differences():
    # Every term at once: inertia (1/dt = 50), viscosity, activation on the steep flank of the
    # bell, prestress, varying r0 and gamma_M, non-uniform nodes, contact with 4 of the points
    # penetrating. Step 1e-6: truncation O(h^2 r''') and round-off O(1e-16 |r| / h) both below
    # 1e-7 of the largest entry.
    model = fiber.compile_fiber(
        fiber.straight_reference([0, 0, 0], [1, 0, 0]), 5, r0_m=lambda t: 0.05 + 0.02 * t,
        gamma_m=lambda t: 16 * (1 - t) ** 2 * t**2, material=fiber.table1_material(),
        rho_kg_m3=900.0, node_theta=np.array([0.0, 0.1, 0.35, 0.5, 0.8, 1.0]),
        ends=(fiber.EndCondition.CLAMPED, fiber.EndCondition.FREE), n_qp_contact=3)
    rng = np.random.default_rng(7)
    q = np.asarray(model.ref_q) + 0.05 * rng.standard_normal(model.n_dof)
    q_prev = np.asarray(model.ref_q) + 0.05 * rng.standard_normal(model.n_dof)
    v_prev = rng.standard_normal(model.n_dof)
    contact = fiber.make_cylinder_contact([0.5, 0, -0.16], [0.1, 1, 0], 0.1, 1e5, 1.5)
    gaps = np.asarray(fiber.contact_state(model, contact, q)[0])
    assert np.sum(gaps < 0) >= 4 and np.all(1 + 1.5 * gaps > 0), "contact active, admissible"
    args = (q_prev, v_prev, 50.0, 0.7, jnp.asarray(rng.standard_normal((5, model.n_qp, 3))))
    system = fiber.step_system(model, contact, q, *args)
    k = fiber.banded_to_dense(system.tangent_banded, model.n_dof)
    free = np.flatnonzero(model.free_mask())
    h = 1e-6
    k_fd = np.zeros((model.n_dof, len(free)))
    for col, j in enumerate(free):
        e = np.zeros(model.n_dof)
        e[j] = h
        k_fd[:, col] = (np.asarray(residual_only(model, contact, q + e, *args))
                        - np.asarray(residual_only(model, contact, q - e, *args))) / (2 * h)
    k_free = k[np.ix_(free, free)]
    err = np.max(np.abs(k_free - k_fd[free])) / np.max(np.abs(k_free))
    assert err < 1e-7, f"tangent vs central differences: relative error {err:.2e}"
    fixed = list(model.fixed_dofs)
    assert np.all(np.asarray(system.residual)[fixed] == 0)
    np.testing.assert_array_equal(k[np.ix_(fixed, fixed)], np.eye(len(fixed)))


@pytest.mark.parametrize("kwargs, message", [
    (dict(r0_m=-0.01), "fiber 'bad': r0_m must be > 0, got -0.01 at theta"),
    (dict(gamma_m=1.5), "gamma_m must lie in [0, 1]"),
    (dict(rho_kg_m3=0.0), "rho_kg_m3"),
    (dict(n_qp=0), "Gauss points"),
    (dict(node_theta=np.array([0.0, 0.7, 0.5, 1.0])), "node_theta"),
    # int() truncated 1.7 and 2.9 to (PINNED, CLAMPED), and True was PINNED
    (dict(ends=(1.7, 2.9)), "fiber 'bad': ends must be (start, end), each an EndCondition "
                            "(FREE, PINNED, CLAMPED) or its value [0, 1, 2], got (1.7, 2.9)"),
    (dict(ends=(True, 0)), "got (True, 0)"),
    (dict(ends=(1, 3)), "got (1, 3)"),
    (dict(ends="PP"), "got 'PP'"),
    # a bool is not a number; an array of radii was 'only 0-dimensional arrays can be converted'
    (dict(rho_kg_m3=True), "fiber 'bad': rho_kg_m3 = True must be a finite number > 0"),
    (dict(r0_m=True), "fiber 'bad': r0_m must be a number or a callable of theta, got True"),
    (dict(gamma_m=False), "fiber 'bad': gamma_m must be a number or a callable of theta, got "
                          "False"),
    (dict(r0_m=np.array([0.05, 0.06])), "fiber 'bad': r0_m must be a number or a callable of "
                                        "theta, got array([0.05, 0.06])"),
])
def test_compile_rejects_bad_input(kwargs, message):
    base = dict(r0_m=0.05, gamma_m=1.0, material=fiber.table1_material(), rho_kg_m3=900.0)
    base.update(kwargs)
    with pytest.raises(ValueError, match=re.escape(message)):
        fiber.compile_fiber(fiber.straight_reference([0, 0, 0], [1, 0, 0]), 3,
                            name="bad", **base)


@pytest.mark.parametrize("n_elements", [True, 2.0, 0])
def test_compile_rejects_an_element_count_that_is_not_a_positive_integer(n_elements):
    """True is an int in Python (it compiled one element), and 2.0 is no count."""
    with pytest.raises(ValueError, match=r"fiber 'bad': n_elements must be an integer >= 1, "
                                         rf"got {n_elements!r}$"):
        fiber.compile_fiber(fiber.straight_reference([0, 0, 0], [1, 0, 0]), n_elements,
                            name="bad", r0_m=0.05, gamma_m=1.0,
                            material=fiber.table1_material(), rho_kg_m3=900.0)
    with pytest.raises(ValueError, match="number of Gauss points must be an integer >= 1"):
        fiber.gauss_legendre(n_elements)


def test_material_and_cylinder_reject_bad_values():
    with pytest.raises(ValueError, match="lambda_opt"):
        fiber.table1_material(lambda_opt=0.0)
    with pytest.raises(ValueError, match="nu"):
        fiber.table1_material(nu=0.5)
    with pytest.raises(ValueError, match="eta_muscle_Pa_s = nan"):
        fiber.table1_material(eta_muscle_Pa_s=float("nan"))
    with pytest.raises(ValueError, match="axis"):
        fiber.make_cylinder_contact([0, 0, 0], [0, 0, 0], 0.1, 1e5, 1.0)
    with pytest.raises(ValueError, match="kappa_N_per_m"):
        fiber.make_cylinder_contact([0, 0, 0], [0, 1, 0], 0.1, -1.0, 1.0)
    # a bool is not a number (True was 1.0), and a material that is none compiled and failed
    # later with an AttributeError
    with pytest.raises(ValueError, match=r"^cable material: nu = True must be a finite number "
                                         r">= 1.0$"):
        fiber.table1_material(nu=True)
    with pytest.raises(ValueError, match=r"^cylinder 'cylinder': radius_m = True must be a "
                                         r"finite number > 0$"):
        fiber.make_cylinder_contact([0, 0, 0], [0, 1, 0], True, 1e5, 1.0)
    with pytest.raises(ValueError, match=r"^bone cylinder 'bone': gamma = True must be finite"):
        fiber.make_bone_cylinder([0, 0, 0], [0, 1, 0], 0.01, 1e4, True)
    with pytest.raises(ValueError, match=r"^bone cylinder 'bone': body must be an integer >= 0 "
                                         r"\(a skeleton body index, 0 = world\), got True$"):
        fiber.make_bone_cylinder([0, 0, 0], [0, 1, 0], 0.01, 1e4, 10.0, body=True)
    with pytest.raises(ValueError, match=r"^fiber contact: kappa_N_per_m = True must be"):
        fiber.make_fiber_contact_law(True, 5.0)
    for material, kind in ((None, "NoneType"), ({"nu": 4.0}, "dict")):
        with pytest.raises(TypeError, match=rf"^fiber 'bad': material must be a CableMaterial "
                                            rf"\(make_material or table1_material\), got "
                                            rf"{kind}$"):
            fiber.compile_fiber(fiber.straight_reference([0, 0, 0], [1, 0, 0]), 2, r0_m=0.05,
                                gamma_m=1.0, material=material, rho_kg_m3=900.0, name="bad")


def test_gravity_and_step_count_are_checked():
    """A gravity of 2 or 5 components gave line forces of that many (a (8, 4, 2) array), a NaN
    one NaN forces, and a negative step count NumPy's 'negative dimensions are not allowed'."""
    model = fiber.compile_fiber(fiber.straight_reference([0, 0, 0], [1, 0, 0]), 2,
                                r0_m=0.05, gamma_m=1.0, material=fiber.table1_material(),
                                rho_kg_m3=900.0)
    for bad in ([0.0, -9.81], [1, 2, 3, 4, 5], [0.0, 0.0, np.nan]):
        with pytest.raises(ValueError, match=r"fiber '.*': gravity_m_s2 must be 3 finite "
                                             r"numbers \(m/s\^2\), got"):
            fiber.gravity_line_force(model, bad)
    loads = fiber.FiberLoads(0.0, fiber.gravity_line_force(model, [0, 0, -9.81]))
    state = fiber.FiberState(model.ref_q, 0 * model.ref_q)
    for bad in (-2, 2.5, True):
        with pytest.raises(ValueError, match=f"n_steps must be an integer >= 0, got {bad!r}"):
            fiber.simulate(model, state, 0.0, 0.01, bad, lambda t: loads)
    empty = fiber.simulate(model, state, 0.0, 0.01, 0, lambda t: loads)
    np.testing.assert_array_equal(empty.q, np.asarray(model.ref_q)[None])


@pytest.mark.parametrize("kwargs, message", [
    (dict(max_iter=0), "max_iter must be an integer >= 1, got 0"),
    (dict(max_iter=2.5), "max_iter must be an integer >= 1, got 2.5"),
    (dict(max_iter=True), "max_iter must be an integer >= 1, got True"),
    (dict(max_backtrack=-1), "max_backtrack must be an integer >= 0, got -1"),
    (dict(max_backtrack=2.5), "max_backtrack must be an integer >= 0, got 2.5"),
    (dict(rtol=np.inf), "rtol = inf must be a number finite and > 0"),
    (dict(rtol=True), "rtol = True must be a number finite and > 0"),
    (dict(xtol=-1e-9), "xtol = -1e-09 must be a number finite and >= 0"),
    (dict(xtol=np.nan), "xtol = nan must be a number finite and >= 0"),
    (dict(delta_bar=1.0), "delta_bar = 1.0 must be a number in (0, 1)"),
    (dict(delta_bar=True), "delta_bar = True must be a number in (0, 1)"),
    (dict(safeguard=1), "safeguard must be True or False, got 1"),
    (dict(line_search="no"), "line_search must be True or False, got 'no'"),
])
def test_newton_options_check_their_fields(kwargs, message):
    """A max_backtrack of -1 was an UnboundLocalError ('q_try') in the first Newton step, 2.5 a
    TypeError from range(), and rtol = inf 'converged' at once with any residual."""
    with pytest.raises(ValueError, match=rf"^NewtonOptions: {re.escape(message)}$"):
        fiber.NewtonOptions(**kwargs)
    fiber.NewtonOptions(max_iter=np.int64(3), max_backtrack=0, xtol=0.0, safeguard=np.True_)


def test_non_finite_times_states_and_loads_are_refused_before_newton():
    """A dt_s of inf, a NaN time, a NaN in the state, the line force or the fixed values were
    FiberDivergenceErrors ('non-finite residual ... after 0 Newton iterations'), and a NaN t0_s
    ran a NaN time axis."""
    model = fiber.compile_fiber(fiber.straight_reference([0, 0, 0], [1, 0, 0]), 2,
                                r0_m=0.05, gamma_m=1.0, material=fiber.table1_material(),
                                rho_kg_m3=900.0)
    loads = fiber.FiberLoads(0.0, fiber.gravity_line_force(model, [0, 0, -9.81]))
    state = fiber.FiberState(model.ref_q, 0 * model.ref_q)
    line = np.array(loads.line_force)
    line[1, 2, 0] = np.nan
    fixed = np.asarray(model.ref_q)[list(model.fixed_dofs)]
    fixed[4] = np.inf
    q = np.array(model.ref_q)
    q[7] = np.nan
    for call, message in [
        (lambda: fiber.step(model, state, 0.01, np.inf, loads), "dt_s = inf must be a finite "
                                                                "number > 0"),
        (lambda: fiber.step(model, state, 0.01, True, loads), "dt_s = True must be a finite "
                                                              "number > 0"),
        (lambda: fiber.step(model, state, np.nan, 0.01, loads), "time_s = nan must be a finite "
                                                                "number"),
        (lambda: fiber.step(model, state, 0.01, 0.01, loads._replace(line_force=line)),
         "line_force[1, 2, 0] = nan must be finite"),
        (lambda: fiber.step(model, state, 0.01, 0.01, loads._replace(fixed_values=fixed)),
         "fixed_values[4] = inf must be finite"),
        (lambda: fiber.step(model, state._replace(q=q), 0.01, 0.01, loads),
         "state.q[7] = nan must be finite"),
        (lambda: fiber.step(model, state._replace(v=state.v - np.inf), 0.01, 0.01,
                            loads), "state.v[0] = -inf must be finite"),
        (lambda: fiber.solve_static(model, q, loads), "q0[7] = nan must be finite"),
        (lambda: fiber.simulate(model, state, np.nan, 0.01, 2, lambda t: loads),
         "t0_s = nan must be a finite number"),
    ]:
        with pytest.raises(ValueError, match=rf"^fiber 'fiber': {re.escape(message)}$"):
            call()


def _two_element_fiber():
    """(model 'f' of 2 elements, n_dof = 18; a contact cylinder; its reference q)."""
    model = fiber.compile_fiber(fiber.straight_reference([0, 0, 0], [1, 0, 0]), 2,
                                r0_m=0.05, gamma_m=1.0, material=fiber.table1_material(),
                                rho_kg_m3=900.0, name="f")
    cyl = fiber.make_cylinder_contact([0.5, 0, 0], [0, 1, 0], 0.1, 1e6, 10.0)
    return model, cyl, np.asarray(model.ref_q)


def test_dof_vectors_of_the_wrong_length_are_refused():
    """JAX clamps gather indices: a q 6 entries short or twice as long gave silent garbage."""
    model, cyl, q = _two_element_fiber()
    short, long = q[:-6], np.concatenate([q, q])
    line = np.zeros((model.n_el, model.n_qp, 3))
    what = r"\(fiber 'f': n_dof = 18"
    for call, message in [
        (lambda: fiber.axial_force_at_quadrature(model, short, 0 * short, 0.0),
         r"axial_force_at_quadrature: q has shape \(12,\), expected \(18,\) " + what),
        (lambda: fiber.axial_force_at_quadrature(model, q, 0 * short, 0.0),
         r"axial_force_at_quadrature: v has shape \(12,\), expected \(18,\) " + what),
        (lambda: fiber.contact_state(model, cyl, jnp.asarray(long)),
         r"contact_state: q has shape \(36,\), expected \(18,\) " + what),
        (lambda: fiber.step_system(model, None, q, q, short, 10.0, 0.0, line),
         r"step_system: v_prev has shape \(12,\), expected \(18,\) " + what),
        (lambda: fiber.step_system(model, None, q, q, q, 10.0, 0.0, line[:, :2]),
         r"step_system: line_force has shape \(2, 2, 3\), expected \(2, 4, 3\) " + what),
        (lambda: fiber.safeguard_fraction(model, cyl, q, long, 0.1),
         r"safeguard_fraction: dq has shape \(36,\), expected \(18,\) " + what),
        (lambda: fiber.evaluate(short, model.node_theta, [0.5]),
         r"evaluate: q has shape \(12,\), expected \(\.\.\., 18\) \(6 per node of the 3 "
         r"in node_theta\)"),
    ]:
        with pytest.raises(ValueError, match=rf"^{message}"):
            call()


def test_dof_vectors_hold_numbers():
    """A bool q computed as 0 and 1; a string one was jax.jit's TypeError about abstract arrays
    and static_argnums (step_system, contact_state) or NumPy's (axial_force_at_quadrature)."""
    model, cyl, q = _two_element_fiber()
    line = np.zeros((model.n_el, model.n_qp, 3))
    text, flags = [str(x) for x in q], np.zeros(model.n_dof, dtype=bool)
    for call, message in [
        (lambda: fiber.step_system(model, None, text, q, q, 10.0, 0.0, line),
         f"step_system: q must be numbers, got {text!r}"),
        (lambda: fiber.step_system(model, None, q, q, q, "10", 0.0, line),
         "step_system: inv_dt must be numbers, got '10'"),
        (lambda: fiber.contact_state(model, cyl, text),
         f"contact_state: q must be numbers, got {text!r}"),
        (lambda: fiber.contact_state(model, cyl, flags),
         "contact_state: q must be numbers, got a traced bool array of shape (18,)"),
        (lambda: fiber.axial_force_at_quadrature(model, q, flags, 0.0),
         "axial_force_at_quadrature: v must be numbers, got array([False, False"),
        (lambda: fiber.safeguard_fraction(model, cyl, q, text, 0.1),
         f"safeguard_fraction: dq must be numbers, got {text!r}"),
    ]:
        with pytest.raises(ValueError, match=f"^{re.escape(message)}"):
            call()


def test_band_storage_matches_dense_assembly():
    # Banded scatter vs a dense scatter of the same element matrices (pure index check).
    model = fiber.compile_fiber(fiber.straight_reference([0, 0, 0], [1, 0, 0]), 3,
                                r0_m=0.05, gamma_m=1.0, material=fiber.table1_material(),
                                rho_kg_m3=900.0)
    k_e = np.random.default_rng(3).standard_normal((3, 12, 12))
    dense = np.zeros((model.n_dof, model.n_dof))
    for e, idx in enumerate(hermite.element_dof_index(3)):
        dense[np.ix_(idx, idx)] += k_e[e]
    ab = fiber.cable.assemble_banded(model, jnp.asarray(k_e))
    np.testing.assert_array_equal(fiber.banded_to_dense(ab, model.n_dof), dense)
