"""A `description.Document` -> the engine's builders, as `models/arm26.py` does by hand.

* bodies (parent first) -> `ModelBuilder.add_body` at the pose of `frames.child_body_pose`,
  mass / mass_center / inertia as in the file (the 3 principal moments when the products of
  inertia are 0, else the full 6); mass 0 with zero inertia is a massless body. A welded
  child (WeldJoint) with mass whose inertia no rigid body has (not positive definite, or
  against the triangle inequality, which MuJoCo's compiler refuses: leg6dof9musc's toes_r)
  is merged into its parent (`merge_welded`): the weld makes them one rigid body, so the
  parent takes the sum of their masses, their common mass centre and the inertia about it
  (the child's rotated into the parent frame, both moved by the parallel-axis theorem),
  and the child stays as a massless body fixed to it (paths and frames on it unchanged).
  Welded children with a valid inertia are built as they are;
* PinJoint, SliderJoint -> `add_joint` (hinge or slide, named after the coordinate, axis and
  anchor in the child body frame); CustomJoint -> one such joint per moving axis,
  translations first (`engine_joints`; the coupling of axes that are functions of their
  coordinate is made by `loader`); WeldJoint -> no joint;
* CoordinateActuator -> `add_motor` on its coordinate, gear = optimal_force, control
  unbounded (OpenSim applies control * optimal_force unclamped; min/max_control are bounds
  for its control solvers, recorded in `OsimModel.actuators`);
* WrapCylinder -> `PathBuilder.add_opensim_cylinder`, WrapCylinderObst ->
  `add_opensim_obstacle`, WrapSphere -> `add_opensim_sphere`, WrapEllipsoid ->
  `add_opensim_ellipsoid` (its PathWraps use the
  "hybrid" method, the one implemented); each muscle's GeometryPath -> `add_path` (PathPoint
  -> `Point`, ConditionalPathPoint -> `ConditionalPoint`, MovingPathPoint -> `MovingPoint`
  with its functions as piecewise polynomials, the engine joint of its coordinate and the
  coordinate's range as the clamp, PathWrapSet -> `wraps=` with OpenSim's 1-based ranges,
  which is the builder's convention). The coordinate of a conditional or moving point must be
  an engine joint (a coordinate with an identity axis, which the engine joint named after it
  is; q_f there is the coordinate's value).
A ValueError of a builder becomes an OsimError naming the file and the element.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np

from myotwin.engine.builder import ModelBuilder
from myotwin.osim.description import (WORLD, Body, Document, JointAxis, JointKind,
                                      MovingPathPoint)
from myotwin.osim.errors import Where
from myotwin.osim.frames import child_body_pose, joint_axis_in_child, rotate
from myotwin.osim.functions import piecewise_polynomial
from myotwin.paths.builder import ConditionalPoint, MovingPoint, PathBuilder, Point


@contextlib.contextmanager
def builder_errors(where: Where):
    """Re-raise a builder's ValueError as an OsimError at `where`."""
    try:
        yield
    except ValueError as err:
        raise where.error(str(err)) from err


def _mass_properties(body: Body) -> dict:
    inertia = body.inertia
    if not any(inertia[3:]):
        inertia = inertia[:3]
    if body.mass == 0.0 and not any(inertia):
        inertia = None  # massless
    return dict(mass=body.mass, com=body.mass_center, inertia=inertia)


def _inertia_matrix(inertia) -> np.ndarray:
    xx, yy, zz, xy, xz, yz = inertia
    return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]], dtype=np.float64)


def is_rigid_body_inertia(inertia) -> bool:
    """True if (Ixx, Iyy, Izz, Ixy, Ixz, Iyz) is positive definite with principal moments
    satisfying the triangle inequality (the engine builder's test, MuJoCo's rule)."""
    moments = np.linalg.eigvalsh(_inertia_matrix(inertia))
    slack = 1e-12 * np.abs(moments).max()
    return bool(moments.min() > 0.0 and all(
        moments[k] + moments[(k + 1) % 3] >= moments[(k + 2) % 3] - slack for k in range(3)))


def combined_body(parent: Body, child: Body, pos, quat) -> Body:
    """`parent` with `child` (pose pos, quat in the parent frame) welded on: total mass,
    common mass centre and the inertia about it in the parent frame (parallel axes)."""
    rotation = np.stack([rotate(quat, e) for e in np.eye(3)], axis=1)
    centres = np.array([parent.mass_center,
                        np.asarray(pos) + rotation @ np.asarray(child.mass_center)])
    masses = np.array([parent.mass, child.mass])
    mass = masses.sum()
    centre = masses @ centres / mass
    inertia = _inertia_matrix(parent.inertia) + rotation @ _inertia_matrix(
        child.inertia) @ rotation.T
    for m, c in zip(masses, centres):
        d = c - centre
        inertia = inertia + m * (d @ d * np.eye(3) - np.outer(d, d))
    six = (inertia[0, 0], inertia[1, 1], inertia[2, 2], inertia[0, 1], inertia[0, 2],
           inertia[1, 2])
    return Body(parent.name, float(mass), tuple(float(x) for x in centre),
                tuple(float(x) for x in six))


def merge_welded(doc: Document) -> tuple[dict[str, Body], dict[str, str]]:
    """(the bodies as built, welded child -> the body that took its mass): each welded child
    with mass and an inertia no rigid body has is merged into its parent (module docstring;
    children first, so a chain of welds ends in the first body that can hold the sum). Onto
    ground (the world) the mass is dropped: a body fixed to ground has no dynamics."""
    bodies = dict(doc.bodies)
    merged: dict[str, str] = {}
    for joint in reversed(doc.joints):  # children before parents
        child = bodies[joint.child.body]
        if (joint.kind is not JointKind.WELD or child.mass == 0.0
                or is_rigid_body_inertia(child.inertia)):
            continue
        merged[child.name] = joint.parent.body
        bodies[child.name] = Body(child.name, 0.0, (0.0, 0.0, 0.0), (0.0,) * 6)
        if joint.parent.body != WORLD:
            bodies[joint.parent.body] = combined_body(
                bodies[joint.parent.body], child, *child_body_pose(joint.parent, joint.child))
    return bodies, merged


def engine_joints(doc: Document) -> dict[str, JointAxis]:
    """Engine joint name -> the joint axis it is, in the order `skeleton` adds them. An axis
    that is its coordinate itself (identity function) is named after the coordinate (the
    first such axis of a coordinate); any other is named "<joint>/<axis>" (e.g.
    "knee_r/translation1") and follows its coordinate through `coupling`."""
    named: dict[str, JointAxis] = {}
    for joint in doc.joints:
        for axis in joint.axes:
            own = axis.function is None and axis.coordinate not in named
            named[axis.coordinate if own else f"{joint.name}/{axis.name}"] = axis
    return named


def skeleton(doc: Document) -> ModelBuilder:
    """Bodies (welded children merged where needed, `merge_welded`), joints, gravity and
    CoordinateActuator motors (contact disabled: the subset has no contact). Each moving axis
    of a joint is one engine hinge or slide (`engine_joints` names them), in the joint's
    order, about / along the axis through the child joint frame's origin, so the child body
    moves by X_parent_P * X_FM(q) * inverse(X_child_F) (`frames`)."""
    name = doc.model_name or Path(doc.file_name).stem
    b = ModelBuilder(name, gravity=doc.gravity, contact=False)
    names = {id(axis): n for n, axis in engine_joints(doc).items()}
    bodies = merge_welded(doc)[0]
    for joint in doc.joints:
        body = bodies[joint.child.body]
        pos, quat = child_body_pose(joint.parent, joint.child)
        with builder_errors(Where(doc.file_name, "Body", body.name)):
            b.add_body(body.name, joint.parent.body, pos=pos, quat=quat,
                       **_mass_properties(body))
        anchor = np.asarray(joint.child.translation, dtype=np.float64)
        for axis in joint.axes:
            with builder_errors(Where(doc.file_name, joint.tag, joint.name)):
                b.add_joint(body.name, axis.kind.value, name=names[id(axis)],
                            axis=joint_axis_in_child(joint.child, axis.axis),
                            anchor=anchor if anchor.any() else None)  # None: MJCF's 0
    for act in doc.actuators:
        with builder_errors(Where(doc.file_name, "CoordinateActuator", act.name)):
            b.add_motor(act.coordinate, name=act.name, gear=act.optimal_force)
    return b


def path_builder(doc: Document, skeleton_builder: ModelBuilder) -> PathBuilder:
    """The wrap objects and one path per muscle (ForceSet order) on `skeleton_builder`."""
    pb = PathBuilder(skeleton_builder)
    for c in doc.cylinders:
        with builder_errors(Where(doc.file_name, "WrapCylinder", c.name, f"body {c.body}")):
            pb.add_opensim_cylinder(c.name, c.body, radius=c.radius, length=c.length,
                                    pos=c.translation, xyz_body_rotation=c.xyz_body_rotation,
                                    quadrant=c.quadrant, active=c.active)
    for o in doc.obstacles:
        with builder_errors(Where(doc.file_name, "WrapCylinderObst", o.name, f"body {o.body}")):
            pb.add_opensim_obstacle(o.name, o.body, radius=o.radius, pos=o.translation,
                                    xyz_body_rotation=o.xyz_body_rotation,
                                    wrap_direction=o.wrap_direction, active=o.active)
    for e in doc.ellipsoids:
        with builder_errors(Where(doc.file_name, "WrapEllipsoid", e.name, f"body {e.body}")):
            pb.add_opensim_ellipsoid(e.name, e.body, dimensions=e.dimensions, pos=e.translation,
                                     xyz_body_rotation=e.xyz_body_rotation,
                                     quadrant=e.quadrant, active=e.active)
    for s in doc.spheres:
        with builder_errors(Where(doc.file_name, "WrapSphere", s.name, f"body {s.body}")):
            pb.add_opensim_sphere(s.name, s.body, radius=s.radius, pos=s.translation,
                                  xyz_body_rotation=s.xyz_body_rotation, quadrant=s.quadrant,
                                  active=s.active)
    joints = engine_joints(doc)
    ranges = {c.name: c.range for j in doc.joints for c in j.coordinates}
    for m in doc.muscles:
        elements = [_path_element(doc, m, p, joints, ranges) for p in m.points]
        with builder_errors(Where(doc.file_name, m.tag, m.name)):
            pb.add_path(m.name, elements, wraps=[(w.wrap_object, w.range) for w in m.wraps])
    return pb


def _path_element(doc: Document, muscle, point, joints, ranges):
    """The builder's element for a path point of `muscle`."""
    if point.coordinate is not None and point.coordinate not in joints:
        raise Where(doc.file_name, "MovingPathPoint" if isinstance(point, MovingPathPoint)
                    else "ConditionalPathPoint", point.name, f"muscle {muscle.name}").error(
            f"its coordinate {point.coordinate!r} moves its joint only through functions (no "
            "axis is the coordinate itself), so the engine has no joint whose q is its value; "
            "points on such coordinates are not supported")
    if isinstance(point, MovingPathPoint):
        return MovingPoint(point.body, tuple(piecewise_polynomial(f) for f in point.functions),
                           (point.coordinate,) * 3, (ranges[point.coordinate],) * 3)
    if point.coordinate is None:
        return Point(point.body, point.location)
    return ConditionalPoint(point.body, point.location, point.coordinate, point.range)


def body_names(pb: PathBuilder) -> tuple[str, ...]:
    """The compiled model's body names in the engine's order (the world first)."""
    mj = pb.mj_model()
    return tuple(mj.body(i).name for i in range(mj.nbody))


def build_model(doc: Document, pb: PathBuilder):
    """(engine Model, coordinate names in q order read back from the compiled model)."""
    with builder_errors(Where(doc.file_name, "Model", doc.model_name)):
        mj = pb.mj_model()
        model = pb.build()
    order = np.argsort(np.asarray(mj.jnt_qposadr), kind="stable")
    return model, tuple(mj.joint(int(j)).name for j in order)
