"""Several fibers with fiber-fiber contact (issue 5, part 2, step 1): closest points of the
quintic (Eq. 67) against brute force, bounding-box pruning against all pairs, the exact sparse
tangent against central differences, the safeguard (Eqs. 69-73, acceptance 5) and the
`fiber-fiber` reproduction (Sec. 5.3).
"""

import numpy as np
import pytest

from myotwin import fiber
from myotwin.fiber import closest_point
from myotwin.fiber import system as fsys
from myotwin.fiber import system_stepping as ss
from myotwin.fiber.contact_fibers import make_fiber_contact_law
from myotwin.repro import REGISTRY, fiber_fiber
from system_tangent_fd import central_difference_tangent


def test_quintic_coefficients_and_closest_points_match_brute_force():
    rng = np.random.default_rng(5)
    n = 200
    rows = rng.normal(size=(n, 4, 3))
    rows[:7, 3] = 0.0  # some degree drops: straight, uniformly parametrised pieces
    rows[:7, 1] = rows[:7, 2] - rows[:7, 0]
    rows[:7, 3] = rows[:7, 1]
    x = rng.normal(size=(n, 3))
    v = closest_point.power_coefficients(rows)
    c = closest_point.quintic_coefficients(v, x)
    for i in range(5):  # (y - x) . y' expanded with numpy's polynomial algebra
        y = [np.polynomial.Polynomial(v[i, :, j] - np.array([x[i, j], 0, 0, 0]))
             for j in range(3)]
        f = sum(p * p.deriv() for p in y)
        np.testing.assert_allclose(c[i], np.pad(f.coef, (0, 6 - f.coef.size)), atol=1e-12)
    xi, dist, _ = closest_point.closest_on_elements(v, x)
    # brute force: 20001 samples per element; the sampled minimum overestimates the true one by
    # at most |y'| dxi / 2 (here < 1e-3), our root-based minimum must not exceed it
    s = np.linspace(0.0, 1.0, 20001)
    pts = sum(v[:, k, None, :] * s[None, :, None] ** k for k in range(4))
    brute = np.min(np.linalg.norm(pts - x[:, None, :], axis=-1), axis=1)
    assert np.all(dist <= brute + 1e-12), "a root-based minimum above the sampled minimum"
    assert np.all(dist >= brute - 1e-3)
    y = sum(v[np.arange(n), k] * xi[:, None] ** k for k in range(4))
    np.testing.assert_allclose(np.linalg.norm(y - x, axis=1), dist, rtol=1e-12)


def test_bounding_box_pairs_equal_all_pairs():
    rng = np.random.default_rng(11)
    lo_a = rng.uniform(0, 1, (300, 3))
    hi_a = lo_a + rng.uniform(0, 0.15, (300, 3))
    lo_b = rng.uniform(0, 1, (250, 3))
    hi_b = lo_b + rng.uniform(0, 0.1, (250, 3))
    ia, ib = closest_point.overlapping_pairs(lo_a, hi_a, lo_b, hi_b)
    got = set(zip(ia.tolist(), ib.tolist()))
    brute = np.all((lo_a[:, None] <= hi_b[None]) & (lo_b[None] <= hi_a[:, None]), axis=2)
    assert got == set(zip(*np.nonzero(brute))), "grid broad phase misses or invents pairs"
    assert len(got) > 20


def _crossing(n_upper=7, n_lower=6, viscous=True):
    mat = fiber.table1_material() if viscous else fiber.table1_material(
        eta_muscle_Pa_s=0.0, eta_tendon_Pa_s=0.0)
    up = fiber.compile_fiber(fiber.straight_reference([0, 0, 0], [1, 0, 0]), n_upper,
                             r0_m=lambda t: 0.05 * (1 + 0.3 * t * (1 - t)),
                             gamma_m=lambda t: 0.5 + 0.2 * t, material=mat, rho_kg_m3=900.0,
                             name="upper")
    lo = fiber.compile_fiber(fiber.straight_reference([0.47, -0.5, -0.15], [0.53, 0.5, -0.15]),
                             n_lower, r0_m=0.05, gamma_m=0.0, material=mat, rho_kg_m3=900.0,
                             node_theta=np.linspace(0, 1, n_lower + 1) ** 1.1, name="lower")
    return fsys.compile_system([up, lo], fiber_pairs=[(0, 1)],
                               fiber_law=make_fiber_contact_law(1e6, 10.0))


def test_tangent_matches_central_differences_with_fiber_contact():
    # Every piece at once: inertia, viscosity, activation on the bell's flank, gravity, varying
    # r_0 and gamma_M, a non-uniform mesh, both half-passes with 3 active points. The only
    # error of central differences (h = 1e-7 m) is round-off and O(h^2) truncation.
    system = _crossing()
    state = fiber_fiber.prestretched_state(system)
    u = state.u.copy()
    n0 = system.fibers[0].n_dof
    nodes = u[:n0].reshape(-1, 6)
    nodes[1:-1, 2] -= 0.055 * np.sin(np.pi * np.linspace(0, 1, nodes.shape[0]))[1:-1]
    rng = np.random.default_rng(2)
    v = 0.05 * rng.normal(size=u.size)
    loads = ss.SystemLoads(np.array([0.08, 0.0]),
                           np.broadcast_to([0.0, 0.0, -300.0], (13, 4, 3)).copy())
    ctx = ss._context(system, ss.SystemState(state.q, state.qd, state.u, v), loads, 50.0, 0.1)
    z = ss._z(system, state.q, u)
    it = ss._fill(system, z, ctx.u_prev)
    assert 3 <= len(it.contacts.gap) and it.contacts.gap.min() > -0.1, "some admissible contact"
    _, asm = ss._evaluate(system, it, ctx, True, 0)
    jac = asm.tangent.toarray()
    fd = central_difference_tangent(system, z, ctx)
    err = np.max(np.abs(jac - fd)) / np.max(np.abs(fd))
    assert err < 1e-6, f"tangent vs central differences: relative error {err:.2e}"


def test_safeguard_absorbs_a_fiber_fiber_step_past_the_barrier():
    # The full 5000 N/m at once with dt = 0.05 s: the plain Newton update moves the upper fiber
    # ~0.2 m down, through the lower one (gap < -1/gamma).
    system = fiber_fiber.build(5)
    state = fiber_fiber.prestretched_state(system)
    loads = fiber_fiber.loads(system, 1.0)
    with pytest.raises(fiber.InadmissibleContactError,
                       match=r"fiber '(upper|lower)' at t = 0.05 s: contact with fiber "
                             r"'(lower|upper)' \(element \d\) at element \d .* <= -1/gamma"):
        ss.step(system, state, 0.05, 0.05, loads, fiber.NewtonOptions(safeguard=False))
    new, info = ss.step(system, state, 0.05, 0.05, loads)
    pts = ss.find_contacts(system, new.u)
    assert pts.gap.size > 0 and pts.gap.min() > -0.1, "converged in admissible contact"
    assert info.min_delta < 1.0, "the safeguard scaled some steps"


def test_non_convergence_in_a_system_names_time_fiber_and_element():
    system = fiber_fiber.build(5)
    state = fiber_fiber.prestretched_state(system)
    with pytest.raises(fiber.FiberNewtonError) as err:
        ss.step(system, state, 0.05, 0.05, fiber_fiber.loads(system, 1.0),
                fiber.NewtonOptions(max_iter=1))
    assert err.value.time_s == 0.05 and err.value.fiber in ("upper", "lower")
    assert f"at element {err.value.element} (theta in [" in str(err.value)


def test_system_input_validation():
    f = fiber.compile_fiber(fiber.straight_reference([0, 0, 0], [1, 0, 0]), 3, r0_m=0.01,
                            gamma_m=0.0, material=fiber.table1_material(), rho_kg_m3=1e3,
                            name="a")
    with pytest.raises(ValueError, match="fiber names must be unique"):
        fsys.compile_system([f, f])
    with pytest.raises(ValueError, match="without a fiber_law"):
        g = fiber.compile_fiber(fiber.straight_reference([0, 1, 0], [1, 1, 0]), 3, r0_m=0.01,
                                gamma_m=0.0, material=fiber.table1_material(), rho_kg_m3=1e3,
                                name="b")
        fsys.compile_system([f, g], fiber_pairs=[("a", "b")])
    with pytest.raises(ValueError, match="unknown fiber 'c'"):
        fsys.compile_system([f, g], fiber_pairs=[("a", "c")],
                            fiber_law=make_fiber_contact_law(1e5, 5))
    with pytest.raises(ValueError, match="gamma = 0"):
        make_fiber_contact_law(1e5, 0)
    system = fsys.compile_system([f, g])
    state = ss.SystemState(*fsys.initial_state(system))
    with pytest.raises(ValueError, match=r"activation must have shape \(2,\)"):
        ss.step(system, state, 0.1, 0.1, ss.SystemLoads(np.zeros(3)))
    with pytest.raises(ValueError, match=r"fiber system: activation 1.5 must be in \[0, 1\]"):
        ss.step(system, state, 0.1, 0.1, ss.SystemLoads(np.array([0.2, 1.5])))
    with pytest.raises(ValueError, match=r"fiber system: state.u has shape \(3,\), expected"):
        ss.step(system, state._replace(u=np.zeros(3)), 0.1, 0.1, ss.SystemLoads(np.zeros(2)))
    # one fiber (time_stepping.py): its state and loads are checked the same way
    loads = fiber.FiberLoads(0.1, fiber.gravity_line_force(f, [0.0, 0.0, -9.81]))
    one = fiber.FiberState(f.ref_q, 0.0 * f.ref_q)
    with pytest.raises(ValueError, match=rf"fiber 'a': state.q has shape \(5,\), expected "
                                         rf"\({f.n_dof},\)"):
        fiber.simulate(f, one._replace(q=np.zeros(5)), 0.0, 0.01, 2, lambda t: loads)
    with pytest.raises(ValueError, match=r"fiber 'a': activation -0.1 must be in \[0, 1\]"):
        fiber.step(f, one, 0.01, 0.01, loads._replace(activation=-0.1))
    with pytest.raises(ValueError, match=r"fiber 'a': line_force has shape \(2, 3\)"):
        fiber.step(f, one, 0.01, 0.01, loads._replace(line_force=np.zeros((2, 3))))


def test_fiber_fiber_reproduction_quick(tmp_path):
    # Convergence of u_z(0.5) of the upper fiber against the finest mesh (quick: 17 elements):
    # the error falls with refinement (seed Fig. 7); the reference is in admissible contact.
    summary = REGISTRY["fiber-fiber"](tmp_path, quick=True)
    err = summary["errors_by_elements"]
    ns = sorted(int(k) for k in err)
    assert err[str(ns[-1])] < err[str(ns[0])]
    assert err[str(ns[-1])] < 0.05 * abs(summary["reference"]["u_z_mid_m"])
    assert -0.1 < summary["reference"]["min_gap"] < 0
    assert (tmp_path / "fig6_7_fiber_fiber.png").stat().st_size > 10_000
