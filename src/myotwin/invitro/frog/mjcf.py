"""MJCF of our planar one-leg frog, written from a FrogSpec (docs/invitro/frog.md).

Topology (the authors' 5SegRM, renamed): foot (free joint) -> tarsus (hinge `tmt`) -> shank
(hinge `ankle`) -> thigh (hinge `knee`) -> trunk (hinge `hip`). Every body's frame sits on its
distal joint (the foot's on the toe) and the segment runs along local +z; all hinges turn about
world y, +z is up, the frog faces +x. The XML is written in the crouched start pose and each
hinge's `ref` is its start angle, so a hinge's qpos is its rotation from the straight limb,
`qpos0` (and keyframe "start") is the start pose, and `mj_resetData` gives the start pose.

Actuators: `plantaris` (motor on the spatial tendon, gear -1, so ctrl = tension in N, > 0 pulls),
`knee_servo`, `hip_servo` (position servos with kv; see targets.servo_controls).
"""

from __future__ import annotations

import math
from types import MappingProxyType
from typing import Mapping

import numpy as np

from .spec import GRAVITY_M_S2, HINGE_ORDER, FrogGeometry, FrogSpec, frog_geometry

# Names (bodies, joints, geoms, sites, tendon, actuators, keyframe).
BODY_FOOT = "foot"
BODY_TARSUS = "tarsus"
BODY_SHANK = "shank"
BODY_THIGH = "thigh"
BODY_TRUNK = "trunk"
BODY_FORELIMB_SUPPORT = "forelimb_support"
"""Massless body welded to the trunk where the forelimb support acts (xfrc_applied target)."""
JOINT_ROOT = "root"
JOINT_TMT = "tmt"
JOINT_ANKLE = "ankle"
JOINT_KNEE = "knee"
JOINT_HIP = "hip"
HINGE_JOINTS: tuple[str, ...] = (JOINT_TMT, JOINT_ANKLE, JOINT_KNEE, JOINT_HIP)
GEOM_FLOOR = "floor"
GEOM_FOOT = "foot"
GEOM_SNOUT = "snout"
GEOM_TRUNK_CONTACT = "trunk_contact"
GEOM_SPHERES: Mapping[str, str] = MappingProxyType({j: f"sphere_{j}" for j in HINGE_JOINTS})
"""Joint name -> name of the wrap/contact sphere centred on that joint."""
SITE_ORIGIN = "plantaris_origin"
SITE_ANKLE_SIDE = "plantaris_ankle_side"
SITE_VIA = "plantaris_via"
SITE_TMT_SIDE = "plantaris_tmt_side"
SITE_INSERTION = "plantaris_insertion"
TENDON_PLANTARIS = "plantaris"
ACTUATOR_PLANTARIS = "plantaris"
ACTUATOR_KNEE = "knee_servo"
ACTUATOR_HIP = "hip_servo"
KEY_START = "start"


def _f(x: float) -> str:
    """Shortest text that reads back as the same float (the MJCF is exact, not rounded)."""
    return repr(float(x))


def _vec(*xs: float) -> str:
    return " ".join(_f(x) for x in xs)


def _quat_y(angle: float) -> str:
    """Quaternion (w x y z) of a rotation by `angle` about +y."""
    return _vec(math.cos(angle / 2), 0.0, math.sin(angle / 2), 0.0)


def _local_xz(angle: float, radius: float, z: float = 0.0) -> str:
    """Point in a segment frame at `radius` from the axis, in direction -x rotated by `angle`
    towards -z (the posterior, wrap side of the frog's joints), at height z."""
    return _vec(-radius * math.cos(angle), 0.0, z - radius * math.sin(angle))


def _check_start_in_ranges(spec: FrogSpec, geom: FrogGeometry) -> None:
    for hinge in HINGE_ORDER:
        lo, hi = spec.range_rad(hinge)
        q = geom.start_rotations_rad[hinge]
        if not lo < q < hi:
            raise ValueError(f"FrogSpec: field 'range_{hinge}_rad' = {(lo, hi)!r}: expected it to "
                             f"contain the start angle {q:.4f} rad")


def _inertial(seg) -> str:
    """COM at mid-segment, solid-cylinder principal inertia (the segment runs along local z)."""
    i_t, i_a = seg.inertia_transverse_kg_m2, seg.inertia_axial_kg_m2
    return (f'<inertial pos="{_vec(0, 0, seg.length_m / 2)}" mass="{_f(seg.mass_kg)}" '
            f'diaginertia="{_vec(i_t, i_t, i_a)}"/>')


def _capsule(name: str, seg, rgba: str = "0.7 0.6 0.4 0.6") -> str:
    return (f'<geom name="{name}" type="capsule" fromto="{_vec(0, 0, 0, 0, 0, seg.length_m)}" '
            f'size="{_f(seg.radius_m)}" rgba="{rgba}"/>')


def _hinge(name: str, spec: FrogSpec, geom: FrogGeometry) -> str:
    lo, hi = spec.range_rad(name)
    return (f'<joint name="{name}" type="hinge" axis="0 1 0" ref="{_f(geom.start_rotations_rad[name])}" '
            f'limited="true" range="{_vec(lo, hi)}"/>')


def _sphere(joint: str, r: float) -> str:
    return f'<geom name="{GEOM_SPHERES[joint]}" type="sphere" size="{_f(r)}" rgba="0.3 0.9 0.3 0.4"/>'


def _contact_xml(spec: FrogSpec) -> str:
    """Explicit floor pairs (all geoms have contype = conaffinity = 0, so nothing else collides).

    gap (MuJoCo 4.0 semantics): contacts up to `contact_sensing_m` apart are listed in
    mjData.contact as inactive (efc_address = -1, no force) for the contact metrics; forces
    start at margin = 0, so the dynamics are those of gap = 0.
    """
    fr = _f(spec.friction)
    attrs = (f'condim="3" friction="{fr} {fr} 0.005 0.0001 0.0001" '
             f'solref="{_vec(spec.contact_timeconst_s, spec.contact_dampratio)}" '
             f'solimp="{_vec(*spec.contact_solimp)}" margin="0" gap="{_f(spec.contact_sensing_m)}"')
    geoms = [GEOM_FOOT, *GEOM_SPHERES.values(), GEOM_SNOUT, GEOM_TRUNK_CONTACT]
    return "\n    ".join(f'<pair geom1="{GEOM_FLOOR}" geom2="{g}" {attrs}/>' for g in geoms)


def _actuator_xml(spec: FrogSpec) -> str:
    """Plantaris motor (gear -1: ctrl = tension, N) and the knee and hip position servos."""
    lines = [f'<motor name="{ACTUATOR_PLANTARIS}" tendon="{TENDON_PLANTARIS}" gear="-1"/>']
    for act, joint, kp, kv, cap in (
            (ACTUATOR_KNEE, JOINT_KNEE, spec.knee_kp_Nm_per_rad, spec.knee_kv_Nms_per_rad,
             spec.knee_max_torque_Nm),
            (ACTUATOR_HIP, JOINT_HIP, spec.hip_kp_Nm_per_rad, spec.hip_kv_Nms_per_rad,
             spec.hip_max_torque_Nm)):
        lines.append(f'<position name="{act}" joint="{joint}" kp="{_f(kp)}" kv="{_f(kv)}" '
                     f'forcelimited="true" forcerange="{_vec(-cap, cap)}"/>')
    return "\n    ".join(lines)


def _tendon_xml() -> str:
    """Origin (thigh) -> over the ankle sphere -> via (tarsus) -> over the TMT sphere -> foot."""
    return f"""<spatial name="{TENDON_PLANTARIS}" width="0.0003" rgba="0.95 0.3 0.3 1">
      <site site="{SITE_ORIGIN}"/>
      <geom geom="{GEOM_SPHERES[JOINT_ANKLE]}" sidesite="{SITE_ANKLE_SIDE}"/>
      <site site="{SITE_VIA}"/>
      <geom geom="{GEOM_SPHERES[JOINT_TMT]}" sidesite="{SITE_TMT_SIDE}"/>
      <site site="{SITE_INSERTION}"/>
    </spatial>"""


def build_frog_mjcf(spec: FrogSpec = FrogSpec()) -> str:
    """The MJCF string of our frog for `spec` (pure; validated)."""
    geom = frog_geometry(spec)
    _check_start_in_ranges(spec, geom)
    seg = geom.segments
    r_s = geom.joint_sphere_radius_m
    rot = geom.start_rotations_rad
    # Side-sites point at a fraction of the start-pose wrap arc (see side_site_angle_fraction).
    side = spec.side_site_factor * r_s
    ankle_side = _local_xz(spec.side_site_angle_fraction * rot[JOINT_ANKLE], side)
    tmt_side = _local_xz(spec.side_site_angle_fraction * rot[JOINT_TMT], side)
    foot_len = seg["foot"].length_m
    insertion_z = foot_len * (1.0 - spec.insertion_fraction)  # foot frame: toe at 0, TMT at L
    trunk_len = seg["trunk"].length_m
    qpos_start = _vec(*_start_qpos(geom))
    return f"""<mujoco model="myotwin_frog">
  <!-- Generated by myotwin.invitro.frog.mjcf from FrogSpec; see docs/invitro/frog.md.
       specimen {spec.mass_kg * 1e3:.4g} g, model {geom.total_mass_kg * 1e3:.4g} g, length factor
       {spec.length_factor:.5f}; plantaris origin {spec.origin_offset_m * 1e3:.3g} mm proximal of
       the knee centre, {spec.origin_depth_m * 1e3:.3g} mm off the femur axis. -->
  <compiler angle="radian" inertiafromgeom="false" autolimits="true"/>
  <option timestep="{_f(spec.timestep_s)}" integrator="{spec.integrator}" jacobian="{spec.jacobian}"
          solver="Newton" gravity="0 0 {_f(-GRAVITY_M_S2)}"/>
  <default>
    <geom contype="0" conaffinity="0" density="0"/>
    <joint limited="true" solreflimit="{_vec(spec.limit_timeconst_s, 1.0)}"/>
    <site size="0.0005" rgba="0.9 0.2 0.2 1"/>
  </default>
  <worldbody>
    <light pos="0 -0.3 0.3" dir="0 1 -1"/>
    <geom name="{GEOM_FLOOR}" type="plane" size="1 1 0.01" rgba="0.8 0.8 0.8 1"/>
    <body name="{BODY_FOOT}" pos="{_vec(0, 0, geom.toe_height_m)}" quat="{_quat_y(geom.foot_pitch_rad)}">
      <freejoint name="{JOINT_ROOT}"/>
      {_inertial(seg["foot"])}
      {_capsule(GEOM_FOOT, seg["foot"])}
      <site name="{SITE_INSERTION}" pos="{_vec(-seg["foot"].radius_m, 0, insertion_z)}"/>
      <body name="{BODY_TARSUS}" pos="{_vec(0, 0, foot_len)}" quat="{_quat_y(rot[JOINT_TMT])}">
        {_hinge(JOINT_TMT, spec, geom)}
        {_inertial(seg["tarsus"])}
        {_capsule("tarsus", seg["tarsus"])}
        {_sphere(JOINT_TMT, r_s)}
        <site name="{SITE_TMT_SIDE}" pos="{tmt_side}" rgba="0 1 1 1"/>
        <site name="{SITE_VIA}" pos="{_vec(-r_s, 0, seg["tarsus"].length_m / 2)}"/>
        <body name="{BODY_SHANK}" pos="{_vec(0, 0, seg["tarsus"].length_m)}" quat="{_quat_y(rot[JOINT_ANKLE])}">
          {_hinge(JOINT_ANKLE, spec, geom)}
          {_inertial(seg["shank"])}
          {_capsule("shank", seg["shank"])}
          {_sphere(JOINT_ANKLE, r_s)}
          <site name="{SITE_ANKLE_SIDE}" pos="{ankle_side}" rgba="0 1 1 1"/>
          <body name="{BODY_THIGH}" pos="{_vec(0, 0, seg["shank"].length_m)}" quat="{_quat_y(rot[JOINT_KNEE])}">
            {_hinge(JOINT_KNEE, spec, geom)}
            {_inertial(seg["thigh"])}
            {_capsule("thigh", seg["thigh"])}
            {_sphere(JOINT_KNEE, r_s)}
            <site name="{SITE_ORIGIN}" pos="{_vec(spec.origin_depth_m, 0, spec.origin_offset_m)}"/>
            <body name="{BODY_TRUNK}" pos="{_vec(0, 0, seg["thigh"].length_m)}" quat="{_quat_y(rot[JOINT_HIP])}">
              {_hinge(JOINT_HIP, spec, geom)}
              {_inertial(seg["trunk"])}
              {_capsule("trunk", seg["trunk"], "0.7 0.6 0.4 0.3")}
              {_sphere(JOINT_HIP, r_s)}
              <geom name="{GEOM_TRUNK_CONTACT}" type="capsule" fromto="{_vec(0, 0, 0, 0, 0, trunk_len)}"
                    size="{_f(geom.trunk_contact_radius_m)}" rgba="0.4 0.4 0.9 0.4"/>
              <geom name="{GEOM_SNOUT}" type="sphere" pos="{_vec(0, 0, trunk_len)}"
                    size="{_f(geom.snout_radius_m)}" rgba="0.3 0.3 0.9 0.4"/>
              <body name="{BODY_FORELIMB_SUPPORT}" pos="{_vec(0, 0, spec.forelimb_support_position * trunk_len)}">
                <!-- massless; the explicit inertial puts its "COM" (where xfrc_applied acts) at
                     the body origin: without it MuJoCo 4.0 puts ipos at the body's pos offset -->
                <inertial pos="0 0 0" mass="0" diaginertia="0 0 0"/>
              </body>
            </body>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
  <contact>
    {_contact_xml(spec)}
  </contact>
  <tendon>
    {_tendon_xml()}
  </tendon>
  <actuator>
    {_actuator_xml(spec)}
  </actuator>
  <keyframe>
    <key name="{KEY_START}" time="0" qpos="{qpos_start}"/>
  </keyframe>
</mujoco>
"""


def load_frog_model(spec: FrogSpec = FrogSpec()):
    """Compile `build_frog_mjcf(spec)` into a new mujoco.MjModel."""
    import mujoco

    return mujoco.MjModel.from_xml_string(build_frog_mjcf(spec))


def _start_qpos(geom: FrogGeometry) -> np.ndarray:
    half = geom.foot_pitch_rad / 2
    rot = geom.start_rotations_rad
    return np.array([0.0, 0.0, geom.toe_height_m, math.cos(half), 0.0, math.sin(half), 0.0,
                     *(rot[h] for h in HINGE_ORDER)])


def start_qpos(spec: FrogSpec = FrogSpec()) -> np.ndarray:
    """qpos of the start pose, shape (nq,) = (11,): root pos (3), root quat w x y z (4), hinges
    tmt, ankle, knee, hip (rotation from the straight limb). Equals the model's qpos0."""
    return _start_qpos(frog_geometry(spec))
