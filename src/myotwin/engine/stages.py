"""The position and velocity stages of one dynamics evaluation, computed once and shared by
its force terms.

`forward_dynamics` and `inverse_dynamics` compute the kinematics (`kinematics.py`), the bodies'
velocity stage (`twists.body_motion_from_kinematics`) and, when the model has MJCF spatial
tendons, every path's length and length Jacobian (`paths`: MuJoCo ten_length, ten_J) once,
and hand them to the terms that read them: tendon actuators, tendon springs and dampers, tendon
limits and frictionloss, and the equality rows (tendon, connect and weld). Each term computed
them again from q before; XLA's common-subexpression elimination merged the copies of a
forward evaluation, but a gradient differentiated every copy (the full equality test model's
kinematics was traced four times per evaluation). Every term still accepts `stages=None` and
then computes what it needs from q, so each stays callable on its own. The path rows are
computed only for a model with a term that reads them, or taken from a caller that has them
(the muscles of `myotwin.musculoskeletal` read the same rows).
"""

from __future__ import annotations

from typing import NamedTuple

import jax

from myotwin.engine.kinematics import Kinematics
from myotwin.engine.twists import BodyMotion


class Stages(NamedTuple):
    """kin: `kinematics(model, q)`; bodies: `body_motion_from_kinematics(model, kin, qd)`;
    path_rows: (length (n_paths,), ten_J (n_paths, n_v)) of the model's MJCF paths at q, or None
    if it has none."""

    kin: Kinematics
    bodies: BodyMotion
    path_rows: tuple[jax.Array, jax.Array] | None


def reads_path_rows(model) -> bool:
    """Whether a force term of `model` reads its MJCF paths' rows: a tendon-transmission
    actuator, or a spatial tendon among the tendon springs/dampers/limits, the tendon
    frictionloss rows or the tendon equalities (static)."""
    groups = [tuple(t >= 0 for t in model.actuator_tendon)]
    if model.tendons is not None:
        groups.append(model.tendons.spatial)
    if model.friction is not None:
        groups.append(model.friction.spatial)
    if model.equality is not None:
        groups += [model.equality.spatial1, model.equality.spatial2]
    return any(any(g) for g in groups)


def evaluation_stages(model, kin: Kinematics, bodies: BodyMotion, path_rows=None) -> Stages:
    """`Stages` of one evaluation from its kinematics and velocity stage; the MJCF paths' rows
    are `path_rows` if given (computed from the same kinematics), else computed here if a term
    reads them (`reads_path_rows`)."""
    from myotwin.engine.tendons import path_rows_from_kinematics

    if path_rows is None and reads_path_rows(model):
        path_rows = path_rows_from_kinematics(model, kin)
    return Stages(kin, bodies, path_rows)
