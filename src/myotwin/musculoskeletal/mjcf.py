"""An MJCF model with MuJoCo `<muscle>` actuators (MyoSuite's) as a `MusculoskeletalModel`.

MuJoCo's muscle (dyntype, gaintype and biastype muscle) is a rigid-tendon Hill muscle
without pennation (`muscle.mujoco_muscle`); each becomes one muscle of a `muscle.Muscle` group
with the MuJoCo curves and activation law, pulling on its tendon's path (a spatial tendon),
or on a length linear in q (`linear_paths.py`: a fixed tendon, or a joint transmission on a
hinge or slide joint, L = qpos):

  g = gear[0] (> 0), [l_lo, l_hi] = lengthrange, [r0, r1] = gainprm[0:2] (range),
  F0 = gainprm[2] (force), or scale / acc0 (gainprm[3] / actuator_acc0) where it is negative,
  L0 = (l_hi - l_lo) / (r1 - r0):
  max_isometric_force_N = g F0,  optimal_fiber_length_m = L0 / g,
  tendon_slack_length_m = (l_lo - r0 L0) / g (an offset, of any sign as in MuJoCo),
  max_contraction_velocity_Lopt_per_s = vmax,
  curves lmin, lmax, fpmax, fvmax = gainprm[4], [5], [7], [8];
  activation: tau_act, tau_deact, tausmooth = dynprm[0:3], the excitation clamped to ctrlrange
  where ctrllimited.

Then the tendon tension F = -g (gain act + bias) (MuJoCo's actuator force is negative when it
pulls) and the generalized force r F = g J_L^T (gain act + bias) = MuJoCo's qfrc_actuator
(r = -dL/dq = -J_L^T). MuJoCo's lengthrange and acc0 are the compiler's (its length-range
computation, `mj_setConst`), read from the compiled MjModel. The skeleton is the same model
compiled by `engine.compile_model` with these actuators external (their ctrl slots stay, MuJoCo's
n_u, and carry no force); the state's activation is MuJoCo's `act` of the muscle actuators, the
excitation their ctrl (`muscle_actuators` gives the actuator of each muscle). Mass points on the
tendons (MJCF numerics `muscle_mass:<tendon>`, docs/inertia.md) come with the skeleton.
A model without MuJoCo muscles gives the group of no muscles: the skeleton alone, moved by
its own actuators (motors, position servos, ...) as in MuJoCo.

Refused, with a ValueError naming the file, the actuator, the field and the value: a muscle
actuator that is not muscle in all three types, or whose transmission is not a tendon or a
hinge/slide joint (site, body, slider-crank, ball or free joints), or with gear <= 0,
forcelimited, actearly, gain and bias parameters that differ (range, force, scale, lmax,
fpmax: the `<muscle>` shortcut sets them equal), an empty lengthrange or range; and a model
with actuation disabled, or with a joint's actuatorfrcrange limited (MuJoCo clamps the sum of
all actuator forces on the joint, muscles included). An actlimited muscle's actrange becomes
the model's `activation_range`: the fixed-step rollouts clamp act to it after every step, as
MuJoCo's mj_nextActivation does (not inside RK4's stages); the adaptive rollout integrates
that clamp's small-step limit (adaptive.py).
"""

from __future__ import annotations

import math

import numpy as np

from myotwin.engine.model import read_mjcf
from myotwin.muscle.model import Muscle, build_muscles
from myotwin.muscle.mujoco_muscle import MINVAL
from myotwin.musculoskeletal.model import MusculoskeletalModel, musculoskeletal_model

#: The gain/bias parameters that MuJoCo's bias reads too (range, force, scale, lmax, fpmax).
_SHARED_PRM = (0, 1, 2, 3, 5, 7)


def _name(m, a: int) -> str:
    import mujoco

    return mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_ACTUATOR, a) or f"#{a}"


def muscle_actuators(mj_model) -> tuple[int, ...]:
    """Ids of the actuators of `mj_model` that are MuJoCo muscles (any of dyntype, gaintype,
    biastype muscle), in MuJoCo order: muscle i of `load_mjcf` is actuator i of these."""
    import mujoco

    if not isinstance(mj_model, mujoco.MjModel):        # a path: an AttributeError on 'nu'
        raise ValueError(f"muscle_actuators: expected a mujoco.MjModel, got "
                         f"{type(mj_model).__name__}")
    m = mj_model
    return tuple(a for a in range(m.nu)
                 if m.actuator_dyntype[a] == mujoco.mjtDyn.mjDYN_MUSCLE
                 or m.actuator_gaintype[a] == mujoco.mjtGain.mjGAIN_MUSCLE
                 or m.actuator_biastype[a] == mujoco.mjtBias.mjBIAS_MUSCLE)


def _check_actuator(m, a: int, where: str) -> None:
    import mujoco

    what = f"{where}: actuator '{_name(m, a)}'"
    types = (m.actuator_dyntype[a] == mujoco.mjtDyn.mjDYN_MUSCLE,
             m.actuator_gaintype[a] == mujoco.mjtGain.mjGAIN_MUSCLE,
             m.actuator_biastype[a] == mujoco.mjtBias.mjBIAS_MUSCLE)
    if not all(types):
        raise ValueError(f"{what}: dyntype/gaintype/biastype are "
                         f"{int(m.actuator_dyntype[a])}/{int(m.actuator_gaintype[a])}/"
                         f"{int(m.actuator_biastype[a])}; a MuJoCo muscle needs all three "
                         "'muscle' (the <muscle> element)")
    trn = int(m.actuator_trntype[a])
    if trn in (mujoco.mjtTrn.mjTRN_JOINT, mujoco.mjtTrn.mjTRN_JOINTINPARENT):
        j = int(m.actuator_trnid[a, 0])
        hinge_or_slide = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
        if int(m.jnt_type[j]) not in hinge_or_slide:
            name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j)
            raise ValueError(f"{what}: its joint '{name}' is a ball or free joint (type "
                             f"{int(m.jnt_type[j])}); a muscle's joint transmission must be "
                             "on a hinge or slide joint")
    elif trn != mujoco.mjtTrn.mjTRN_TENDON:
        raise ValueError(f"{what}: transmission type {trn}; a muscle needs a tendon (spatial "
                         "or fixed) or a hinge/slide joint transmission")
    gear = float(m.actuator_gear[a, 0])
    if not gear > 0:
        raise ValueError(f"{what}: gear {gear}; a muscle needs gear > 0")
    for field, value in (("forcelimited", m.actuator_forcelimited[a]),
                         ("actearly", m.actuator_actearly[a])):
        if value:
            raise ValueError(f"{what}: {field} is set; not supported for muscles")
    gain, bias = m.actuator_gainprm[a], m.actuator_biasprm[a]
    for k in _SHARED_PRM:
        if gain[k] != bias[k]:
            raise ValueError(f"{what}: gainprm[{k}] = {gain[k]} but biasprm[{k}] = {bias[k]}; "
                             "the muscle's gain and bias must share range, force, scale, lmax "
                             "and fpmax (as <muscle> sets them)")
    length_lo, length_hi = (float(v) for v in m.actuator_lengthrange[a])
    if not length_hi > length_lo:
        raise ValueError(f"{what}: lengthrange [{length_lo}, {length_hi}] is empty (MuJoCo's "
                         "compiler computes it for muscles: <compiler><lengthrange>)")
    if not gain[1] > gain[0]:
        raise ValueError(f"{what}: range [{gain[0]}, {gain[1]}] is empty")


def _force(m, a: int) -> float:
    prm = m.actuator_gainprm[a]
    return float(prm[2]) if prm[2] >= 0 else float(prm[3]) / max(MINVAL,
                                                                  float(m.actuator_acc0[a]))


def mujoco_muscles(mj_model, where: str = "MJCF model") -> Muscle:
    """The MuJoCo muscles of `mj_model` (a compiled `mujoco.MjModel`) as one `Muscle` group
    with the MuJoCo curves, named after their actuators (module docstring); ValueError naming
    `where`, the actuator, the field and the value for what is not supported."""
    import mujoco

    m = mj_model
    ids = muscle_actuators(m)
    if not ids:     # the group of no muscles: the skeleton moves by its own actuators
        return build_muscles((), curves="mujoco", tendon="rigid", max_isometric_force_N=(),
                             optimal_fiber_length_m=(), tendon_slack_length_m=())
    dsbl = m.opt.disableflags
    if dsbl & mujoco.mjtDisableBit.mjDSBL_ACTUATION:
        raise ValueError(f"{where}: actuation is disabled (<flag actuation=\"disable\">)")
    limited = [j for j in range(m.njnt) if m.jnt_actfrclimited[j]]
    if limited:
        joint = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, limited[0])
        raise ValueError(f"{where}: joint '{joint}' has a limited actuatorfrcrange; MuJoCo "
                         "clamps the sum of the actuator forces on it, muscles included, "
                         "which the muscle group does not reproduce")
    for a in ids:
        _check_actuator(m, a, where)
    gear = np.array([m.actuator_gear[a, 0] for a in ids], float)
    prm = np.array([m.actuator_gainprm[a, :9] for a in ids], float)
    length_range = np.array([m.actuator_lengthrange[a] for a in ids], float)
    force = np.array([_force(m, a) for a in ids])
    l0 = (length_range[:, 1] - length_range[:, 0]) / np.maximum(MINVAL, prm[:, 1] - prm[:, 0])
    slack = (length_range[:, 0] - prm[:, 0] * l0) / gear
    names = tuple(_name(m, a) for a in ids)
    clamp = not dsbl & mujoco.mjtDisableBit.mjDSBL_CLAMPCTRL
    ctrl = [(float(m.actuator_ctrlrange[a, 0]), float(m.actuator_ctrlrange[a, 1]))
            if m.actuator_ctrllimited[a] and clamp else (-math.inf, math.inf) for a in ids]
    try:
        return build_muscles(
            names, curves="mujoco", tendon="rigid", max_isometric_force_N=gear * force,
            optimal_fiber_length_m=l0 / gear, tendon_slack_length_m=slack,
            max_contraction_velocity_Lopt_per_s=prm[:, 6],
            mujoco_curve_parameters={"lmin": prm[:, 4], "lmax": prm[:, 5], "fpmax": prm[:, 7],
                                     "fvmax": prm[:, 8]},
            tau_act_s=[m.actuator_dynprm[a, 0] for a in ids],
            tau_deact_s=[m.actuator_dynprm[a, 1] for a in ids],
            activation_smoothing=[m.actuator_dynprm[a, 2] for a in ids],
            min_excitation=[lo for lo, _ in ctrl], max_excitation=[hi for _, hi in ctrl])
    except ValueError as err:     # a parameter build_muscles refuses: name the file too
        raise ValueError(f"{where}: {err} (from the <muscle> actuator's attributes)") from None


def load_mjcf(source, name: str | None = None) -> MusculoskeletalModel:
    """An MJCF file (path) or a compiled `mujoco.MjModel` with MuJoCo muscles as a
    `MusculoskeletalModel`: its skeleton (`engine.compile_model` with the muscles external)
    and its muscles (`mujoco_muscles`), muscle i on the path of its actuator's tendon; the
    excitation of muscle i is the ctrl of actuator `muscle_actuators(model)[i]`. `name`: what
    messages call an MjModel source (default "MJCF model"). A model without MuJoCo muscles
    gives its skeleton with the group of no muscles (module docstring)."""
    from myotwin.engine.model import compile_model

    m, where = read_mjcf(source)
    where = name or where
    muscles = mujoco_muscles(m, where)
    ids = muscle_actuators(m)
    skeleton = compile_model(m, external_actuators=ids)
    linear = _linear_paths(m, ids)
    paths = []
    for a in ids:
        if _is_spatial(m, a):
            paths.append(skeleton.paths.path_tendon.index(int(m.actuator_trnid[a, 0])))
        else:
            paths.append(_linear_name(m, a))
    limited = np.asarray(m.actuator_actlimited, dtype=bool)[list(ids)]
    bounds = np.asarray(m.actuator_actrange, dtype=np.float64)[list(ids)]
    bounds = np.where(limited[:, None], bounds, [-np.inf, np.inf])
    return musculoskeletal_model(skeleton, muscles, paths=paths,
                                 activation_range=bounds if limited.any() else None,
                                 linear_paths=linear)


def _is_spatial(m, a: int) -> bool:
    """Whether actuator a pulls on a spatial tendon (else a joint or a fixed tendon)."""
    import mujoco

    from myotwin.engine.model import is_spatial_tendon

    return (m.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_TENDON
            and is_spatial_tendon(m, int(m.actuator_trnid[a, 0])))


def _linear_name(m, a: int) -> str:
    """The linear path's name of a muscle on a joint or a fixed tendon: its actuator's."""
    return f"actuator '{_name(m, a)}'"


def _linear_paths(m, ids):
    """The `LinearPaths` of the muscles `ids` on a hinge/slide joint or a fixed tendon
    (linear_paths.py), or None if there are none: a joint's coefficient 1 at its qpos and dof,
    a fixed tendon's coefficients at its joints'."""
    import mujoco

    from myotwin.engine.tendons import fixed_tendon_coefficients
    from myotwin.musculoskeletal.linear_paths import linear_paths

    rows = [a for a in ids if not _is_spatial(m, a)]
    if not rows:
        return None
    coef_q, coef_v = np.zeros((len(rows), m.nq)), np.zeros((len(rows), m.nv))
    for k, a in enumerate(rows):
        target = int(m.actuator_trnid[a, 0])
        if m.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_TENDON:
            cq, cv = fixed_tendon_coefficients(m, [target])
            coef_q[k], coef_v[k] = cq[0], cv[0]
        else:
            coef_q[k, m.jnt_qposadr[target]] = coef_v[k, m.jnt_dofadr[target]] = 1.0
    return linear_paths(coef_q, coef_v, [_linear_name(m, a) for a in rows])
