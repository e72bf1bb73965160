"""FrogSpec validation and the scaled Kassina geometry, against the numbers in notes/invitro-vr.md."""

import math

import pytest

from myotwin.invitro.frog import KASSINA, FrogSpec, frog_geometry


def test_isometric_factors_match_the_notes():
    # notes §2 "The three XMLs": for the 30.3 g frog, mass factor 2.658, length factor 1.3852.
    spec = FrogSpec()
    assert spec.mass_factor == pytest.approx(2.658, abs=5e-4)
    assert spec.length_factor == pytest.approx(1.3852, abs=5e-5)


def test_scaled_segment_lengths_match_the_notes():
    # notes §2: lengths x 1.3852 -> foot 13.85, tarsus 11.12, tibia 28.35, femur 24.64, body 27.35 mm
    # (rounded to 0.01 mm in the notes, hence the 0.006 mm tolerance).
    seg = frog_geometry(FrogSpec()).segments
    expected_mm = {"foot": 13.85, "tarsus": 11.12, "shank": 28.35, "thigh": 24.64, "trunk": 27.35}
    for name, mm in expected_mm.items():
        assert seg[name].length_m * 1e3 == pytest.approx(mm, abs=0.006), name


def test_microct_masses_sum_to_the_whole_specimen():
    # notes §4 RMsim: body 7.2, pelvis 1.3, thigh 0.776, shank 0.362, tarsus 0.156, foot 0.163 g;
    # with two legs they sum to 11.414 g.
    assert KASSINA.whole_animal_mass_kg * 1e3 == pytest.approx(11.414, abs=1e-9)


def test_half_frog_is_half_the_scaled_animal():
    spec = FrogSpec()
    geom = frog_geometry(spec)
    whole = KASSINA.whole_animal_mass_kg * spec.mass_factor
    assert geom.total_mass_kg == pytest.approx(whole / 2, rel=1e-12)
    assert geom.total_mass_kg * 1e3 == pytest.approx(15.17, abs=0.01)


def test_whole_trunk_variant_adds_the_other_half_trunk():
    # trunk_mass_fraction = 1 puts the whole trunk (body + pelvis, 8.5 g x 2.658) on one leg.
    # The notes' 23.0 g "one leg + body" omits the 1.3 g pelvis: 23.0 + 1.3 x 2.658 = 26.46 g.
    geom = frog_geometry(FrogSpec(trunk_mass_fraction=1.0))
    assert geom.total_mass_kg * 1e3 == pytest.approx(23.01 + 1.3 * 2.658, abs=0.02)


def test_capsule_radii_reproduce_the_authors_scaled_model():
    # The authors scaled to a 46.0 g equivalent (mass factor 4.035) and took r = sqrt(V/(pi L)),
    # V = m / rho. Their 5SegRM radii (notes §2 table): foot 3.3078, tarsus 3.6801,
    # tibiofibula 3.5515, femur 5.7075 mm. Same formula and densities -> same radii (their
    # masses were rounded, hence 0.005 mm).
    seg = frog_geometry(FrogSpec(mass_kg=4.035 * 0.0114)).segments
    for name, mm in {"foot": 3.3078, "tarsus": 3.6801, "shank": 3.5515, "thigh": 5.7075}.items():
        assert seg[name].radius_m * 1e3 == pytest.approx(mm, abs=0.005), name


def test_inertia_is_a_solid_cylinder_about_the_segment_centre():
    for seg in frog_geometry(FrogSpec()).segments.values():
        m, r, L = seg.mass_kg, seg.radius_m, seg.length_m
        assert seg.inertia_transverse_kg_m2 == pytest.approx(m * (3 * r * r + L * L) / 12, rel=1e-12)
        assert seg.inertia_axial_kg_m2 == pytest.approx(m * r * r / 2, rel=1e-12)


def test_half_trunk_keeps_the_whole_trunk_radius():
    half = frog_geometry(FrogSpec()).segments["trunk"]
    whole = frog_geometry(FrogSpec(trunk_mass_fraction=1.0)).segments["trunk"]
    assert half.radius_m == whole.radius_m
    assert half.mass_kg == pytest.approx(whole.mass_kg / 2)


def test_foot_tilt_lets_toe_and_tmt_sphere_both_touch():
    geom = frog_geometry(FrogSpec())
    foot = geom.segments["foot"]
    gap = geom.joint_sphere_radius_m - foot.radius_m
    assert math.sin(geom.foot_tilt_rad) * foot.length_m == pytest.approx(gap, rel=1e-12)
    # The tarsus keeps the authors' world orientation: TMT flexion reduced by the tilt.
    assert geom.start_rotations_rad["tmt"] == pytest.approx(1.65 - geom.foot_tilt_rad, rel=1e-12)


@pytest.mark.parametrize("field, value, fragment", [
    ("mass_kg", -0.03, "mass_kg"),
    ("mass_kg", float("nan"), "mass_kg"),
    ("trunk_mass_fraction", 0.0, "trunk_mass_fraction"),
    ("side_site_factor", 1.0, "side_site_factor"),
    ("range_knee_rad", (0.3, -3.3), "range_knee_rad"),
    ("contact_solimp", (0.99, 0.95, 0.001), "contact_solimp"),
    ("contact_timeconst_s", 0.0015, "contact_timeconst_s"),
    ("jacobian", "auto", "jacobian"),
    ("forelimb_support_fraction", 1.5, "forelimb_support_fraction"),
    ("origin_offset_m", -0.001, "origin_offset_m"),
    ("knee_max_torque_Nm", -0.01, "knee_max_torque_Nm"),
    ("hip_max_torque_Nm", 0.0, "hip_max_torque_Nm"),
])
def test_invalid_fields_are_named_in_the_error(field, value, fragment):
    with pytest.raises(ValueError, match=fragment):
        FrogSpec(**{field: value})


def test_lists_are_accepted_for_tuple_fields():
    spec = FrogSpec(range_ankle_rad=[-0.5, 1.7], contact_solimp=[0.9, 0.95, 0.001])
    assert spec.range_ankle_rad == (-0.5, 1.7)
    assert spec.contact_solimp == (0.9, 0.95, 0.001)
    hash(spec)  # still a frozen, hashable value


def test_unknown_hinge_is_rejected():
    with pytest.raises(ValueError, match="unknown hinge"):
        FrogSpec().range_rad("elbow")
