"""Files outside the supported subset are refused with an OsimError that names the file, the
element's tag and name, and the offending value (docs/osim.md, "Rejected").

Reference models: leg6dof9musc.osim loads (its CoordinateCouplerConstraint eliminated, its
welded toes merged; against OpenSim in test_osim_coupler_constraint.py), double_pendulum.osim
with one point-mass rod moved onto its pin's axis (singular mass matrix); arm26.osim loads with its ellipsoids (and refuses
a typo in `omit`); gait10dof18musc.osim and its subject01 load with their MovingPathPoints (and
refuse one whose sockets name two coordinates). Synthetic files: `osim_synthetic.TINY` (which
loads) changed in one place each, and TINY with `coupled_pair` (a second body whose coordinate
is coupled to theta by a CoordinateCouplerConstraint) changed likewise.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from myotwin import osim
from myotwin.paths.opensim_path import moving_paths
from osim_synthetic import (TINY, coupled_pair, moving_point, set_text, welded_tip,
                             write_osim)
from shared_reference import REPO, SHARED, needs

MODELS = SHARED / "reference" / "opensim" / "models"
DOCS = REPO / "docs" / "osim.md"


def _refused(path, *expected, omit=()):
    """Load `path`, expect an OsimError whose message holds every string of `expected`."""
    with pytest.raises(osim.OsimError) as info:
        osim.load(path, omit=omit)
    message = str(info.value)
    for text in (path.name, *expected):
        assert text in message, f"{text!r} not in the message: {message}"
    return message


def _needs(name):
    return needs(MODELS / name)


# ---------------------------------------------------------------- reference models

def test_arm26_loads_with_its_ellipsoids():
    arm = osim.load(_needs("arm26.osim"))
    assert arm.omitted == ()
    ps = arm.model.paths.opensim
    assert sorted(n for n, k in zip(ps.cyl_names, ps.cyl_kind) if k == 2) == ["BIClonghh",
                                                                              "TRIlonghh"]


def test_leg_model_loads_with_its_coordinate_coupler_constraint():
    """Once refused at its CoordinateCouplerConstraint, then at toes_r's inertia; now the
    dependent coordinate is eliminated and toes_r merged into calcn_r."""
    leg = osim.load(_needs("leg6dof9musc.osim"))
    assert "knee_angle_pat_r" not in leg.coordinates and len(leg.coordinates) == 6
    assert leg.coupled_coordinates["knee_angle_pat_r"].constraint == "pat_angle_r"
    assert dict(leg.merged_bodies) == {"toes_r": "calcn_r"}
    assert leg.omitted == () and len(leg.muscle_names) == 9


@pytest.mark.parametrize("name", ["gait10dof18musc.osim", "gait10dof18musc_subject01.osim"])
def test_gait_models_load_with_their_moving_path_points(name):
    """Once refused at their first MovingPathPoint (rect_fem_r-P3); now the whole file loads
    (lengths and moment arms against OpenSim: test_osim_gait_muscles.py)."""
    gait = osim.load(_needs(name))
    assert gait.omitted == () and len(gait.muscle_names) == 18
    moving = moving_paths(gait.model.paths.opensim)
    assert moving == ("rect_fem_r", "vasti_r", "rect_fem_l", "vasti_l")
    assert "| `MovingPathPoint` (`socket_parent_frame`" in DOCS.read_text()  # supported subset


def test_gait_moving_point_on_two_coordinates_is_refused(tmp_path):
    text = _needs("gait10dof18musc.osim").read_text()
    start = text.index('<MovingPathPoint name="rect_fem_r-P3">')
    socket = "<socket_y_coordinate>/jointset/knee_r/knee_angle_r</socket_y_coordinate>"
    at = text.index(socket, start)
    path = tmp_path / "gait_two_coordinates.osim"
    path.write_text(text[:at] + socket.replace("knee_r/knee_angle_r", "hip_r/hip_flexion_r")
                    + text[at + len(socket):])
    _refused(path, "MovingPathPoint 'rect_fem_r-P3'", "muscle rect_fem_r",
             "must name the same coordinate", "'/jointset/hip_r/hip_flexion_r'")


def test_point_mass_on_its_pin_axis_is_refused(tmp_path):
    """double_pendulum.osim's rods are point masses (loaded: test_osim_closed_forms.py); with
    rod2's mass moved onto pin2's axis, q2 has no inertia and the mass matrix is singular."""
    text = _needs("double_pendulum.osim").read_text()
    body = text.index('<Body name="rod2">')
    at = text.index("<mass_center>0 0 0</mass_center>", body)
    path = tmp_path / "pendulum_on_axis.osim"
    path.write_text(text[:at] + "<mass_center>0 0.5 0</mass_center>"
                    + text[at + len("<mass_center>0 0 0</mass_center>"):])
    _refused(path, "Model 'double_pendulum'", "point masses ['rod1', 'rod2']", "singular",
             "joints ['q2']")


def test_omitting_an_unknown_name_is_refused():
    _refused(_needs("arm26.osim"), "Model 'arm26'", "'TRIlonghh_typo'",
             omit=("TRIlonghh", "BIClonghh", "TRIlonghh_typo"))


# ---------------------------------------------------------------- synthetic files

def test_tiny_model_loads(tmp_path):
    tiny = osim.load(write_osim(tmp_path, TINY))
    assert tiny.coordinates == ("theta",) and tiny.muscle_names == ("m",)
    # the five Muscle properties are in the file; Thelen's own are OpenSim's defaults
    assert tiny.muscles["m"]["opensim_defaults_used"] == (
        "min_control", "max_control", "activation_time_constant", "deactivation_time_constant", "FmaxTendonStrain",
        "FmaxMuscleStrain", "KshapeActive", "KshapePassive", "Af", "Flen",
        "fv_linear_extrap_threshold", "minimum_activation")
    assert tiny.muscles["m"]["fmax_tendon_strain"] == 0.04


def test_coupled_pair_loads_and_records_its_coupler(tmp_path):
    """Enforced: phi is eliminated and recorded; isEnforced false: phi stays a coordinate and
    the constraint's name is recorded as left out."""
    pair = osim.load(write_osim(tmp_path, TINY, coupled_pair))
    assert pair.coordinates == ("theta",) and pair.engine_joints == ("theta", "phi")
    assert pair.coupled_coordinates["phi"].independent == "theta"
    assert pair.unenforced_constraints == ()
    loose = osim.load(write_osim(tmp_path, TINY, lambda r: coupled_pair(r, enforced=False)))
    assert loose.coordinates == ("theta", "phi") and loose.coupling is None
    assert loose.unenforced_constraints == ("couple",) and loose.coupled_coordinates == {}
    omitted = osim.load(write_osim(tmp_path, TINY, coupled_pair), omit=("couple",))
    assert omitted.coordinates == ("theta", "phi") and omitted.omitted == ("couple",)


def test_welded_child_with_an_invalid_inertia_is_merged(tmp_path):
    """tip (inertia 0 0 0.0009, which MuJoCo refuses) merges into link and stays a massless
    body carrying the muscle's insertion; with a valid inertia it is built as it is."""
    tip = osim.load(write_osim(tmp_path, TINY, welded_tip))
    assert dict(tip.merged_bodies) == {"tip": "link"}
    mj = tip.path_builder.mj_model()
    assert mj.body("tip").mass[0] == 0.0 and abs(mj.body("link").mass[0] - 1.7) < 1e-15
    valid = osim.load(write_osim(tmp_path, TINY, lambda r: welded_tip(
        r, "0.001 0.001 0.0009 0 0 0")))
    assert valid.merged_bodies == {} and valid.path_builder.mj_model().body("tip").mass[0] == 0.2


def _moving(edit):
    return lambda root: moving_point(root, edit)


def _replace_children(holder, xml):
    """`holder`'s children replaced by the elements of the XML text `xml`."""
    for child in list(holder):
        holder.remove(child)
    for elem in ET.fromstring(f"<holder>{xml}</holder>"):
        holder.append(elem)


def _x_location(text):
    return lambda point: _replace_children(point.find("x_location"), text)


def _version(root):
    root.set("Version", "30000")


def _add_constraint(root):
    model = root.find("Model")
    ET.SubElement(ET.SubElement(ET.SubElement(model, "ConstraintSet"), "objects"),
                  "WeldConstraint", name="tie")


def _coupler(edit):
    """TINY with `coupled_pair`, then `edit` applied to its CoordinateCouplerConstraint."""
    def apply(root):
        coupled_pair(root)
        edit(root.find(".//CoordinateCouplerConstraint"))
    return apply


def _second_coupler(dependent, independent):
    """TINY with `coupled_pair` and a copy 'couple2' of its coupler on other coordinates."""
    def apply(root):
        coupled_pair(root)
        other = ET.fromstring(ET.tostring(root.find(".//CoordinateCouplerConstraint")))
        other.set("name", "couple2")
        other.find("dependent_coordinate_name").text = dependent
        other.find("independent_coordinate_names").text = independent
        root.find(".//ConstraintSet/objects").append(other)
    return apply


def _coupler_function(xml):
    return _coupler(lambda c: _replace_children(c.find("coupled_coordinates_function"), xml))


def _conditional_point_on_a_spline_coordinate(root):
    """theta turns its hinge through 2 theta (no identity axis); m-P2 conditional on it."""
    set_text(root, ".//LinearFunction/coefficients", "2 0")
    point = root.find(".//PathPoint[@name='m-P2']")
    point.tag = "ConditionalPathPoint"
    ET.SubElement(point, "socket_coordinate").text = "/jointset/hinge/theta"
    ET.SubElement(point, "range").text = "0 1"


def _ball_joint(root):
    root.find(".//CustomJoint").tag = "BallJoint"


def _torus(root):
    root.find(".//WrapCylinder").tag = "WrapTorus"


def _sphere(root, radius="0.01"):
    wrap = root.find(".//WrapCylinder")
    wrap.tag = "WrapSphere"
    wrap.remove(wrap.find("length"))
    wrap.find("radius").text = radius


def _ellipsoid(root, dimensions="0.01 0.02 0.01"):
    wrap = root.find(".//WrapCylinder")
    wrap.tag = "WrapEllipsoid"
    for tag in ("radius", "length"):
        wrap.remove(wrap.find(tag))
    ET.SubElement(wrap, "dimensions").text = dimensions


def _wrap_on_the_path(root, method):
    wraps = root.find(".//PathWrapSet/objects")
    wrap = ET.SubElement(wraps, "PathWrap", name="pathwrap")
    ET.SubElement(wrap, "wrap_object").text = "cyl"
    ET.SubElement(wrap, "method").text = method
    ET.SubElement(wrap, "range").text = "-1 -1"


def _ellipsoid_by_midpoint(root):
    _ellipsoid(root)
    _wrap_on_the_path(root, "midpoint")


def _function_of_nothing(root):
    axis = root.find(".//TransformAxis[@name='rotation2']")
    axis.remove(axis.find("Constant"))
    axis.append(ET.fromstring("<LinearFunction><coefficients>2 0</coefficients>"
                              "</LinearFunction>"))


def _foreign_axis(root):
    axis = root.find(".//TransformAxis[@name='translation1']")
    axis.find("coordinates").text = "phi"


def _body_without_joint(root):
    bodies = root.find(".//BodySet/objects")
    extra = ET.fromstring(ET.tostring(root.find(".//Body")))
    extra.set("name", "extra")
    extra.remove(extra.find("WrapObjectSet"))
    bodies.append(extra)


def _second_joint_for_link(root):
    joints = root.find(".//JointSet/objects")
    weld = ET.SubElement(joints, "WeldJoint", name="glue")
    ET.SubElement(weld, "socket_parent_frame").text = "/ground"
    ET.SubElement(weld, "socket_child_frame").text = "/bodyset/link"


EDITS = {
    "body without a joint": (_body_without_joint, ("Body 'extra'", "child of no joint")),
    "body with two joints": (_second_joint_for_link, ("WeldJoint 'glue'", "'link'",
                                                       "already the child of joint 'hinge'")),
    "non-numeric mass": (lambda r: set_text(r, ".//Body/mass", "abc"),
                         ("Body 'link'", "<mass>", "'abc'")),
    "non-finite location": (lambda r: set_text(r, ".//PathPoint[@name='m-P1']/location",
                                               "0 nan 0"),
                            ("PathPoint 'm-P1'", "muscle m", "'0 nan 0'")),
    "wrong vector length": (lambda r: set_text(r, ".//Body/mass_center", "0 -0.2"),
                            ("Body 'link'", "<mass_center>", "3 numbers", "'0 -0.2'")),
    "path point on a missing body": (
        lambda r: set_text(r, ".//PathPoint[@name='m-P2']/socket_parent_frame",
                           "/bodyset/nobody"),
        ("PathPoint 'm-P2'", "muscle m", "'/bodyset/nobody'")),
    "MovingPathPoint unknown coordinate": (
        _moving(lambda p: set_text(p, "socket_y_coordinate", "/jointset/hinge/phi")),
        ("MovingPathPoint 'm-P2'", "muscle m", "<socket_y_coordinate>", "'/jointset/hinge/phi'")),
    "MovingPathPoint without a coordinate socket": (
        _moving(lambda p: p.remove(p.find("socket_z_coordinate"))),
        ("MovingPathPoint 'm-P2'", "muscle m", "required property <socket_z_coordinate>")),
    "MovingPathPoint with an empty socket": (
        _moving(lambda p: set_text(p, "socket_x_coordinate", "")),
        ("MovingPathPoint 'm-P2'", "muscle m", "<socket_x_coordinate>", "got ''")),
    "MovingPathPoint spline with decreasing x": (
        _moving(_x_location("<SimmSpline><x>0 0.5 0.2</x><y>0 1 2</y></SimmSpline>")),
        ("SimmSpline", "MovingPathPoint m-P2, x_location, muscle m", "strictly increasing",
         "'0.5' then '0.2'")),
    "MovingPathPoint unknown function": (
        _moving(_x_location("<Sine/>")),
        ("Sine", "MovingPathPoint m-P2, x_location", "not a supported function type here")),
    "MovingPathPoint smoothing GCVSpline": (
        _moving(_x_location("<GCVSpline><half_order>2</half_order><error_variance>0.5"
                            "</error_variance><x>0 1 2 3</x><y>0 1 0 1</y></GCVSpline>")),
        ("GCVSpline", "MovingPathPoint m-P2, x_location", "<error_variance> must be 0",
         "'0.5'")),
    "MovingPathPoint two functions": (
        _moving(_x_location("<Constant><value>1</value></Constant><Constant />")),
        ("MovingPathPoint 'm-P2'", "<x_location> must hold exactly one function",
         "['Constant', 'Constant']")),
    "MovingPathPoint unknown property": (
        _moving(lambda p: ET.SubElement(p, "range")),
        ("MovingPathPoint 'm-P2'", "muscle m", "<range>")),
    "CustomJoint unknown function": (
        lambda r: setattr(r.find(".//LinearFunction"), "tag", "StepFunction"),
        ("StepFunction", "TransformAxis rotation1", "CustomJoint hinge")),
    "CustomJoint axis of two coordinates": (
        lambda r: set_text(r, ".//TransformAxis[@name='rotation1']/coordinates", "theta phi"),
        ("TransformAxis 'rotation1'", "CustomJoint hinge", "several coordinates")),
    "CustomJoint function of no coordinate": (_function_of_nothing, (
        "TransformAxis 'rotation2'", "CustomJoint hinge", "must be a Constant",
        "LinearFunction (coefficients '2 0')")),
    "CustomJoint axis of another coordinate": (_foreign_axis, (
        "TransformAxis 'translation1'", "CustomJoint hinge", "'phi'", "['theta']")),
    "every coordinate locked": (lambda r: set_text(r, ".//Coordinate/locked", "true"),
                                ("Model", "every coordinate is locked (theta)")),
    "Version 30000": (_version, ("OpenSimDocument", "Version 30000")),
    "constraint": (_add_constraint, ("WeldConstraint 'tie'", "not supported",
                                     "omit=('tie',)")),
    "coupler of two independent coordinates": (
        _coupler(lambda c: set_text(c, "independent_coordinate_names", "theta phi")),
        ("CoordinateCouplerConstraint 'couple'", "exactly one independent coordinate",
         "theta phi")),
    "coupler of an unknown coordinate": (
        _coupler(lambda c: set_text(c, "dependent_coordinate_name", "psi")),
        ("CoordinateCouplerConstraint 'couple'", "<dependent_coordinate_name>", "'psi'")),
    "coupler of a coordinate on itself": (
        _coupler(lambda c: set_text(c, "independent_coordinate_names", "phi")),
        ("CoordinateCouplerConstraint 'couple'", "also the independent one", "'phi'")),
    "coupler unknown function": (
        _coupler_function("<Sine/>"),
        ("Sine", "CoordinateCouplerConstraint couple", "not a supported function type here")),
    "coupler GCVSpline of too few points": (
        _coupler_function("<GCVSpline><half_order>2</half_order><x>0 1 2</x><y>0 1 0</y>"
                          "</GCVSpline>"),
        ("GCVSpline", "CoordinateCouplerConstraint couple", "needs at least 4 points, got 3")),
    "coupler two functions": (
        _coupler_function("<Constant><value>1</value></Constant><Constant />"),
        ("CoordinateCouplerConstraint 'couple'", "exactly one function",
         "['Constant', 'Constant']")),
    "coupler unknown property": (
        _coupler(lambda c: ET.SubElement(c, "scale")),
        ("CoordinateCouplerConstraint 'couple'", "<scale>")),
    "coupler on a locked coordinate": (
        lambda r: (coupled_pair(r), set_text(r, ".//Coordinate[@name='phi']/locked", "true")),
        ("CoordinateCouplerConstraint 'couple'", "dependent coordinate 'phi' is locked",
         "omit=('couple',)")),
    "coupler chain": (_second_coupler("theta", "phi"),
                      ("CoordinateCouplerConstraint 'couple'", "<independent_coordinate_names>",
                       "'theta'", "'couple2'", "chained couplers are not supported")),
    "coordinate dependent twice": (_second_coupler("phi", "theta"),
                                   ("CoordinateCouplerConstraint 'couple2'", "'phi'",
                                    "already the dependent coordinate of", "'couple'")),
    "moving body with an invalid inertia": (
        lambda r: set_text(r, ".//Body[@name='link']/inertia", "0 0 0.02 0 0 0"),
        ("Body 'link'", "not positive definite")),
    "conditional point on a coordinate without its own axis": (
        _conditional_point_on_a_spline_coordinate,
        ("ConditionalPathPoint 'm-P2'", "muscle m", "'theta'", "no joint whose q")),
    "ball joint": (_ball_joint, ("BallJoint 'hinge'", "not supported")),
    "torus wrap": (_torus, ("WrapTorus 'cyl'", "body link", "torus wrapping is not supported",
                            "omit=('cyl',)")),
    "sphere of radius 0": (lambda r: _sphere(r, "0"),
                           ("WrapSphere 'cyl'", "body link", "radius", "0")),
    "ellipsoid with a zero semi-axis": (lambda r: _ellipsoid(r, "0.01 0 0.01"),
                                        ("WrapEllipsoid 'cyl'", "body link", "<dimensions>",
                                         "'0.01 0 0.01'")),
    "ellipsoid wrapped by midpoint": (_ellipsoid_by_midpoint,
                                      ("PathWrap 'pathwrap'", "muscle m", "'cyl'",
                                       "<method>midpoint</method>", "only hybrid")),
    "unknown wrap method": (lambda r: _wrap_on_the_path(r, "spline"),
                            ("PathWrap 'pathwrap'", "muscle m", "<method>", "'spline'")),
    "coordinate range upside down": (
        lambda r: set_text(r, ".//Coordinate[@name='theta']/range", "0.3 -0.3"),
        ("Coordinate 'theta'", "<range> must be min max with min <= max", "'0.3 -0.3'")),
    "missing property": (lambda r: r.find(".//Body").remove(r.find(".//Body/inertia")),
                         ("Body 'link'", "required property <inertia> is missing")),
    "unknown property": (lambda r: ET.SubElement(r.find(".//Body"), "density"),
                         ("Body 'link'", "<density>")),
}


@pytest.mark.parametrize("case", sorted(EDITS))
def test_synthetic_error(tmp_path, case):
    edit, expected = EDITS[case]
    _refused(write_osim(tmp_path, TINY, edit), *expected)


def test_unreadable_xml(tmp_path):
    path = tmp_path / "broken.osim"
    path.write_text(TINY[:400])
    _refused(path, "unreadable XML")


def test_omit_must_be_a_collection_of_names(tmp_path):
    with pytest.raises(TypeError, match="omit must be a collection"):
        osim.load(write_osim(tmp_path, TINY), omit="cyl")


@pytest.mark.parametrize("flags, message", [
    ({"forces": "no"}, "forces must be True or False, got 'no'"),
    ({"locks": 0}, "locks must be True or False, got 0"),
    ({"locks": None}, "locks must be True or False, got None"),
])
def test_load_flags_must_be_booleans(tmp_path, flags, message):
    """(forces='no' loaded the forces; 0 and None passed as False.)"""
    with pytest.raises(TypeError, match=message):
        osim.load(write_osim(tmp_path, TINY), **flags)


def _torus_on_the_path(root):
    _torus(root)
    wraps = root.find(".//PathWrapSet/objects")
    wrap = ET.SubElement(wraps, "PathWrap", name="pathwrap")
    ET.SubElement(wrap, "wrap_object").text = "cyl"
    ET.SubElement(wrap, "range").text = "-1 -1"


def test_omitted_wrap_object_is_dropped_from_paths_and_recorded(tmp_path):
    path = write_osim(tmp_path, TINY, _torus_on_the_path)
    _refused(path, "WrapTorus 'cyl'")
    tiny = osim.load(path, omit=("cyl",))
    assert tiny.omitted == ("cyl",)
    assert tiny.model.paths.path_names == ("m",)  # its only wrap dropped: a straight path


_FORCE_SET = ('<?xml version="1.0" encoding="UTF-8" ?><OpenSimDocument Version="40600">'
              '<ForceSet name="extra"><objects>{}</objects><groups /></ForceSet>'
              "</OpenSimDocument>")
_MOTOR = ('<CoordinateActuator name="{}"><min_control>-Inf</min_control>'
          "<max_control>Inf</max_control><coordinate>theta</coordinate>"
          "<optimal_force>3</optimal_force></CoordinateActuator>")


def test_force_set_files_add_their_forces_after_the_models(tmp_path):
    """OpenSim's ForwardTool force_set_files (replace_force_set false): the file's
    CoordinateActuator joins the model's forces after them (driven against the ForwardTool
    in test_osim_controls.py)."""
    extra = tmp_path / "extra.xml"
    extra.write_text(_FORCE_SET.format(_MOTOR.format("reserve")))
    plain = osim.load(write_osim(tmp_path, TINY))
    loaded = osim.load(write_osim(tmp_path, TINY), force_set_files=[extra])
    assert loaded.actuator_names == (*plain.actuator_names, "reserve")
    assert loaded.force_names == (*plain.force_names, "reserve")
    assert loaded.actuators["reserve"]["gear"] == 3.0
    assert loaded.model.n_u == plain.model.n_u + 1
    assert loaded.force_set_files == (str(extra),)


@pytest.mark.parametrize("objects, message", [
    (_MOTOR.format("m"), "extra.xml: CoordinateActuator 'm': another force of the model or of "
     "its force set files has this name"),
    ('<PointActuator name="FX"/>', "extra.xml: PointActuator 'FX': PointActuator is not a "
     "supported force"),
    (_MOTOR.format("r").replace("theta", "phi"), "extra.xml: CoordinateActuator 'r': "
     "<coordinate> names no coordinate of the model, got 'phi'"),
])
def test_bad_force_set_files_name_their_file(tmp_path, objects, message):
    extra = tmp_path / "extra.xml"
    extra.write_text(_FORCE_SET.format(objects))
    with pytest.raises(osim.OsimError) as info:
        osim.load(write_osim(tmp_path, TINY), force_set_files=[extra])
    assert message in str(info.value), str(info.value)


def test_force_set_files_replace_the_models_forces(tmp_path):
    """replace_force_set (OpenSim's AbstractTool empties the model's ForceSet first): the
    muscle m is gone and the file's actuator is the only force; a muscle of the file may use
    the model's name m then (driven against the ForwardTool and the AnalyzeTool in
    test_osim_run_tool.py and test_osim_static_optimization.py)."""
    extra = tmp_path / "extra.xml"
    extra.write_text(_FORCE_SET.format(_MOTOR.format("m")))
    loaded = osim.load(write_osim(tmp_path, TINY), force_set_files=[extra],
                       replace_force_set=True)
    assert loaded.muscle_names == () and loaded.force_names == ("m",)
    assert loaded.actuator_names == ("m",) and loaded.force_set_replaced
    bare = osim.load(write_osim(tmp_path, TINY), replace_force_set=True)
    assert bare.force_names == () and bare.model.n_u == 0
    with pytest.raises(ValueError, match="cannot be given with forces=False"):
        osim.load(write_osim(tmp_path, TINY), forces=False, replace_force_set=True)
    with pytest.raises(TypeError, match="replace_force_set must be True or False, got 'yes'"):
        osim.load(write_osim(tmp_path, TINY), replace_force_set="yes")


def test_force_set_files_must_be_a_collection(tmp_path):
    with pytest.raises(TypeError, match=r"force_set_files must be a collection of paths"):
        osim.load(write_osim(tmp_path, TINY), force_set_files=str(tmp_path / "extra.xml"))
