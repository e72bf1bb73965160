"""CustomJoints with several moving axes and spline-coupled axes, against OpenSim 4.6 itself.

The gait model (gait10dof18musc_subject01.osim: a planar pelvis with a rotation and two
translations, knees whose translations are scaled SimmSplines of the knee angle) and two
variants of it -- the pelvis turning about three non-orthogonal axes at once, or about two
with a fixed third rotation between them and the translations -- are loaded by `osim.load`
(skeleton only) and by the `opensim` package; every body's pose in ground is compared at
random coordinates.
Tolerance 1e-12 m / 1e-12 (rotation entries): both sides compose the same few transforms in
float64 (differences are roundoff, ~1e-16, times a handful of operations), so a wrong axis
order, frame or spline would show at 1e-3 or more.
"""

import re

import jax.numpy as jnp
import numpy as np
import pytest

from myotwin import engine, osim
from myotwin.engine import coupling as C
from opensim_live import opensim_package
from shared_reference import SHARED, needs

opensim = opensim_package()

GAIT = SHARED / "reference/opensim/models/gait10dof18musc_subject01.osim"


def _pelvis_rotations(text: str, *, constant_last: bool) -> str:
    """The pelvis turned about z, then (0.6, 0.8, 0), then (0, 0.6, 0.8) by three coordinates
    (OpenSim's body-fixed order of rotations, non-orthogonal axes); constant_last: the third
    rotation a fixed 0.25 rad (a Constant without coordinates, as leg6dof9musc's pelvis)."""
    start = text.index('<CustomJoint name="ground_pelvis">')
    end = text.index("</CustomJoint>", start)
    block = text[start:end]
    tilt = re.search(r'<Coordinate name="pelvis_tilt">.*?</Coordinate>', block, re.S).group(0)
    block = block.replace(tilt, tilt + tilt.replace("pelvis_tilt", "pelvis_list") + (
        "" if constant_last else tilt.replace("pelvis_tilt", "pelvis_rotation")))
    for axis, coordinate, direction in (("rotation2", "pelvis_list", "0.6 0.8 0"),
                                        ("rotation3", "pelvis_rotation", "0 0.6 0.8")):
        a = block.index(f'<TransformAxis name="{axis}">')
        b = block.index("</TransformAxis>", a)
        sub = re.sub(r"<axis>.*?</axis>", f"<axis>{direction}</axis>", block[a:b])
        if constant_last and axis == "rotation3":
            sub = re.sub(r"<value>.*?</value>", "<value>0.25</value>", sub)
        else:
            sub = re.sub(r"<coordinates>.*?</coordinates>",
                         f"<coordinates>{coordinate}</coordinates>", sub, flags=re.S)
            sub = re.sub(r'<Constant name="function">.*?</Constant>',
                         '<LinearFunction name="function"><coefficients>1 0</coefficients>'
                         "</LinearFunction>", sub, flags=re.S)
        block = block[:a] + sub + block[b:]
    return text[:start] + block + text[end:]


def _opensim_poses(path, values: dict[str, float]):
    model = opensim.Model(str(path))
    state = model.initSystem()
    for name, value in values.items():
        model.getCoordinateSet().get(name).setValue(state, value, False)
    model.realizePosition(state)
    poses = {}
    for body in model.getBodySet():
        pose = body.getTransformInGround(state)
        rot = np.array([[pose.R().get(i, j) for j in range(3)] for i in range(3)])
        poses[body.getName()] = (np.array([pose.p().get(i) for i in range(3)]), rot)
    return poses


FIRST = {"gait": ("pelvis_tilt", "pelvis_tx", "pelvis_ty"),
         "three_rotations": ("pelvis_tilt", "pelvis_list", "pelvis_rotation"),
         "constant_rotation": ("pelvis_tilt", "pelvis_list", "pelvis_tx")}


@pytest.mark.parametrize("variant", list(FIRST))
def test_body_poses_match_opensim(tmp_path, variant):
    source = needs(GAIT)
    path = source
    if variant != "gait":
        path = tmp_path / f"{variant}.osim"
        path.write_text(_pelvis_rotations(source.read_text(),
                                          constant_last=variant == "constant_rotation"))
    loaded = osim.load(path, forces=False)
    assert loaded.coupling is not None
    assert loaded.coordinates[:3] == FIRST[variant]
    assert "knee_r/translation1" in loaded.engine_joints
    assert ("ground_pelvis/rotation3" in loaded.engine_joints) == (variant == "constant_rotation")
    rng = np.random.default_rng(7)
    mj = loaded.path_builder.mj_model()
    body_names = [mj.body(i).name for i in range(1, loaded.model.n_body)]
    for trial in range(3):
        q = rng.uniform(-1.2, 1.2, len(loaded.coordinates))
        expected = _opensim_poses(path, dict(zip(loaded.coordinates, q)))
        kin = engine.kinematics(loaded.model, C.full_positions(loaded.coupling, jnp.asarray(q)))
        for i, name in enumerate(body_names, start=1):
            pos, rot = expected[name]
            np.testing.assert_allclose(kin.body_pos_world[i], pos, atol=1e-12,
                                       err_msg=f"{variant} trial {trial}: {name} position (m)")
            np.testing.assert_allclose(kin.body_rot_world[i], rot, atol=1e-12,
                                       err_msg=f"{variant} trial {trial}: {name} rotation")


def _splined_knee_rotation(text: str) -> str:
    """knee_r's rotation1 driven by its translation1 spline instead of a LinearFunction:
    knee_angle_r then moves axes only through splines (OpenSim: a Coupled coordinate)."""
    start = text.index('<CustomJoint name="knee_r">')
    end = text.index("</CustomJoint>", start)
    block = text[start:end]
    t1 = block.index('<TransformAxis name="translation1">')
    spline = block[block.index("<MultiplierFunction", t1):
                   block.index("</MultiplierFunction>", t1) + len("</MultiplierFunction>")]
    r1 = block.index('<TransformAxis name="rotation1">')
    a = block.index("<LinearFunction", r1)
    b = block.index("</LinearFunction>", r1) + len("</LinearFunction>")
    return text[:start] + block[:a] + spline + block[b:] + text[end:]


@pytest.mark.parametrize("variant", ["gait", "splined_knee_rotation"])
def test_coordinate_motion_types_match_opensim(tmp_path, variant):
    """`OsimModel.coordinate_motion` (which names the ID columns and decides the degrees
    conversion) against OpenSim's Coordinate::getMotionType."""
    path = needs(GAIT)
    if variant != "gait":
        path = tmp_path / f"{variant}.osim"
        path.write_text(_splined_knee_rotation(needs(GAIT).read_text()))
    loaded = osim.load(path, forces=False)
    model = opensim.Model(str(path))
    model.initSystem()
    kinds = {opensim.Coordinate.Rotational: "rotational",
             opensim.Coordinate.Translational: "translational",
             opensim.Coordinate.Coupled: "coupled"}
    theirs = {c.getName(): kinds[c.getMotionType()] for c in model.getCoordinateSet()}
    assert dict(loaded.coordinate_motion) == theirs
    assert (theirs["knee_angle_r"] == "coupled") == (variant != "gait")
