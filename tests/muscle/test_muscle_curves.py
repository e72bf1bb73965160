"""Muscle curves vs OpenSim's values (Millard 2012, De Groote 2016) and their definitions.

Oracles: /work/shared/notes/inertial-musculotendons.md Sec. 3.1-3.2 (OpenSim's test values in
testDeGrooteFregly2016Muscle.cpp; values of an independent re-implementation of OpenSim's
construction, tabulated to 6 significant digits), the knot definitions of OpenSim's
SmoothSegmentedFunctionFactory (re-derived here from the formulas), central finite
differences and scipy.integrate.quad.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import quad

from myotwin.muscle import bezier, degroote2016 as dg, millard2012 as ml

# Tables of notes Sec. 3.1 (rounded to 6 decimals: rounding error <= 5e-7, so the comparison
# tolerance is 1e-6 absolute; the curves are O(1)).
TABLE_TOL = 1e-6
MILLARD_TABLES = {
    "active": ([0.5, 0.6, 0.73, 0.8, 0.9, 1.0, 1.1, 1.2, 1.4, 1.6, 0.4441, 0.3, 1.8123, 2.0],
               [0.117653, 0.451102, 0.806305, 0.870677, 0.956760, 1, 0.957376, 0.823681,
                0.543731, 0.263662, 0.1, 0.1, 0.1, 0.1]),
    "fv": ([-1.5, -1, -0.75, -0.5, -0.25, -0.1, 0, 0.1, 0.25, 0.5, 0.75, 1, 1.5],
           [0, 0, 0.051519, 0.158086, 0.387333, 0.625214, 1, 1.225154, 1.283211, 1.331132,
            1.369954, 1.4, 1.4]),
    "passive": ([0.9, 1.0, 1.05, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8],
                [0, 0, 0.006505, 0.017045, 0.049692, 0.126111, 0.262890, 0.460262, 0.717070,
                 1, 1.285714]),
    "tendon": ([0.95, 1.0, 1.01, 1.02, 1.03, 1.04, 1.049, 1.06],
               [0, 0, 0.099678, 0.260936, 0.479399, 0.747449, 1, 1.308673]),
}
# Notes Sec. 3.1 knots (x, y, slope): x, y printed to 5-7 decimals (compared at 1e-5
# absolute), slopes to 4-6 significant digits (2.857 = 2/0.7: compared at 1e-4 relative).
MILLARD_KNOTS = {
    "active": [(0.4441, 0.1, 0), (0.58705, 0.40522, 3.54341), (0.84, 0.90522, 0.8616),
               (1, 1, 0), (1.43115, 0.5, -1.40390), (1.8123, 0.1, 0)],
    "fv": [(-1, 0, 0), (-0.9, 0.0125, 0.25), (0, 1, 5), (0.9, 1.3925, 0.15), (1, 1.4, 0)],
    "passive": [(1, 0, 0), (1.035, 0.0035, 0.2), (1.7, 1, 2.857)],
    "tendon": [(1, 0, 0), (1.0144773, 0.1666667, 15.48205), (1.0371212, 0.6666667, 28.061)],
}
KNOT_TOL = 1e-5
SLOPE_RTOL = 1e-4


def _curves():
    return {"active": ml.active_force_length_curve(), "fv": ml.force_velocity_curve(),
            "passive": ml.fiber_force_length_curve(), "tendon": ml.tendon_force_length_curve()}


_value = jax.jit(bezier.value)
_deriv = jax.jit(bezier.derivative)
_integral = jax.jit(bezier.integral)


@pytest.mark.parametrize("name", ["active", "fv", "passive", "tendon"])
def test_millard_curves_match_notes_tables(name):
    curve = _curves()[name]
    x, expected = MILLARD_TABLES[name]
    got = np.asarray(_value(curve, jnp.array(x)))
    err = np.abs(got - np.array(expected))
    worst = int(err.argmax())
    assert err.max() <= TABLE_TOL, f"Millard {name}: |f - table| {err.max():.2e} at x={x[worst]}"


def test_millard_values_that_hold_by_construction():
    # OpenSim-confirmed identities (notes Sec. 3.1): f_L(1) = 1, f_V(0) = 1 with slope 5,
    # f_PE(1.7) = 1, f_T(1.049) = 1, f_T(x_toe) = 2/3. Roundoff only (u-solve to ~1e-16).
    c = _curves()
    x_toe = 1.049 - (1.0 / 3.0) / (1.375 / 0.049)
    checks = [(c["active"], 1.0, 1.0), (c["fv"], 0.0, 1.0), (c["passive"], 1.7, 1.0),
              (c["tendon"], 1.049, 1.0), (c["tendon"], x_toe, 2.0 / 3.0)]
    for curve, x, y in checks:
        assert float(_value(curve, x)) == pytest.approx(y, abs=1e-12)
    assert float(_deriv(c["fv"], 0.0)) == pytest.approx(5.0, abs=1e-10)


@pytest.mark.parametrize("name", ["active", "fv", "passive", "tendon"])
def test_millard_knots_and_slopes_match_notes(name):
    curve = _curves()[name]
    kx, ky = bezier.knots(curve)
    slopes = np.asarray(_deriv(curve, jnp.array(kx)))
    ref = np.array(MILLARD_KNOTS[name], dtype=float)
    for k, (x, y, d) in enumerate(ref):
        assert abs(kx[k] - x) <= KNOT_TOL * max(1, abs(x)), f"{name} knot {k} x"
        assert abs(ky[k] - y) <= KNOT_TOL, f"{name} knot {k} y"
        assert abs(slopes[k] - d) <= max(SLOPE_RTOL * abs(d), KNOT_TOL), f"{name} knot {k} slope"


FACTORY_DEFAULTS = {"e_t": 0.049, "e0": 0.0, "e1": 0.7, "x0": 0.4441, "x1": 0.73,
                    "x3": 1.8123, "s": 0.8616, "ylow": 0.1, "fmax": 1.4, "nc": 0.25, "ne": 0.15,
                    "iso": 5.0, "dc": 0.0, "de": 0.0}


def _factory_knots(e_t, e0, e1, x0, x1, x3, s, ylow, fmax, nc, ne, iso, dc, de):
    """Knots written out from OpenSim's SmoothSegmentedFunctionFactory formulas (independent of
    the library code path): active f_L, f_V, f_PE with default optional parameters, f_T."""
    xs = 0.95
    y1 = 1 - s * (xs - x1)
    active = [(x0, ylow, 0), (x0 + (x1 - x0) / 2, y1 / 2, 1.25 * y1 / (x1 - x0)),
              ((x1 + xs) / 2, (1 + y1) / 2, s), (1, 1, 0),
              (1.05 + (x3 - 1.05) / 2, 0.5, -1 / (x3 - 1.1)), (x3, ylow, 0)]
    fv = [(-1, 0, dc), (-0.9, 0.05 * (nc + dc), nc), (0, 1, iso),
          (0.9, fmax - 0.05 * (ne + de), ne), (1, fmax, de)]
    k_iso = 2 / (e1 - e0)
    dx = min(0.1 / k_iso, 0.1 * (e1 - e0))
    passive = [(1 + e0, 0, 0), (1 + e0 + dx, 0.2 * dx / 2, 0.2), (1 + e1, 1, k_iso)]
    k_t = 1.375 / e_t
    x_toe = 1 + e_t - (1 / 3) / k_t
    x_foot = 1 + (x_toe - 1) / 10
    x_mid = 1 + e_t - (2 / 3) / k_t
    d_mid = (1 / 3) / (x_mid - x_foot)
    x_c = (x_foot + x_mid) / 2
    tendon = [(1, 0, 0), (x_c, d_mid * (x_c - x_foot), d_mid), (x_toe, 2 / 3, k_t)]
    return {"active": active, "fv": fv, "passive": passive, "tendon": tendon}


@pytest.mark.parametrize("params", [
    {},
    {"e_t": 0.033, "e0": 0.05, "e1": 0.5, "x0": 0.5, "x1": 0.76, "x3": 1.7, "s": 0.6,
     "ylow": 0.02, "fmax": 1.8, "nc": 0.4, "ne": 0.3, "iso": 3.0, "dc": 0.05, "de": 0.1},
])
def test_millard_knot_slopes_equal_the_construction(params):
    # Knot positions, values there and the curve slope there (dy/dx by the implicit-function
    # theorem) equal the knots/slopes defined by OpenSim's factory, for default and
    # non-default parameters. Residual: roundoff (values 1e-12, slopes up to 40: 1e-9).
    d = {**FACTORY_DEFAULTS, **params}
    ref = _factory_knots(**d)
    curves = {
        "active": ml.active_force_length_curve(d["x0"], d["x1"], d["x3"], d["s"], d["ylow"]),
        "fv": ml.force_velocity_curve(d["dc"], d["nc"], d["iso"], d["de"], d["ne"], d["fmax"]),
        "passive": ml.fiber_force_length_curve(d["e0"], d["e1"]),
        "tendon": ml.tendon_force_length_curve(d["e_t"]),
    }
    for name, curve in curves.items():
        kx, ky = bezier.knots(curve)
        slopes = np.asarray(_deriv(curve, jnp.array(kx)))
        values = np.asarray(_value(curve, jnp.array(kx)))
        r = np.array(ref[name], dtype=float)
        np.testing.assert_allclose(kx, r[:, 0], atol=1e-12, err_msg=f"{name} knot x")
        np.testing.assert_allclose(ky, r[:, 1], atol=1e-12, err_msg=f"{name} knot y")
        np.testing.assert_allclose(values, r[:, 1], atol=1e-12, err_msg=f"{name} y at knots")
        np.testing.assert_allclose(slopes, r[:, 2], atol=1e-9, rtol=1e-10,
                                   err_msg=f"{name} slope at knots")


def test_millard_derivatives_match_central_differences():
    # dy/dx from the implicit-function theorem vs central differences, h = 1e-7: truncation
    # h^2 |y'''| / 6 <= 2e-8 (|y'''| reaches ~1e7 where the tendon toe leaves x = 1),
    # rounding eps |y| / h <= 3e-8 (|y| <= 1.8): tolerance 1e-7 (1 + |y'|).
    rng = np.random.default_rng(0)
    h = 1e-7
    ranges = {"active": (0.4, 1.85), "fv": (-1.05, 1.05), "passive": (0.95, 1.8),
              "tendon": (0.99, 1.06)}
    for name, curve in _curves().items():
        x = jnp.array(rng.uniform(*ranges[name], 40))
        fd = (_value(curve, x + h) - _value(curve, x - h)) / (2 * h)
        d = np.asarray(_deriv(curve, x))
        err = np.abs(d - np.asarray(fd)) / (1 + np.abs(d))
        assert err.max() <= 1e-7, f"{name}: dy/dx vs central difference {err.max():.2e}"


def test_millard_integrals_match_quad():
    # Exact Gauss-Legendre integral vs adaptive quadrature of the curve itself (knots as
    # break points); quad error < 1e-12 on these smooth pieces: tolerance 1e-10.
    c = _curves()
    f = jax.jit(lambda curve, x: bezier.value(curve, x))
    for name, x_end in (("passive", [0.9, 1.02, 1.2, 1.7, 1.9]),
                        ("tendon", [0.98, 1.005, 1.03, 1.049, 1.08])):
        curve = c[name]
        x0 = float(curve.x_lo)
        kx, _ = bezier.knots(curve)
        got = np.asarray(_integral(curve, jnp.array(x_end)))
        for xe, g in zip(x_end, got):
            pts = [k for k in kx if min(x0, xe) < k < max(x0, xe)]
            ref, _ = quad(lambda s: float(f(curve, s)), x0, xe, points=pts or None,
                          epsabs=1e-13, epsrel=1e-12, limit=200)
            assert abs(g - ref) <= 1e-10, f"{name} integral to {xe}: {g} vs quad {ref}"


def test_millard_force_velocity_inverse_round_trip():
    # OpenSim's inverse curve (end slopes 0.1) swaps the axes of the forward curve built with
    # the same parameters, so f_V(f_V^-1(f)) = f and f_V^-1(f_V(v)) = v to roundoff,
    # including the linear extensions.
    inv = ml.force_velocity_inverse_curve()
    fwd = ml.force_velocity_curve(concentric_slope_at_vmax=0.1, eccentric_slope_at_vmax=0.1)
    f = jnp.linspace(-0.2, 1.6, 181)
    v = jnp.linspace(-1.3, 1.3, 131)
    err_f = np.abs(np.asarray(_value(fwd, _value(inv, f)) - f)).max()
    err_v = np.abs(np.asarray(_value(inv, _value(fwd, v)) - v)).max()
    assert err_f <= 1e-12 and err_v <= 1e-12, (err_f, err_v)
    assert float(_value(inv, 1.0)) == pytest.approx(0.0, abs=1e-14)


def test_millard_gradient_wrt_control_points_matches_central_differences():
    # The implicit derivative also covers the control points (gradients reach curve
    # parameters): d f_T(1.02)/d e_T through the jnp construction, vs central differences
    # (h = 1e-7, truncation ~1e-10).
    @jax.jit
    def f(e):
        return bezier.value(ml.tendon_force_length_curve(e), 1.02)

    g = float(jax.jit(jax.grad(f))(0.049))
    h = 1e-7
    fd = (float(f(0.049 + h)) - float(f(0.049 - h))) / (2 * h)
    assert g == pytest.approx(fd, rel=1e-6)


@pytest.mark.parametrize("builder, kwargs, fragment", [
    (ml.active_force_length_curve, {"transition_norm_fiber_length": 0.4}, "transition"),
    (ml.active_force_length_curve, {"shallow_ascending_slope": 5.0}, "shallow_ascending_slope"),
    (ml.force_velocity_curve, {"max_eccentric_velocity_force_multiplier": 0.9}, "max_eccentric"),
    (ml.force_velocity_curve, {"isometric_slope": 0.5}, "isometric_slope"),
    (ml.force_velocity_inverse_curve, {"concentric_slope_at_vmax": 0.0}, "concentric_slope"),
    (ml.fiber_force_length_curve, {"strain_at_one_norm_force": -0.1}, "strain_at_one_norm"),
    (ml.fiber_force_length_curve, {"curviness": 0.5}, "must all be given"),
    (ml.tendon_force_length_curve, {"strain_at_one_norm_force": 0.0}, "strain_at_one_norm"),
    (ml.tendon_force_length_curve, {"stiffness_at_one_norm_force": 30.0,
                                    "norm_force_at_toe_end": 0.5, "curviness": 1.5}, "curviness"),
    # numbers only: "5" was 5.0, True 1.0 (refused by a range, if at all), None failed in JAX
    (ml.force_velocity_curve, {"isometric_slope": "5"},
     "ForceVelocityCurve: isometric_slope must be a number, got '5'"),
    (ml.active_force_length_curve, {"minimum_value": True},
     "ActiveForceLengthCurve: minimum_value must be a number, got True"),
    (ml.force_velocity_inverse_curve, {"isometric_slope": None},
     "ForceVelocityInverseCurve: isometric_slope must be a number, got None"),
    (ml.tendon_force_length_curve, {"strain_at_one_norm_force": "0.04"},
     "TendonForceLengthCurve: strain_at_one_norm_force must be a number, got '0.04'"),
])
def test_millard_bad_parameters_are_rejected(builder, kwargs, fragment):
    with pytest.raises(ValueError, match=fragment):
        builder(**kwargs)


# ----------------------------------------------------------------------------------------
# De Groote 2016
# ----------------------------------------------------------------------------------------

def test_degroote_opensim_test_values():
    # testDeGrooteFregly2016Muscle.cpp "Curve values" (notes Sec. 3.2), at OpenSim's stated
    # tolerances (1e-10 absolute; f_PE(1) rel 1e-4; f_V(1) = 1.794 rel 1e-3: OpenSim quotes
    # only 4 digits of 1.794343), and at 1e-6 absolute where the value has >= 6 digits.
    assert float(dg.tendon_force_length(1.0)) == pytest.approx(0.0, abs=1e-10)
    assert float(dg.tendon_force_length(1.049)) == pytest.approx(1.0, abs=1e-10)
    assert float(dg.passive_force_length(1.0)) == pytest.approx(0.0182288, rel=1e-4, abs=1e-6)
    assert float(dg.passive_force_length(0.2)) == pytest.approx(0.0, abs=1e-10)
    assert float(dg.passive_force_length(1.6)) == pytest.approx(1.0, abs=1e-10)
    assert float(dg.active_force_length(1.0)) == pytest.approx(1.0, abs=1e-10)
    assert float(dg.force_velocity(-1.0)) == pytest.approx(0.0, abs=1e-10)
    assert float(dg.force_velocity(0.0)) == pytest.approx(1.0, abs=1e-10)
    assert float(dg.force_velocity(1.0)) == pytest.approx(1.794, rel=1e-3)
    assert float(dg.tendon_stiffness_parameter(0.049)) == pytest.approx(36.5665, rel=1e-6)


def test_degroote_reimplementation_values():
    # Notes Sec. 3.2 re-implementation values (6-7 significant digits): 1e-6 absolute.
    l = [0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.1, 1.2, 1.4, 1.6, 1.8]
    fl = [0.025541, 0.054112, 0.302103, 0.684233, 0.836440, 0.937123, 0.953159, 0.793690,
          0.380243, 0.124255, 0.031282]
    v = [-0.75, -0.5, -0.25, -0.1, 0.1, 0.25, 0.5, 0.75, 1.0]
    fv = [0.096484, 0.234036, 0.470826, 0.745172, 1.206509, 1.400766, 1.588423, 1.707414,
          1.794343]
    lp = [0.8, 1.0, 1.2, 1.4, 1.5, 1.7]
    fpe = [0.0047399, 0.0182288, 0.0694012, 0.263532, 0.5133741, 1.9478179]
    lt = [1.01, 1.02, 1.03, 1.04, 1.06]
    ft = [0.088295, 0.215569, 0.399031, 0.663486, 1.594189]
    for name, got, ref in (("f_L", dg.active_force_length(jnp.array(l)), fl),
                           ("f_V", dg.force_velocity(jnp.array(v)), fv),
                           ("f_PE", dg.passive_force_length(jnp.array(lp)), fpe),
                           ("f_T", dg.tendon_force_length(jnp.array(lt)), ft)):
        err = np.abs(np.asarray(got) - np.array(ref))
        assert err.max() <= TABLE_TOL, f"De Groote {name}: worst error {err.max():.2e}"
    assert float(dg.force_velocity_inverse(0.5)) == pytest.approx(-0.229178, abs=TABLE_TOL)


def test_degroote_inverses_round_trip():
    # Closed-form inverses: f_V(f_V^-1(f)) = f, f_T(f_T^-1(f)) = f; roundoff only.
    f = jnp.linspace(0.0, 1.79, 80)
    assert np.abs(np.asarray(dg.force_velocity(dg.force_velocity_inverse(f)) - f)).max() <= 1e-13
    v = jnp.linspace(-1.0, 1.0, 41)
    assert np.abs(np.asarray(dg.force_velocity_inverse(dg.force_velocity(v)) - v)).max() <= 1e-13
    ft = jnp.linspace(0.0, 3.0, 31)
    for strain in (0.049, 0.1):
        back = dg.tendon_force_length(dg.tendon_force_length_inverse(ft, strain), strain)
        assert np.abs(np.asarray(back - ft)).max() <= 1e-13


def test_degroote_width_scale_stretches_the_active_curve():
    # OpenSim maps x = (l - 1)/s + 1: f_L with scale s at 1 + s d equals f_L(1 + d).
    d = jnp.linspace(-0.5, 0.6, 23)
    for s in (1.5, 2.0):
        np.testing.assert_allclose(np.asarray(dg.active_force_length(1 + s * d, s)),
                                   np.asarray(dg.active_force_length(1 + d)), atol=1e-14)


@pytest.mark.parametrize("strain", [0.6, 0.45])
def test_degroote_integrals_match_quad(strain):
    # Closed-form integrals vs adaptive quadrature of the curve (quad error < 1e-12).
    for l in (0.3, 0.9, 1.0, 1.4, 1.7):
        ref, _ = quad(lambda s: float(dg.passive_force_length(s, strain)),
                      dg.MIN_NORM_FIBER_LENGTH, l, epsabs=1e-14, epsrel=1e-13)
        got = float(dg.passive_force_length_integral(l, strain))
        assert got == pytest.approx(ref, abs=1e-11), f"f_PE integral to {l}"
    for lt in (0.98, 1.0, 1.02, 1.049, 1.07):
        ref, _ = quad(lambda s: float(dg.tendon_force_length(s, strain / 10)), 1.0, lt,
                      epsabs=1e-14, epsrel=1e-13)
        got = float(dg.tendon_force_length_integral(lt, strain / 10))
        assert got == pytest.approx(ref, abs=1e-11), f"f_T integral to {lt}"
    assert float(dg.tendon_zero_force_length()) == pytest.approx(1.0, abs=1e-15)
    assert math.isclose(float(dg.passive_force_length_integral(dg.MIN_NORM_FIBER_LENGTH)), 0.0,
                        abs_tol=1e-15)
