"""Fibers tied to the rigid skeleton (issue 5, part 2, step 2): the eliminated coupling of
Eqs. (49), (58)-(64) -- exact sparse tangent with a moving bone cylinder and fiber-fiber contact
against central differences, and the static balance of a pendulum held by a fiber against the
closed-form torque balance of the incompressible cable law.
"""

import math
import re

import numpy as np
import pytest
import scipy.optimize

from myotwin import engine, fiber
from myotwin.fiber import system as fsys
from myotwin.fiber import system_stepping as ss
from myotwin.fiber.contact_bones import make_bone_cylinder
from myotwin.fiber.contact_fibers import make_fiber_contact_law
from system_tangent_fd import central_difference_tangent

MASS_KG, COM_M, ATTACH_M, HEIGHT_M = 1.0, 0.3, 0.2, 0.3
R0_M, SIGMA0_PA = 0.005, 1.0e4


def _pendulum(damping=0.0):
    b = engine.ModelBuilder("pendulum", gravity=(0, 0, -9.81), contact=False)
    b.add_body("link", pos=(0, 0, 0), mass=MASS_KG, com=(COM_M, 0, 0),
               inertia=(1e-3, 0.01, 0.01))
    b.add_joint("link", "hinge", axis=(0, 1, 0), damping=damping)
    return b.build()


def _hanging_fiber(n_el, name="cable", dy=0.0):
    return fiber.compile_fiber(
        fiber.straight_reference([ATTACH_M, dy, HEIGHT_M], [ATTACH_M, dy, 0.0]), n_el,
        r0_m=R0_M, gamma_m=0.0, material=fiber.table1_material(sigma0_Pa=SIGMA0_PA),
        rho_kg_m3=1000.0, name=name)


def test_static_pendulum_held_by_a_fiber_matches_torque_balance():
    # Closed form: the straight fiber from the ceiling point C to the link point A(q) carries
    # N(lambda) = A_0 [mu_T (lambda - lambda^-2) + sigma_0 / lambda] (incompressible neo-Hooke +
    # prestress, gamma_M = 0), lambda = |C - A(q)| / L_0; the hinge balances gravity and the
    # fiber's moment. Without line loads the discrete fiber is exactly straight and uniformly
    # stretched, so the only error is Newton's tolerance (1e-10 of the forces).
    model = _pendulum()
    system = fsys.compile_system([_hanging_fiber(4)], skeleton=model,
                                 attachments=[fsys.Attachment("cable", 1, 1)])
    state = ss.SystemState(*fsys.initial_state(system))
    out, info = ss.solve_static(system, state, ss.SystemLoads(np.zeros(1)))

    area0, mu = math.pi * R0_M**2, 1.0e6
    ceiling = np.array([ATTACH_M, 0.0, HEIGHT_M])

    def torque(q):
        a = ATTACH_M * np.array([math.cos(q), 0.0, -math.sin(q)])
        lam = np.linalg.norm(ceiling - a) / HEIGHT_M
        force = area0 * (mu * (lam - lam**-2) + SIGMA0_PA / lam) * (ceiling - a) / (
            lam * HEIGHT_M)
        return MASS_KG * 9.81 * COM_M * math.cos(q) + (a[2] * force[0] - a[0] * force[2])

    q_exact = scipy.optimize.brentq(torque, 0.0, 0.5, xtol=1e-15)
    assert abs(out.q[0] - q_exact) < 1e-9, f"q = {out.q[0]!r}, closed form {q_exact!r}"
    assert 0.05 < q_exact < 0.2, "a real stretch (several %), not the trivial state"
    # the force on the link (minus the eliminated multiplier, Eq. 62) equals the closed form
    a = ATTACH_M * np.array([math.cos(q_exact), 0.0, -math.sin(q_exact)])
    lam = np.linalg.norm(ceiling - a) / HEIGHT_M
    tension = area0 * (mu * (lam - lam**-2) + SIGMA0_PA / lam)
    np.testing.assert_allclose(info.end_forces_N[0], tension * (ceiling - a) / (lam * HEIGHT_M),
                               rtol=1e-8)


def _coupled_system():
    model = _pendulum(damping=0.05)
    f1 = _hanging_fiber(5, "f1")
    f2 = fiber.compile_fiber(
        fiber.straight_reference([ATTACH_M + 0.0123, 0.0, HEIGHT_M],
                                 [ATTACH_M + 0.0123, 0.0, 0.0]), 4,
        r0_m=lambda t: R0_M * (1 + 0.5 * t), gamma_m=lambda t: 0.3 + 0.4 * t,
        material=fiber.table1_material(sigma0_Pa=SIGMA0_PA), rho_kg_m3=1000.0, name="f2")
    bone = make_bone_cylinder((ATTACH_M - 0.019, 0.0, 0.06), (0, 1, 0), 0.01, 3e4, 10.0,
                              body=1, name="bone")
    return fsys.compile_system(
        [f1, f2], skeleton=model,
        attachments=[fsys.Attachment("f1", 1, 1), fsys.Attachment("f2", 1, 1)],
        cylinders=[(bone, ["f1"])], fiber_pairs=[("f1", "f2")],
        fiber_law=make_fiber_contact_law(3e4, 10.0))


def test_coupled_tangent_matches_central_differences():
    # z = (q, u_I): skeleton inertia/bias/damping, tied ends (C(q) and its derivative), a bone
    # cylinder moving with the link (reaction P^T G), fiber-fiber contact, viscosity,
    # activation. Error: O(h^2) truncation and round-off of central differences, h = 1e-7.
    system = _coupled_system()
    rng = np.random.default_rng(7)
    q, qd, u, v = fsys.initial_state(system)
    q = np.array([0.1])
    z = ss._z(system, q, u)
    lay = system.layout
    free_nodes = (lay.free_dofs % 6 < 3)
    z[1:][free_nodes] += 0.0007 * rng.normal(size=int(free_nodes.sum()))
    prev = ss.SystemState(np.array([0.09]), np.array([0.3]), u, 0.02 * rng.normal(size=u.size))
    loads = ss.SystemLoads(np.array([0.05, 0.1]), None)
    ctx = ss._context(system, prev, loads, 100.0, 0.01)
    it = ss._fill(system, z, ctx.u_prev)
    ev, asm = ss._evaluate(system, it, ctx, True, 0)
    assert np.min(np.asarray(ev.eps_cyl)) < 1.0, "the moving cylinder is in contact"
    assert len(it.contacts.gap) > 0, "the fibers are in contact"
    jac = asm.tangent.toarray()
    fd = central_difference_tangent(system, z, ctx)
    err = np.abs(jac - fd)
    assert err[0, 0] < 1e-6 * abs(fd[0, 0]), "skeleton diagonal"
    assert np.max(err) < 1e-6 * np.max(np.abs(fd)), f"tangent error {np.max(err):.3e}"
    assert np.max(err[0]) < 1e-6 * np.max(np.abs(fd[0])), "skeleton row (C^T rho_D, P^T G)"
    assert np.max(err[:, 0]) < 1e-6 * np.max(np.abs(fd[:, 0])), "skeleton column"


def test_attachment_validation():
    model = _pendulum()
    clamped = fiber.compile_fiber(
        fiber.straight_reference([0.2, 0, 0.3], [0.2, 0, 0]), 3, r0_m=0.01, gamma_m=0.0,
        material=fiber.table1_material(), rho_kg_m3=1e3, name="c",
        ends=(fiber.EndCondition.PINNED, fiber.EndCondition.CLAMPED))
    with pytest.raises(ValueError, match="fiber 'c' end 1 is CLAMPED; an end tied to a body "
                                         "must be PINNED"):
        fsys.compile_system([clamped], skeleton=model, attachments=[fsys.Attachment("c", 1, 1)])
    with pytest.raises(ValueError, match="body index 7 out of range"):
        fsys.compile_system([_hanging_fiber(2)], skeleton=model,
                            attachments=[fsys.Attachment("cable", 1, 7)])
    with pytest.raises(ValueError, match="end must be 0 or 1"):
        fsys.compile_system([_hanging_fiber(2)], skeleton=model,
                            attachments=[fsys.Attachment("cable", 2, 1)])
    # True is an int in Python: it used to tie the fiber to body 1 (False to the world)
    with pytest.raises(ValueError, match="fiber system: body True: expected a name or an "
                                         "integer index"):
        fsys.compile_system([_hanging_fiber(2)], skeleton=model,
                            attachments=[fsys.Attachment("cable", 1, True)])
    with pytest.raises(ValueError, match="bone cylinder 'b': radius_m = -1"):
        make_bone_cylinder((0, 0, 0), (0, 1, 0), -1, 1e4, 5, body=1, name="b")




def test_skeleton_q0_is_checked():
    """A q0 of 3 numbers for the 1-dof pendulum used q0[0], a NaN gave NaN attachment points
    and a scalar was a ZeroDivisionError in engine/rows.py."""
    model, cable = _pendulum(), _hanging_fiber(2)
    attach = [fsys.Attachment("cable", 1, 1)]
    system = fsys.compile_system([cable], skeleton=model, q0=[0.1], attachments=attach)
    np.testing.assert_array_equal(fsys.initial_state(system, q0=[0.1])[0], [0.1])
    for q0, message in [([0.1, 0.2, 0.3], r"q0 has shape \(3,\), expected \(1,\) \(the "
                                         r"skeleton's n_q = 1\)"),
                        (0.1, r"q0 has shape \(\), expected \(1,\)"),
                        ([np.nan], r"q0\[0\] = nan must be finite"),
                        (["a"], r"q0 must be real numbers, got \['a'\]")]:
        with pytest.raises(ValueError, match=rf"^fiber system: {message}"):
            fsys.compile_system([cable], skeleton=model, q0=q0, attachments=attach)
        with pytest.raises(ValueError, match=rf"^fiber initial_state: {message}"):
            fsys.initial_state(system, q0=q0)


def test_cylinder_and_pair_entries_are_checked():
    """A bare BoneCylinder was 'cannot unpack non-iterable BoneCylinder object', (bone, "cable")
    and fiber_pairs=("cable", "c2") iterated the names' characters ("unknown fiber 'c'"), and
    a pair of one fiber 'not enough values to unpack'."""
    fibers = [_hanging_fiber(2), _hanging_fiber(2, "c2", dy=0.05)]
    bone = make_bone_cylinder((0, 0, 0), (0, 1, 0), 0.01, 1e4, 10.0, name="bone")
    law = make_fiber_contact_law(1e4, 10.0)
    cylinder = ("each entry of cylinders must be a pair (BoneCylinder, fibers it touches or "
                "None for all), got ")
    pair = "each entry of fiber_pairs must be a pair (fiber, fiber) of names or indices, got "
    for kwargs, message in [
        (dict(cylinders=[bone]), cylinder + "BoneCylinder 'bone'"),
        (dict(cylinders=[(bone,)]), cylinder + "(BoneCylinder 'bone',)"),
        (dict(cylinders=[(bone, 1.5)]), "bone cylinder 'bone': the fibers it touches must be "
                                        "None, a fiber name or index, or a sequence of them, "
                                        "got 1.5"),
        (dict(fiber_pairs=("cable", "c2"), fiber_law=law),
         pair + "'cable' (one pair goes in a list: [('a', 'b')])"),
        (dict(fiber_pairs=[("cable",)], fiber_law=law), pair + "('cable',)"),
    ]:
        with pytest.raises(ValueError, match=rf"^fiber system: {re.escape(message)}$"):
            fsys.compile_system(fibers, **kwargs)
    # one fiber name or index alone is that fiber
    for touched, expected in (("cable", (0,)), (1, (1,)), (["c2", 0], (1, 0)), (None, (0, 1))):
        system = fsys.compile_system(fibers, cylinders=[(bone, touched)])
        assert system.cylinders[0].fibers == expected


def test_system_refuses_non_finite_times_states_and_loads():
    """Each was a FiberDivergenceError 'at t = nan s' or 'after 0 Newton iterations', and a NaN
    t0_s ran simulate_system on a NaN time axis."""
    system = fsys.compile_system([_hanging_fiber(2)], skeleton=_pendulum(),
                                 attachments=[fsys.Attachment("cable", 1, 1)])
    state = ss.SystemState(*fsys.initial_state(system))
    loads = ss.SystemLoads(np.zeros(1))
    line = np.zeros((2, system.qp_w.shape[0], 3))
    line[1, 0, 2] = np.nan
    u = state.u.copy()
    u[3] = np.inf
    for call, message in [
        (lambda: ss.step(system, state, 0.01, np.inf, loads), "dt_s = inf must be a finite "
                                                              "number > 0"),
        (lambda: ss.step(system, state, np.nan, 0.01, loads), "time_s = nan must be a finite "
                                                              "number"),
        (lambda: ss.step(system, state._replace(q=np.array([np.nan])), 0.01, 0.01, loads),
         "state.q[0] = nan must be finite"),
        (lambda: ss.step(system, state._replace(u=u), 0.01, 0.01, loads),
         "state.u[3] = inf must be finite"),
        (lambda: ss.step(system, state, 0.01, 0.01, loads._replace(line_force=line)),
         "line_force[1, 0, 2] = nan must be finite"),
        (lambda: ss.solve_static(system, state._replace(qd=np.array([-np.inf])), loads),
         "state.qd[0] = -inf must be finite"),
        (lambda: ss.simulate(system, state, np.nan, 0.01, 2, lambda t: loads),
         "t0_s = nan must be a finite number"),
    ]:
        with pytest.raises(ValueError, match=rf"^fiber system: {re.escape(message)}$"):
            call()


def test_simulate_system_checks_state_and_counts_first():
    """A state of the wrong shape was NumPy's 'could not broadcast input array from shape (3,)
    into shape (1,)', a record_every of 1.5 a TypeError from range(); 0 and -3, and a
    max_halvings of -1 or 2.5, were accepted silently."""
    system = fsys.compile_system([_hanging_fiber(2)], skeleton=_pendulum(),
                                 attachments=[fsys.Attachment("cable", 1, 1)])
    state = ss.SystemState(*fsys.initial_state(system))
    loads = ss.SystemLoads(np.zeros(1))
    with pytest.raises(ValueError, match=r"^fiber system: state.q has shape \(3,\), expected "
                                         r"\(1,\)$"):
        ss.simulate(system, state._replace(q=np.zeros(3)), 0.0, 0.01, 2, lambda t: loads)
    for name, bad, rule in [("record_every", 1.5, ">= 1"), ("record_every", 0, ">= 1"),
                            ("record_every", -3, ">= 1"), ("record_every", True, ">= 1"),
                            ("max_halvings", -1, ">= 0"), ("max_halvings", 2.5, ">= 0")]:
        with pytest.raises(ValueError, match=rf"^fiber simulate_system: {name} must be an "
                                             rf"integer {rule}, got {bad!r}$"):
            ss.simulate(system, state, 0.0, 0.01, 2, lambda t: loads, **{name: bad})


def test_system_dof_vectors_of_the_wrong_length_are_refused():
    """JAX clamps gather indices: axial_forces of 6 of the fiber dofs gave silent garbage."""
    system = fsys.compile_system([_hanging_fiber(2)], skeleton=_pendulum(),
                                 attachments=[fsys.Attachment("cable", 1, 1)])
    _, _, u, v = fsys.initial_state(system)
    what = r"\(fiber system: n_h = 18"
    with pytest.raises(ValueError, match=r"^axial_forces: u_h has shape \(6,\), expected "
                                         r"\(18,\) " + what):
        fiber.axial_forces(system, u[:6], v[:6], np.array([0.0]))
    with pytest.raises(ValueError, match=r"^axial_forces: activation has shape \(2,\), "
                                         r"expected \(1,\) " + what):
        fiber.axial_forces(system, u, v, np.zeros(2))
    with pytest.raises(ValueError, match=r"^find_contacts: u has shape \(36,\), expected "
                                         r"\(18,\) " + what):
        fiber.find_contacts(system, np.concatenate([u, u]))
