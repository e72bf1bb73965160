"""First-order activation dynamics: da/dt from excitation u and activation a.

Three laws, each with activation time constant tau_act and deactivation time constant tau_deact:

* `ActivationLaw.MILLARD2012`: OpenSim `MuscleFirstOrderActivationDynamicModel` (Millard et al.
  2013, J Biomech Eng 135:021005; the same law as Thelen 2003, J Biomech Eng 125:70, Eqs. 1-2):
      u, a clamped to [a_min, 1];
      tau = tau_act (0.5 + 1.5 a)      if u > a,
            tau_deact / (0.5 + 1.5 a)  otherwise;
      da/dt = (u - a) / tau.
  OpenSim defaults tau_act = 0.010 s, tau_deact = 0.040 s, a_min = 0.01. The activation used
  for force is clamped to [a_min, 1] as well (`force_activation`). Clamping u is what OpenSim
  did before 2017; OpenSim 4.x clamps only a (the THELEN2003 law below).
* `ActivationLaw.DEGROOTE2016`: the smooth law of De Groote et al. 2016 (Ann Biomed Eng
  44:2922, Eqs. 1-2) as in OpenSim `DeGrooteFregly2016Muscle`:
      f = 0.5 tanh(b (u - a)),  z = 0.5 + 1.5 a,
      da/dt = [ (f + 0.5)/(tau_act z) + (0.5 - f) z / tau_deact ] (u - a).
  OpenSim defaults tau_act = 0.015 s, tau_deact = 0.060 s, smoothing b = 0.1 (the value OpenSim
  uses; its header recommends 10). No clamping (OpenSim bounds a only in Moco problems). For
  b -> infinity it becomes the MILLARD2012 law without clamping.
* `ActivationLaw.THELEN2003`: OpenSim 4.6's `MuscleFirstOrderActivationDynamicModel` as
  `Thelen2003Muscle` uses it: the MILLARD2012 law with only the activation clamped to
  [a_min, 1]; the excitation enters unclamped (opensim-core PR #1548, 2017, removed the
  excitation clamp; a model must keep u >= a_min itself, OpenSim sets min_control = a_min).
  Thelen2003Muscle defaults tau_act = 0.015 s, tau_deact = 0.050 s, a_min = 0.01. The
  activation used for force is clamped to [a_min, 1] (`force_activation`), as OpenSim's
  Thelen2003Muscle clamps it (clampActivation) before computing forces and fiber velocity.
"""

from __future__ import annotations

import dataclasses
import enum

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.muscle.mujoco_muscle import MINVAL
from myotwin.scalars import require_real_numbers


class ActivationLaw(enum.Enum):
    MILLARD2012 = "millard2012"
    DEGROOTE2016 = "degroote2016"
    THELEN2003 = "thelen2003"
    MUJOCO = "mujoco"


#: OpenSim (MuJoCo) defaults per law: (tau_act_s, tau_deact_s, min_activation, smoothing).
DEFAULTS = {
    ActivationLaw.MILLARD2012: (0.010, 0.040, 0.01, 0.0),
    ActivationLaw.DEGROOTE2016: (0.015, 0.060, 0.0, 0.1),
    ActivationLaw.THELEN2003: (0.015, 0.050, 0.01, 0.0),
    ActivationLaw.MUJOCO: (0.01, 0.04, 0.0, 0.0),
}


@dataclasses.dataclass(frozen=True)
class ActivationDynamics:
    """Activation-dynamics part of a muscle (pytree). Leaves (n_muscles,) or scalars:
    tau_act_s, tau_deact_s (> 0), min_activation (a_min in [0, 1); MILLARD2012, THELEN2003),
    smoothing (b > 0 for DEGROOTE2016; MuJoCo's tausmooth w >= 0 for MUJOCO), min_excitation,
    max_excitation (MUJOCO only: the actuator's control range, +-inf when not limited).
    Static: law."""

    tau_act_s: jax.Array
    tau_deact_s: jax.Array
    min_activation: jax.Array
    smoothing: jax.Array
    min_excitation: jax.Array
    max_excitation: jax.Array
    law: ActivationLaw = dataclasses.field(default=ActivationLaw.MILLARD2012,
                                           metadata={"static": True})


jax.tree_util.register_dataclass(
    ActivationDynamics, data_fields=["tau_act_s", "tau_deact_s", "min_activation", "smoothing",
                                     "min_excitation", "max_excitation"],
    meta_fields=["law"])


def activation_dynamics(law: ActivationLaw | str = ActivationLaw.MILLARD2012, tau_act_s=None,
                        tau_deact_s=None, min_activation=None, smoothing=None,
                        where: str = "activation", min_excitation=None,
                        max_excitation=None) -> ActivationDynamics:
    """Build (and validate) one activation part; None takes OpenSim's (MuJoCo's) default for
    the law. min_excitation / max_excitation (MUJOCO only; default -inf / inf)."""
    try:
        law = ActivationLaw(law)
    except ValueError:
        raise ValueError(f"{where}: law {law!r}: expected one of "
                         f"{[k.value for k in ActivationLaw]}") from None
    given = (("tau_act_s", tau_act_s), ("tau_deact_s", tau_deact_s),
             ("min_activation", min_activation), ("smoothing", smoothing),
             ("min_excitation", min_excitation), ("max_excitation", max_excitation))
    for name, value in given:     # numbers only: True is not 1.0, nor "0.1" 0.1
        if value is not None:
            require_real_numbers(where, name, value)
        if (value is not None and "excitation" not in name
                and not isinstance(value, jax.core.Tracer) and not np.all(np.isfinite(value))):
            raise ValueError(f"{where}: {name} must be finite, got {value!r}")
    if law is not ActivationLaw.MUJOCO and (min_excitation is not None
                                            or max_excitation is not None):
        raise ValueError(f"{where}: min_excitation / max_excitation apply to the MuJoCo law only "
                         "(the other laws clamp the excitation as OpenSim does)")
    vals = [d if v is None else v for v, d in zip(
        (tau_act_s, tau_deact_s, min_activation, smoothing), DEFAULTS[law])]
    arrs = [jnp.asarray(v, dtype=float) for v in vals]
    for name, arr in zip(("tau_act_s", "tau_deact_s"), arrs[:2]):
        if not bool(jnp.all(arr > 0)):
            raise ValueError(f"{where}: {name} must be > 0, got {arr}")
    if not bool(jnp.all((arrs[2] >= 0) & (arrs[2] < 1))):
        raise ValueError(f"{where}: min_activation must be in [0, 1), got {arrs[2]}")
    if law is ActivationLaw.DEGROOTE2016 and not bool(jnp.all(arrs[3] > 0)):
        raise ValueError(f"{where}: smoothing must be > 0, got {arrs[3]}")
    if law is ActivationLaw.MUJOCO and not bool(jnp.all(arrs[3] >= 0)):
        raise ValueError(f"{where}: smoothing (MuJoCo's tausmooth) must be >= 0, got {arrs[3]}")
    lo = jnp.asarray(-jnp.inf if min_excitation is None else min_excitation, dtype=float)
    hi = jnp.asarray(jnp.inf if max_excitation is None else max_excitation, dtype=float)
    if bool(jnp.any(jnp.isnan(lo) | jnp.isnan(hi) | (lo > hi))):
        raise ValueError(f"{where}: the control range [min_excitation, max_excitation] must be "
                         f"ordered, got [{lo}, {hi}]")
    return ActivationDynamics(*arrs, lo, hi, law=law)


def _millard(act: ActivationDynamics, a, u):
    a = jnp.clip(a, act.min_activation, 1.0)
    u = jnp.clip(u, act.min_activation, 1.0)
    z = 0.5 + 1.5 * a
    tau = jnp.where(u > a, act.tau_act_s * z, act.tau_deact_s / z)
    return (u - a) / tau


def _thelen(act: ActivationDynamics, a, u):
    a = jnp.clip(a, act.min_activation, 1.0)
    z = 0.5 + 1.5 * a
    tau = jnp.where(u > a, act.tau_act_s * z, act.tau_deact_s / z)
    return (u - a) / tau


def _degroote(act: ActivationDynamics, a, u):
    f = 0.5 * jnp.tanh(act.smoothing * (u - a))
    z = 0.5 + 1.5 * a
    return ((f + 0.5) / (act.tau_act_s * z) + (0.5 - f) * z / act.tau_deact_s) * (u - a)


def _smoothstep(x):
    """MuJoCo's mju_sigmoid: the quintic smoothstep, 0 below 0 and 1 above 1."""
    x = jnp.clip(x, 0.0, 1.0)
    return x * x * x * (3.0 * x * (2.0 * x - 5.0) + 10.0)


def _mujoco(act: ActivationDynamics, a, u):
    u = jnp.clip(jnp.clip(u, act.min_excitation, act.max_excitation), 0.0, 1.0)
    z = 0.5 + 1.5 * jnp.clip(a, 0.0, 1.0)
    tau_a, tau_d = act.tau_act_s * z, act.tau_deact_s / z
    d = u - a
    smooth = act.smoothing >= MINVAL
    width = jnp.where(smooth, act.smoothing, 1.0)
    tau = jnp.where(smooth, tau_d + (tau_a - tau_d) * _smoothstep(d / width + 0.5),
                    jnp.where(d > 0.0, tau_a, tau_d))
    return d / jnp.maximum(MINVAL, tau)


def activation_derivative(act: ActivationDynamics, activation, excitation) -> jax.Array:
    """da/dt (1/s), elementwise over (n_muscles,) activation and excitation."""
    a = jnp.asarray(activation, dtype=float)
    u = jnp.asarray(excitation, dtype=float)
    if act.law is ActivationLaw.MILLARD2012:
        return _millard(act, a, u)
    if act.law is ActivationLaw.THELEN2003:
        return _thelen(act, a, u)
    if act.law is ActivationLaw.MUJOCO:
        return _mujoco(act, a, u)
    return _degroote(act, a, u)


def force_activation(act: ActivationDynamics, activation) -> jax.Array:
    """The activation that scales active force: clamped to [a_min, 1] for MILLARD2012 and
    THELEN2003 (as OpenSim's Millard and Thelen muscles), unchanged for DEGROOTE2016 and
    MUJOCO."""
    a = jnp.asarray(activation, dtype=float)
    if act.law in (ActivationLaw.MILLARD2012, ActivationLaw.THELEN2003):
        return jnp.clip(a, act.min_activation, 1.0)
    return a
