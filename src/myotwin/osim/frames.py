"""Where a joint puts its child body, and its axis and anchor in the child body's frame.

An OpenSim joint connects a frame P on the parent body (pose X_parent_P) to a frame F on the
child body (pose X_child_F) through its transform X_FM(q): the child's pose in the parent is
X_parent_P * X_FM(q) * inverse(X_child_F). The engine builds each moving axis of the joint as
a hinge or slide whose displacement q_f is the axis's value (the coordinate itself, or the
axis's function of it, `engine.coupling`), so q_f = 0 is X_FM = identity and the child's
pose at q_f = 0 is

    X_parent_child = X_parent_P * inverse(X_child_F).

As q_f moves, the child turns about (or slides along) each axis fixed in the frame moved by
the axes before it -- translations first, along axes fixed in P, then the rotations,
body-fixed, as OpenSim's SpatialTransform composes them -- so in the child frame an axis is
R_child_F * axis and a hinge's anchor is F's origin. That is exactly an engine body at that
pose with its hinges / slides (MJCF semantics: axis and anchor in the body frame, applied in
order, q = 0 at the body's pose). Quaternions w-first.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from myotwin.engine.spatial import quat_mul, quat_rotate
from myotwin.osim.description import Frame
from myotwin.paths.builder import quat_from_body_xyz

_CONJUGATE = np.array([1.0, -1.0, -1.0, -1.0])


def _plain(x) -> np.ndarray:
    """float64 NumPy, with -0.0 written as 0.0 (the same number; cleaner MJCF text)."""
    return np.asarray(x, dtype=np.float64) + 0.0


def frame_quat(frame: Frame) -> np.ndarray:
    """(4,) rotation of `frame` in its body (OpenSim's body-fixed X-Y-Z orientation)."""
    return quat_from_body_xyz(frame.orientation)


def rotate(quat: np.ndarray, v) -> np.ndarray:
    """(3,) v rotated by the unit quaternion `quat` (w-first)."""
    return _plain(quat_rotate(jnp.asarray(quat, jnp.float64), jnp.asarray(v, jnp.float64)))


def child_body_pose(parent: Frame, child: Frame) -> tuple[np.ndarray, np.ndarray]:
    """(pos (3,) m, quat (4,)) of the child body in the parent body at q = 0."""
    quat = _plain(quat_mul(jnp.asarray(frame_quat(parent)),
                           jnp.asarray(frame_quat(child) * _CONJUGATE)))
    pos = _plain(np.asarray(parent.translation) - rotate(quat, child.translation))
    return pos, quat


def joint_axis_in_child(child: Frame, axis) -> np.ndarray:
    """(3,) the joint-frame axis expressed in the child body frame (R_child_F axis)."""
    return rotate(frame_quat(child), axis)
