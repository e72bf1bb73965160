"""The frog plant's fast channels agree with the reference definitions in frog/metrics.py."""

from __future__ import annotations

import numpy as np

from myotwin.invitro.frog.metrics import (TOUCH_TOLERANCE_M, floor_force_world_N,
                                          floor_in_contact)
from myotwin.invitro.frog.plant import MujocoFrogPlant


def test_vectorised_floor_contact_and_force_match_metrics():
    # plant._floor_contact_and_force re-implements metrics.floor_in_contact and
    # floor_force_world_N over MuJoCo's contact arrays for speed; both read the same MuJoCo
    # contact forces, so they must agree to float64 roundoff (1e-12 N) at every step of a
    # jump with a muscle pulling during stance (contacts appear, change and vanish).
    plant = MujocoFrogPlant()
    m, d = plant.model, plant.data
    n_contact_steps = 0
    for k in range(250):
        plant.set_muscle_tension(1.0 if 20 <= k < 100 else 0.0)
        plant.step()
        touching, grf = plant._floor_contact_and_force()
        assert touching == floor_in_contact(m, d, TOUCH_TOLERANCE_M), f"contact flag, step {k}"
        np.testing.assert_allclose(grf, floor_force_world_N(m, d), rtol=0, atol=1e-12,
                                   err_msg=f"floor force, step {k}")
        n_contact_steps += touching
    assert 0 < n_contact_steps < 250, "the jump must have both stance and flight"
