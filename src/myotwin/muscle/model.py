"""The `Muscle` parameter pytree (n_muscles Hill-type musculotendons) and its validated builder.

A `Muscle` is composed of parts (STYLE 4): scalar musculotendon parameters per muscle, an
`ActivationDynamics` part, a curve part (`MillardCurves`, `DeGrooteCurves`, `ThelenCurves` or
`MuJoCoCurves`, same interface) and the static choice of tendon model. Every float leaf has a
leading (n_muscles,) axis, so the physics functions vmap over muscles. One `Muscle` holds one
curve family and one tendon model; a model mixing families holds several `Muscle` groups.

Parameters (OpenSim `Muscle` names, SI units): max_isometric_force_N (F_iso),
optimal_fiber_length_m (l_opt), tendon_slack_length_m (l_ts), pennation_at_optimal_rad
(phi_opt), max_contraction_velocity_Lopt_per_s (v_max, in optimal fiber lengths per second),
fiber_damping (beta, normalized: damping force = F_iso beta v~), min_fiber_length_m (the
fiber's lower bound, OpenSim's getMinimumFiberLength, where the rigid and fiber-length tendon
models hold it: `tendon`). The tendon strain at one normalized force, the passive fiber strain
and the Thelen shape factors live in the curve part.

Tendon models (`TendonModel`):
  RIGID                l_T = l_ts; no tendon state.
  EXPLICIT_FORCE       state = normalized tendon force f~_T (De Groote et al. 2016 explicit
                       form; requires curves whose f_T and f_V invert in closed form, De
                       Groote 2016 or Thelen 2003, and fiber_damping = 0).
  DAMPED_FIBER_LENGTH  state = fiber length l_M (m) (Millard et al. 2013 damped equilibrium
                       model; requires fiber_damping > 0).
  FIBER_LENGTH         state = fiber length l_M (m), undamped, the velocity law of
                       EXPLICIT_FORCE (OpenSim's Thelen2003Muscle; the same requirements).

Build with `build_muscles`, which validates every value in NumPy and raises ValueError naming
the muscle, the field and the value.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.muscle import millard2012, mujoco_muscle, thelen2003
from myotwin.muscle.activation import ActivationDynamics, ActivationLaw, activation_dynamics
from myotwin.muscle.degroote2016 import DeGrooteCurves
from myotwin.muscle.millard2012 import MillardCurves
from myotwin.muscle.mujoco_muscle import MuJoCoCurves
from myotwin.muscle.thelen2003 import ThelenCurves
from myotwin.scalars import as_real


class TendonModel(enum.Enum):
    RIGID = "rigid"
    EXPLICIT_FORCE = "explicit_force"
    DAMPED_FIBER_LENGTH = "damped_fiber_length"
    FIBER_LENGTH = "fiber_length"


class CurveFamily(enum.Enum):
    MILLARD2012 = "millard2012"
    DEGROOTE2016 = "degroote2016"
    THELEN2003 = "thelen2003"
    MUJOCO = "mujoco"


#: OpenSim defaults that differ between the families: fiber_damping, passive strain, tendon
#: strain at one normalized force, activation law.
_FAMILY_DEFAULTS = {
    CurveFamily.MILLARD2012: (0.1, 0.7, 0.049, ActivationLaw.MILLARD2012),
    CurveFamily.DEGROOTE2016: (0.0, 0.6, 0.049, ActivationLaw.DEGROOTE2016),
    CurveFamily.THELEN2003: (0.0, thelen2003.DEFAULT_PASSIVE_STRAIN,
                             thelen2003.DEFAULT_TENDON_STRAIN, ActivationLaw.THELEN2003),
    # (MuJoCo's muscle has neither strain parameter: its passive curve is fpmax's, its tendon
    # rigid; the values only fill the two checked fields)
    CurveFamily.MUJOCO: (0.0, 1.0, 1.0, ActivationLaw.MUJOCO),
}
#: MuJoCo curve parameters: build_muscles `mujoco_curve_parameters` key -> MJCF default.
MUJOCO_PARAMETERS = {"lmin": mujoco_muscle.DEFAULT_LMIN, "lmax": mujoco_muscle.DEFAULT_LMAX,
                     "fpmax": mujoco_muscle.DEFAULT_FPMAX, "fvmax": mujoco_muscle.DEFAULT_FVMAX}
#: Thelen 2003 curve parameters: build_muscles keyword -> (OpenSim default, OpenSim name).
THELEN_PARAMETERS = {
    "active_force_length_shape": (thelen2003.DEFAULT_ACTIVE_SHAPE, "KshapeActive"),
    "passive_force_length_shape": (thelen2003.DEFAULT_PASSIVE_SHAPE, "KshapePassive"),
    "force_velocity_shape": (thelen2003.DEFAULT_FORCE_VELOCITY_SHAPE, "Af"),
    "max_lengthening_force_multiplier": (thelen2003.DEFAULT_MAX_LENGTHENING_FORCE, "Flen"),
    "force_velocity_extrapolation_threshold": (thelen2003.DEFAULT_EXTRAPOLATION_THRESHOLD,
                                               "fv_linear_extrap_threshold"),
}
#: OpenSim's Thelen2003Muscle refuses minimum_activation < 0.01 (f_V^-1 is singular at a = 0).
THELEN_MIN_ACTIVATION_FLOOR = 0.01

_STATIC = {"static": True}


@dataclasses.dataclass(frozen=True)
class Muscle:
    """n_muscles Hill-type musculotendons sharing a curve family and a tendon model (pytree).

    Leaves (n_muscles,): max_isometric_force_N, optimal_fiber_length_m, tendon_slack_length_m,
    pennation_at_optimal_rad, max_contraction_velocity_Lopt_per_s, fiber_damping,
    min_fiber_length_m; parts `activation` (ActivationDynamics) and `curves` (MillardCurves |
    DeGrooteCurves | ThelenCurves | MuJoCoCurves) with leaves of leading axis n_muscles.
    Static: names
    (n_muscles,), tendon (TendonModel).
    """

    max_isometric_force_N: jax.Array
    optimal_fiber_length_m: jax.Array
    tendon_slack_length_m: jax.Array
    pennation_at_optimal_rad: jax.Array
    max_contraction_velocity_Lopt_per_s: jax.Array
    fiber_damping: jax.Array
    activation: ActivationDynamics
    curves: MillardCurves | DeGrooteCurves | ThelenCurves | MuJoCoCurves
    min_fiber_length_m: jax.Array
    names: tuple[str, ...] = dataclasses.field(default=(), metadata=_STATIC)
    tendon: TendonModel = dataclasses.field(default=TendonModel.RIGID, metadata=_STATIC)

    @property
    def n_muscles(self) -> int:
        return len(self.names)


jax.tree_util.register_dataclass(
    Muscle,
    data_fields=[f.name for f in dataclasses.fields(Muscle) if not f.metadata.get("static")],
    meta_fields=["names", "tendon"])


class MuscleParameterError(ValueError):
    """A muscle's parameter out of its range; `muscle` and `field` (the `build_muscles`
    keyword) name it, so a loader can name its own file's property (`osim.build_muscles`)."""

    def __init__(self, muscle: str, field: str, message: str):
        super().__init__(f"muscle '{muscle}': {field} {message}")
        self.muscle, self.field = muscle, field


def _per_muscle(value, names: Sequence[str], field: str, finite: bool = True) -> np.ndarray:
    """(n,) values of `field` from a scalar or n values, each one number (`as_real`: a bool
    or a string is refused, not converted) and finite (or, with finite=False, not NaN: +-inf
    allowed), else ValueError naming the muscle."""
    entries = np.asarray(value, dtype=object)
    if entries.ndim == 0:
        entries = np.full(len(names), entries.item(), dtype=object)
    if entries.shape != (len(names),):
        raise ValueError(f"{field}: expected a scalar or {len(names)} values (one per muscle), "
                         f"got shape {entries.shape}")
    arr = np.empty(len(names))
    for i, (name, entry) in enumerate(zip(names, entries)):
        v = as_real(entry)
        if v is None:
            raise MuscleParameterError(name, field, f"must be a number, got {entry!r}")
        if not math.isfinite(v) if finite else math.isnan(v):
            raise MuscleParameterError(
                name, field, f"must be {'finite' if finite else 'a number or +-inf'}, got {v}")
        arr[i] = v
    return arr


def _check(arr: np.ndarray, names, field: str, ok, expected: str) -> None:
    for name, v in zip(names, arr):
        if not ok(v):
            raise MuscleParameterError(name, field, f"must be {expected}, got {v}")


def _stack(trees, one):
    """The trees' leaves stacked along a new leading axis (n_muscles); with no trees, leaves
    of leading axis 0 shaped as those of `one()` (an empty group's part)."""
    if not trees:
        return jax.tree_util.tree_map(lambda x: jnp.zeros((0, *jnp.shape(x)), jnp.result_type(x)),
                                      one())
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *trees)


def _thelen_part(names, eps_p, eps_t, given) -> ThelenCurves:
    """Validated ThelenCurves (OpenSim's checks of Thelen2003Muscle, and th < 1 so that the
    eccentric branch stays below its asymptote)."""
    vals = {k: _per_muscle(default if given[k] is None else given[k], names, k)
            for k, (default, _) in THELEN_PARAMETERS.items()}
    for key in ("active_force_length_shape", "passive_force_length_shape",
                "force_velocity_shape"):
        _check(vals[key], names, f"{key} [{THELEN_PARAMETERS[key][1]}]", lambda v: v > 0, "> 0")
    flen = vals["max_lengthening_force_multiplier"]
    _check(flen, names, "max_lengthening_force_multiplier [Flen]", lambda v: v > 1, "> 1")
    for name, th, fl in zip(names, vals["force_velocity_extrapolation_threshold"], flen):
        if not 1.0 / fl < th < 1.0:
            raise ValueError(f"muscle '{name}': force_velocity_extrapolation_threshold "
                             f"[fv_linear_extrap_threshold] must be in (1/Flen, 1) = "
                             f"({1.0 / fl:g}, 1), got {th}")
    return ThelenCurves(
        jnp.asarray(vals["active_force_length_shape"]),
        jnp.asarray(vals["passive_force_length_shape"]), jnp.asarray(eps_p), jnp.asarray(eps_t),
        jnp.asarray(vals["force_velocity_shape"]),
        jnp.asarray(vals["max_lengthening_force_multiplier"]),
        jnp.asarray(vals["force_velocity_extrapolation_threshold"]))


def _mujoco_part(names, given: Mapping[str, object] | None) -> MuJoCoCurves:
    """Validated MuJoCoCurves (MuJoCo's names; 0 <= lmin < 1 < lmax, fpmax >= 0, fvmax >= 1,
    the ranges on which MuJoCo's piecewise curves are what its documentation describes)."""
    given = dict(given or {})
    unknown = sorted(set(given) - set(MUJOCO_PARAMETERS))
    if unknown:
        raise ValueError(f"mujoco_curve_parameters: unknown {unknown}; the parameters are "
                         f"{list(MUJOCO_PARAMETERS)}")
    vals = {k: _per_muscle(given.get(k, d), names, k) for k, d in MUJOCO_PARAMETERS.items()}
    _check(vals["lmin"], names, "lmin", lambda v: 0 <= v < 1, "in [0, 1)")
    _check(vals["lmax"], names, "lmax", lambda v: v > 1, "> 1")
    _check(vals["fpmax"], names, "fpmax", lambda v: v >= 0, ">= 0")
    _check(vals["fvmax"], names, "fvmax", lambda v: v >= 1, ">= 1")
    return MuJoCoCurves(*(jnp.asarray(vals[k]) for k in MUJOCO_PARAMETERS))


def _curve_part(family, names, eps_p, eps_t, active_force_width_scale,
                millard_curve_parameters, thelen, mujoco_curve_parameters):
    """The family's curve part; options of another family are refused."""
    for name, given in (("millard_curve_parameters", millard_curve_parameters),
                        ("mujoco_curve_parameters", mujoco_curve_parameters)):
        if given is not None and not isinstance(given, Mapping):   # dict([1]): a TypeError
            raise ValueError(f"build_muscles: {name} must be a dict, got {given!r}")
    if family is not CurveFamily.MUJOCO and mujoco_curve_parameters:
        raise ValueError("mujoco_curve_parameters apply to the MuJoCo curves only")
    if family is not CurveFamily.THELEN2003:
        for key, value in thelen.items():
            if value is not None:
                raise ValueError(f"{key} applies to the Thelen 2003 curves only")
    if family is not CurveFamily.DEGROOTE2016 and active_force_width_scale != 1.0:
        raise ValueError("active_force_width_scale applies to the De Groote 2016 curves only")
    if family is not CurveFamily.MILLARD2012 and millard_curve_parameters:
        raise ValueError("millard_curve_parameters apply to the Millard 2012 curves only")
    if family is CurveFamily.MUJOCO:
        return _mujoco_part(names, mujoco_curve_parameters)
    if family is CurveFamily.MILLARD2012:
        params = dict(millard_curve_parameters or {})
        return _stack([millard2012.millard_curves(eps_t[i], eps_p[i], where=f"muscle '{n}'",
                                                  **params) for i, n in enumerate(names)],
                      lambda: millard2012.millard_curves(**params))
    if family is CurveFamily.THELEN2003:
        return _thelen_part(names, eps_p, eps_t, thelen)
    scale = _per_muscle(active_force_width_scale, names, "active_force_width_scale")
    _check(scale, names, "active_force_width_scale", lambda v: v >= 1, ">= 1")
    return DeGrooteCurves(jnp.asarray(scale), jnp.asarray(eps_p), jnp.asarray(eps_t))


def _choice(kind, value, argument: str):
    """kind(value) for an Enum `kind`, or ValueError naming the argument and the choices."""
    try:
        return kind(value)
    except ValueError:
        raise ValueError(f"build_muscles: {argument} {value!r}: expected one of "
                         f"{[k.value for k in kind]}") from None


def build_muscles(names: Sequence[str], *, curves: CurveFamily | str, tendon: TendonModel | str,
                  max_isometric_force_N, optimal_fiber_length_m, tendon_slack_length_m,
                  pennation_at_optimal_rad=0.0, max_contraction_velocity_Lopt_per_s=10.0,
                  fiber_damping=None, tendon_strain_at_one_norm_force=None,
                  passive_strain_at_one_norm_force=None, active_force_width_scale=1.0,
                  activation_law: ActivationLaw | str | None = None, tau_act_s=None,
                  tau_deact_s=None, min_activation=None, activation_smoothing=None,
                  millard_curve_parameters: Mapping[str, Mapping[str, float]] | None = None,
                  active_force_length_shape=None, passive_force_length_shape=None,
                  force_velocity_shape=None, max_lengthening_force_multiplier=None,
                  force_velocity_extrapolation_threshold=None,
                  min_fiber_length_m=None,
                  mujoco_curve_parameters: Mapping[str, object] | None = None,
                  min_excitation=None, max_excitation=None) -> Muscle:
    """Validate and compile n_muscles musculotendons. Each numeric argument is a scalar (all
    muscles) or a sequence of n_muscles values. None takes OpenSim's default of the family:
    Millard 2012: fiber_damping 0.1, tendon strain 0.049, passive strain 0.7, activation law
    MILLARD2012 (tau 0.010 / 0.040 s, a_min 0.01); De Groote 2016: fiber_damping 0, tendon
    strain 0.049, passive strain 0.6, law DEGROOTE2016 (tau 0.015 / 0.060 s, smoothing 0.1);
    Thelen 2003 (OpenSim's Thelen2003Muscle): fiber_damping 0, tendon strain 0.04
    [FmaxTendonStrain], passive strain 0.6 [FmaxMuscleStrain], active_force_length_shape 0.45
    [KshapeActive], passive_force_length_shape 5 [KshapePassive], force_velocity_shape 0.25
    [Af], max_lengthening_force_multiplier 1.4 [Flen], force_velocity_extrapolation_threshold
    0.95 [fv_linear_extrap_threshold], law THELEN2003 (tau 0.015 / 0.050 s, a_min 0.01, at
    least 0.01). `millard_curve_parameters` (all muscles alike): dicts of keyword arguments of
    the `millard2012` curve builders, keyed `active_force_length`, `force_velocity`,
    `force_velocity_inverse`, `fiber_force_length`, `tendon_force_length`.
    `min_fiber_length_m` (m, >= 0; the rigid and fiber-length tendon models hold the fiber
    there, `tendon`): None takes OpenSim's getMinimumFiberLength, `min_fiber_length`.
    MuJoCo's muscle (curves "mujoco", `mujoco_muscle`; usually built from an MJCF file by
    `musculoskeletal.mjcf`): rigid tendon, no pennation, no fiber damping; default activation
    law MUJOCO (tau 0.01 / 0.04 s, tausmooth 0); `mujoco_curve_parameters` keys lmin, lmax,
    fpmax, fvmax (each a scalar or n_muscles values; MJCF defaults 0.5, 1.6, 1.3, 1.2);
    min_excitation / max_excitation: the control range of the MUJOCO law.
    names may be empty: a group of no muscles (n_muscles 0; the per-muscle arguments then
    scalars or empty), whose `musculoskeletal_model` moves the skeleton by its own actuators
    alone, as OpenSim simulates a model without muscles (`myotwin osim forward`)."""
    if isinstance(names, str):      # tuple("BRA") would be three muscles, B, R and A
        raise ValueError(f"build_muscles: names must be a sequence of muscle names, got the "
                         f"string {names!r} (for one muscle: [{names!r}])")
    try:
        names = tuple(names)
    except TypeError:               # None or a number: Python's "not iterable" named nothing
        raise ValueError(f"build_muscles: names must be a sequence of muscle names, got "
                         f"{names!r}") from None
    for n in names:
        if not isinstance(n, str) or not n:
            raise ValueError(f"build_muscles: muscle names must be non-empty strings, got {n!r}")
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"build_muscles: duplicate muscle names {dup}")
    family = _choice(CurveFamily, curves, "curves")
    tendon = _choice(TendonModel, tendon, "tendon")
    damping_default, passive_default, tendon_default, law_default = _FAMILY_DEFAULTS[family]

    f_iso = _per_muscle(max_isometric_force_N, names, "max_isometric_force_N")
    l_opt = _per_muscle(optimal_fiber_length_m, names, "optimal_fiber_length_m")
    l_ts = _per_muscle(tendon_slack_length_m, names, "tendon_slack_length_m")
    phi = _per_muscle(pennation_at_optimal_rad, names, "pennation_at_optimal_rad")
    v_max = _per_muscle(max_contraction_velocity_Lopt_per_s, names,
                        "max_contraction_velocity_Lopt_per_s")
    beta = _per_muscle(damping_default if fiber_damping is None else fiber_damping, names,
                       "fiber_damping")
    eps_t = _per_muscle(tendon_default if tendon_strain_at_one_norm_force is None
                        else tendon_strain_at_one_norm_force, names,
                        "tendon_strain_at_one_norm_force")
    eps_p = _per_muscle(passive_default if passive_strain_at_one_norm_force is None
                        else passive_strain_at_one_norm_force, names,
                        "passive_strain_at_one_norm_force")
    positive = (lambda v: v > 0, "> 0")
    if family is not CurveFamily.MUJOCO:       # MuJoCo's rigid "tendon" is an offset of any sign
        _check(l_ts, names, "tendon_slack_length_m", *positive)
    for arr, field in ((f_iso, "max_isometric_force_N"), (l_opt, "optimal_fiber_length_m"),
                       (v_max, "max_contraction_velocity_Lopt_per_s"),
                       (eps_t, "tendon_strain_at_one_norm_force"),
                       (eps_p, "passive_strain_at_one_norm_force")):
        _check(arr, names, field, *positive)
    _check(phi, names, "pennation_at_optimal_rad", lambda v: 0 <= v < math.pi / 2 - 1e-9,
           "in [0, pi/2)")
    _check(beta, names, "fiber_damping", lambda v: v >= 0, ">= 0")
    if tendon is TendonModel.DAMPED_FIBER_LENGTH:
        _check(beta, names, "fiber_damping", lambda v: v > 0,
               "> 0 for the damped fiber-length tendon model")
    if family is CurveFamily.MUJOCO:
        for given, field in ((tendon_strain_at_one_norm_force, "tendon_strain_at_one_norm_force"),
                             (passive_strain_at_one_norm_force,
                              "passive_strain_at_one_norm_force")):
            if given is not None:
                raise ValueError(f"{field} does not apply to the MuJoCo curves (MuJoCo's muscle "
                                 "has no tendon curve; its passive curve is set by lmax and "
                                 "fpmax in mujoco_curve_parameters)")
        if tendon is not TendonModel.RIGID:
            raise ValueError(f"tendon model '{tendon.value}' needs a tendon curve; MuJoCo's "
                             "muscle has none: use 'rigid' with the MuJoCo curves")
        _check(phi, names, "pennation_at_optimal_rad", lambda v: v == 0,
               "0 for the MuJoCo curves (MuJoCo's muscle has no pennation)")
        _check(beta, names, "fiber_damping", lambda v: v == 0,
               "0 for the MuJoCo curves (MuJoCo's muscle has no fiber damping)")
    if tendon in (TendonModel.EXPLICIT_FORCE, TendonModel.FIBER_LENGTH):
        if family is CurveFamily.MILLARD2012:
            raise ValueError(f"tendon model '{tendon.value}' needs the De Groote 2016 curves or "
                             "the Thelen 2003 curves (closed-form f_T and f_V inverses); use "
                             "'damped_fiber_length' with the Millard 2012 curves")
        which = ("explicit tendon-force model" if tendon is TendonModel.EXPLICIT_FORCE
                 else "undamped fiber-length model")
        _check(beta, names, "fiber_damping", lambda v: v == 0,
               f"0 for the {which} (the velocity is f_V^-1 of the force)")

    law = _choice(ActivationLaw, activation_law if activation_law is not None else law_default,
                  "activation_law")
    act_args = [None if v is None else _per_muscle(v, names, field) for v, field in (
        (tau_act_s, "tau_act_s"), (tau_deact_s, "tau_deact_s"),
        (min_activation, "min_activation"), (activation_smoothing, "activation_smoothing"))]
    ranges = [None if v is None else _per_muscle(v, names, field, finite=False) for v, field in (
        (min_excitation, "min_excitation"), (max_excitation, "max_excitation"))]
    acts = [activation_dynamics(law, *(None if v is None else v[i] for v in act_args),
                                where=f"muscle '{name}' activation",
                                **{k: None if v is None else v[i] for k, v in
                                   zip(("min_excitation", "max_excitation"), ranges)})
            for i, name in enumerate(names)]
    if family is CurveFamily.THELEN2003 and law is not ActivationLaw.DEGROOTE2016:
        for name, act in zip(names, acts):
            if float(act.min_activation) < THELEN_MIN_ACTIVATION_FLOOR:
                raise ValueError(f"muscle '{name}' activation: min_activation must be >= "
                                 f"{THELEN_MIN_ACTIVATION_FLOOR} for the Thelen 2003 curves "
                                 f"(as OpenSim's Thelen2003Muscle), got "
                                 f"{float(act.min_activation)}")

    thelen = dict(active_force_length_shape=active_force_length_shape,
                  passive_force_length_shape=passive_force_length_shape,
                  force_velocity_shape=force_velocity_shape,
                  max_lengthening_force_multiplier=max_lengthening_force_multiplier,
                  force_velocity_extrapolation_threshold=force_velocity_extrapolation_threshold)
    curve_part = _curve_part(family, names, eps_p, eps_t, active_force_width_scale,
                             millard_curve_parameters, thelen, mujoco_curve_parameters)
    if min_fiber_length_m is None:
        shortest = min_fiber_length(family, l_opt, phi, curve_part)
    else:
        shortest = _per_muscle(min_fiber_length_m, names, "min_fiber_length_m")
        _check(shortest, names, "min_fiber_length_m", lambda v: v >= 0, ">= 0")
    return Muscle(jnp.asarray(f_iso), jnp.asarray(l_opt), jnp.asarray(l_ts), jnp.asarray(phi),
                  jnp.asarray(v_max), jnp.asarray(beta),
                  _stack(acts, lambda: activation_dynamics(law)), curve_part,
                  jnp.asarray(shortest), names=names, tendon=tendon)


#: SimTK's SignificantReal (eps^(7/8)) and OpenSim's maximum pennation of the fixed-width
#: model (acos 0.1).
SIGNIFICANT_REAL = np.finfo(float).eps ** 0.875
MAX_PENNATION_RAD = math.acos(0.1)


def min_fiber_length(family: CurveFamily, optimal_fiber_length_m, pennation_at_optimal_rad,
                     curves) -> np.ndarray:
    """(n,) OpenSim's minimum fiber length (m): the fiber's length at the maximum pennation
    acos(0.1) (MuscleFixedWidthPennationModel, Thelen2003Muscle's getMinimumFiberLength, 0 for
    an unpennated muscle), for the Millard 2012 curves also no shorter than the active
    force-length curve's start (min_norm_active_fiber_length l_opt) and SignificantReal
    (Millard2012EquilibriumMuscle)."""
    l_opt = np.asarray(optimal_fiber_length_m, float)
    height = l_opt * np.sin(np.asarray(pennation_at_optimal_rad, float))
    shortest = height / math.sin(MAX_PENNATION_RAD)
    if family is CurveFamily.MILLARD2012:
        active = np.asarray(curves.active_fl_curve.x_lo) * l_opt
        shortest = np.maximum(SIGNIFICANT_REAL, np.maximum(active, shortest))
    return shortest
