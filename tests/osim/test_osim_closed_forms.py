"""Loaded .osim models vs closed forms computed here from the files' own numbers.

* Tug_of_War.osim (SliderJoint, two Thelen muscles with straight paths): muscle lengths along
  the slide vs |p_insertion(q) - p_origin| (1e-12 m: the same few float64 operations in
  another order); Tug_of_War_Millard.osim loads as Millard muscles with the same geometry.
* double_pendulum.osim (two PinJoints, two CoordinateActuators) as it is (its rods are point
  masses: zero inertia, engine/point_mass.py) and with inertias given to its rods: mass matrix
  and gravity generalized force vs the planar closed form (1e-12, in kg m^2 and N m: roundoff
  on O(1) numbers), actuator gears and control ranges.
* A synthetic model with rotated joint frames (a PinJoint whose frames both carry X-Y-Z
  orientations, a full inertia with products, and a CustomJoint slide along a tilted axis):
  mass matrix and gravity force vs the rigid-body closed form I_axis = a.I_c.a +
  m |a x (c - anchor)|^2 built with rotation matrices written here (1e-12), which checks the
  frame composition, the axis mapping and the full-inertia path that the other models (all
  orientations 0, principal inertias) cannot.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import myotwin
from myotwin import osim
from myotwin.engine import bias_forces
from osim_synthetic import set_text, write_osim
from shared_reference import SHARED, needs

MODELS = SHARED / "reference" / "opensim" / "models"
TOL_LENGTH_M = 1e-12
TOL_DYNAMICS = 1e-12


def _needs(path):
    return needs(path)


def _vec(elem, tag):
    return np.array([float(x) for x in elem.find(tag).text.split()])


def _rot_xyz(angles):
    """OpenSim's body-fixed X-Y-Z rotation R = Rx(a) Ry(b) Rz(c), as matrices."""
    a, b, c = angles
    rx = np.array([[1, 0, 0], [0, np.cos(a), -np.sin(a)], [0, np.sin(a), np.cos(a)]])
    ry = np.array([[np.cos(b), 0, np.sin(b)], [0, 1, 0], [-np.sin(b), 0, np.cos(b)]])
    rz = np.array([[np.cos(c), -np.sin(c), 0], [np.sin(c), np.cos(c), 0], [0, 0, 1]])
    return rx @ ry @ rz


def _rot_axis(axis, angle):
    """Rotation by `angle` about the unit vector `axis` (Rodrigues)."""
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


def _frame(joint, name):
    frame = joint.find(f"frames/PhysicalOffsetFrame[@name='{name}']")
    return _vec(frame, "translation"), _rot_xyz(_vec(frame, "orientation"))


# ---------------------------------------------------------------- Tug of War

def _tug_closed_form(path, q_values):
    """(n_q, 2) lengths of the two muscles: block at p_P + R_P (q x) - R_P R_C^T p_C."""
    model = ET.parse(path).getroot().find("Model")
    joint = model.find("JointSet/objects/SliderJoint")
    p_p, r_p = _frame(joint, joint.find("socket_parent_frame").text)
    p_c, r_c = _frame(joint, joint.find("socket_child_frame").text)
    r_wb = r_p @ r_c.T
    muscles = [m for m in model.find("ForceSet/objects") if m.find("GeometryPath") is not None]
    out = []
    for q in q_values:
        p_wb = p_p + r_p @ np.array([q, 0.0, 0.0]) - r_wb @ p_c
        row = []
        for muscle in muscles:
            ground, block = muscle.findall("GeometryPath/PathPointSet/objects/PathPoint")
            assert ground.find("socket_parent_frame").text == "/ground"
            row.append(np.linalg.norm(p_wb + r_wb @ _vec(block, "location")
                                      - _vec(ground, "location")))
        out.append(row)
    return np.array(out)


@pytest.mark.parametrize("file_name, muscle_type", [
    ("Tug_of_War.osim", "Thelen2003Muscle"),
    ("Tug_of_War_Millard.osim", "Millard2012EquilibriumMuscle")])
def test_tug_of_war_lengths_vs_closed_form(file_name, muscle_type):
    path = _needs(MODELS / file_name)
    tug = osim.load(path)
    assert tug.coordinates == ("block_tz",)
    assert tug.coordinate_ranges["block_tz"] == (-0.3, 0.3) and tug.coordinate_clamped["block_tz"]
    assert all(tug.muscles[m]["type"] == muscle_type for m in tug.muscle_names)
    q_values = np.linspace(-0.3, 0.3, 7)
    lengths = np.asarray(jax.vmap(lambda q: myotwin.muscle_lengths(tug.model, q))(
        jnp.asarray(q_values)[:, None]))
    expected = _tug_closed_form(path, q_values)
    err = np.abs(lengths - expected).max()
    assert err <= TOL_LENGTH_M, f"{file_name}: length error {err:.3e} m"
    assert np.ptp(expected[:, 0]) > 0.5  # the slide really moves the muscles (0.6 m)
    print(f"{file_name}: worst length error {err:.2e} m")


def test_tug_of_war_millard_records_its_curves():
    tug = osim.load(_needs(MODELS / "Tug_of_War_Millard.osim"))
    curves = tug.muscles["RightMuscle"]["millard_curve_parameters"]
    assert curves["active_force_length"]["min_norm_active_fiber_length"] == 0.4441
    assert curves["tendon_force_length"] == {"strain_at_one_norm_force": 0.049}  # others unset


def test_docs_example_builds_the_millard_muscles():
    """docs/osim.md's example, as written there: `osim.build_muscles` (Millard curves with the
    file's curve parameters) and `musculoskeletal_model`; the built muscles carry the file's
    numbers (Tug_of_War_Millard.osim: RightMuscle 1000 N, l_opt 0.1 m, l_ts 0.2 m, read with
    ElementTree here)."""
    import re

    from myotwin import musculoskeletal as ms

    doc = (Path(__file__).resolve().parents[2] / "docs" / "osim.md").read_text()
    block = re.search(r"```python\n(from myotwin import musculoskeletal as ms.*?)```", doc,
                      re.S)
    assert block, "docs/osim.md: the muscle example is missing"
    code = block.group(1).replace('"Tug_of_War_Millard.osim"',
                                  repr(str(_needs(MODELS / "Tug_of_War_Millard.osim"))))
    namespace = {"osim": osim}
    exec(compile(code, "docs/osim.md", "exec"), namespace)  # noqa: S102
    muscles, msm = namespace["muscles"], namespace["msm"]
    assert isinstance(msm, ms.MusculoskeletalModel)
    root = ET.parse(MODELS / "Tug_of_War_Millard.osim").getroot()
    right = root.find(".//Millard2012EquilibriumMuscle[@name='RightMuscle']")
    k = muscles.names.index("RightMuscle")
    for xml, field in (("max_isometric_force", "max_isometric_force_N"),
                       ("optimal_fiber_length", "optimal_fiber_length_m"),
                       ("tendon_slack_length", "tendon_slack_length_m")):
        expected = float(right.find(xml).text)
        assert float(getattr(muscles, field)[k]) == expected, field


# ---------------------------------------------------------------- dynamics helpers

def _mass_and_gravity(model):
    """Batched (M(q), gravity generalized force = -bias(q, 0)) of the engine, compiled."""
    zero = jnp.zeros(model.n_v)
    return jax.jit(jax.vmap(lambda q: (myotwin.mass_matrix(model, q),
                                       -bias_forces(model, q, zero))))


def _compare_dynamics(path, qs, masses, gravity, closed_form):
    worst = [0.0, 0.0]
    for q, m_engine, g_engine in zip(qs, np.asarray(masses), np.asarray(gravity)):
        m_exact, g_exact = closed_form(path, q)
        err_m, err_g = np.abs(m_engine - m_exact).max(), np.abs(g_engine - g_exact).max()
        assert err_m <= TOL_DYNAMICS, f"{path.name}: mass matrix at {q}: error {err_m:.3e}"
        assert err_g <= TOL_DYNAMICS, f"{path.name}: gravity force at {q}: error {err_g:.3e}"
        worst = [max(worst[0], err_m), max(worst[1], err_g)]
    print(f"{path.name}: worst mass-matrix error {worst[0]:.2e}, gravity {worst[1]:.2e}")


# ---------------------------------------------------------------- double pendulum

#: Rod inertias given to the copy of double_pendulum.osim (kg m^2; Ixx Iyy Izz Ixy Ixz Iyz).
ROD_INERTIA = {"rod1": "0.09 0.002 0.091 0 0 0", "rod2": "0.05 0.001 0.0505 0 0 0"}


def _pendulum_with_inertias(root):
    for rod, inertia in ROD_INERTIA.items():
        set_text(root, f".//Body[@name='{rod}']/inertia", inertia)
    set_text(root, ".//CoordinateActuator[@name='Torq1']/optimal_force", "2.5")
    set_text(root, ".//CoordinateActuator[@name='Torq2']/optimal_force", "7")
    set_text(root, ".//CoordinateActuator[@name='Torq1']/min_control", "-3")
    set_text(root, ".//CoordinateActuator[@name='Torq1']/max_control", "4")


def _pendulum_closed_form(path, q):
    """Planar M(q) and gravity force of the two rods rotating about z (from the file)."""
    model = ET.parse(path).getroot().find("Model")
    g = _vec(model, "gravity")[:2]
    rod = {b.get("name"): b for b in model.find("BodySet/objects")}
    pin1, pin2 = model.find("JointSet/objects").findall("PinJoint")
    a1 = _frame(pin1, "rod1_offset")[0][:2]                 # hinge 1 in rod1
    a2 = _frame(pin2, "rod2_offset")[0][:2]                 # hinge 2 in rod2
    assert pin2.find("socket_parent_frame").text == "/bodyset/rod1"
    s = np.zeros(2) - a1                                    # hinge 2 (rod1 origin) from hinge 1
    r1 = _vec(rod["rod1"], "mass_center")[:2] - a1
    r2 = _vec(rod["rod2"], "mass_center")[:2] - a2
    m1, m2 = (float(rod[n].find("mass").text) for n in ("rod1", "rod2"))
    i1, i2 = (_vec(rod[n], "inertia")[2] for n in ("rod1", "rod2"))  # Izz about the COM
    rot = lambda t: np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])  # noqa: E731
    perp = np.array([[0.0, -1.0], [1.0, 0.0]])             # d/dt R(t) = R(t) perp
    j1 = np.stack([rot(q[0]) @ perp @ r1, np.zeros(2)], axis=1)
    j2_col2 = rot(q[0] + q[1]) @ perp @ r2
    j2 = np.stack([rot(q[0]) @ perp @ s + j2_col2, j2_col2], axis=1)
    mass = (m1 * j1.T @ j1 + m2 * j2.T @ j2 + i1 * np.array([[1, 0], [0, 0]])
            + i2 * np.ones((2, 2)))
    return mass, m1 * j1.T @ g + m2 * j2.T @ g


def test_double_pendulum_dynamics_vs_closed_form(tmp_path):
    source = _needs(MODELS / "double_pendulum.osim")
    path = write_osim(tmp_path, source.read_text(), _pendulum_with_inertias,
                      "double_pendulum_rods.osim")
    pend = osim.load(path)
    assert pend.coordinates == ("q1", "q2") and pend.muscle_names == ()
    qs = np.array([[0.0, 0.0], [0.4, -1.1], [-2.0, 2.5], [3.0, 0.7]])
    model = pend.model
    evaluate = _mass_and_gravity(model)
    _compare_dynamics(path, qs, *evaluate(jnp.asarray(qs)), _pendulum_closed_form)
    # actuators: one motor per CoordinateActuator on its coordinate, gear = optimal_force
    assert pend.actuator_names == ("Torq1", "Torq2")
    assert model.actuator_dof == (0, 1)
    np.testing.assert_array_equal(np.asarray(model.actuator_gear), [2.5, 7.0])
    # OpenSim's min/max_control bound its control solvers, not the force: recorded only
    assert model.actuator_ctrl_limited == (False, False)
    assert dict(pend.actuators["Torq1"])["control_range"] == (-3.0, 4.0)
    assert dict(pend.actuators["Torq2"]) == {"coordinate": "q2", "gear": 7.0,
                                             "control_range": (-np.inf, np.inf)}


def test_double_pendulum_point_masses_vs_closed_form():
    path = _needs(MODELS / "double_pendulum.osim")
    pend = osim.load(path)
    assert pend.coordinates == ("q1", "q2")
    np.testing.assert_array_equal(np.asarray(pend.model.body_inertia), 0.0)
    qs = np.array([[0.0, 0.0], [0.4, -1.1], [-2.0, 2.5], [3.0, 0.7]])
    _compare_dynamics(path, qs, *_mass_and_gravity(pend.model)(jnp.asarray(qs)),
                      _pendulum_closed_form)


def _reverse_sets(root):
    """Bodies and joints listed child first (rod2 / pin2 before rod1 / pin1)."""
    for tag in ("BodySet", "JointSet"):
        objects = root.find(f".//{tag}/objects")
        items = list(objects)
        for elem in items:
            objects.remove(elem)
        objects.extend(reversed(items))


def test_file_order_of_bodies_and_joints_does_not_matter(tmp_path):
    source = _needs(MODELS / "double_pendulum.osim")
    in_order = osim.load(write_osim(tmp_path, source.read_text(), _pendulum_with_inertias,
                                    "in_order.osim"))

    def reversed_sets(root):
        _pendulum_with_inertias(root)
        _reverse_sets(root)

    reordered = osim.load(write_osim(tmp_path, source.read_text(), reversed_sets,
                                     "reordered.osim"))
    assert reordered.coordinates == in_order.coordinates == ("q1", "q2")
    assert reordered.path_builder.to_mjcf() == in_order.path_builder.to_mjcf()


# ---------------------------------------------------------------- rotated frames

ROTATED = """<OpenSimDocument Version="40000"><Model name="rotated">
  <Ground name="ground" /><gravity>0.3 -9.8 0.5</gravity>
  <BodySet name="bodyset"><objects>
    <Body name="arm"><mass>2</mass><mass_center>0.03 -0.25 0.04</mass_center>
      <inertia>0.05 0.04 0.03 0.004 -0.003 0.002</inertia></Body>
    <Body name="slider"><mass>0.7</mass><mass_center>0.1 0.2 -0.3</mass_center>
      <inertia>0.01 0.02 0.015 0 0 0</inertia></Body>
  </objects></BodySet>
  <JointSet name="jointset"><objects>
    <PinJoint name="pin">
      <socket_parent_frame>p</socket_parent_frame><socket_child_frame>c</socket_child_frame>
      <coordinates><Coordinate name="angle"><range>-3 3</range></Coordinate></coordinates>
      <frames>
        <PhysicalOffsetFrame name="p"><socket_parent>/ground</socket_parent>
          <translation>0.1 1 -0.2</translation><orientation>0.3 -0.5 0.8</orientation>
        </PhysicalOffsetFrame>
        <PhysicalOffsetFrame name="c"><socket_parent>/bodyset/arm</socket_parent>
          <translation>0.05 0.2 -0.1</translation><orientation>-0.4 0.6 0.2</orientation>
        </PhysicalOffsetFrame>
      </frames>
    </PinJoint>
    <CustomJoint name="rail">
      <socket_parent_frame>p</socket_parent_frame><socket_child_frame>c</socket_child_frame>
      <coordinates><Coordinate name="shift"><range>-1 1</range></Coordinate></coordinates>
      <frames>
        <PhysicalOffsetFrame name="p"><socket_parent>/ground</socket_parent>
          <translation>-0.3 0.5 0.1</translation><orientation>0.7 0.1 -0.6</orientation>
        </PhysicalOffsetFrame>
        <PhysicalOffsetFrame name="c"><socket_parent>/bodyset/slider</socket_parent>
          <translation>0.02 -0.04 0.06</translation><orientation>0.2 -0.3 0.9</orientation>
        </PhysicalOffsetFrame>
      </frames>
      <SpatialTransform>AXES</SpatialTransform>
    </CustomJoint>
  </objects></JointSet>
</Model></OpenSimDocument>
"""
#: The rail's slide: translation2 along (0.3, 0.8, -0.5) (not unit; OpenSim normalises).
_RAIL_AXIS = (0.3, 0.8, -0.5)
_RAIL_AXES = "".join(
    f'<TransformAxis name="{n}"><coordinates>{"shift" if n == "translation2" else ""}'
    f'</coordinates><axis>{" ".join(map(str, _RAIL_AXIS)) if n == "translation2" else "1 0 0"}'
    "</axis>" + ('<LinearFunction name="function"><coefficients>1 0</coefficients>'
                 "</LinearFunction>" if n == "translation2" else
                 '<Constant name="function"><value>0</value></Constant>') + "</TransformAxis>"
    for n in ("rotation1", "rotation2", "rotation3", "translation1", "translation2",
              "translation3"))


def _rotated_closed_form(path, q):
    model = ET.parse(path).getroot().find("Model")
    g = _vec(model, "gravity")
    bodies = {b.get("name"): b for b in model.find("BodySet/objects")}
    pin, rail = model.find("JointSet/objects")
    arm = bodies["arm"]
    xx, yy, zz, xy, xz, yz = _vec(arm, "inertia")
    inertia = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    mass, com = float(arm.find("mass").text), _vec(arm, "mass_center")
    p_p, r_p = _frame(pin, "p")
    p_c, r_c = _frame(pin, "c")
    axis_body = r_c @ np.array([0.0, 0.0, 1.0])             # hinge axis in the arm's frame
    lever = com - p_c                                         # COM from the hinge, arm frame
    i_axis = axis_body @ inertia @ axis_body + mass * np.sum(np.cross(axis_body, lever) ** 2)
    r_wb = r_p @ _rot_axis(np.array([0.0, 0.0, 1.0]), q[0]) @ r_c.T
    tau_pin = (r_p @ np.array([0.0, 0.0, 1.0])) @ np.cross(r_wb @ lever, mass * g)
    slider = bodies["slider"]
    m_s = float(slider.find("mass").text)
    axis_w = _frame(rail, "p")[1] @ (np.array(_RAIL_AXIS) / np.linalg.norm(_RAIL_AXIS))
    return np.diag([i_axis, m_s]), np.array([tau_pin, m_s * g @ axis_w])


def test_rotated_frames_and_full_inertia_vs_closed_form(tmp_path):
    path = write_osim(tmp_path, ROTATED.replace("AXES", _RAIL_AXES), name="rotated.osim")
    rot = osim.load(path)
    assert rot.coordinates == ("angle", "shift")
    qs = np.array([[0.0, 0.0], [0.7, 0.3], [-1.3, -0.8]])
    _compare_dynamics(path, qs, *_mass_and_gravity(rot.model)(jnp.asarray(qs)),
                      _rotated_closed_form)
