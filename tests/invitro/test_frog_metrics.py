"""Jump metrics on synthetic series with known answers."""

import numpy as np
import pytest

from myotwin.invitro.frog import jump_metrics, takeoff_index


def test_takeoff_needs_stance_and_five_free_steps():
    c = np.array([1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1], dtype=bool)
    assert takeoff_index(c) == 7            # the 2-step gap at index 3 is not a takeoff
    assert takeoff_index(c, min_flight_steps=2) == 3
    assert takeoff_index(np.zeros(20, dtype=bool)) is None   # never touched: no takeoff
    assert takeoff_index(np.ones(20, dtype=bool)) is None
    assert takeoff_index(np.array([0, 0, 1, 0, 0, 0, 0, 0], dtype=bool)) == 3
    with pytest.raises(ValueError, match="min_flight_steps"):
        takeoff_index(c, 0)


def test_ballistic_jump_has_the_analytic_apex_and_range():
    # Stance 0-50 ms at rest, then a ballistic COM from z0 with (vx, vz); landing when the COM
    # returns to z0. Apex = vz^2 / 2g at t_to + vz / g; range = vx * 2 vz / g.
    dt, g, vx, vz, z0 = 1e-3, 9.81, 0.5, 1.2, 0.015
    t = np.arange(0, 0.4, dt)
    t_to = 0.05
    tau = np.clip(t - t_to, 0, None)
    com = np.zeros((t.size, 3))
    com[:, 0] = vx * tau
    com[:, 2] = z0 + vz * tau - 0.5 * g * tau**2
    flight = tau * (vz - 0.5 * g * tau) > 0
    contact = ~flight
    contact[t <= t_to] = True
    m = jump_metrics(t, com, contact)
    assert m.takeoff_time_s == pytest.approx(t_to + dt, abs=1e-12)   # first free sample
    t_land = t_to + 2 * vz / g
    assert m.landing_time_s == pytest.approx(t_land, abs=dt)
    assert m.jump_height_m == pytest.approx(vz**2 / (2 * g), abs=1e-5)  # sampling: < 0.5 g dt^2
    assert m.apex_time_s == pytest.approx(t_to + vz / g, abs=dt)
    assert m.forward_distance_m == pytest.approx(vx * (t_land - t_to), abs=vx * dt)
    # central difference straddling the takeoff kink: error up to g dt
    assert m.takeoff_velocity_m_s[1] == pytest.approx(vz, abs=1.5 * g * dt)


def test_no_landing_and_no_takeoff():
    t = np.arange(10) * 1e-3
    com = np.zeros((10, 3))
    m = jump_metrics(t, com, np.ones(10, dtype=bool))
    assert m.takeoff_time_s is None and m.jump_height_m is None
    c = np.array([1, 1] + [0] * 8, dtype=bool)
    com[:, 2] = np.arange(10) * 1e-3
    m = jump_metrics(t, com, c)
    assert m.landing_time_s is None and m.forward_distance_m is None
    assert m.jump_height_m == pytest.approx(9e-3)


def test_shape_errors_name_the_inputs():
    with pytest.raises(ValueError, match="com"):
        jump_metrics(np.zeros(5), np.zeros((4, 3)), np.zeros(5, dtype=bool))
