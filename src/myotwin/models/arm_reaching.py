"""Right arm for the seed's differentiable reaching task (Wang et al. 2022 §4.7, Fig. 1d).

Seed §4.7: "an arm model [Chadwick et al. 2014] with manually placed muscles ... For the three
heads of the deltoid muscle, we use sphere-capped cylinders, and for the three heads of the
triceps brachii muscle, we use cylinders ... the task parameters are the constant torques to
be applied to the shoulder (3 DOF) and elbow (1 DOF) joints." Chadwick et al.'s model is not
reproduced; this arm is rebuilt from published segment data (every number: source or choice).

Frames (m, right hand): the glenohumeral centre is the world origin, z up, x anterior, y to
the left (so the right arm's lateral side is -y). The thorax and scapula are fixed (world).
At q = 0 the arm hangs along -z with the elbow extended and the palm facing +y.

Skeleton (segment lengths, masses, COM positions and radii of gyration: de Leva 1996, J
Biomech 29:1223-1230, Table 4, males, body mass 73 kg (de Leva's male reference, choice);
de Leva's sagittal radius is used about x and the transverse one about y -- they differ by
< 6 %):
  `humerus`: three hinges at the shoulder centre, in this order (the body's rotation is their
    product): `shoulder_flex` about -y (forward flexion), `shoulder_abd` about -x (abduction of
    the right arm), `shoulder_rot` about +z (axial rotation). Three hinges rather than a ball:
    the task's parameters are one constant torque per shoulder DOF (the seed: "shoulder (3
    DOF)"), which for hinges is exactly a constant joint torque, while a ball joint's
    generalized force is a body-frame torque that turns with the arm; the engine's motors also
    drive hinges only. The gimbal is singular at shoulder_abd = +-pi/2, far from the task.
    Upper arm 0.2817 m, 1.978 kg, COM 57.72 % from the shoulder, radii 0.285 / 0.269 / 0.158 L;
    the muscles' mass (`MUSCLE_MASS_KG`, 0.72 kg) is moved out of it into the mass points (the
    seed's §4.5 practice: "transferred to the muscles"), its inertia scaled with its mass.
  `forearm` (forearm + hand, rigid): hinge `elbow` about -y at (0, 0, -0.2817). Forearm
    0.2689 m, 1.183 kg, COM 45.74 %, radii 0.276 / 0.265 / 0.121 L; hand 0.0862 m (wrist to
    the third metacarpophalangeal joint), 0.445 kg, COM 79.0 % from the wrist, radii 0.628 /
    0.513 / 0.401 L; combined by the parallel-axis theorem. Site `hand` at the hand's COM.
Muscles (MJCF spatial tendons, MuJoCo 4.0 wrapping; attachments placed by hand like the
seed's, positions are choices guided by the anatomy):
  deltoid anterior / middle / posterior (`DELT1`, `DELT2`, `DELT3`): origins on the lateral
    clavicle, acromion and scapular spine (world), insertion at the deltoid tuberosity on the
    lateral humeral shaft; each wraps `head`, a sphere of radius 4 cm at the humeral head
    (humerus), with a side site lateral to it.
    The seed's sphere-capped cylinder has its cap at the head and the cylinder along the shaft;
    MuJoCo wraps spheres and cylinders but no capsules, and a path can only switch obstacles at
    a site. The paths here touch the cap only: the straight part from the cap to the insertion
    stays outside the shaft's cylinder (radius `SHAFT_RADIUS_M`) in the task's postures (the
    repro checks the clearance), so the cap sphere alone is the wrap surface.
  triceps long / lateral / medial heads (`TRIlong`, `TRIlat`, `TRImed`): origins at the
    infraglenoid tubercle (world: biarticular) and on the posterior humerus (proximal,
    distal), insertion on the olecranon (forearm); each wraps `elbow_cyl`, a cylinder of
    radius 2 cm on the elbow axis (humerus), side site posterior: the path wraps the back of
    the elbow when it is flexed.
Muscle mass (choice, of the order of adult muscle volumes x 1.06 g/cm^3): 0.12 kg per deltoid
head, triceps long 0.15, lateral 0.12, medial 0.09 kg; `N_POINTS` uniform points on each whole
path, library positions (Type III; `inertia.with_muscle_mass`).
Actuation: an unlimited motor (gear 1) per joint: ctrl = the constant joint torque (N m).
"""

from __future__ import annotations

import functools

import numpy as np

from myotwin.engine.builder import ModelBuilder
from myotwin.paths.builder import CylinderWrap, PathBuilder, Point, SphereWrap
from myotwin.scalars import require_flag

BODY_MASS_KG = 73.0
GRAVITY = (0.0, 0.0, -9.81)
#: de Leva 1996 (males): length m, mass fraction of body mass, COM fraction from the
#: proximal end, radii of gyration (x, y, z) as fractions of the length.
SEGMENTS = {
    "upper_arm": (0.2817, 0.0271, 0.5772, (0.285, 0.269, 0.158)),
    "forearm": (0.2689, 0.0162, 0.4574, (0.276, 0.265, 0.121)),
    "hand": (0.0862, 0.0061, 0.7900, (0.628, 0.513, 0.401)),
}
JOINTS = ("shoulder_flex", "shoulder_abd", "shoulder_rot", "elbow")
SHOULDER_AXES = {"shoulder_flex": (0.0, -1.0, 0.0), "shoulder_abd": (-1.0, 0.0, 0.0),
                 "shoulder_rot": (0.0, 0.0, 1.0)}
MUSCLES = ("DELT1", "DELT2", "DELT3", "TRIlong", "TRIlat", "TRImed")
MUSCLE_MASS_KG = {"DELT1": 0.12, "DELT2": 0.12, "DELT3": 0.12, "TRIlong": 0.15,
                  "TRIlat": 0.12, "TRImed": 0.09}
N_POINTS = 20
HEAD_RADIUS_M = 0.045
SHAFT_RADIUS_M = 0.02
ELBOW_RADIUS_M = 0.02


def segment(name: str) -> tuple[float, float, np.ndarray]:
    """(mass kg, COM distance from the proximal joint m, principal inertia (3,) kg m^2)."""
    if name not in SEGMENTS:
        raise ValueError(f"segment {name!r}: expected one of {list(SEGMENTS)}")
    length, frac, com, radii = SEGMENTS[name]
    mass = frac * BODY_MASS_KG
    return mass, com * length, mass * (np.asarray(radii) * length) ** 2


def _forearm_hand() -> tuple[float, float, np.ndarray]:
    """Forearm and hand as one rigid body: mass, COM below the elbow, inertia about the COM."""
    m_f, c_f, i_f = segment("forearm")
    m_h, c_h, i_h = segment("hand")
    c_h = SEGMENTS["forearm"][0] + c_h
    mass = m_f + m_h
    com = (m_f * c_f + m_h * c_h) / mass
    shift = np.array([1.0, 1.0, 0.0])  # parallel-axis term about x and y (offsets along z)
    inertia = i_f + i_h + shift * (m_f * (c_f - com) ** 2 + m_h * (c_h - com) ** 2)
    return mass, com, inertia


def hand_offset_m() -> float:
    """Distance of the `hand` site (hand COM) below the elbow (m)."""
    return SEGMENTS["forearm"][0] + segment("hand")[1]


def skeleton(gravity=GRAVITY) -> ModelBuilder:
    """The arm skeleton (`ModelBuilder`) with a motor on each joint."""
    b = ModelBuilder("arm_reaching", gravity=gravity, timestep_s=0.005, contact=False)
    l_up = SEGMENTS["upper_arm"][0]
    m_up, c_up, i_up = segment("upper_arm")
    keep = (m_up - sum(MUSCLE_MASS_KG.values())) / m_up      # muscle mass moved to the points
    b.add_body("humerus", pos=(0.0, 0.0, 0.0), mass=keep * m_up, com=(0.0, 0.0, -c_up),
               inertia=tuple(keep * i_up))
    for joint in JOINTS[:3]:
        b.add_joint("humerus", "hinge", name=joint, axis=SHOULDER_AXES[joint])
    m_fa, c_fa, i_fa = _forearm_hand()
    b.add_body("forearm", "humerus", pos=(0.0, 0.0, -l_up), mass=m_fa, com=(0.0, 0.0, -c_fa),
               inertia=tuple(i_fa))
    b.add_joint("forearm", "hinge", name="elbow", axis=(0.0, -1.0, 0.0))
    b.add_geom("humerus", "capsule", size=(SHAFT_RADIUS_M,),
               fromto=(0.0, 0.0, 0.0, 0.0, 0.0, -l_up), contype=0, conaffinity=0)
    b.add_geom("forearm", "capsule", size=(0.015,),
               fromto=(0.0, 0.0, 0.0, 0.0, 0.0, -hand_offset_m()), contype=0, conaffinity=0)
    b.add_site("forearm", "hand", pos=(0.0, 0.0, -hand_offset_m()))
    for joint in JOINTS:
        b.add_motor(joint)
    return b


#: Attachments (m; world = thorax/scapula frame, else the named body's frame) and wraps.
DELTOID_ORIGINS = {"DELT1": (0.02, -0.02, 0.05), "DELT2": (0.0, -0.03, 0.05),
                   "DELT3": (-0.03, -0.025, 0.045)}
DELTOID_INSERTION = (0.0, -0.022, -0.13)          # humerus, deltoid tuberosity
HEAD_SIDE = (0.0, -0.08, -0.02)                   # humerus, lateral of the head
TRICEPS_ORIGINS = {"TRIlong": ("world", (-0.03, -0.005, -0.04)),
                   "TRIlat": ("humerus", (-0.025, -0.01, -0.09)),
                   "TRImed": ("humerus", (-0.025, 0.005, -0.16))}
OLECRANON = (-0.022, 0.0, 0.02)                   # forearm
ELBOW_CYL_OFFSET = (-0.01, 0.0, 0.0)              # from the elbow centre, humerus frame
ELBOW_SIDE_OFFSET = (-0.07, 0.0, 0.0)             # from the elbow centre, humerus frame


def muscle_paths() -> dict[str, list]:
    """Path elements (points and wraps) of the six muscles."""
    l_up = SEGMENTS["upper_arm"][0]
    elbow = np.array([0.0, 0.0, -l_up])
    cyl_quat = (np.sqrt(0.5), np.sqrt(0.5), 0.0, 0.0)   # cylinder axis (z) along the elbow's y
    elbow_cyl = CylinderWrap("humerus", tuple(elbow + ELBOW_CYL_OFFSET), radius=ELBOW_RADIUS_M,
                             quat=cyl_quat, half_length=0.03,
                             side=tuple(elbow + ELBOW_SIDE_OFFSET))
    paths = {name: [Point("world", origin),
                    SphereWrap("humerus", (0.0, 0.0, 0.0), radius=HEAD_RADIUS_M, side=HEAD_SIDE),
                    Point("humerus", DELTOID_INSERTION)]
             for name, origin in DELTOID_ORIGINS.items()}
    for name, (body, origin) in TRICEPS_ORIGINS.items():
        paths[name] = [Point(body, origin), elbow_cyl, Point("forearm", OLECRANON)]
    return paths


def path_builder(gravity=GRAVITY) -> PathBuilder:
    """Skeleton plus the six muscle paths (`PathBuilder`)."""
    pb = PathBuilder(skeleton(gravity))
    for name, elements in muscle_paths().items():
        pb.add_path(name, elements)
    return pb


def build(muscle_mass: bool = True, n_points: int = N_POINTS, gravity=GRAVITY):
    """Engine `Model` of the arm; muscle_mass=False: massless muscles (no mass points)."""
    from myotwin import inertia

    require_flag("arm_reaching.build", "muscle_mass", muscle_mass)   # "no" would be true

    model = path_builder(gravity).build()
    if not muscle_mass:             # n_points checked all the same
        inertia.distribution(n_points, what="arm_reaching.build")
        return model
    for name in MUSCLES:
        model = inertia.with_muscle_mass(model, name, MUSCLE_MASS_KG[name], n_points)
    return model


@functools.lru_cache(maxsize=None)
def site_id(name: str = "hand") -> int:
    """Site id of `name` in the compiled model."""
    import mujoco

    m = path_builder().mj_model()
    sid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, name)
    if sid < 0:
        raise ValueError(f"the arm model has no site {name!r}")
    return int(sid)
