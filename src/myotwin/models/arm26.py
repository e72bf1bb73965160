"""OpenSim's arm26 rebuilt in Python: a 2-dof right arm with six Thelen2003 muscles.

Geometry and parameters come from `arm26.osim` of opensim-models (Models/Arm26/arm26.osim,
commit 20a888b9; /work/shared/reference/opensim/models/arm26.osim), credited there to "The
OpenSim Development Team (Reinbolt, J; Seth, A; Habib, A; Hamner, S) adapted from a model
originally created by Kate Holzbaur (11/22/04)", licensed Creative Commons CC BY 3.0
(http://creativecommons.org/licenses/by/3.0/). Publication: Holzbaur, K.R.S., Murray, W.M.,
Delp, S.L. A Model of the Upper Extremity for Simulating Musculoskeletal Surgery and Analyzing
Neuromuscular Control. Annals of Biomedical Engineering 33, 829-840, 2005. The numbers below are
the .osim's, unchanged (SI units).

Skeleton (OpenSim -> MJCF): ground -> `base` welded at (0, 0.8, 0) (massless) -> `r_humerus`
by the CustomJoint r_shoulder -> `r_ulna_radius_hand` by r_elbow. Each CustomJoint has one
rotation (rotation1, LinearFunction 1 * q + 0) about a fixed axis, the other rotations and all
translations constant 0, identity child offset: exactly a hinge at the child origin, placed at
the parent offset frame (orientation 0 0 0). Coordinates `r_shoulder_elev` (q[0]) and
`r_elbow_flex` (q[1]); `clamped` is false in the .osim, so the joints are unlimited here too
(their .osim ranges are in `COORDINATE_RANGES`). Gravity (0, -9.8066, 0) m/s^2. Masses, COMs and
principal inertias (the .osim products of inertia are 0) as given.

Paths: the six muscles' path points (all fixed; arm26 has no conditional points) and wraps:
* BICshort: via points only -> an MJCF tendon (MuJoCo semantics = a polyline).
* BIClong: via points and the WrapEllipsoid BIClonghh (quadrant -y, points 2-3) -> an OpenSim
  path (`paths/opensim_ellipsoid.py`).
* TRIlat, TRImed, BRA: the WrapCylinder TRI (quadrant all) -> OpenSim paths
  (`paths/opensim_path.py`, one wrap object: no tangency adjustment).
* TRIlong: TRI, the WrapEllipsoid TRIlonghh (quadrant z) and the WrapCylinder TRIlongglen
  (quadrant x) -> an OpenSim path with three wraps (OpenSim's repetitions and tangency
  adjustment).
`build(ellipsoids=True)` (`path_builder` likewise) is OpenSim's arm26: its lengths and moment
arms equal OpenSim 4.6's at all 66 (muscle, pose) pairs of the reference (tests/paths/
test_arm26.py). The default, `ellipsoids=False`, leaves the two ellipsoids out: BIClong is then
its via-point polyline (an MJCF tendon), equal to OpenSim's where BIClonghh does not wrap, and
TRIlong has TRI and TRIlongglen only, equal to OpenSim's where TRIlonghh does not wrap
(57 of the 66 pairs). It is the default because the ellipsoids double what a user waits for
first: compiling `myotwin.moment_arms` takes 37-38 s with them and 17-19 s without (and a
call 4-6 ms instead of about 1 ms; docs/models.md), past the 1.5x this project accepts for a
default.
`MUSCLES` carries each muscle's Thelen2003Muscle parameters from the .osim; `muscles()` makes
them musculotendons with OpenSim's Thelen 2003 curves.
"""

from __future__ import annotations

import types

from myotwin.engine.builder import ModelBuilder
from myotwin.paths.builder import PathBuilder, Point
from myotwin.scalars import require_flag

COORDINATES = ("r_shoulder_elev", "r_elbow_flex")
#: OpenSim coordinate ranges (rad); not enforced (clamped = false in the .osim).
COORDINATE_RANGES = {"r_shoulder_elev": (-1.57079633, 3.14159265),
                     "r_elbow_flex": (0.0, 2.26892803)}
GRAVITY = (0.0, -9.8066, 0.0)

#: body -> (parent, position in the parent frame m, mass kg, COM m, principal inertia kg m^2)
BODIES = {
    "base": ("world", (0.0, 0.8, 0.0), 0.0, (0.0, 0.0, 0.0), None),
    "r_humerus": ("base", (-0.017545, -0.007, 0.17), 1.864572, (0.0, -0.180496, 0.0),
                  (0.01481, 0.004551, 0.013193)),
    "r_ulna_radius_hand": ("r_humerus", (0.0061, -0.2904, -0.0123), 1.534315,
                           (0.0, -0.181479, 0.0), (0.019281, 0.001571, 0.020062)),
}
#: coordinate -> (child body, hinge axis in the joint frame)
JOINTS = {
    "r_shoulder_elev": ("r_humerus", (-0.05889802, 0.0023, 0.99826136)),
    "r_elbow_flex": ("r_ulna_radius_hand", (0.04940001, 0.03660001, 0.99810825)),
}

#: WrapCylinders: name -> (body, translation m, xyz_body_rotation rad, radius m, length m,
#: quadrant)
CYLINDERS = {
    "TRI": ("r_humerus", (0.0028, -0.2919, -0.0069), (-0.14015, -0.00628319, 0.154985), 0.016,
            0.05, "all"),
    "TRIlongglen": ("base", (-0.043905, -0.0039, 0.1478), (1.37532, -0.294612, 2.43596), 0.003,
                    0.03, "x"),
}
#: WrapEllipsoids: name -> (body, translation m, xyz_body_rotation rad, dimensions (semi-axes)
#: m, quadrant), and the muscles that use them.
ELLIPSOIDS = {
    "TRIlonghh": ("r_humerus", (-0.0078, -0.0041, -0.0014), (3.00162, -0.853466, 2.57419),
                  (0.035, 0.02, 0.02), "z", ("TRIlong",)),
    "BIClonghh": ("r_humerus", (0.0033, 0.0073, 0.0003), (-2.00434, -1.00164, 0.975465),
                  (0.025, 0.02, 0.02), "-y", ("BIClong",)),
}

_HUM, _ULNA = "r_humerus", "r_ulna_radius_hand"
_TRI_TAIL = [(_HUM, (-0.03184, -0.22637, -0.01217)), (_HUM, (-0.01743, -0.26757, -0.01208)),
             (_ULNA, (-0.0219, 0.01046, -0.00078))]
#: muscle -> (path points (body, location m), wraps as in the .osim: (object, (start, end)))
PATHS = {
    "TRIlong": ([("base", (-0.05365, -0.01373, 0.14723)), (_HUM, (-0.02714, -0.11441, -0.00664)),
                 *_TRI_TAIL], [("TRI", (-1, -1)), ("TRIlonghh", (-1, -1)),
                               ("TRIlongglen", (-1, -1))]),
    "TRIlat": ([(_HUM, (-0.00599, -0.12646, 0.00428)), (_HUM, (-0.02344, -0.14528, 0.00928)),
                *_TRI_TAIL], [("TRI", (-1, -1))]),
    "TRImed": ([(_HUM, (-0.00838, -0.13695, -0.00906)), (_HUM, (-0.02601, -0.15139, -0.0108)),
                *_TRI_TAIL], [("TRI", (-1, -1))]),
    "BIClong": ([("base", (-0.039235, 0.00347, 0.14795)), ("base", (-0.028945, 0.01391, 0.15639)),
                 (_HUM, (0.02131, 0.01793, 0.01028)), (_HUM, (0.02378, -0.00511, 0.01201)),
                 (_HUM, (0.01345, -0.02827, 0.00136)), (_HUM, (0.01068, -0.07736, -0.00165)),
                 (_HUM, (0.01703, -0.12125, 0.00024)), (_HUM, (0.0228, -0.1754, -0.0063)),
                 (_ULNA, (0.00751, -0.04839, 0.02179))], [("BIClonghh", (2, 3))]),
    "BICshort": ([("base", (0.004675, -0.01231, 0.13475)), ("base", (-0.007075, -0.04004, 0.14507)),
                  (_HUM, (0.01117, -0.07576, -0.01101)), (_HUM, (0.01703, -0.12125, -0.01079)),
                  (_HUM, (0.0228, -0.1754, -0.0063)), (_ULNA, (0.00751, -0.04839, 0.02179))], []),
    "BRA": ([(_HUM, (0.0068, -0.1739, -0.0036)), (_ULNA, (-0.0032, -0.0239, 0.0009))],
            [("TRI", (-1, -1))]),
}
MUSCLE_NAMES = tuple(PATHS)

_COMMON = dict(max_contraction_velocity_Lopt_per_s=10.0, fmax_tendon_strain=0.033,
               fmax_muscle_strain=0.6, kshape_active=0.5, kshape_passive=4.0, af=0.3, flen=1.8,
               activation_time_constant_s=0.01, deactivation_time_constant_s=0.04)


def _muscle(f_max, l_opt, l_slack, pennation):
    return types.MappingProxyType(dict(max_isometric_force_N=f_max, optimal_fiber_length_m=l_opt,
                                       tendon_slack_length_m=l_slack,
                                       pennation_angle_at_optimal_rad=pennation, **_COMMON))


#: Thelen2003Muscle parameters of each muscle (read-only mappings; names with units).
MUSCLES = types.MappingProxyType({
    "TRIlong": _muscle(798.52, 0.134, 0.143, 0.20943951),
    "TRIlat": _muscle(624.3, 0.1138, 0.098, 0.15707963),
    "TRImed": _muscle(624.3, 0.1138, 0.0908, 0.15707963),
    "BIClong": _muscle(624.3, 0.1157, 0.2723, 0.0),
    "BICshort": _muscle(435.56, 0.1321, 0.1923, 0.0),
    "BRA": _muscle(987.26, 0.0858, 0.0535, 0.0),
})


def skeleton() -> ModelBuilder:
    """The arm26 skeleton (bodies, hinges, gravity) as an `engine.ModelBuilder`."""
    b = ModelBuilder("arm26", gravity=GRAVITY, contact=False)
    for name, (parent, pos, mass, com, inertia) in BODIES.items():
        b.add_body(name, parent, pos=pos, mass=mass, com=com, inertia=inertia)
    for coord, (body, axis) in JOINTS.items():
        b.add_joint(body, "hinge", name=coord, axis=axis)
    return b


def path_builder(ellipsoids: bool = False, ellipsoids_active: bool = True) -> PathBuilder:
    """arm26's skeleton and its six muscle paths, with the two WrapEllipsoids (`ELLIPSOIDS`)
    if `ellipsoids` (module docstring); `ellipsoids_active=False` keeps them in their paths but
    inactive (OpenSim's `<active>false</active>`: they never wrap, docs/paths.md)."""
    pb = PathBuilder(skeleton())
    for name, (body, pos, rot, radius, length, quadrant) in CYLINDERS.items():
        pb.add_opensim_cylinder(name, body, pos=pos, xyz_body_rotation=rot, radius=radius,
                                length=length, quadrant=quadrant)
    if ellipsoids:
        for name, (body, pos, rot, dims, quadrant, _) in ELLIPSOIDS.items():
            pb.add_opensim_ellipsoid(name, body, pos=pos, xyz_body_rotation=rot,
                                     dimensions=dims, quadrant=quadrant,
                                     active=ellipsoids_active)
    for muscle, (points, wraps) in PATHS.items():
        kept = [(w, rng) for w, rng in wraps if ellipsoids or w in CYLINDERS]
        pb.add_path(muscle, [Point(body, pos) for body, pos in points], wraps=kept)
    return pb


def build(ellipsoids: bool = False, ellipsoids_active: bool = True):
    """arm26 as an engine `Model` with `paths` in `MUSCLE_NAMES` order; q = (r_shoulder_elev,
    r_elbow_flex) rad. Needs float64 (enable x64 first). `ellipsoids=True`: with the two
    WrapEllipsoids, OpenSim's model exactly (module docstring: why not by default);
    `ellipsoids_active=False` (with `ellipsoids=True`): the ellipsoids present but inactive."""
    for name, flag in (("ellipsoids", ellipsoids), ("ellipsoids_active", ellipsoids_active)):
        require_flag("arm26.build", name, flag)   # a string such as "no" would be true
    return path_builder(ellipsoids, ellipsoids_active).build()


def muscles(tendon: str = "explicit_force"):
    """arm26's six Thelen2003Muscles (`MUSCLES`) as `myotwin.muscle` musculotendons with
    OpenSim's Thelen 2003 curves (docs/muscle.md), in `MUSCLE_NAMES` order, for
    `myotwin.musculoskeletal.musculoskeletal_model(build(), muscles())`. tendon: "explicit_force"
    (compliant, as in the .osim) or "rigid". The parameters go to `muscle.build_muscles` by the
    table the .osim loader uses (`osim.muscles.PARAMETERS`)."""
    from myotwin.muscle import build_muscles
    from myotwin.osim.muscles import PARAMETERS

    table = PARAMETERS["Thelen2003Muscle"]
    keywords = {keyword: [MUSCLES[n][key] for n in MUSCLE_NAMES]
                for key, keyword in table.items() if key in MUSCLES[MUSCLE_NAMES[0]]}
    return build_muscles(MUSCLE_NAMES, curves="thelen2003", tendon=tendon, **keywords)
