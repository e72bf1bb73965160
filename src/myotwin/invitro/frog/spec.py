"""Parameters of our planar one-leg frog and the geometry derived from them.

Two stages (docs/invitro/frog.md):

* `FrogSpec` holds the choices (specimen mass, muscle origin, gains, contact, ...), frozen and
  validated on construction.
* `frog_geometry(spec)` turns the documented *Kassina maculata* segment data (`KASSINA`) into the
  numbers the MJCF needs (scaled lengths, masses, radii, inertias, start pose), in SI units.

Source of the segment data (notes/invitro-vr.md §2 "The three XMLs" and §4 RMsim): the µCT
masses of the 11.4 g specimen (body 7.2, pelvis 1.3, thigh 0.776, shank 0.362, tarsus 0.156,
foot 0.163 g), the unscaled segment lengths of the authors' 5SegRM_unscaled model (foot 10.0,
tarsus 8.0277, tibiofibula 20.4671, femur 17.7912, body 19.7439 mm), the segment densities of
RMsim's segmentVolumesDensities, and the 3 mm joint spheres. Scaling is isometric (seed, Methods):
mass factor = specimen mass / 11.4 g, length factor = mass factor ** (1/3).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from myotwin.scalars import is_finite_number

GRAVITY_M_S2 = 9.81

# Order of the four hinges, distal to proximal (the kinematic chain starts at the foot).
HINGE_ORDER: tuple[str, ...] = ("tmt", "ankle", "knee", "hip")


@dataclass(frozen=True)
class SegmentData:
    """One segment of the unscaled 11.4 g Kassina (µCT)."""

    mass_kg: float
    """Mass of the segment in the whole animal (trunk: body + pelvis; limbs: one side)."""
    length_m: float
    """Joint-to-joint length (trunk: hip to snout)."""
    density_kg_m3: float
    """Bone + soft tissue density, used only for the capsule radius."""


@dataclass(frozen=True)
class KassinaData:
    """Documented segment data of the 11.4 g Kassina maculata (see the module docstring)."""

    reference_mass_kg: float = 0.0114
    """Specimen mass the seed scales from ('11.4 g'; RMsim's ratio = target mass / 11.4 g)."""
    foot: SegmentData = SegmentData(0.163e-3, 10.0e-3, 1201.5)
    tarsus: SegmentData = SegmentData(0.156e-3, 8.0277e-3, 1154.6)
    shank: SegmentData = SegmentData(0.362e-3, 20.4671e-3, 1130.1)
    thigh: SegmentData = SegmentData(0.776e-3, 17.7912e-3, 1080.6)
    trunk: SegmentData = SegmentData((7.2 + 1.3) * 1e-3, 19.7439e-3, 1099.7)
    """µCT 'Body' 7.2 g plus 'Pelvis' 1.3 g (the authors' scaled model omitted the pelvis)."""
    joint_sphere_radius_m: float = 3.0e-3
    """Radius of the wrap/contact spheres on the joints (authors' unscaled model)."""
    snout_radius_m: float = 3.0e-3
    """Radius of the snout contact sphere (authors' value, here scaled like everything else)."""

    @property
    def whole_animal_mass_kg(self) -> float:
        """Sum of the µCT masses with two legs (11.414 g, 0.12 % above the quoted 11.4 g)."""
        legs = self.foot.mass_kg + self.tarsus.mass_kg + self.shank.mass_kg + self.thigh.mass_kg
        return self.trunk.mass_kg + 2.0 * legs


KASSINA = KassinaData()

# The authors' crouched "Z-fold" start pose: hinge rotations relative to the straight limb, for a
# foot lying flat (notes §2 "Start pose", = -qposInit[7:11]). TMT and ankle flex positively,
# the knee negatively, the hip positively (the sign of each hinge about world +y).
AUTHORS_START_ROTATIONS_RAD: tuple[float, float, float, float] = (1.65, 1.50, -3.14, 3.12)


def _require(cond: bool, name: str, value, expected: str) -> None:
    if not cond:
        raise ValueError(f"FrogSpec: field '{name}' = {value!r}: expected {expected}")


def _check_pair(name: str, value) -> None:
    ok = (isinstance(value, tuple) and len(value) == 2 and all(is_finite_number(v) for v in value)
          and value[0] < value[1])
    _require(ok, name, value, "a tuple (low, high) of finite numbers with low < high")


@dataclass(frozen=True)
class FrogSpec:
    """Choices for our frog model. SI units; angles in radians. See docs/invitro/frog.md."""

    # --- size and mass ---------------------------------------------------------------------
    mass_kg: float = 0.0303
    """Mass of the whole specimen the model is scaled to (seed: the 30.3 g Xenopus)."""
    trunk_mass_fraction: float = 0.5
    """Share of the trunk (body + pelvis) carried by the one-leg model. 0.5 = half frog (one
    leg, one plantaris, half the trunk: bilateral symmetry keeps the muscle-force-to-weight
    ratio of the animal); 1.0 = a whole trunk on one leg, as in the authors' model."""

    # --- plantaris path ----------------------------------------------------------------------
    origin_offset_m: float = 0.0
    """Plantaris origin, distance from the knee centre along the femur's long axis towards the
    hip. 0 = the seed's nominal origin (no knee moment); > 0 = the 'shifted origin' condition."""
    origin_depth_m: float = 0.0
    """Plantaris origin, signed distance from the femur's long axis: > 0 towards the femur side
    that faces away from the tibia in the start pose (femur local +x), < 0 towards the tibia
    (the authors' 5SegRM origin was one femur radius on that side). 0 = on the axis."""
    insertion_fraction: float = 0.4
    """Insertion on the plantar surface of the foot, as a fraction of the foot length distal of
    the TMT joint (the proximal foot)."""
    side_site_factor: float = 1.5
    """Wrap side-sites sit at this multiple of the sphere radius from the sphere centre (must be
    > 1: a side-site inside the sphere makes MuJoCo thread the path through it)."""
    side_site_angle_fraction: float = 0.5
    """Where on the wrapped arc the side-site points, as a fraction of the start-pose flexion of
    the joint (0 = perpendicular to the proximal segment, 0.5 = mid-arc)."""

    # --- joint ranges: hinge angle = rotation from the straight limb ---------------------------
    # TMT and ankle flex positively, the knee negatively, the hip positively. Start pose: TMT
    # 1.558, ankle 1.50, knee -3.14, hip 3.12. Servo end targets: knee -0.157, hip -0.171.
    range_tmt_rad: tuple[float, float] = (-0.6, 1.65)
    """Hyperextension to -0.6; flexion stop 0.09 rad (5 deg) beyond the crouch (moving it to
    1.70-1.75 changes none of the experiment's results; docs/invitro/tuning.md)."""
    range_ankle_rad: tuple[float, float] = (-0.6, 1.9)
    """Hyperextension to -0.6; flexion stop 0.4 rad (23 deg) beyond the crouch (interior
    shank-tarsus angle 71 deg; docs/invitro/tuning.md). With the stop 6 deg beyond the crouch
    it propped the muscle-absent leg up like a strut and control 1 jumped almost as high as the
    stimulated jumps, against the seed's "jumped only weakly". Now, without the muscle, the
    ankle folds onto the stop and the knee touches the floor."""
    range_knee_rad: tuple[float, float] = (-3.3, 0.3)
    """Folded to -3.3 (0.16 beyond the crouch), extension to +0.3: the target (-0.157) is inside."""
    range_hip_rad: tuple[float, float] = (-0.6, 3.3)
    """Folded to 3.3 (0.18 beyond the crouch), extension to -0.6: the target (-0.171) is inside."""
    limit_timeconst_s: float = 0.002
    """Joint-limit solref time constant: 2 ms = 2 timesteps, the stiffest MuJoCo allows; softer
    stops let the unloaded foot swing far past them when the muscle pulls in flight."""

    # --- hip and knee servos -------------------------------------------------------------------
    knee_kp_Nm_per_rad: float = 0.2
    """Position gain: tracks the knee target within 4 deg in stance with the muscle absent."""
    knee_kv_Nms_per_rad: float = 1.2e-4
    """Damping gain. RK4 handles it explicitly, so kv * dt / I_eff must stay below ~2.5, with
    I_eff the smallest effective inertia of the joint (8.6e-8 kg m^2 for the knee of a straight
    leg in flight): kv <= 2e-4. See docs/invitro/frog.md."""
    hip_kp_Nm_per_rad: float = 0.2
    hip_kv_Nms_per_rad: float = 1.2e-4
    knee_max_torque_Nm: float = 0.03
    """Force range of the knee servo, |torque| <= 30 mN m: never reached in the default jumps
    (peaks 6-10 mN m), so the knee tracks its target within 5 deg in stance in every
    condition, also against the shifted origin's knee-flexor moment."""
    hip_max_torque_Nm: float = 0.0045
    """Force range of the hip servo, |torque| <= 4.5 mN m: the lumped hip extensors of the half
    frog, 3x the half trunk's static moment about the hip (1.5 mN m). Saturated through most of
    the push-off, so the hip lags its target by up to 33 deg in the nominal stance (42 deg with
    the shifted origin). A stronger hip (>= 6 mN m) flings the half trunk up by itself and the
    leg's muscle matters much less (with 30 mN m control 1 jumped 52.5 mm and the nominal jump
    only 1.5x that). See docs/invitro/tuning.md."""

    # --- forelimb support ----------------------------------------------------------------------
    forelimb_support_fraction: float = 0.51
    """Share of the *model's* weight carried by the forelimbs at t = 0 (authors: 51 %)."""
    forelimb_support_position: float = 0.75
    """Where the support acts on the trunk, as a fraction of the trunk length from the hip
    (0 = at the hip, as in the authors' model; 0.75 = under the shoulders, our estimate: with
    the trunk's mass at mid-trunk, support at the hip would tip the crouch over the toes)."""

    # --- contact ---------------------------------------------------------------------------------
    contact_timeconst_s: float = 0.005
    contact_dampratio: float = 1.5
    """Damping ratio of the floor contacts (solref[1]): overdamped, as the soft, viscoelastic toe
    pads and plantar skin are. With 1.0 (critical) the nearly massless toe, pressed down by the
    muscle, bounced off the floor for 5 ms in late push-off in about one trial in six, which the
    takeoff criterion reads as the takeoff (docs/invitro/tuning.md)."""
    contact_solimp: tuple[float, float, float] = (0.95, 0.99, 0.0005)
    """(dmin, dmax, width m) of the floor contacts."""
    friction: float = 1.0
    contact_sensing_m: float = 0.0005
    """MuJoCo lists floor contacts up to this distance (pair `gap`, margin 0: no force before
    touch), so the metrics can tell a toe resting on the floor from a real flight (see metrics)."""
    trunk_contact_radius_m: float | None = None
    """Radius of the trunk's landing capsule; None = the joint-sphere radius (see docs)."""

    # --- numerics ------------------------------------------------------------------------------
    timestep_s: float = 0.001
    jacobian: str = "dense"
    """'dense' (default; see docs/invitro/mujoco.md) or 'sparse'."""
    integrator: str = "RK4"

    def __post_init__(self) -> None:
        # Accept lists (e.g. from a TOML or JSON config) for the tuple fields.
        for name in ("range_tmt_rad", "range_ankle_rad", "range_knee_rad", "range_hip_rad",
                     "contact_solimp"):
            v = getattr(self, name)
            if isinstance(v, list):
                object.__setattr__(self, name, tuple(v))
        positive = ("mass_kg", "side_site_factor", "limit_timeconst_s", "knee_kp_Nm_per_rad",
                    "hip_kp_Nm_per_rad", "knee_max_torque_Nm", "hip_max_torque_Nm",
                    "contact_timeconst_s",
                    "contact_dampratio", "friction", "timestep_s", "contact_sensing_m")
        for name in positive:
            v = getattr(self, name)
            _require(is_finite_number(v) and v > 0, name, v, "a finite number > 0")
        for name in ("knee_kv_Nms_per_rad", "hip_kv_Nms_per_rad", "origin_offset_m"):
            v = getattr(self, name)
            _require(is_finite_number(v) and v >= 0, name, v, "a finite number >= 0")
        _require(is_finite_number(self.origin_depth_m), "origin_depth_m", self.origin_depth_m,
                 "a finite number")
        v = self.trunk_mass_fraction
        _require(is_finite_number(v) and 0 < v <= 1, "trunk_mass_fraction", v, "a number in (0, 1]")
        for name in ("insertion_fraction", "forelimb_support_position"):
            v = getattr(self, name)
            _require(is_finite_number(v) and 0 <= v <= 1, name, v, "a number in [0, 1]")
        v = self.side_site_angle_fraction
        _require(is_finite_number(v) and 0 <= v <= 1, "side_site_angle_fraction", v,
                 "a number in [0, 1]")
        v = self.forelimb_support_fraction
        _require(is_finite_number(v) and 0 <= v <= 1, "forelimb_support_fraction", v,
                 "a number in [0, 1]")
        _require(self.side_site_factor > 1.0, "side_site_factor", self.side_site_factor,
                 "> 1 (outside the sphere)")
        for name in ("range_tmt_rad", "range_ankle_rad", "range_knee_rad", "range_hip_rad"):
            _check_pair(name, getattr(self, name))
        s = self.contact_solimp
        ok = (isinstance(s, tuple) and len(s) == 3 and all(is_finite_number(x) for x in s)
              and 0 < s[0] <= s[1] < 1 and s[2] > 0)
        _require(ok, "contact_solimp", s, "(dmin, dmax, width) with 0 < dmin <= dmax < 1, width > 0")
        v = self.trunk_contact_radius_m
        _require(v is None or (is_finite_number(v) and v > 0), "trunk_contact_radius_m", v,
                 "None or a finite number > 0")
        for name in ("contact_timeconst_s", "limit_timeconst_s"):
            v = getattr(self, name)
            _require(v >= 2 * self.timestep_s, name, v,
                     f">= 2 * timestep_s = {2 * self.timestep_s} (MuJoCo's stability rule)")
        _require(self.jacobian in ("dense", "sparse"), "jacobian", self.jacobian,
                 "'dense' or 'sparse'")
        _require(self.integrator in ("RK4", "Euler", "implicitfast"), "integrator",
                 self.integrator, "'RK4', 'Euler' or 'implicitfast'")

    @property
    def mass_factor(self) -> float:
        """Isometric mass scale from the 11.4 g Kassina (2.658 for 30.3 g)."""
        return self.mass_kg / KASSINA.reference_mass_kg

    @property
    def length_factor(self) -> float:
        """Isometric length scale, mass_factor ** (1/3) (1.3852 for 30.3 g)."""
        return self.mass_factor ** (1.0 / 3.0)

    def range_rad(self, hinge: str) -> tuple[float, float]:
        """Range of `hinge` ('tmt', 'ankle', 'knee', 'hip'), rotation from the straight limb."""
        if hinge not in HINGE_ORDER:
            raise ValueError(f"FrogSpec.range_rad: unknown hinge {hinge!r}; expected one of {HINGE_ORDER}")
        return getattr(self, f"range_{hinge}_rad")


@dataclass(frozen=True)
class SegmentGeometry:
    """One segment of the scaled model: body frame at its distal joint, segment along local +z."""

    name: str
    length_m: float
    mass_kg: float
    radius_m: float
    """Capsule radius from the volume: r = sqrt(V / (pi L)), V = whole-animal mass / density."""
    inertia_transverse_kg_m2: float
    """About the centre, perpendicular to the long axis: m (3 r^2 + L^2) / 12 (solid cylinder)."""
    inertia_axial_kg_m2: float
    """About the long axis: m r^2 / 2."""


@dataclass(frozen=True)
class FrogGeometry:
    """Numbers derived from a FrogSpec: what the MJCF is written from. SI units."""

    segments: dict[str, SegmentGeometry] = field(repr=False)
    """foot, tarsus, shank, thigh, trunk."""
    joint_sphere_radius_m: float
    snout_radius_m: float
    trunk_contact_radius_m: float
    foot_pitch_rad: float
    """Pitch of the foot about world y at the start (-pi/2 + tilt): the foot lies along -x with
    its toe at x = 0, tilted so that both the toe cap and the TMT sphere touch the floor."""
    foot_tilt_rad: float
    """asin((r_sphere - r_foot) / L_foot): the TMT end is raised by the sphere/foot radius gap."""
    start_rotations_rad: dict[str, float]
    """Hinge angles (rotation from the straight limb) of the start pose = joint refs = qpos0."""
    toe_height_m: float
    """Height of the foot axis at the toe (= foot radius: the toe cap touches z = 0)."""

    @property
    def total_mass_kg(self) -> float:
        return sum(s.mass_kg for s in self.segments.values())


_LIMB_SEGMENTS = ("foot", "tarsus", "shank", "thigh")


def frog_geometry(spec: FrogSpec = FrogSpec()) -> FrogGeometry:
    """Scale the Kassina data to `spec` (isometric) and derive the start pose."""
    fm, fl = spec.mass_factor, spec.length_factor
    segments: dict[str, SegmentGeometry] = {}
    for name in _LIMB_SEGMENTS + ("trunk",):
        data: SegmentData = getattr(KASSINA, name)
        length = data.length_m * fl
        whole_mass = data.mass_kg * fm
        # The radius describes the segment's shape, so it comes from the whole-animal mass even
        # when the model carries only part of the trunk (the half trunk is as thick as the whole).
        radius = math.sqrt(whole_mass / data.density_kg_m3 / (math.pi * length))
        mass = whole_mass * (spec.trunk_mass_fraction if name == "trunk" else 1.0)
        segments[name] = SegmentGeometry(
            name=name, length_m=length, mass_kg=mass, radius_m=radius,
            inertia_transverse_kg_m2=mass * (3 * radius**2 + length**2) / 12.0,
            inertia_axial_kg_m2=mass * radius**2 / 2.0)
    r_sphere = KASSINA.joint_sphere_radius_m * fl
    foot = segments["foot"]
    gap = r_sphere - foot.radius_m
    tilt = math.asin(gap / foot.length_m) if gap > 0 else 0.0
    tmt, ankle, knee, hip = AUTHORS_START_ROTATIONS_RAD
    # Tilting the foot by `tilt` and flexing the TMT by `tilt` less keeps the tarsus, shank,
    # thigh and trunk exactly in the authors' start orientation.
    start = {"tmt": tmt - tilt, "ankle": ankle, "knee": knee, "hip": hip}
    trunk_contact = spec.trunk_contact_radius_m if spec.trunk_contact_radius_m is not None else r_sphere
    return FrogGeometry(
        segments=segments, joint_sphere_radius_m=r_sphere,
        snout_radius_m=KASSINA.snout_radius_m * fl, trunk_contact_radius_m=trunk_contact,
        foot_pitch_rad=-math.pi / 2 + tilt, foot_tilt_rad=tilt, start_rotations_rad=start,
        toe_height_m=foot.radius_m)
