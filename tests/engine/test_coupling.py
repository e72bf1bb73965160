"""Coupled coordinates (engine/coupling.py) against a closed-form Lagrangian.

A body slides along world x by s = b theta^2 and turns by theta about z (one reduced
coordinate theta, two engine dofs: a slide then a hinge, as an OpenSim knee's spline
translation then its rotation). Its COM, at distance r from the hinge, is at
(b theta^2 + r cos theta, r sin theta); with gravity -g y the Lagrangian gives

    M(theta) = m ((2 b theta - r sin theta)^2 + r^2 cos^2 theta) + I_zz,
    tau = M theta'' + M'(theta) theta'^2 / 2 + m g r cos theta.

Tolerance 1e-12 relative: both sides are a few float64 operations on O(1) numbers.
"""

import jax
import jax.numpy as jnp
import numpy as np
import mujoco
import pytest

from myotwin import engine
from myotwin.engine import ModelBuilder
from myotwin.engine import coupling as C
from myotwin.engine import coupled_inverse_dynamics, coupled_mass_matrix

M_KG, R_M, IZZ, B, G = 1.7, 0.3, 0.02, 0.4, 9.81


def _quadratic(coefficient: float = B) -> C.PiecewisePolynomial:
    """s = coefficient theta^2 (m, theta in rad)."""
    return C.PiecewisePolynomial(np.zeros(0), np.zeros(1),
                                 np.array([[0.0, 0.0, coefficient]]))


def _model(coefficient: float = B):
    b = ModelBuilder("rack", gravity=(0.0, -G, 0.0), contact=False)
    b.add_body("link", mass=M_KG, com=(R_M, 0.0, 0.0), inertia=(0.01, 0.015, IZZ))
    b.add_joint("link", "slide", name="s", axis=(1.0, 0.0, 0.0))
    b.add_joint("link", "hinge", name="theta", axis=(0.0, 0.0, 1.0))
    model = b.build()
    coupling = C.coordinate_coupling(1, [0, 0], [_quadratic(coefficient), C.identity_polynomial()])
    C.check_coupled_model(model, coupling)
    return model, coupling


def _closed_form(theta, rate, accel, coefficient: float = B):
    def mass(t):
        return (M_KG * ((2 * coefficient * t - R_M * jnp.sin(t)) ** 2 + (R_M * jnp.cos(t)) ** 2)
                + IZZ)
    dmass = jax.grad(mass)(theta)
    return (mass(theta) * accel + 0.5 * dmass * rate ** 2
            + M_KG * G * R_M * jnp.cos(theta)), mass(theta)


@pytest.mark.parametrize("theta, rate, accel", [(0.3, 1.2, -2.0), (-1.1, -0.4, 3.5),
                                                (2.0, 2.5, 0.0)])
def test_coupled_inverse_dynamics_and_mass_match_the_lagrangian(theta, rate, accel):
    model, coupling = _model()
    q, qd, qdd = (jnp.array([v]) for v in (theta, rate, accel))
    tau = coupled_inverse_dynamics(model, coupling, q, qd, qdd)
    mass = coupled_mass_matrix(model, coupling, q)
    tau_ref, mass_ref = _closed_form(theta, rate, accel)
    np.testing.assert_allclose(tau[0], tau_ref, rtol=1e-12, err_msg="tau (N m)")
    np.testing.assert_allclose(mass[0, 0], mass_ref, rtol=1e-12, err_msg="M (kg m^2)")


def test_one_compilation_serves_new_coupling_coefficients():
    """The exported coupled functions are compiled (engine/api.py) with the coupling as an
    argument: the slide's coefficient b = 0.4, 0.6, 0.8 (s = b theta^2) makes one cache entry
    per function, and each result is the Lagrangian's closed form for that b (1e-12)."""
    theta, rate, accel = 0.3, 1.2, -2.0
    coupled_inverse_dynamics.clear_cache()
    coupled_mass_matrix.clear_cache()
    for b in (0.4, 0.6, 0.8):
        model, coupling = _model(b)
        q, qd, qdd = (jnp.array([v]) for v in (theta, rate, accel))
        tau_ref, mass_ref = _closed_form(theta, rate, accel, b)
        np.testing.assert_allclose(coupled_inverse_dynamics(model, coupling, q, qd, qdd)[0],
                                   tau_ref, rtol=1e-12, err_msg=f"tau (N m), b {b}")
        np.testing.assert_allclose(coupled_mass_matrix(model, coupling, q)[0, 0], mass_ref,
                                   rtol=1e-12, err_msg=f"M (kg m^2), b {b}")
    assert coupled_inverse_dynamics._cache_size() == 1
    assert coupled_mass_matrix._cache_size() == 1


def test_full_motion_is_the_time_derivative_of_the_full_positions():
    """qd_f and qdd_f against d/dt of q_f(q(t)) along q(t) = q0 + v t + a t^2 / 2, by
    autodiff of the composition (an independent route: no use of f' or f'')."""
    _, coupling = _model()
    q0, v, a = jnp.array([0.7]), jnp.array([-1.3]), jnp.array([0.9])

    def q_full(t):
        return C.full_positions(coupling, q0 + v * t + 0.5 * a * t ** 2)

    motion = C.full_motion(coupling, q0, v, a)
    np.testing.assert_allclose(motion.qd, jax.jacfwd(q_full)(0.0), rtol=1e-14)
    np.testing.assert_allclose(motion.qdd, jax.jacfwd(jax.jacfwd(q_full))(0.0), rtol=1e-14)


def test_piecewise_pieces_and_derivatives():
    """Piece selection at and between breaks, and the Horner derivatives, against numpy's
    polynomial evaluation of the same coefficients."""
    coeffs = np.array([[1.0, 2.0, 0.0, 0.0], [1.0, 2.0, 3.0, 4.0], [10.0, 2.0, 0.0, 0.0]])
    p = C.PiecewisePolynomial(np.array([0.0, 1.0]), np.array([0.0, 0.0, 1.0]), coeffs)
    coupling = C.coordinate_coupling(1, [0], [p])
    for x, piece in [(-0.5, 0), (0.0, 1), (0.5, 1), (1.0, 2), (1.5, 2)]:
        poly = np.polynomial.Polynomial(coeffs[piece])
        u = x - p.origins[piece]
        value, first, second = C._dof_functions(coupling, jnp.array([x]))
        np.testing.assert_allclose([value[0], first[0], second[0]],
                                   [poly(u), poly.deriv(1)(u), poly.deriv(2)(u)], rtol=1e-15)


def test_reduce_forces_sums_the_dofs_of_one_coordinate():
    _, coupling = _model()
    theta = 0.8
    tau = C.reduce_forces(coupling, jnp.array([theta]), jnp.array([2.0, 3.0]))
    np.testing.assert_allclose(tau, [2.0 * 2 * B * theta + 3.0], rtol=1e-15)


@pytest.mark.parametrize("source, functions, message", [
    ([0, 2], 2, r"sources must be in \[0, 2\)"),
    ([0, 0], 2, r"reduced coordinates \[1\] move no engine dof"),
    ([0], 2, "1 dofs but 2 functions"),
])
def test_bad_coupling_is_refused(source, functions, message):
    with pytest.raises(ValueError, match=message):
        C.coordinate_coupling(2, source, [C.identity_polynomial()] * functions)


@pytest.mark.parametrize("n_reduced, source, message", [
    (1.0, [0, 0], "n_reduced must be an integer, got 1.0"),
    (True, [0, 0], "n_reduced must be an integer, got True"),
    (1, [0.7, 0], r"source must be a list of integers \(one reduced coordinate per engine "
                  r"dof\), got \[0.7, 0\]"),
    (2, [True, 0], r"source must be a list of integers .*, got \[True, 0\]"),
    (1, ["0", 0], r"source must be a list of integers .*, got \['0', 0\]"),
    (1, None, "source must be a list of integers .*, got None"),
])
def test_coupling_counts_and_indices_are_integers(n_reduced, source, message):
    """Before, int() made 0.7 index 0 and True index 1, and n_reduced=True was taken as 1."""
    with pytest.raises(TypeError, match="coordinate_coupling: " + message):
        C.coordinate_coupling(n_reduced, source, [C.identity_polynomial()] * 2)
    with pytest.raises(TypeError, match="functions must be a list of PiecewisePolynomial "
                       r"\(one per engine dof\), got NoneType"):
        C.coordinate_coupling(1, [0, 0], None)


def test_coupled_functions_refuse_a_coupling_that_does_not_fit_the_model():
    """Before, a coupling of 1 dof on the 2-dof model failed in an IndexError from a gather
    inside the trace, and c=None (with q of the model's size) in an AttributeError."""
    model, _ = _model()
    one = C.coordinate_coupling(1, [0], [C.identity_polynomial()])
    q = jnp.array([0.1])
    moves = "the coupling c moves 1 engine dofs but the model has n_q = 2, n_v = 2"
    with pytest.raises(ValueError, match="coupled_mass_matrix: " + moves):
        coupled_mass_matrix(model, one, q)
    with pytest.raises(ValueError, match="coupled_inverse_dynamics: " + moves):
        coupled_inverse_dynamics(model, one, q, q, q)
    with pytest.raises(ValueError, match="coupled_forward_dynamics: " + moves):
        engine.coupled_forward_dynamics(model, one, q, q, jnp.zeros(0))
    with pytest.raises(ValueError, match="coupled_mass_matrix: c must be a CoordinateCoupling "
                       r"\(coordinate_coupling\), got NoneType"):
        coupled_mass_matrix(model, None, jnp.zeros(2))


def test_bad_piecewise_polynomial_is_refused():
    bad = C.PiecewisePolynomial(np.array([1.0, 0.0]), np.zeros(3), np.zeros((3, 2)))
    with pytest.raises(ValueError, match="breaks must increase strictly"):
        C.coordinate_coupling(1, [0], [bad])
    with pytest.raises(ValueError, match="2 breaks need 3 origins"):
        C.coordinate_coupling(1, [0], [C.PiecewisePolynomial(np.array([0.0, 1.0]), np.zeros(2),
                                                             np.zeros((3, 2)))])


@pytest.mark.parametrize("theta, rate", [(0.3, 1.2), (-1.1, -0.4)])
def test_coupled_forward_dynamics_inverts_the_lagrangian(theta, rate):
    """qdd from `coupled_forward_dynamics` with a generalized force tau on theta, against the
    closed form theta'' = (tau - M' theta'^2 / 2 - m g r cos theta) / M (1e-12 relative)."""
    from myotwin.engine import coupled_forward_dynamics

    model, coupling = _model()
    tau = 0.7
    qdd = coupled_forward_dynamics(model, coupling, jnp.array([theta]), jnp.array([rate]),
                                   jnp.zeros(0), qfrc=jnp.array([tau]))
    bias, mass = _closed_form(theta, rate, 0.0)
    np.testing.assert_allclose(qdd[0], (tau - bias) / mass, rtol=1e-12, err_msg="qdd")


def _numpy_piecewise(p: C.PiecewisePolynomial, x):
    """p(x) by NumPy (the piece by comparison, the value by np.polynomial), autodiff-free."""
    piece = int(np.sum(x >= p.breaks))
    return np.polynomial.Polynomial(p.coefficients[piece])(x - p.origins[piece])


def test_inner_functions_compose_by_the_chain_rule():
    """A dof that follows its coordinate through an inner function g (an OpenSim coupler's
    dependent coordinate): q_f = f(g(x)) against NumPy's evaluation of the composition, and
    J and Jdot qd against autodiff of q_f(q(t)) along q(t) = q0 + v t + a t^2 / 2 (1e-14
    relative: the same few float64 operations); a dof without an inner function and the
    rack's model with g = b x^2 moved inside an identity outer function unchanged."""
    g = C.PiecewisePolynomial(np.array([0.2]), np.array([0.0, 0.2]),
                              np.array([[0.1, 0.8, 0.5], [0.272, 1.0, -0.7]]))
    f = C.PiecewisePolynomial(np.array([0.0, 0.4]), np.array([0.0, 0.0, 0.4]),
                              np.array([[0.3, 1.5, 0.0], [0.3, 1.5, 2.0], [1.22, 3.1, -1.0]]))
    coupling = C.coordinate_coupling(2, [0, 1, 0], [f, f, C.identity_polynomial()],
                                     [g, None, g])
    q0, v, a = jnp.array([0.05, 0.3]), jnp.array([1.1, -0.6]), jnp.array([-0.4, 0.9])
    for x0 in (-0.5, 0.05, 0.2, 0.35, 0.9):
        q = q0.at[0].set(x0)
        expected = [_numpy_piecewise(f, _numpy_piecewise(g, x0)),
                    _numpy_piecewise(f, float(q[1])), _numpy_piecewise(g, x0)]
        np.testing.assert_allclose(C.full_positions(coupling, q), expected, rtol=1e-14)

        def q_full(t, q=q):
            return C.full_positions(coupling, q + v * t + 0.5 * a * t ** 2)

        motion = C.full_motion(coupling, q, v, a)
        np.testing.assert_allclose(motion.qd, jax.jacfwd(q_full)(0.0), rtol=1e-14)
        np.testing.assert_allclose(motion.qdd, jax.jacfwd(jax.jacfwd(q_full))(0.0),
                                   rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(C.full_jacobian(coupling, q),
                                   jax.jacfwd(lambda y: C.full_positions(coupling, y))(q),
                                   rtol=1e-14, atol=1e-15)
    model, plain = _model()
    nested = C.coordinate_coupling(1, [0, 0], [C.identity_polynomial()] * 2,
                                   [_quadratic(), None])
    q, qd, qdd = jnp.array([0.6]), jnp.array([-1.4]), jnp.array([0.3])
    np.testing.assert_allclose(coupled_inverse_dynamics(model, nested, q, qd, qdd),
                               coupled_inverse_dynamics(model, plain, q, qd, qdd), rtol=1e-14)
    with pytest.raises(ValueError, match="2 dofs but 1 inner functions"):
        C.coordinate_coupling(1, [0, 0], [C.identity_polynomial()] * 2, [None])


@pytest.mark.parametrize("attrs, tendon, equality, message", [
    ('range="-1 1"', "", "", "joints \\[0\\] are limited"),
    ('frictionloss="0.1"', "", "", "dry friction"),
    ("", "", '<equality><joint joint1="a" joint2="b"/></equality>', "equality constraints"),
    ("", '<tendon><fixed limited="true" range="-1 1"><joint joint="a" coef="1"/></fixed>'
     '</tendon>', "", "tendon limits"),
])
def test_coupled_forward_refuses_acceleration_dependent_constraints(attrs, tendon, equality,
                                                                    message):
    """Soft constraints whose force depends on the acceleration (limits, dry friction,
    equalities, tendon limits) cannot enter the projected forward dynamics; each is named."""
    from myotwin.engine.coupled_dynamics import check_coupled_forward

    xml = (f'<mujoco><worldbody><body><joint name="a" type="hinge" {attrs}/>'
           '<geom size="0.1"/><body pos="0 0 -0.3"><joint name="b" type="hinge"/>'
           f'<geom size="0.1"/></body></body></worldbody>{tendon}{equality}</mujoco>')
    model = engine.compile_model(mujoco.MjModel.from_xml_string(xml))
    with pytest.raises(ValueError, match=message):
        check_coupled_forward(model)
