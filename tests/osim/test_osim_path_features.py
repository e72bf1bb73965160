"""ConditionalPathPoint, MovingPathPoint and WrapCylinderObst read from synthetic .osim files.

The file is `osim_synthetic.TINY` (a link hanging from a hinge about z at (0, 1, 0)) with a
ConditionalPathPoint in muscle `m` and a second muscle `obst` over a WrapCylinderObst on
ground. Checked:
* `m` vs the closed-form polyline, through the via point while theta is in its range and
  straight outside it (1e-12 m: a few float64 operations);
* the whole model vs the same paths declared by hand with `PathBuilder` from the numbers
  written below (1e-15 m: the same builder calls, so only a parsing error can differ), at
  poses where the obstacle changes `obst`'s length (the builder's obstacle itself is
  validated in tests/paths/test_path_builder.py);
* TINY with its insertion made a MovingPathPoint of theta (`osim_synthetic.moving_point`: a
  LinearFunction, a Constant and an absent z_location, OpenSim's Constant 0) vs the closed form,
  theta clamped to its range [-1, 1] as OpenSim does (1e-12 m), and its -dL/dq vs central
  differences of the closed form (h = 1e-6; tolerance 1e-8 m). The gait model's moving points
  are checked against OpenSim itself in test_osim_gait_muscles.py.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import jax
import jax.numpy as jnp
import numpy as np

import myotwin
from myotwin import osim
from myotwin.paths.builder import ConditionalPoint, PathBuilder, Point
from osim_synthetic import MOVING_X, MOVING_Y, TINY, moving_point, write_osim

TOL_CLOSED_FORM_M = 1e-12
TOL_SAME_CALLS_M = 1e-15
VIA = (0.04, -0.1, 0.0)           # on the link
VIA_RANGE = (0.0, 0.5)            # rad of theta
OBSTACLE = dict(pos=(0.0, 1.0, 0.0), xyz_body_rotation=(0.1, -0.2, 0.3), radius=0.03,
                wrap_direction="lefthand")   # on ground, centred on the hinge
OBST_POINTS = (("world", (-0.06, 1.2, 0.0)), ("link", (0.0, -0.3, 0.0)))
Q = np.array([-0.5, -0.1, 0.05, 0.2, 0.45, 0.55, 0.9])  # 0.05, 0.55: near the range ends


def _add_features(root):
    points = root.find(".//PathPoint[@name='m-P2']/..")
    via = ET.Element("ConditionalPathPoint", name="m-via")
    for tag, text in (("socket_parent_frame", "/bodyset/link"),
                      ("location", " ".join(map(str, VIA))),
                      ("socket_coordinate", "/jointset/hinge/theta"),
                      ("range", " ".join(map(str, VIA_RANGE)))):
        ET.SubElement(via, tag).text = text
    points.insert(1, via)
    ground = root.find(".//Ground")
    wrap = ET.SubElement(ET.SubElement(ET.SubElement(ground, "WrapObjectSet"), "objects"),
                         "WrapCylinderObst", name="drum")
    for tag, text in (("xyz_body_rotation", " ".join(map(str, OBSTACLE["xyz_body_rotation"]))),
                      ("translation", " ".join(map(str, OBSTACLE["pos"]))),
                      ("radius", str(OBSTACLE["radius"])),
                      ("length", "0.1"), ("wrapDirection", OBSTACLE["wrap_direction"])):
        ET.SubElement(wrap, tag).text = text
    muscle = ET.fromstring(ET.tostring(root.find(".//Thelen2003Muscle")))
    muscle.set("name", "obst")
    point_set = muscle.find("GeometryPath/PathPointSet/objects")
    for elem in list(point_set):
        point_set.remove(elem)
    for k, (body, location) in enumerate(OBST_POINTS):
        point = ET.SubElement(point_set, "PathPoint", name=f"obst-P{k + 1}")
        ET.SubElement(point, "socket_parent_frame").text = (
            "/ground" if body == "world" else f"/bodyset/{body}")
        ET.SubElement(point, "location").text = " ".join(map(str, location))
    path_wrap = ET.SubElement(muscle.find("GeometryPath/PathWrapSet/objects"), "PathWrap",
                              name="pathwrap")
    ET.SubElement(path_wrap, "wrap_object").text = "drum"
    root.find(".//ForceSet/objects").append(muscle)


def _by_hand(skeleton):
    pb = PathBuilder(skeleton)
    pb.add_opensim_obstacle("drum", "world", **OBSTACLE)
    pb.add_path("m", [Point("world", (0.05, 1.0, 0.0)),
                      ConditionalPoint("link", VIA, "theta", VIA_RANGE),
                      Point("link", (0.02, -0.3, 0.0))])
    pb.add_path("obst", [Point(*p) for p in OBST_POINTS], wraps=["drum"])
    return pb.build()


def _closed_form_m(q):
    """Length of `m`: ground (0.05, 1, 0) -> [via] -> link (0.02, -0.3, 0), link turned by q
    about z at (0, 1, 0)."""
    rot = np.array([[np.cos(q), -np.sin(q), 0], [np.sin(q), np.cos(q), 0], [0, 0, 1]])
    hinge = np.array([0.0, 1.0, 0.0])
    points = [np.array([0.05, 1.0, 0.0]), hinge + rot @ np.array(VIA),
              hinge + rot @ np.array([0.02, -0.3, 0.0])]
    if not VIA_RANGE[0] <= q <= VIA_RANGE[1]:
        points.pop(1)
    return sum(np.linalg.norm(b - a) for a, b in zip(points, points[1:]))


def test_conditional_point_and_obstacle(tmp_path):
    loaded = osim.load(write_osim(tmp_path, TINY, _add_features))
    assert loaded.muscle_names == ("m", "obst")
    hand = _by_hand(loaded.path_builder.skeleton)
    lengths = jax.vmap(lambda q: myotwin.muscle_lengths(loaded.model, q))
    ours = np.asarray(lengths(jnp.asarray(Q)[:, None]))
    theirs = np.asarray(jax.vmap(lambda q: myotwin.muscle_lengths(hand, q))(
        jnp.asarray(Q)[:, None]))
    err_hand = np.abs(ours - theirs).max()
    assert err_hand <= TOL_SAME_CALLS_M, f"loaded vs by hand: {err_hand:.3e} m"
    err_m = max(abs(ours[i, 0] - _closed_form_m(q)) for i, q in enumerate(Q))
    assert err_m <= TOL_CLOSED_FORM_M, f"conditional path vs closed form: {err_m:.3e} m"
    straight = [np.linalg.norm(np.array([0.0, 1.0, 0.0]) + np.array(
        [0.3 * np.sin(q), -0.3 * np.cos(q), 0.0]) - np.array(OBST_POINTS[0][1])) for q in Q]
    assert np.max(ours[:, 1] - straight) > 1e-3  # the obstacle wraps `obst` somewhere
    print(f"conditional path error {err_m:.2e} m; loaded vs by hand {err_hand:.2e} m")


def _closed_form_moving(q):
    """Length of `m` with its insertion a MovingPathPoint: ground (0.05, 1, 0) -> link
    (slope clamp(q) + intercept, MOVING_Y, 0), clamp to theta's range [-1, 1]."""
    rot = np.array([[np.cos(q), -np.sin(q), 0], [np.sin(q), np.cos(q), 0], [0, 0, 1]])
    local = np.array([MOVING_X[0] * np.clip(q, -1.0, 1.0) + MOVING_X[1], MOVING_Y, 0.0])
    return np.linalg.norm(np.array([0.0, 1.0, 0.0]) + rot @ local - np.array([0.05, 1.0, 0.0]))


def test_moving_path_point(tmp_path):
    loaded = osim.load(write_osim(tmp_path, TINY, moving_point))
    qs = jnp.asarray([-1.3, -0.5, 0.3, 0.999, 1.2])[:, None]      # beyond the range at both ends
    lengths = np.asarray(jax.vmap(lambda q: myotwin.muscle_lengths(loaded.model, q))(qs))[:, 0]
    err = max(abs(lengths[i] - _closed_form_moving(float(q[0]))) for i, q in enumerate(qs))
    assert err <= TOL_CLOSED_FORM_M, f"moving point vs closed form: {err:.3e} m"
    arms = np.asarray(jax.vmap(lambda q: myotwin.moment_arms(loaded.model, q))(qs))[:, 0, 0]
    h = 1e-6
    differences = [-(_closed_form_moving(float(q[0]) + h) - _closed_form_moving(float(q[0]) - h))
                   / (2 * h) for q in qs]
    err_r = np.abs(arms - differences).max()
    assert err_r <= 1e-8, f"moving point -dL/dq vs differences: {err_r:.3e} m"
