"""Point masses (bodies with zero inertia; engine/point_mass.py) against the closed form of the
point-mass double pendulum, and the errors for point masses the dynamics cannot hold.

The closed form is the textbook Lagrangian of two point masses m1, m2 on massless rods l1, l2
in relative angles (q2 measured from rod 1), written here:
    M = [[(m1 + m2) l1^2 + m2 l2^2 + 2 m2 l1 l2 cos q2,  m2 l2^2 + m2 l1 l2 cos q2],
         [m2 l2^2 + m2 l1 l2 cos q2,                     m2 l2^2]]
    c = m2 l1 l2 sin q2 (-(2 qd1 qd2 + qd2^2), qd1^2),   tau_g = -dV/dq,
    V = -(m1 + m2) g l1 cos q1 - m2 g l2 cos(q1 + q2).
Tolerance 1e-12 (relative to the largest entry): the engine and the closed form are a few
float64 operations on O(1) numbers. The stand-in inertia MuJoCo's compiler is given (1e-14
kg m^2) would show at 1e-14 relative if it leaked into the engine; the check that it does not
is the exact zero of `Model.body_inertia`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from myotwin import engine
from myotwin.engine.builder import ModelBuilder
from myotwin.engine import mass_matrix
from myotwin.engine.point_mass import STAND_IN_INERTIA_KGM2

M1, M2, L1, L2, G = 1.3, 0.7, 0.6, 0.45, 9.81
TOL = 1e-12


def _pendulum(com2=(0.0, -L2, 0.0)) -> ModelBuilder:
    b = ModelBuilder("points", gravity=(0.0, -G, 0.0), contact=False)
    b.add_body("rod1", mass=M1, com=(0.0, -L1, 0.0), inertia=(0.0, 0.0, 0.0))
    b.add_joint("rod1", "hinge", name="q1", axis=(0, 0, 1))
    b.add_body("rod2", "rod1", pos=(0.0, -L1, 0.0), mass=M2, com=com2,
               inertia=(0.0,) * 6)
    b.add_joint("rod2", "hinge", name="q2", axis=(0, 0, 1))
    return b


def _closed_form_acceleration(q, qd):
    c2 = np.cos(q[1])
    mass = np.array([[(M1 + M2) * L1**2 + M2 * L2**2 + 2 * M2 * L1 * L2 * c2,
                      M2 * L2**2 + M2 * L1 * L2 * c2],
                     [M2 * L2**2 + M2 * L1 * L2 * c2, M2 * L2**2]])
    h = M2 * L1 * L2 * np.sin(q[1])
    coriolis = np.array([-h * (2 * qd[0] * qd[1] + qd[1] ** 2), h * qd[0] ** 2])
    gravity = np.array([-(M1 + M2) * G * L1 * np.sin(q[0]) - M2 * G * L2 * np.sin(q[0] + q[1]),
                        -M2 * G * L2 * np.sin(q[0] + q[1])])
    return mass, np.linalg.solve(mass, gravity - coriolis)


def test_point_mass_double_pendulum_matches_its_closed_form():
    b = _pendulum()
    model = b.build()
    np.testing.assert_array_equal(np.asarray(model.body_inertia), np.zeros((3, 3)))
    # what MuJoCo's compiler saw: the stand-in, marked by the custom numerics
    mj = b.mj_model()
    np.testing.assert_array_equal(mj.body_inertia[1:], STAND_IN_INERTIA_KGM2)
    assert 'name="point_mass:rod1"' in b.to_mjcf() and 'name="point_mass:rod2"' in b.to_mjcf()
    accel = jax.jit(lambda q, qd: engine.forward_dynamics(model, q, qd, jnp.zeros(0)))
    rng = np.random.default_rng(7)
    for q, qd in zip(rng.uniform(-3, 3, (6, 2)), rng.uniform(-4, 4, (6, 2))):
        mass, qdd = _closed_form_acceleration(q, qd)
        ours_m = np.asarray(mass_matrix(model, jnp.asarray(q)))
        ours_qdd = np.asarray(accel(jnp.asarray(q), jnp.asarray(qd)))
        assert np.abs(ours_m - mass).max() <= TOL * np.abs(mass).max(), (q, ours_m, mass)
        assert np.abs(ours_qdd - qdd).max() <= TOL * max(1.0, np.abs(qdd).max()), (q, qd)


def test_mjcf_round_trip_keeps_the_point_masses():
    b = _pendulum()
    again = engine.compile_model(b.mj_model())
    np.testing.assert_array_equal(np.asarray(again.body_inertia), 0.0)


def test_point_mass_on_its_own_hinge_axis_is_refused():
    with pytest.raises(ValueError, match=r"point masses \['rod1', 'rod2'\].*singular.*"
                                         r"joints \['q2'\]"):
        _pendulum(com2=(0.0, 0.0, 0.0)).build()


def test_point_mass_on_a_free_joint_is_refused():
    b = ModelBuilder("free_point", contact=False)
    b.add_body("ball", mass=1.0, inertia=(0.0, 0.0, 0.0))
    b.add_joint("ball", "free", name="float")
    with pytest.raises(ValueError, match=r"point masses \['ball'\].*joints \['float'\]"):
        b.build()


def test_a_hand_written_marker_on_a_rigid_body_is_refused():
    b = ModelBuilder("marked", contact=False)
    b.add_body("arm", mass=1.0, com=(0, -0.5, 0), inertia=(0.1, 0.1, 0.1))
    b.add_joint("arm", "hinge", axis=(0, 0, 1))
    b.add_numeric("point_mass:arm", STAND_IN_INERTIA_KGM2)
    with pytest.raises(ValueError, match=r"custom numeric 'point_mass:arm': body 'arm' has "
                                         r"mass 1.* and inertia \[0.1"):
        b.build()
