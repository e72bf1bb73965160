"""Servo targets and forelimb support: closed forms against the authors' inforces.dat."""

import math

import numpy as np
import pytest

from myotwin.invitro.frog import (HIP_FIT, KNEE_FIT, FrogSpec, forelimb_support_N, frog_geometry,
                                  hip_target_delta_rad, knee_target_delta_rad, servo_controls,
                                  servo_targets_rad)
from shared_reference import SHARED

REFERENCE = SHARED / "reference" / "invitro-vr"
needs_reference = pytest.mark.skipif(not (REFERENCE / "inforces.dat").is_file(),
                                     reason=f"authors' reference files not found in {REFERENCE}")


def _inforces():
    data = np.loadtxt(REFERENCE / "inforces.dat")
    # The notebook generated row k at t_k = 0.3 k / 299 s (notes §3.2).
    return np.arange(data.shape[0]) * 0.3 / 299, data


@needs_reference
def test_targets_reproduce_inforces_columns_1_and_2():
    # Our coefficients are rounded to 7 significant digits; the rounding error is < 1e-6 rad
    # (the unrounded fit leaves < 1e-13 rad). Tolerance 2e-6 rad.
    t, data = _inforces()
    assert np.abs(knee_target_delta_rad(t) - data[:, 1]).max() < 2e-6
    assert np.abs(hip_target_delta_rad(t) - data[:, 2]).max() < 2e-6


@needs_reference
def test_forelimb_closed_form_reproduces_column_3_with_the_authors_mass():
    # notes §3.2: 0.51 * 0.010456 kg * g * (0.5 - 0.5 tanh(2 pi 5 (2t - 0.18))) matches column 3
    # to ~1e-6 N (1.15e-6 here: the notes' mass 0.010456 kg is rounded to 5 digits, 5e-6
    # relative of 0.052 N = 2.6e-7 N, plus the file's own generator rounding). Tolerance 2e-6 N.
    # With our spec the same law uses our model's mass instead.
    t, data = _inforces()
    ours = forelimb_support_N(t, FrogSpec())
    authors = ours * 0.010456 / frog_geometry(FrogSpec()).total_mass_kg
    assert np.abs(authors - data[:, 3]).max() < 2e-6


def test_targets_start_at_zero_and_reach_the_plateau():
    assert knee_target_delta_rad(0.0) == 0.0
    assert hip_target_delta_rad(0.0) == 0.0
    # notes §3.2 / SOURCE.md: knee 0 -> 2.983, hip 0 -> -3.291 rad
    assert knee_target_delta_rad(0.3) == pytest.approx(2.9831, abs=1e-4)
    assert hip_target_delta_rad(0.3) == pytest.approx(-3.2912, abs=1e-4)


def test_scalar_and_array_inputs():
    assert isinstance(knee_target_delta_rad(0.05), float)
    assert knee_target_delta_rad(np.array([0.0, 0.05])).shape == (2,)
    assert isinstance(forelimb_support_N(0.0), float)


def test_servo_targets_are_start_angles_plus_delta():
    spec = FrogSpec()
    start = frog_geometry(spec).start_rotations_rad
    knee, hip = servo_targets_rad(0.08, spec)
    assert knee == pytest.approx(start["knee"] + knee_target_delta_rad(0.08), abs=1e-15)
    assert hip == pytest.approx(start["hip"] + hip_target_delta_rad(0.08), abs=1e-15)


def test_servo_controls_add_velocity_feed_forward():
    # kp (ctrl - q*) = kv qdot*: the position servo becomes a PD on the tracking error.
    spec = FrogSpec()
    t = 0.07
    ctrl = servo_controls(t, spec)
    target = servo_targets_rad(t, spec)
    joints = ((ctrl[0], target[0], KNEE_FIT, spec.knee_kp_Nm_per_rad, spec.knee_kv_Nms_per_rad),
              (ctrl[1], target[1], HIP_FIT, spec.hip_kp_Nm_per_rad, spec.hip_kv_Nms_per_rad))
    for c, q, fit, kp, kv in joints:
        h = 1e-7
        rate = (fit.delta_rad(t + h) - fit.delta_rad(t - h)) / (2 * h)
        assert kp * (c - q) == pytest.approx(kv * rate, rel=1e-5)


def test_forelimb_support_is_51_percent_of_the_model_weight_at_start():
    spec = FrogSpec()
    m = frog_geometry(spec).total_mass_kg
    # tanh(2 pi 5 * -0.18) = tanh(-5.65) = -0.999975, so F(0) is 51 % of the weight to 1.3e-5
    assert forelimb_support_N(0.0, spec) == pytest.approx(0.51 * m * 9.81, rel=2e-5)
    assert forelimb_support_N(0.2, spec) < 1e-3 * m * 9.81
    half_at = 0.09  # 2t - 0.18 = 0
    assert forelimb_support_N(half_at, spec) == pytest.approx(0.5 * 0.51 * m * 9.81, rel=1e-12)
    assert math.isclose(forelimb_support_N(0.0, FrogSpec(forelimb_support_fraction=0.0)), 0.0)
