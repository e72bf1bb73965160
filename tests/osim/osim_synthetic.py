"""Small .osim documents written by the tests: a tiny valid model and ways to change it.

`TINY` is a one-body model inside the subset (a CustomJoint hinge, a WrapCylinder, a Thelen
muscle with two path points); `write_osim(tmp_path, TINY, edit)` writes it after `edit(root)`
has changed the parsed XML, so each error test starts from a file known to load.
`moving_point` makes its second path point a MovingPathPoint of theta (which loads too).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

_ZERO_AXES = "".join(
    f'<TransformAxis name="{name}"><coordinates></coordinates><axis>{axis}</axis>'
    f'<Constant name="function"><value>0</value></Constant></TransformAxis>'
    for name, axis in (("rotation2", "0 1 0"), ("rotation3", "1 0 0"),
                       ("translation1", "1 0 0"), ("translation2", "0 1 0"),
                       ("translation3", "0 0 1")))

TINY = f"""<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
  <Model name="tiny">
    <Ground name="ground" />
    <gravity>0 -9.80665 0</gravity>
    <BodySet name="bodyset"><objects>
      <Body name="link">
        <mass>1.5</mass>
        <mass_center>0 -0.2 0</mass_center>
        <inertia>0.02 0.003 0.02 0 0 0</inertia>
        <WrapObjectSet name="wrapobjectset"><objects>
          <WrapCylinder name="cyl">
            <active>true</active>
            <xyz_body_rotation>0 0 0</xyz_body_rotation>
            <translation>0 -0.1 0</translation>
            <quadrant>all</quadrant>
            <radius>0.01</radius>
            <length>0.05</length>
          </WrapCylinder>
        </objects></WrapObjectSet>
      </Body>
    </objects></BodySet>
    <JointSet name="jointset"><objects>
      <CustomJoint name="hinge">
        <socket_parent_frame>ground_offset</socket_parent_frame>
        <socket_child_frame>link_offset</socket_child_frame>
        <coordinates>
          <Coordinate name="theta">
            <default_value>0</default_value>
            <range>-1 1</range>
            <clamped>false</clamped>
            <locked>false</locked>
          </Coordinate>
        </coordinates>
        <frames>
          <PhysicalOffsetFrame name="ground_offset">
            <socket_parent>/ground</socket_parent>
            <translation>0 1 0</translation>
            <orientation>0 0 0</orientation>
          </PhysicalOffsetFrame>
          <PhysicalOffsetFrame name="link_offset">
            <socket_parent>/bodyset/link</socket_parent>
            <translation>0 0 0</translation>
            <orientation>0 0 0</orientation>
          </PhysicalOffsetFrame>
        </frames>
        <SpatialTransform>
          <TransformAxis name="rotation1"><coordinates>theta</coordinates><axis>0 0 1</axis>
            <LinearFunction name="function"><coefficients>1 0</coefficients></LinearFunction>
          </TransformAxis>
          {_ZERO_AXES}
        </SpatialTransform>
      </CustomJoint>
    </objects></JointSet>
    <ForceSet name="forceset"><objects>
      <Thelen2003Muscle name="m">
        <GeometryPath name="geometrypath">
          <PathPointSet><objects>
            <PathPoint name="m-P1">
              <socket_parent_frame>/ground</socket_parent_frame>
              <location>0.05 1.0 0</location>
            </PathPoint>
            <PathPoint name="m-P2">
              <socket_parent_frame>/bodyset/link</socket_parent_frame>
              <location>0.02 -0.3 0</location>
            </PathPoint>
          </objects></PathPointSet>
          <PathWrapSet><objects /></PathWrapSet>
        </GeometryPath>
        <max_isometric_force>100</max_isometric_force>
        <optimal_fiber_length>0.1</optimal_fiber_length>
        <tendon_slack_length>0.2</tendon_slack_length>
        <pennation_angle_at_optimal>0</pennation_angle_at_optimal>
        <max_contraction_velocity>10</max_contraction_velocity>
      </Thelen2003Muscle>
    </objects></ForceSet>
  </Model>
</OpenSimDocument>
"""


#: `moving_point`'s location in the link's frame: x = slope theta + intercept (a
#: LinearFunction), y a Constant, z absent (OpenSim's default Constant 0).
MOVING_X = (0.01, 0.02)
MOVING_Y = -0.3


def moving_point(root: ET.Element, edit=None) -> None:
    """Make TINY's path point m-P2 a MovingPathPoint of theta (`MOVING_X`, `MOVING_Y`), then
    `edit(point)` if given."""
    point = root.find(".//PathPoint[@name='m-P2']")
    point.tag = "MovingPathPoint"
    point.remove(point.find("location"))
    for axis in "xyz":
        ET.SubElement(point, f"socket_{axis}_coordinate").text = "/jointset/hinge/theta"
    ET.SubElement(point, "x_location").append(ET.fromstring(
        f"<LinearFunction><coefficients>{MOVING_X[0]} {MOVING_X[1]}</coefficients>"
        "</LinearFunction>"))
    ET.SubElement(point, "y_location").append(ET.fromstring(
        f"<Constant><value>{MOVING_Y}</value></Constant>"))
    if edit is not None:
        edit(point)


def write_osim(directory: Path, text: str, edit=None, name: str = "tiny.osim") -> Path:
    """Write `text` (after `edit(root)` changed its parsed XML, if given) to directory/name."""
    root = ET.fromstring(text)
    if edit is not None:
        edit(root)
    path = directory / name
    ET.ElementTree(root).write(path, encoding="unicode")
    return path


def set_text(root: ET.Element, xpath: str, text: str) -> None:
    """Set the text of the one element at `xpath` (ElementTree syntax, from the root)."""
    found = root.findall(xpath)
    assert len(found) == 1, f"{xpath!r} matches {len(found)} elements"
    found[0].text = text


def set_muscle_property(root: ET.Element, muscle_tag: str, prop: str, text: str) -> None:
    """Set `prop` to `text` on every `muscle_tag` element (e.g. Thelen2003Muscle), adding the
    property where the file leaves it out."""
    for muscle in root.iter(muscle_tag):
        element = muscle.find(prop)
        if element is None:
            element = ET.SubElement(muscle, prop)
        element.text = text


#: `coupled_pair`'s coupler: phi = COUPLER_SCALE * (slope theta + intercept).
COUPLER_LINEAR = (0.5, 0.1)
COUPLER_SCALE = 2.0


def coupled_pair(root: ET.Element, enforced: bool = True) -> None:
    """Add to TINY a second body link2 on a PinJoint hinge2 (coordinate phi) below link, a
    CoordinateCouplerConstraint 'couple' making phi dependent on theta (`COUPLER_LINEAR`,
    `COUPLER_SCALE`), and a muscle m2 from link over a ConditionalPathPoint of phi (active for
    phi in [0, 1]) to link2."""
    model = root.find("Model")
    root.find(".//BodySet/objects").append(ET.fromstring(
        '<Body name="link2"><mass>0.5</mass><mass_center>0.01 -0.1 0</mass_center>'
        "<inertia>0.002 0.001 0.0025 0.0001 0 0</inertia></Body>"))
    root.find(".//JointSet/objects").append(ET.fromstring(
        '<PinJoint name="hinge2"><socket_parent_frame>link_offset2</socket_parent_frame>'
        "<socket_child_frame>/bodyset/link2</socket_child_frame>"
        '<coordinates><Coordinate name="phi"><default_value>0</default_value>'
        "<range>-1 1</range><clamped>false</clamped><locked>false</locked></Coordinate>"
        '</coordinates><frames><PhysicalOffsetFrame name="link_offset2">'
        "<socket_parent>/bodyset/link</socket_parent><translation>0 -0.4 0</translation>"
        "<orientation>0.3 0 0.2</orientation></PhysicalOffsetFrame></frames></PinJoint>"))
    constraints = ET.SubElement(ET.SubElement(model, "ConstraintSet"), "objects")
    constraints.append(ET.fromstring(
        f'<CoordinateCouplerConstraint name="couple"><isEnforced>{str(enforced).lower()}'
        "</isEnforced><coupled_coordinates_function><LinearFunction><coefficients>"
        f"{COUPLER_LINEAR[0]} {COUPLER_LINEAR[1]}</coefficients></LinearFunction>"
        "</coupled_coordinates_function><independent_coordinate_names>theta"
        "</independent_coordinate_names><dependent_coordinate_name>phi"
        f"</dependent_coordinate_name><scale_factor>{COUPLER_SCALE}</scale_factor>"
        "</CoordinateCouplerConstraint>"))
    muscle = ET.fromstring(ET.tostring(root.find(".//Thelen2003Muscle")))
    muscle.set("name", "m2")
    points = muscle.find(".//PathPointSet/objects")
    for point in list(points):
        points.remove(point)
    for xml in ('<PathPoint name="m2-P1"><socket_parent_frame>/bodyset/link'
                "</socket_parent_frame><location>0.03 -0.1 0</location></PathPoint>",
                '<ConditionalPathPoint name="m2-P2"><socket_parent_frame>/bodyset/link'
                "</socket_parent_frame><location>0.05 -0.38 0.01</location>"
                "<socket_coordinate>/jointset/hinge2/phi</socket_coordinate>"
                "<range>0 1</range></ConditionalPathPoint>",
                '<PathPoint name="m2-P3"><socket_parent_frame>/bodyset/link2'
                "</socket_parent_frame><location>0.02 -0.2 0</location></PathPoint>"):
        points.append(ET.fromstring(xml))
    root.find(".//ForceSet/objects").append(muscle)


def welded_tip(root: ET.Element, inertia: str = "0 0 0.0009 0 0 0") -> None:
    """Add to TINY a body tip (0.2 kg, `inertia`) welded to link at an offset and a rotation,
    and move the muscle's insertion onto it."""
    root.find(".//BodySet/objects").append(ET.fromstring(
        '<Body name="tip"><mass>0.2</mass><mass_center>0.01 -0.02 0.005</mass_center>'
        f"<inertia>{inertia}</inertia></Body>"))
    root.find(".//JointSet/objects").append(ET.fromstring(
        '<WeldJoint name="glue"><socket_parent_frame>link_tip</socket_parent_frame>'
        "<socket_child_frame>/bodyset/tip</socket_child_frame>"
        '<frames><PhysicalOffsetFrame name="link_tip"><socket_parent>/bodyset/link'
        "</socket_parent><translation>0.02 -0.5 0.01</translation>"
        "<orientation>0.4 -0.3 0.9</orientation></PhysicalOffsetFrame></frames></WeldJoint>"))
    set_text(root, ".//PathPoint[@name='m-P2']/socket_parent_frame", "/bodyset/tip")


#: arm26's Thelen2003Muscles as DeGrooteFregly2016Muscles (`to_degroote`): Thelen-only
#: properties dropped (and optimal_force: OpenSim's DGF refuses any written one), the two
#: strains carried over under De Groote's names, a non-default active_force_width_scale on the
#: elbow flexors (the triceps take OpenSim's default 1). test_osim_degroote_vs_opensim.py
#: explains each choice.
DEGROOTE_DROPPED = ("KshapeActive", "KshapePassive", "Af", "Flen", "optimal_force")
DEGROOTE_CARRIED = {"FmaxTendonStrain": "tendon_strain_at_one_norm_force",
                    "FmaxMuscleStrain": "passive_fiber_strain_at_one_norm_force"}
DEGROOTE_WIDE = ("BIClong", "BICshort", "BRA")
DEGROOTE_WIDTH_SCALE = 1.5


def to_degroote(root: ET.Element) -> None:
    """Every Thelen2003Muscle of `root` made a DeGrooteFregly2016Muscle (above)."""
    for muscle in root.iter("Thelen2003Muscle"):
        muscle.tag = "DeGrooteFregly2016Muscle"
        for old, new in DEGROOTE_CARRIED.items():
            muscle.find(old).tag = new
        for tag in DEGROOTE_DROPPED:
            for element in muscle.findall(tag):
                muscle.remove(element)
        if muscle.get("name") in DEGROOTE_WIDE:
            scale = ET.SubElement(muscle, "active_force_width_scale")
            scale.text = str(DEGROOTE_WIDTH_SCALE)


def scale_tendon_slack_lengths(root: ET.Element, factor: float) -> None:
    """Every muscle's <tendon_slack_length> of `root` times `factor` (longer tendons make
    musculotendons slack at poses where they were taut)."""
    for length in root.iter("tendon_slack_length"):
        length.text = repr(float(length.text) * factor)


def with_controllers(xml: str):
    """An edit for `write_osim`: the model's ControllerSet (made if absent) holds the
    controller elements of `xml` (one or more) and nothing else."""
    def edit(root: ET.Element) -> None:
        found = root.find("Model/ControllerSet")
        if found is None:
            found = ET.SubElement(root.find("Model"), "ControllerSet", name="controllerset")
        for child in list(found):
            found.remove(child)
        objects = ET.SubElement(found, "objects")
        for elem in ET.fromstring(f"<x>{xml}</x>"):
            objects.append(elem)
    return edit


def deactivate(root: ET.Element, names) -> None:
    """Set <active>false</active> on the wrap objects `names` (each must exist once)."""
    for name in names:
        found = [w for w in root.iter() if w.tag.startswith("Wrap") and w.get("name") == name]
        assert len(found) == 1, f"wrap object {name!r}: {len(found)} found"
        active = found[0].find("active")
        if active is None:
            active = ET.SubElement(found[0], "active")
        active.text = "false"


#: arm26's two ellipsoids. Tests about something else deactivate them (in the file both
#: OpenSim and myotwin read, so the comparison is unchanged) when the ellipsoid's compilation
#: would dominate their time: `deactivate`, `locked_copy(..., inactive=ARM26_ELLIPSOIDS)`.
ARM26_ELLIPSOIDS = ("TRIlonghh", "BIClonghh")


def locked_copy(source: Path, directory: Path, coordinate: str, value: float,
                inactive=()) -> Path:
    """A copy of the .osim file `source` in `directory` whose `coordinate` is locked
    (<locked>true</locked>) at default_value `value` (rad or m), and whose wrap objects
    `inactive` are deactivated (`deactivate`); returns its path."""
    def lock(root: ET.Element) -> None:
        where = f".//Coordinate[@name='{coordinate}']"
        set_text(root, f"{where}/default_value", repr(float(value)))
        set_text(root, f"{where}/locked", "true")
        deactivate(root, inactive)

    return write_osim(directory, Path(source).read_text(), lock,
                      name=f"{Path(source).stem}_{coordinate}_locked.osim")


#: Reserve actuators on every coordinate of gait10dof18musc (optimal force, N m or N): the
#: pelvis has no muscle, and the 18 muscles alone cannot make every joint moment of walking.
GAIT_RESERVES = {"pelvis_tilt": 100.0, "pelvis_tx": 1000.0, "pelvis_ty": 1000.0,
                 "hip_flexion_r": 10.0, "knee_angle_r": 10.0, "ankle_angle_r": 10.0,
                 "hip_flexion_l": 10.0, "knee_angle_l": 10.0, "ankle_angle_l": 10.0,
                 "lumbar_extension": 100.0}


def write_reserves(path: Path, coordinates, optimal_force: float = 10.0) -> Path:
    """Write a ForceSet document of one CoordinateActuator `<coordinate>_reserve` per
    coordinate (`optimal_force` N m or N, controls unbounded) to `path`, as CMC's reserve
    actuators file is written."""
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8" ?><OpenSimDocument Version="40600">'
        '<ForceSet name="reserves"><objects>' + "".join(
            f'<CoordinateActuator name="{c}_reserve"><coordinate>{c}</coordinate>'
            f"<optimal_force>{optimal_force!r}</optimal_force></CoordinateActuator>"
            for c in coordinates)
        + "</objects><groups /></ForceSet></OpenSimDocument>")
    return path


def with_coordinate_actuators(text: str, optimal_force_by_coordinate) -> str:
    """An .osim file's text with a CoordinateActuator `res_<coordinate>` of the given
    optimal force on each coordinate, first in its ForceSet (residual or reserve actuators,
    as OpenSim's tutorials add them)."""
    actuators = "".join(
        f'<CoordinateActuator name="res_{c}"><coordinate>{c}</coordinate>'
        f"<optimal_force>{force}</optimal_force></CoordinateActuator>"
        for c, force in optimal_force_by_coordinate.items())
    at = text.index("<objects>", text.index('<ForceSet name="forceset">')) + len("<objects>")
    return text[:at] + actuators + text[at:]


def write_leg_swing(path: Path) -> Path:
    """A synthetic 0.5 s swing of leg6dof9musc's coordinates (hip, knee, ankle, pelvis; 51
    rows, SI), knee_angle_pat_r written as its CoordinateCouplerConstraint gives it (equal to
    the knee angle), as a .mot file at `path`; returns it."""
    import numpy as np

    from myotwin.osim.storage import StorageWriter

    t = np.linspace(0.0, 0.5, 51)
    w = 2 * np.pi * t
    knee = -0.6 + 0.3 * np.sin(w)
    columns = {"pelvis_tilt": 0.05 * np.sin(w), "pelvis_tx": 0.2 * t,
               "pelvis_ty": 0.95 + 0.01 * np.sin(w), "hip_flexion_r": 0.3 * np.sin(w),
               "knee_angle_r": knee, "knee_angle_pat_r": knee, "ankle_angle_r": 0.1 * np.sin(w)}
    with StorageWriter(path, "Coordinates", ("time", *columns)) as writer:
        writer.write_rows(np.column_stack([t, *columns.values()]))
    return path
