"""Index finger with the extrinsic flexors FDP and FDS as inertial Type II paths (seed §4.4).

Wang et al. 2022 §4.4 (Fig. 1b): "the flexor digitorum profundus and superficialis muscles (FDP
& FDS), which originate near the elbow and insert into the distal and middle phalanges ...
Type II muscles, with the tendons routed through pulleys implemented as path points. We fixed
all joints except for the three joints of the index finger, which we modeled as revolute
joints. The masses of the bones are set from the meshes, with a relatively large density of
5 g cm^-3 to account for the rest of the finger mass, and the mass of the muscles is set to
200 g each." The seed's skeleton came from meshes (Lee et al. 2015); this model is rebuilt
from published dimensions (every number below: source or "choice").

Frames (metres, right hand, sagittal plane x-z): the MCP joint centre is the world origin, the
extended finger points along +x, the palm faces -z, flexion is a positive rotation about +y
(it turns +x towards -z). The forearm, wrist and metacarpal are fixed (the world body): wrist
at x = -L_metacarpal, elbow at x = -(L_metacarpal + L_forearm). Gravity -z (palm down).

Skeleton: world -> `proximal` (hinge `mcp` at the origin) -> `middle` (hinge `pip` at
(L_proximal, 0, 0)) -> `distal` (hinge `dip` at (L_middle, 0, 0)); each phalanx a solid
cylinder of its bone length and a chosen diameter along its +x, mass = 5000 kg/m^3 x volume
(the seed's density), cylinder inertia about the COM. Site `fingertip` at the pulp, (L_distal +
pulp, 0, 0) in `distal`, where the flick force acts.
  bone lengths (Buryanov & Kotiuk 2010, Int J Morphol 28(3):755-758, radiographs of 66 adults,
  index finger means): metacarpal 68.1 mm, proximal 39.8 mm, middle 22.4 mm, distal 15.8 mm,
  distal pulp beyond the bone 3.8 mm; forearm (elbow to wrist joint centre) 268.9 mm (de Leva
  1996, J Biomech 29:1223-1230, males); bone diameters 9 / 7.5 / 6 mm: choice (mid-shaft
  thickness of adult phalanges, proximal to distal).
Joints: ranges (AAOS 1965 normal active motion, "Joint Motion: Method of Measuring and
Recording"): MCP -45..90 deg (hyperextension 45), PIP 0..100 deg, DIP -10..90 deg; MuJoCo
soft limits with solreflimit `LIMIT_SOLREF` = (0.002 s, 1), written as an MJCF <default> (choice:
the stiffest MuJoCo allows at a 1 ms step, its refsafe floor 2 dt; bony end-stops are stiff, and
MuJoCo's default 0.02 s lets a joint moving at several hundred rad/s overshoot its range by
radians). Passive stiffness 0.04 N m/rad about the rest posture at every joint
(healthy index MCP 0.03-0.05 N m/rad: Li et al. 2020, IEEE J Transl Eng Health Med, PMC7775510,
Table 2; the same value at PIP and DIP is a choice); no joint damping (the seed: "Joint damping
can be added to overcome some of these issues, but this would require manual tweaking").

Muscles (MJCF spatial tendons through sites = the seed's Type II "pulleys implemented as path
points"):
  FDS: origin at the medial epicondyle (1 cm distal of the elbow, 2 cm palmar), carpal tunnel
       (wrist, 14 mm palmar), A1 pulley (metacarpal head), two sites on the proximal phalanx
       (A2 after the MCP, A3 before the PIP), insertion on the middle phalanx (middle third).
  FDP: origin on the proximal ulna (7 cm distal of the elbow, 15 mm palmar), carpal tunnel
       (11 mm palmar), A1, A2 and A3 sites on the proximal phalanx, A4 sites on the middle
       phalanx, insertion at the palmar base of the distal phalanx.
  At each joint the two pulley sites sit at depth h (palmar) and distance h either side of the
  joint centre, so the moment arm is h in extension and stays within [h, sqrt(2) h] over
  flexion (like a pulley: the chord never crosses the joint; in hyperextension it falls, to
  0.54 h at -45 deg; the last site before an insertion is placed by hand instead). Depths h (choice, of the
  order of the index flexor moment arms reported by An et al. 1983, J Biomech 16:419-425:
  about 1 cm at the MCP, 5-8 mm at the PIP and DIP): FDS 12 / 6.5 mm (MCP / PIP), FDP 10 /
  7.5 / 5 mm (MCP / PIP / DIP).
Muscle mass: 0.2 kg per muscle (the seed), `N_POINTS` uniform midpoint mass points over the
whole path (the seed's Type II EOL strand with equal strain, Eqs. 12-16; the seed does not say
where along the path it put the mass -- `belly=` restricts it to the muscle belly).
"""

from __future__ import annotations

import functools

import numpy as np

from myotwin.engine.builder import ModelBuilder
from myotwin.paths.builder import PathBuilder, Point

DENSITY_KG_PER_M3 = 5000.0
#: (length m, diameter m) of each phalanx; lengths Buryanov & Kotiuk 2010, diameters: choice.
PHALANGES = {"proximal": (0.0398, 0.009), "middle": (0.0224, 0.0075), "distal": (0.0158, 0.006)}
PULP_M = 0.0038
METACARPAL_M = 0.0681
FOREARM_M = 0.2689
JOINTS = ("mcp", "pip", "dip")
#: joint -> (lower, upper) rad (AAOS 1965 active range of motion).
JOINT_RANGES = {"mcp": (np.deg2rad(-45.0), np.deg2rad(90.0)),
                "pip": (0.0, np.deg2rad(100.0)),
                "dip": (np.deg2rad(-10.0), np.deg2rad(90.0))}
JOINT_STIFFNESS_NM_PER_RAD = 0.04
#: MuJoCo solreflimit (time constant s, damping ratio) of the joint limits: the stiffest soft
#: limit MuJoCo allows at a 1 ms step (refsafe floor 2 dt); choice, see the module docstring.
LIMIT_SOLREF = (0.002, 1.0)
#: Rest posture (rad): light flexion, the springs' reference and the flick's start (choice).
Q_REST = np.deg2rad([20.0, 30.0, 15.0])
MUSCLES = ("FDS", "FDP")
MUSCLE_MASS_KG = 0.2
N_POINTS = 20
#: Pulley depth h (m) per muscle and joint crossed (choice; see the module docstring).
PULLEY_DEPTH_M = {"FDS": {"mcp": 0.012, "pip": 0.0065},
                  "FDP": {"mcp": 0.010, "pip": 0.0075, "dip": 0.005}}
GRAVITY = (0.0, 0.0, -9.81)


def _cylinder_inertia(mass: float, length: float, diameter: float) -> tuple[float, ...]:
    """Principal moments (axis x, then y, z) of a solid cylinder about its centre."""
    r2 = (0.5 * diameter) ** 2
    across = mass * (3.0 * r2 + length * length) / 12.0
    return (0.5 * mass * r2, across, across)


def phalanx_mass(name: str) -> float:
    """Mass (kg) of phalanx `name`: density 5 g/cm^3 (seed) times the cylinder's volume."""
    if name not in PHALANGES:
        raise ValueError(f"phalanx {name!r}: expected one of {list(PHALANGES)}")
    length, diameter = PHALANGES[name]
    return DENSITY_KG_PER_M3 * np.pi * (0.5 * diameter) ** 2 * length


def skeleton(timestep_s: float = 0.001, gravity=GRAVITY) -> ModelBuilder:
    """The finger skeleton (`ModelBuilder`): three phalanges on hinges, fixed hand/forearm."""
    b = ModelBuilder("index_finger", gravity=gravity, timestep_s=timestep_s, integrator="Euler",
                     contact=False)
    parent, pos = "world", (0.0, 0.0, 0.0)
    for name, joint in zip(PHALANGES, JOINTS):
        length, diameter = PHALANGES[name]
        mass = phalanx_mass(name)
        b.add_body(name, parent, pos=pos, mass=mass, com=(0.5 * length, 0.0, 0.0),
                   inertia=_cylinder_inertia(mass, length, diameter))
        b.add_joint(name, "hinge", name=joint, axis=(0.0, 1.0, 0.0),
                    range=JOINT_RANGES[joint], stiffness=JOINT_STIFFNESS_NM_PER_RAD,
                    spring_ref=float(Q_REST[JOINTS.index(joint)]))
        b.add_geom(name, "cylinder", size=(0.5 * diameter,),
                   fromto=(0.0, 0.0, 0.0, length, 0.0, 0.0), contype=0, conaffinity=0)
        parent, pos = name, (length, 0.0, 0.0)
    b.add_site("distal", "fingertip", pos=(PHALANGES["distal"][0] + PULP_M, 0.0, 0.0))
    return b


def _pulley(body_before: str, x_joint_before: float, body_after: str, h: float):
    """The two sites of a joint's pulley: depth h, distance h either side of the joint."""
    return [Point(body_before, (x_joint_before - h, 0.0, -h)), Point(body_after, (h, 0.0, -h))]


def muscle_points() -> dict[str, list[Point]]:
    """Path points of FDS and FDP (origin, carpal tunnel, pulleys, insertion)."""
    wrist, elbow = -METACARPAL_M, -(METACARPAL_M + FOREARM_M)
    lp, lm = PHALANGES["proximal"][0], PHALANGES["middle"][0]
    fds, fdp = PULLEY_DEPTH_M["FDS"], PULLEY_DEPTH_M["FDP"]
    return {
        "FDS": [Point("world", (elbow + 0.01, 0.0, -0.02)),
                Point("world", (wrist, 0.0, -0.014)),
                *_pulley("world", 0.0, "proximal", fds["mcp"]),
                Point("proximal", (lp - fds["pip"], 0.0, -fds["pip"])),
                Point("middle", (0.010, 0.0, -0.004))],
        "FDP": [Point("world", (elbow + 0.07, 0.0, -0.015)),
                Point("world", (wrist, 0.0, -0.011)),
                *_pulley("world", 0.0, "proximal", fdp["mcp"]),
                *_pulley("proximal", lp, "middle", fdp["pip"]),
                *_pulley("middle", lm, "distal", fdp["dip"])[:1],
                Point("distal", (0.004, 0.0, -0.004))],
    }


def path_builder(timestep_s: float = 0.001, gravity=GRAVITY
                 ) -> PathBuilder:
    """Skeleton plus the FDS and FDP paths (`PathBuilder`)."""
    pb = PathBuilder(skeleton(timestep_s, gravity))
    for name, points in muscle_points().items():
        pb.add_path(name, points)
    return pb


def mjcf(timestep_s: float = 0.001, gravity=GRAVITY) -> str:
    """MJCF of the finger with its paths; joint limits use `LIMIT_SOLREF` (a <default>)."""
    text = path_builder(timestep_s, gravity).to_mjcf()
    head, tail = text.split("<option", 1)
    solref = " ".join(repr(float(v)) for v in LIMIT_SOLREF)
    return f'{head}<default>\n    <joint solreflimit="{solref}"/>\n  </default>\n  <option{tail}'


def mj_model(timestep_s: float = 0.001, gravity=GRAVITY):
    """The finger compiled by MuJoCo (`mujoco.MjModel`)."""
    import mujoco

    return mujoco.MjModel.from_xml_string(mjcf(timestep_s, gravity))


@functools.lru_cache(maxsize=None)
def _ids() -> dict[tuple[str, str], int]:
    import mujoco

    m = mj_model()
    out = {}
    for kind, count in (("site", m.nsite), ("body", m.nbody), ("joint", m.njnt)):
        obj = getattr(mujoco.mjtObj, f"mjOBJ_{kind.upper()}")
        for i in range(count):
            out[(kind, mujoco.mj_id2name(m, obj, i))] = i
    return out


def site_id(name: str = "fingertip") -> int:
    """Site id of `name` in the compiled model (the path sites on the world body come first
    in MJCF order, so the skeleton's sites are not 0, 1, ...)."""
    try:
        return _ids()[("site", name)]
    except KeyError:
        raise ValueError(f"the finger model has no site {name!r}") from None


def body_id(name: str) -> int:
    """Body id of `name` ("proximal", "middle", "distal"; the world is 0)."""
    try:
        return _ids()[("body", name)]
    except KeyError:
        raise ValueError(f"the finger model has no body {name!r}") from None


def path_length_extremes() -> dict[str, tuple[float, float]]:
    """{muscle: (shortest, longest)} path length (m) over the joint-range box: flexor lengths
    fall monotonically with flexion at every joint here (moment arms > 0), so the extremes
    are at the box corners, all of which are evaluated (needs x64)."""
    import itertools

    import jax.numpy as jnp

    from myotwin.paths.length import muscle_lengths

    model = build(None)
    corners = jnp.asarray(list(itertools.product(*(JOINT_RANGES[j] for j in JOINTS))))
    lengths = np.asarray([muscle_lengths(model.paths, model, q) for q in corners])
    return {m: (float(lengths[:, k].min()), float(lengths[:, k].max()))
            for k, m in enumerate(MUSCLES)}


def build(muscle_mass_kg: float | None = MUSCLE_MASS_KG, n_points: int = N_POINTS,
          belly=(0.0, 1.0), gravity=GRAVITY):
    """Engine `Model` of the finger; each muscle carries `muscle_mass_kg` in `n_points`
    uniform points on `belly` (fractions of the path); None: massless muscles (the
    traditional model, the muscle mass absorbed by the fixed forearm)."""
    from myotwin import inertia

    from myotwin.engine.model import compile_model

    model = compile_model(mj_model(gravity=gravity))
    if muscle_mass_kg is None:      # n_points and belly checked all the same
        inertia.distribution(n_points, belly=belly, what="finger.build")
        return model
    for name in MUSCLES:
        model = inertia.with_muscle_mass(model, name, muscle_mass_kg, n_points, belly=belly)
    return model
