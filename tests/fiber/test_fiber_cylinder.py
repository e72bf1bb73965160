"""Fiber on a rigid cylinder (Sec. 5.2; issue 5, acceptance 2 and 5): convergence of the contact
integration, the safeguarded Newton step, and failures that name time, fiber and element.
"""

import json

import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg

from myotwin import fiber
from myotwin.repro import REGISTRY, fiber_cylinder


def test_cylinder_study_below_one_percent_from_4_points_and_32_elements(tmp_path):
    # Reference: 10 contact points x 256 elements (the seed uses its finest run too). The
    # remaining error is discretisation only (static Newton converged to 1e-10 of the forces).
    summary = REGISTRY["fiber-cylinder"](tmp_path, quick=True)
    err = summary["error_pct"]
    assert not summary["failures"]
    for key, value in err.items():
        qp, n_el = (int(s) for s in key.split("x"))
        if qp >= 4 and n_el >= 32:
            assert value < 1.0, f"{key}: {value:.3f} % (seed: < 1 %)"
    assert err["2x32"] < err["2x8"] and err["4x32"] < err["4x8"], "error falls with elements"
    ref = summary["reference"]
    assert -1 / fiber_cylinder.CYLINDER["gamma"] < ref["min_gap"] < 0, "in contact, admissible"
    # the fiber rests on the cylinder: contact force of the order of the load plus the
    # tension's curvature term N / (R + r) (about 1000 + 300 / 0.15 N/m)
    assert 1e3 < ref["max_contact_line_force_N_per_m"] < 1e4
    assert json.loads((tmp_path / "summary.json").read_text())["error_pct"] == err
    for name in ("fig4_geometry.png", "fig5_convergence.png"):
        assert (tmp_path / name).stat().st_size > 10_000


def _drop_setup():
    """Fiber at rest 5 cm above the cylinder; b_z = -1000 N/m applied at once, dt = 0.03 s."""
    model = fiber_cylinder.build_model(16, 5)
    contact = fiber_cylinder.cylinder()
    state = fiber.FiberState(model.ref_q, jnp.zeros(model.n_dof))
    return model, contact, state, fiber_cylinder.loads(model, 1.0), 0.03


def test_safeguard_absorbs_a_step_that_would_pass_the_barrier():
    model, contact, state, loads, dt = _drop_setup()
    limit = -1.0 / float(contact.gamma)
    # (1) the plain Newton step from the start sees no contact (all gaps > 0, no contact
    # stiffness) and moves the fiber 0.13 m down: through the barrier g = -1/gamma.
    q0 = np.asarray(state.q)
    system = fiber.step_system(model, contact, q0, q0, np.asarray(state.v), 1 / dt, 0.0,
                               jnp.asarray(loads.line_force))
    dq = scipy.linalg.solve_banded((11, 11), np.asarray(system.tangent_banded),
                                   -np.asarray(system.residual))
    gaps_plain = np.asarray(fiber.contact_state(model, contact, q0 + dq)[0])
    assert gaps_plain.min() < limit, f"plain Newton step: min gap {gaps_plain.min():.3f}"
    # (2) without the safeguard the solver stops with a message naming time, fiber, element
    with pytest.raises(fiber.InadmissibleContactError,
                       match=r"fiber 'cylinder-5x16' at t = 0.03 s: contact with 'bone' at "
                             r"element \d+ .* <= -1/gamma"):
        fiber.step(model, state, dt, dt, loads, contact, fiber.NewtonOptions(safeguard=False))
    # (3) with it, Newton converges to an admissible state (residual 1e-10 of the forces)
    new, info = fiber.step(model, state, dt, dt, loads, contact)
    gaps = np.asarray(fiber.contact_state(model, contact, new.q)[0])
    assert limit < gaps.min() < 0, f"converged min gap {gaps.min():.4f}"
    assert info.min_delta < 0.2, "the safeguard did scale the steps"
    # (4) a start that is past the barrier already: no step control mends it, and the message
    # says so (it told to enable the safeguard, which was on)
    past = state._replace(q=jnp.asarray(q0 + dq))
    with pytest.raises(fiber.InadmissibleContactError,
                       match=r"<= -1/gamma = .*: the rational penalty is undefined there \(the "
                             r"safeguard keeps iterates admissible only from an admissible "
                             r"state: start from one where every gap g > -1/gamma\)"):
        fiber.step(model, past, dt, dt, loads, contact)
    check = fiber.step_system(model, contact, new.q, q0, np.asarray(state.v), 1 / dt, 0.0,
                              jnp.asarray(loads.line_force))
    assert np.max(np.abs(np.asarray(check.residual))) <= 1e-9 * float(check.force_scale)


def test_safeguard_fraction_keeps_every_gap_above_delta_bar_eps():
    # Check of Eq. (71) at the returned delta against the exact gaps at q + delta dq (the
    # bound of Eqs. 72-73 must be conservative).
    model, contact, state, loads, dt = _drop_setup()
    q0 = np.asarray(state.q)
    system = fiber.step_system(model, contact, q0, q0, np.asarray(state.v), 1 / dt, 0.0,
                               jnp.asarray(loads.line_force))
    dq = scipy.linalg.solve_banded((11, 11), np.asarray(system.tangent_banded),
                                   -np.asarray(system.residual))
    gamma = float(contact.gamma)
    eps0 = 1 + gamma * np.asarray(fiber.contact_state(model, contact, q0)[0])
    for delta_bar in (0.1, 0.5, 0.9):
        delta, _ = fiber.safeguard_fraction(model, contact, q0, dq, delta_bar)
        assert 0 < delta < 1
        eps = 1 + gamma * np.asarray(fiber.contact_state(model, contact, q0 + delta * dq)[0])
        assert np.all(eps >= delta_bar * eps0 * (1 - 1e-12)), f"delta_bar = {delta_bar}"


def test_non_convergence_names_time_fiber_and_element():
    model, contact, state, loads, dt = _drop_setup()
    with pytest.raises(fiber.FiberNewtonError) as info:
        fiber.step(model, state, dt, dt, loads, contact, fiber.NewtonOptions(max_iter=2))
    err = info.value
    assert "fiber 'cylinder-5x16' at t = 0.03 s: Newton did not converge in 2 iterations" \
        in str(err)
    assert f"at element {err.element} (theta in [" in str(err)
    assert err.time_s == 0.03 and err.fiber == "cylinder-5x16" and 0 <= err.element < 16


def test_non_finite_load_is_reported_not_propagated():
    # step refuses it before Newton (it was a FiberDivergenceError after 0 iterations); the
    # low-level system flags the element whose own forces are non-finite, not its neighbours
    # (the element a FiberDivergenceError names)
    model, contact, state, loads, dt = _drop_setup()
    line = np.array(loads.line_force)
    line[11, 2, 0] = np.nan
    with pytest.raises(ValueError, match=r"^fiber 'cylinder-5x16': line_force\[11, 2, 0\] = "
                                         r"nan must be finite$"):
        fiber.step(model, state, dt, dt, fiber.FiberLoads(0.0, line), contact)
    q0 = np.asarray(state.q)
    system = fiber.step_system(model, contact, q0, q0, np.asarray(state.v), 1 / dt, 0.0,
                               jnp.asarray(line))
    assert np.flatnonzero(~np.isfinite(np.asarray(system.element_residual))).tolist() == [11]
