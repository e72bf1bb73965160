"""Millard 2012 muscle curves, built exactly as OpenSim builds them.

Millard, Uchida, Seth, Delp 2013, J Biomech Eng 135:021005 (the `Millard2012EquilibriumMuscle`
of OpenSim). Each curve is a `bezier.BezierCurve` made of corner segments between knots; the
knots are computed here from the curve parameters following OpenSim's
`SmoothSegmentedFunctionFactory` (opensim-core, `OpenSim/Common/SmoothSegmentedFunctionFactory
.cpp`) and the default parameters of `ActiveForceLengthCurve`, `ForceVelocityCurve`,
`ForceVelocityInverseCurve`, `FiberForceLengthCurve`, `TendonForceLengthCurve`. Non-default
parameters rebuild the knots (nothing is tabulated). The construction uses jnp only, so the
curve parameters are differentiable; the validation (OpenSim's own range checks plus the
C-shape check of every corner) runs on concrete values.

Knots of the default curves (x, y, dy/dx), see docs/muscle.md for the formulas:
  f_L : (0.4441, 0.1, 0) (0.58705, 0.40522, 3.54341) (0.84, 0.90522, 0.8616) (1, 1, 0)
        (1.43115, 0.5, -1.40390) (1.8123, 0.1, 0);  curviness 1 (c = 0.9)
  f_V : (-1, 0, 0) (-0.9, 0.0125, 0.25) (0, 1, 5) (0.9, 1.3925, 0.15) (1, 1.4, 0);
        c = 0.58 (concentric), 0.82 (eccentric)
  f_PE: (1, 0, 0) (1.035, 0.0035, 0.2) (1.7, 1, 2.857);  c = 0.7
  f_T : (1, 0, 0) (1.0144773, 0.1666667, 15.48205) (1.0371212, 0.6666667, 28.061); c = 0.5
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Mapping

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.muscle import bezier
from myotwin.muscle.bezier import BezierCurve
from myotwin.scalars import as_real

_ROOT_EPS = math.sqrt(np.finfo(float).eps)


def _concrete(*values) -> list[float] | None:
    """Floats of the values, or None if any is a tracer (then validation is skipped)."""
    try:
        return [float(v) for v in values]
    except (TypeError, jax.errors.ConcretizationTypeError):
        return None


def _numbers(where: str, optional=(), **named) -> None:
    """ValueError naming the parameter unless each is one real number (`as_real`: True is not
    1.0, nor "5" 5.0) or a tracer (not checked: gradients reach the parameters); None only
    for the `optional` names (a builder's "not given")."""
    for name, value in named.items():
        if value is None and name in optional or isinstance(value, jax.core.Tracer):
            continue
        if as_real(value) is None:
            raise ValueError(f"{where}: {name} must be a number, got {value!r}")


def _require(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise ValueError(f"{where}: {what}")


def _check_knots(knots, where: str) -> None:
    conc = [_concrete(*k) for k in knots]
    if any(c is None for c in conc):
        return
    for k in range(len(conc) - 1):
        bezier.check_corner(*conc[k], *conc[k + 1], f"{where} segment {k}")


def active_force_length_curve(min_norm_active_fiber_length=0.4441,
                              transition_norm_fiber_length=0.73,
                              max_norm_active_fiber_length=1.8123,
                              shallow_ascending_slope=0.8616, minimum_value=0.1,
                              where: str = "ActiveForceLengthCurve") -> BezierCurve:
    """Active force-length multiplier f_L(l~) (OpenSim `ActiveForceLengthCurve` defaults;
    `createFiberActiveForceLengthCurve` with x2 = 1 and curviness 1).

    Five corners: foot (x0, ylow) -> ascending mid point -> shallow plateau mid point ->
    (1, 1) -> descending mid point -> (x3, ylow); shoulder half width 0.05."""
    _numbers(where, min_norm_active_fiber_length=min_norm_active_fiber_length,
             transition_norm_fiber_length=transition_norm_fiber_length,
             max_norm_active_fiber_length=max_norm_active_fiber_length,
             shallow_ascending_slope=shallow_ascending_slope, minimum_value=minimum_value)
    x0, x1, x3 = (jnp.asarray(v, dtype=float) for v in (
        min_norm_active_fiber_length, transition_norm_fiber_length, max_norm_active_fiber_length))
    ylow, dydx = jnp.asarray(minimum_value, dtype=float), jnp.asarray(shallow_ascending_slope,
                                                                        dtype=float)
    x2 = 1.0
    conc = _concrete(x0, x1, x3, ylow, dydx)
    if conc is not None:
        c0, c1, c3, cy, cd = conc
        _require(c0 >= 0 and c1 > c0 + _ROOT_EPS and x2 > c1 + _ROOT_EPS and c3 > x2 + _ROOT_EPS,
                 where, "need 0 <= min_norm_active_fiber_length < transition_norm_fiber_length "
                 f"< 1 < max_norm_active_fiber_length, got {c0}, {c1}, {c3}")
        _require(0 <= cy < 1, where, f"minimum_value must be in [0, 1), got {cy}")
        _require(0 <= cd < (1 - cy) / (x2 - c1), where,
                 f"shallow_ascending_slope must be in [0, {(1 - cy) / (x2 - c1):g}), got {cd}")
    delta = 0.05 * x2
    xs = x2 - delta
    y1 = 1.0 - dydx * (xs - x1)
    dydx01 = 1.25 * y1 / (x1 - x0)
    x01, y01 = x0 + 0.5 * (x1 - x0), 0.5 * y1
    x1s, y1s = x1 + 0.5 * (xs - x1), y1 + 0.5 * (1.0 - y1)
    x23 = (x2 + delta) + 0.5 * (x3 - (x2 + delta))
    dydx23 = -1.0 / ((x3 - delta) - (x2 + delta))
    knots = [(x0, ylow, 0.0), (x01, y01, dydx01), (x1s, y1s, dydx), (x2, 1.0, 0.0),
             (x23, 0.5, dydx23), (x3, ylow, 0.0)]
    _check_knots(knots, where)
    return bezier.from_knots(knots, bezier.scale_curviness(1.0))


def _force_velocity_knots(concentric_slope_at_vmax, concentric_slope_near_vmax, isometric_slope,
                          eccentric_slope_at_vmax, eccentric_slope_near_vmax,
                          max_eccentric_velocity_force_multiplier, where):
    d_c, d_nc, d_iso, d_e, d_ne, fmax = (jnp.asarray(v, dtype=float) for v in (
        concentric_slope_at_vmax, concentric_slope_near_vmax, isometric_slope,
        eccentric_slope_at_vmax, eccentric_slope_near_vmax,
        max_eccentric_velocity_force_multiplier))
    conc = _concrete(d_c, d_nc, d_iso, d_e, d_ne, fmax)
    if conc is not None:
        c_c, c_nc, c_iso, c_e, c_ne, c_f = conc
        _require(c_f > 1, where, f"max_eccentric_velocity_force_multiplier must be > 1, got {c_f}")
        _require(0 <= c_c < 1, where, f"concentric_slope_at_vmax must be in [0, 1), got {c_c}")
        _require(c_c < c_nc <= 1, where, "concentric_slope_near_vmax must be in "
                 f"(concentric_slope_at_vmax, 1], got {c_nc}")
        _require(c_iso > 1, where, f"isometric_slope must be > 1, got {c_iso}")
        _require(0 <= c_e < c_f - 1, where,
                 f"eccentric_slope_at_vmax must be in [0, {c_f - 1:g}), got {c_e}")
        _require(c_e <= c_ne < c_f - 1, where, "eccentric_slope_near_vmax must be in "
                 f"[eccentric_slope_at_vmax, {c_f - 1:g}), got {c_ne}")
    y_nc = 0.5 * d_nc * 0.1 + 0.5 * d_c * 0.1
    y_ne = fmax - 0.5 * d_ne * 0.1 - 0.5 * d_e * 0.1
    knots = [(-1.0, 0.0, d_c), (-0.9, y_nc, d_nc), (0.0, 1.0, d_iso), (0.9, y_ne, d_ne),
             (1.0, fmax, d_e)]
    _check_knots(knots, where)
    return knots


def _check_curviness(where, **kw):
    for name, v in kw.items():
        conc = _concrete(v)
        if conc is not None:
            _require(0 <= conc[0] <= 1, where, f"{name} must be in [0, 1], got {conc[0]}")


def force_velocity_curve(concentric_slope_at_vmax=0.0, concentric_slope_near_vmax=0.25,
                         isometric_slope=5.0, eccentric_slope_at_vmax=0.0,
                         eccentric_slope_near_vmax=0.15,
                         max_eccentric_velocity_force_multiplier=1.4,
                         concentric_curviness=0.6, eccentric_curviness=0.9,
                         where: str = "ForceVelocityCurve") -> BezierCurve:
    """Force-velocity multiplier f_V(v~), v~ = fiber velocity / (v_max l_opt) (OpenSim
    `ForceVelocityCurve` defaults; `createFiberForceVelocityCurve`). Four corners through
    (-1, 0), (-0.9, y_nc), (0, 1), (0.9, y_ne), (1, fmax)."""
    _numbers(where, concentric_slope_at_vmax=concentric_slope_at_vmax,
             concentric_slope_near_vmax=concentric_slope_near_vmax,
             isometric_slope=isometric_slope, eccentric_slope_at_vmax=eccentric_slope_at_vmax,
             eccentric_slope_near_vmax=eccentric_slope_near_vmax,
             max_eccentric_velocity_force_multiplier=max_eccentric_velocity_force_multiplier,
             concentric_curviness=concentric_curviness, eccentric_curviness=eccentric_curviness)
    _check_curviness(where, concentric_curviness=concentric_curviness,
                     eccentric_curviness=eccentric_curviness)
    knots = _force_velocity_knots(concentric_slope_at_vmax, concentric_slope_near_vmax,
                                  isometric_slope, eccentric_slope_at_vmax,
                                  eccentric_slope_near_vmax,
                                  max_eccentric_velocity_force_multiplier, where)
    c_c = bezier.scale_curviness(jnp.asarray(concentric_curviness, dtype=float))
    c_e = bezier.scale_curviness(jnp.asarray(eccentric_curviness, dtype=float))
    return bezier.from_knots(knots, jnp.stack([c_c, c_c, c_e, c_e]))


def force_velocity_inverse_curve(concentric_slope_at_vmax=0.1, concentric_slope_near_vmax=0.25,
                                 isometric_slope=5.0, eccentric_slope_at_vmax=0.1,
                                 eccentric_slope_near_vmax=0.15,
                                 max_eccentric_velocity_force_multiplier=1.4,
                                 concentric_curviness=0.6, eccentric_curviness=0.9,
                                 where: str = "ForceVelocityInverseCurve") -> BezierCurve:
    """v~ = f_V^-1(f) (OpenSim `ForceVelocityInverseCurve` defaults, end slopes 0.1 so that it
    is invertible): the force-velocity curve with these parameters, axes swapped. It is the
    exact inverse of `force_velocity_curve` called with the same parameters."""
    _numbers(where, concentric_slope_at_vmax=concentric_slope_at_vmax,
             eccentric_slope_at_vmax=eccentric_slope_at_vmax)   # (the rest: the forward's)
    tiny = np.finfo(float).eps ** 0.875   # OpenSim's SimTK::SignificantReal
    for name, v in (("concentric_slope_at_vmax", concentric_slope_at_vmax),
                    ("eccentric_slope_at_vmax", eccentric_slope_at_vmax)):
        conc = _concrete(v)
        if conc is not None:
            _require(conc[0] > tiny, where, f"{name} must be > 0 for an invertible curve, "
                     f"got {conc[0]}")
    fwd = force_velocity_curve(concentric_slope_at_vmax, concentric_slope_near_vmax,
                               isometric_slope, eccentric_slope_at_vmax,
                               eccentric_slope_near_vmax, max_eccentric_velocity_force_multiplier,
                               concentric_curviness, eccentric_curviness, where)
    return bezier.swap_axes(fwd)


def fiber_force_length_curve(strain_at_zero_force=0.0, strain_at_one_norm_force=0.7,
                             stiffness_at_low_force=None, stiffness_at_one_norm_force=None,
                             curviness=None, where: str = "FiberForceLengthCurve") -> BezierCurve:
    """Passive fiber force-length multiplier f_PE(l~) (OpenSim `FiberForceLengthCurve`,
    `createFiberForceLengthCurve`). The optional stiffnesses and curviness are set all together
    or not at all; if none, OpenSim's fitted defaults k_low = 0.2, k_iso = 2/(e1 - e0),
    curviness 0.75 are used. Two corners (1+e0, 0, 0) -> (x_low, y_low, k_low) ->
    (1+e1, 1, k_iso), with dx = min(0.1/k_iso, 0.1 (e1 - e0)), x_low = 1 + e0 + dx,
    y_low = k_low dx / 2."""
    _numbers(where, ("stiffness_at_low_force", "stiffness_at_one_norm_force", "curviness"),
             strain_at_zero_force=strain_at_zero_force,
             strain_at_one_norm_force=strain_at_one_norm_force,
             stiffness_at_low_force=stiffness_at_low_force,
             stiffness_at_one_norm_force=stiffness_at_one_norm_force, curviness=curviness)
    opt = (stiffness_at_low_force, stiffness_at_one_norm_force, curviness)
    if all(v is None for v in opt):
        e0 = jnp.asarray(strain_at_zero_force, dtype=float)
        e1 = jnp.asarray(strain_at_one_norm_force, dtype=float)
        k_low, k_iso, curv = 0.2, 2.0 / (e1 - e0), 0.75
    elif any(v is None for v in opt):
        raise ValueError(f"{where}: stiffness_at_low_force, stiffness_at_one_norm_force and "
                         "curviness must all be given, or none of them")
    else:
        k_low, k_iso, curv = stiffness_at_low_force, stiffness_at_one_norm_force, curviness
    e0, e1, k_low, k_iso, curv = (jnp.asarray(v, dtype=float) for v in (
        strain_at_zero_force, strain_at_one_norm_force, k_low, k_iso, curv))
    conc = _concrete(e0, e1, k_low, k_iso, curv)
    if conc is not None:
        c0, c1, cl, ci, cc = conc
        _require(c1 > c0, where, f"strain_at_one_norm_force ({c1}) must exceed "
                 f"strain_at_zero_force ({c0})")
        _require(ci > 1 / (c1 - c0), where, "stiffness_at_one_norm_force must be > "
                 f"1/(e1 - e0) = {1 / (c1 - c0):g}, got {ci}")
        _require(0 < cl < 1 / (c1 - c0), where, "stiffness_at_low_force must be in "
                 f"(0, {1 / (c1 - c0):g}), got {cl}")
        _require(0 <= cc <= 1, where, f"curviness must be in [0, 1], got {cc}")
    x_zero, x_iso = 1.0 + e0, 1.0 + e1
    dx = jnp.minimum(0.1 / k_iso, 0.1 * (x_iso - x_zero))
    x_low = x_zero + dx
    y_low = k_low * (x_low - (x_zero + 0.5 * dx))
    knots = [(x_zero, 0.0, 0.0), (x_low, y_low, k_low), (x_iso, 1.0, k_iso)]
    _check_knots(knots, where)
    return bezier.from_knots(knots, bezier.scale_curviness(curv))


def tendon_force_length_curve(strain_at_one_norm_force=0.049, stiffness_at_one_norm_force=None,
                              norm_force_at_toe_end=None, curviness=None,
                              where: str = "TendonForceLengthCurve") -> BezierCurve:
    """Tendon force-length multiplier f_T(l~_T) (OpenSim `TendonForceLengthCurve`,
    `createTendonForceLengthCurve`). Optional parameters all together or none; defaults
    k_iso = 1.375/e_iso, f_toe = 2/3, curviness 0.5. Toe from (1, 0, 0) through the corner
    control knot to (x_toe, f_toe, k_iso), x_toe = 1 + e_iso - (1 - f_toe)/k_iso; linear
    beyond (so f_T(1 + e_iso) = 1 exactly)."""
    _numbers(where, ("stiffness_at_one_norm_force", "norm_force_at_toe_end", "curviness"),
             strain_at_one_norm_force=strain_at_one_norm_force,
             stiffness_at_one_norm_force=stiffness_at_one_norm_force,
             norm_force_at_toe_end=norm_force_at_toe_end, curviness=curviness)
    opt = (stiffness_at_one_norm_force, norm_force_at_toe_end, curviness)
    e_iso = jnp.asarray(strain_at_one_norm_force, dtype=float)
    if all(v is None for v in opt):
        k_iso, f_toe, curv = 1.375 / e_iso, 2.0 / 3.0, 0.5
    elif any(v is None for v in opt):
        raise ValueError(f"{where}: stiffness_at_one_norm_force, norm_force_at_toe_end and "
                         "curviness must all be given, or none of them")
    else:
        k_iso, f_toe, curv = opt
    k_iso, f_toe, curv = (jnp.asarray(v, dtype=float) for v in (k_iso, f_toe, curv))
    conc = _concrete(e_iso, k_iso, f_toe, curv)
    if conc is not None:
        ce, ck, cf, cc = conc
        _require(ce > 0, where, f"strain_at_one_norm_force must be > 0, got {ce}")
        _require(0 < cf < 1, where, f"norm_force_at_toe_end must be in (0, 1), got {cf}")
        _require(ck > 1 / ce, where, "stiffness_at_one_norm_force must be > 1/strain = "
                 f"{1 / ce:g}, got {ck}")
        _require(0 <= cc <= 1, where, f"curviness must be in [0, 1], got {cc}")
    x_iso = 1.0 + e_iso
    x_toe = (f_toe - 1.0) / k_iso + x_iso
    x_foot = 1.0 + (x_toe - 1.0) / 10.0
    y_mid = 0.5 * f_toe
    x_mid = (y_mid - 1.0) / k_iso + x_iso
    dydx_mid = y_mid / (x_mid - x_foot)
    x_ctrl = x_foot + 0.5 * (x_mid - x_foot)
    y_ctrl = dydx_mid * (x_ctrl - x_foot)
    knots = [(1.0, 0.0, 0.0), (x_ctrl, y_ctrl, dydx_mid), (x_toe, f_toe, k_iso)]
    _check_knots(knots, where)
    return bezier.from_knots(knots, bezier.scale_curviness(curv))


@dataclasses.dataclass(frozen=True)
class MillardCurves:
    """The five Millard 2012 curves of a muscle (a pytree part of `Muscle`; leaves may carry a
    leading (n_muscles,) axis, then evaluate per muscle under vmap).

    Curve interface shared with `degroote2016.DeGrooteCurves` (all normalized, elementwise):
    active_force_length(l~), force_velocity(v~), force_velocity_inverse(f),
    passive_force_length(l~), passive_force_length_integral(l~) (from l~ where f_PE starts,
    1 + strain_at_zero_force), tendon_force_length(l~_T), tendon_force_length_integral(l~_T)
    (from 1, where f_T starts).
    """

    active_fl_curve: BezierCurve
    fv_curve: BezierCurve
    fv_inverse_curve: BezierCurve
    passive_fl_curve: BezierCurve
    tendon_fl_curve: BezierCurve

    def active_force_length(self, l_norm):
        return bezier.value(self.active_fl_curve, l_norm)

    def force_velocity(self, v_norm, activation=None):
        """f_V(v~); `activation` is not used (only Thelen 2003's curve depends on it)."""
        return bezier.value(self.fv_curve, v_norm)

    def force_velocity_inverse(self, f, activation=None):
        return bezier.value(self.fv_inverse_curve, f)

    def passive_force_length(self, l_norm):
        return bezier.value(self.passive_fl_curve, l_norm)

    def passive_force_length_integral(self, l_norm):
        return bezier.integral(self.passive_fl_curve, l_norm)

    def tendon_force_length(self, lt_norm):
        return bezier.value(self.tendon_fl_curve, lt_norm)

    def tendon_force_length_integral(self, lt_norm):
        return bezier.integral(self.tendon_fl_curve, lt_norm)

    def tendon_zero_force_length(self):
        """l~_T where the tendon curve starts (f_T = 0 at and below it): 1."""
        return self.tendon_fl_curve.x_lo


jax.tree_util.register_dataclass(
    MillardCurves, data_fields=[f.name for f in dataclasses.fields(MillardCurves)],
    meta_fields=[])


def millard_curves(tendon_strain_at_one_norm_force=0.049, passive_strain_at_one_norm_force=0.7,
                   where: str = "Millard2012", **curve_parameters) -> MillardCurves:
    """All five curves for one muscle. `curve_parameters` may hold dicts of keyword arguments
    named `active_force_length`, `force_velocity`, `force_velocity_inverse`,
    `fiber_force_length`, `tendon_force_length` (passed to the builders above)."""
    builders = {"active_force_length": active_force_length_curve,
                "force_velocity": force_velocity_curve,
                "force_velocity_inverse": force_velocity_inverse_curve,
                "fiber_force_length": fiber_force_length_curve,
                "tendon_force_length": tendon_force_length_curve}
    unknown = set(curve_parameters) - set(builders)
    if unknown:
        raise ValueError(f"{where}: unknown Millard curve parameter groups {sorted(unknown)}")
    for group, values in curve_parameters.items():
        if not isinstance(values, Mapping):
            raise ValueError(f"{where}: Millard curve parameters {group!r} must be a dict of "
                             f"that curve's parameters, got {values!r}")
        allowed = set(inspect.signature(builders[group]).parameters) - {"where"}
        if set(values) - allowed:
            raise ValueError(f"{where}: unknown parameters {sorted(set(values) - allowed)} of "
                             f"the Millard curve {group!r}; it takes {sorted(allowed)}")
    p = {k: dict(v) for k, v in curve_parameters.items()}
    fpe = {"strain_at_one_norm_force": passive_strain_at_one_norm_force,
           **p.get("fiber_force_length", {})}
    ft = {"strain_at_one_norm_force": tendon_strain_at_one_norm_force,
          **p.get("tendon_force_length", {})}
    return MillardCurves(
        active_force_length_curve(**p.get("active_force_length", {}),
                                  where=f"{where}.active_force_length"),
        force_velocity_curve(**p.get("force_velocity", {}), where=f"{where}.force_velocity"),
        force_velocity_inverse_curve(**p.get("force_velocity_inverse", {}),
                                     where=f"{where}.force_velocity_inverse"),
        fiber_force_length_curve(**fpe, where=f"{where}.fiber_force_length"),
        tendon_force_length_curve(**ft, where=f"{where}.tendon_force_length"))
