"""Static hanging cables against analytic solutions (issue 5, acceptance 4b).

1. A cable hung between two supports at equal height under its own weight: the elastic
   catenary. Irvine, "Cable Structures" (MIT Press 1981), Sec. 2.2, gives it in closed form for
   a Hookean cable (tension T = EA_0 (lambda - 1)) in the reference arc length S:
       x(S) = H S / EA + (H / w) [asinh(V(S) / H) - asinh(V(0) / H)],
       z(S) = (V(S)^2 - V(0)^2) / (2 w EA) + [sqrt(H^2 + V(S)^2) - sqrt(H^2 + V(0)^2)] / w,
   with V(S) = w (S - L/2) the vertical tension, w = rho A_0 g the weight per reference length
   and H the horizontal tension fixed by x(L) = span. Our cable (Eq. 30) is an incompressible
   neo-Hooke bar, T = A_0 mu (lambda - lambda^-2), whose small-strain modulus is E = 3 mu; the
   two laws differ at O(strain^2) (here strain <= 2.4e-3). The same equilibrium with the exact
   law, dx/dS = lambda(T) H / T, dz/dS = lambda(T) V / T, lambda(T) the real root of the cubic
   lambda^3 - (T / (mu A_0)) lambda^2 - 1 = 0 (Cardano), integrated by 80-point Gauss-Legendre,
   is the sharp reference.
2. A cable hanging vertically from one pinned end, free at the other: T(S) = w (L - S) and
   z(S) = -integral_0^S lambda(T) dS (exact, large strain: 2.9 % at the support).
"""

import math

import jax.numpy as jnp
import numpy as np
import pytest
from scipy import optimize

from myotwin import fiber

G = 9.81
RHO, R0, L0 = 900.0, 0.05, 1.0
AREA0 = math.pi * R0**2
W = RHO * AREA0 * G  # weight per reference length, N/m


def stretch_of_tension(t, mu):
    """Real root of lambda - lambda^-2 = t / (mu A_0) (Cardano; u v = tau^2 / 9 avoids the
    cancellation of the second cube root)."""
    tau = np.asarray(t) / (mu * AREA0)
    q = -2 * tau**3 / 27 - 1
    disc = np.sqrt(q**2 / 4 - tau**6 / 729)
    u = np.cbrt(-q / 2 + disc)
    return u + tau**2 / (9 * u) + tau / 3


def _gauss(f, a, b, n=80):
    x, w = np.polynomial.legendre.leggauss(n)
    s = 0.5 * (b - a) * x + 0.5 * (a + b)
    return 0.5 * (b - a) * np.sum(w * f(s))


def exact_catenary(h, s, mu):
    v = lambda u: W * (u - L0 / 2)  # noqa: E731
    t = lambda u: np.hypot(h, v(u))  # noqa: E731
    x = _gauss(lambda u: stretch_of_tension(t(u), mu) * h / t(u), 0.0, s)
    z = _gauss(lambda u: stretch_of_tension(t(u), mu) * v(u) / t(u), 0.0, s)
    return x, z


def irvine_catenary(h, s, ea):
    v0, v = -W * L0 / 2, W * (s - L0 / 2)
    x = h * s / ea + h / W * (math.asinh(v / h) - math.asinh(v0 / h))
    z = (v**2 - v0**2) / (2 * W * ea) + (math.hypot(h, v) - math.hypot(h, v0)) / W
    return x, z


def _static(model, guess):
    loads = fiber.FiberLoads(0.0, fiber.gravity_line_force(model, [0.0, 0.0, -G]))
    q, info = fiber.solve_static(model, guess, loads)
    return np.asarray(q).reshape(-1, 6), info


def test_sagging_cable_matches_elastic_catenary():
    mu, span = 1.0e6, 0.8  # pure tendon (gamma_M = 0): mu^T of Table 1
    h_exact = optimize.brentq(lambda h: exact_catenary(h, L0, mu)[0] - span, 1, 1e4, xtol=1e-14)
    h_irvine = optimize.brentq(lambda h: irvine_catenary(h, L0, 3 * mu * AREA0)[0] - span,
                               1, 1e4, xtol=1e-14)
    mat = fiber.table1_material(sigma0_Pa=0.0)
    for n_el, tol_m, tol_h in ((16, 6e-6, 5e-6), (32, 3e-7, 3e-7)):
        model = fiber.compile_fiber(fiber.straight_reference([0, 0, 0], [L0, 0, 0]), n_el,
                                    r0_m=R0, gamma_m=0.0, material=mat, rho_kg_m3=RHO,
                                    name=f"catenary-{n_el}")
        th = np.asarray(model.node_theta)
        guess = np.zeros((n_el + 1, 6))  # parabola of about the right length, in tension
        guess[:, 0], guess[:, 2] = span * th, -th * (1 - th)
        guess[:, 3], guess[:, 5] = span, -(1 - 2 * th)
        q, _ = _static(model, guess.reshape(-1))
        exact = np.array([exact_catenary(h_exact, L0 * t, mu) for t in th])
        err = np.max(np.abs(q[:, [0, 2]] - exact))
        # discretisation error of the cubic Hermite cable (observed 3.0e-6 m at 16 elements,
        # 1.1e-7 m at 32: O(h^4.8)); H: 2.2e-6 and 9e-8 relative
        assert err < tol_m, f"{n_el} elements: nodal error {err:.2e} m vs exact catenary"
        # horizontal tension: testing the weak form with the x-translation ramp xi_x = theta
        # turns the quadrature sum of N a_1,x / |a_1| into the support reaction H (pointwise
        # N is a derivative and only 1 % accurate at 32 elements; the reaction is sharp)
        v = jnp.zeros(model.n_dof)
        tension = np.asarray(fiber.axial_force_at_quadrature(model, q.reshape(-1), v, 0.0))
        _, xt_qp = fiber.evaluate(q.reshape(-1), model.node_theta,
                                  np.asarray(model.qp_theta).reshape(-1))
        weights = np.outer(np.diff(th), np.asarray(model.qp_w)).reshape(-1)
        h_fe = np.sum(weights * tension.reshape(-1) * xt_qp[:, 0] / np.linalg.norm(xt_qp, axis=1))
        assert h_fe == pytest.approx(h_exact, rel=tol_h), f"{n_el} elements: horizontal tension"
    # Irvine's Hookean closed form: the O(strain^2) difference of the laws moves the sag by
    # 1.3e-6 m (5e-6 of the 0.266 m sag), far above our 1.1e-7 m discretisation error.
    z_mid = q[n_el // 2, 2]
    z_irvine = irvine_catenary(h_irvine, L0 / 2, 3 * mu * AREA0)[1]
    assert z_mid == pytest.approx(z_irvine, rel=1e-5), "mid-span sag vs Irvine (1981)"
    assert h_exact == pytest.approx(h_irvine, rel=1e-5), "H vs Irvine"


def test_vertical_hanging_cable_large_strain():
    mu = 1.0e5  # pure muscle: w L / (mu A_0) = 0.088, strain 2.9 % at the support
    mat = fiber.table1_material(sigma0_Pa=0.0)
    model = fiber.compile_fiber(fiber.straight_reference([0, 0, 0], [0, 0, -L0]), 16,
                                r0_m=R0, gamma_m=1.0, material=mat, rho_kg_m3=RHO,
                                ends=(fiber.EndCondition.PINNED, fiber.EndCondition.FREE),
                                name="hanging")
    guess = np.asarray(model.ref_q).reshape(-1, 6) * np.array([1, 1, 1.01, 1, 1, 1.01])
    q, info = _static(model, guess.reshape(-1))  # 1 % pre-stretch: tension, regular tangent
    th = np.asarray(model.node_theta)
    exact_z = np.array([-_gauss(lambda s: stretch_of_tension(W * (L0 - s), mu), 0.0, L0 * t)
                        if t > 0 else 0.0 for t in th])
    # observed 2e-12 m at the nodes (nodal values of 1-D Galerkin solutions are nearly exact;
    # the rest is the Newton tolerance): 1e-10 leaves margin
    np.testing.assert_allclose(q[:, 2], exact_z, atol=1e-10, err_msg="vertical positions")
    np.testing.assert_allclose(q[:, [0, 1]], 0.0, atol=1e-12, err_msg="no lateral motion")
    assert exact_z[-1] == pytest.approx(-1.0150, abs=1e-4), "sanity: 1.5 % elongation"
