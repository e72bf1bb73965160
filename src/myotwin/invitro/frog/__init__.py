"""The simulated frog of in vitro-VR: our planar one-leg MJCF and the authors' legacy model.

* spec     - FrogSpec (the choices) and frog_geometry (the scaled Kassina data, start pose)
* mjcf     - build_frog_mjcf / load_frog_model, and the names of bodies, joints, actuators, ...
* targets  - hip and knee servo targets and the forelimb support force, functions of time
* metrics  - whole-body COM, floor contact, takeoff/landing, jump metrics, open-loop rollout
* legacy   - migrate the authors' MuJoCo 1.40 MJCF and replay their recorded run

See docs/invitro/frog.md, docs/invitro/legacy.md and docs/invitro/mujoco.md.
"""

from .legacy import (LegacyReplayResult, LegacyRunFiles, migrate_legacy_mjcf, read_legacy_run,
                     reconstruct_posout, replay_legacy, replay_legacy_command)
from .metrics import (MIN_FLIGHT_STEPS, TOUCH_TOLERANCE_M, JumpMetrics, Rollout,
                      floor_contacts, floor_force_world_N, floor_in_contact, floor_penetration_m,
                      jump_metrics, rollout_open_loop, takeoff_index, whole_body_com)
from .mjcf import (ACTUATOR_HIP, ACTUATOR_KNEE, ACTUATOR_PLANTARIS, BODY_FOOT,
                   BODY_FORELIMB_SUPPORT, BODY_SHANK, BODY_TARSUS, BODY_THIGH, BODY_TRUNK,
                   GEOM_FLOOR, GEOM_FOOT, GEOM_SNOUT, GEOM_SPHERES, GEOM_TRUNK_CONTACT,
                   HINGE_JOINTS, JOINT_ANKLE, JOINT_HIP, JOINT_KNEE, JOINT_ROOT, JOINT_TMT,
                   KEY_START, SITE_ANKLE_SIDE, SITE_INSERTION, SITE_ORIGIN, SITE_TMT_SIDE,
                   SITE_VIA, TENDON_PLANTARIS, build_frog_mjcf, load_frog_model, start_qpos)
from .spec import (AUTHORS_START_ROTATIONS_RAD, GRAVITY_M_S2, KASSINA, FrogGeometry, FrogSpec,
                   KassinaData, SegmentData, SegmentGeometry, frog_geometry)
from .targets import (FORELIMB_BODY, HIP_FIT, KNEE_FIT, TargetFit, forelimb_support_N,
                      hip_target_delta_rad, knee_target_delta_rad, servo_controls,
                      servo_targets_rad)

__all__ = [
    # spec
    "AUTHORS_START_ROTATIONS_RAD", "GRAVITY_M_S2", "KASSINA", "FrogGeometry", "FrogSpec",
    "KassinaData", "SegmentData", "SegmentGeometry", "frog_geometry",
    # mjcf
    "ACTUATOR_HIP", "ACTUATOR_KNEE", "ACTUATOR_PLANTARIS", "BODY_FOOT", "BODY_FORELIMB_SUPPORT",
    "BODY_SHANK", "BODY_TARSUS", "BODY_THIGH", "BODY_TRUNK", "GEOM_FLOOR", "GEOM_FOOT",
    "GEOM_SNOUT", "GEOM_SPHERES", "GEOM_TRUNK_CONTACT", "HINGE_JOINTS", "JOINT_ANKLE",
    "JOINT_HIP", "JOINT_KNEE", "JOINT_ROOT", "JOINT_TMT", "KEY_START", "SITE_ANKLE_SIDE",
    "SITE_INSERTION", "SITE_ORIGIN", "SITE_TMT_SIDE", "SITE_VIA", "TENDON_PLANTARIS",
    "build_frog_mjcf", "load_frog_model", "start_qpos",
    # targets
    "FORELIMB_BODY", "HIP_FIT", "KNEE_FIT", "TargetFit", "forelimb_support_N",
    "hip_target_delta_rad", "knee_target_delta_rad", "servo_controls", "servo_targets_rad",
    # metrics
    "MIN_FLIGHT_STEPS", "TOUCH_TOLERANCE_M", "JumpMetrics", "Rollout", "floor_contacts",
    "floor_force_world_N", "floor_in_contact", "floor_penetration_m", "jump_metrics",
    "rollout_open_loop", "takeoff_index", "whole_body_com",
    # legacy
    "LegacyReplayResult", "LegacyRunFiles", "migrate_legacy_mjcf", "read_legacy_run",
    "reconstruct_posout", "replay_legacy", "replay_legacy_command",
]
