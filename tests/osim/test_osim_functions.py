"""OpenSim's Function types read by `osim.functions` and evaluated in JAX, against the opensim
4.6 package itself.

Each type is built through the opensim API (MultiplierFunction and the NaturalCubicSpline
alias: read by opensim from the same XML text ours reads) and compared at many x: random
inside and outside the knots, exactly at every knot, one ulp and 1e-13 / 3e-13 on either side
of each (OpenSim snaps to an end knot within 2e-13). Value, first and second derivative (ours
by jax.grad) against calcValue / calcDerivative([0]) / calcDerivative([0, 0]).

Tolerance: 1e-12 of the quantity's largest magnitude over the samples. The coefficients are
computed by the same float64 operations in the same order as OpenSim, so they are the same
numbers; what differs is XLA's evaluation (it may fuse a * b + c into one multiply-add: one
rounding instead of two) and the order of operations of autodiff's derivatives (b + dx (c +
dx d) + dx (c + 2 dx d) against OpenSim's b + dx (2 c + 3 dx d)): a few ulps of the largest
term (measured: <= 1.4e-15 of the scale over 95 random splines, <= 6e-16 for the gait
model's). A wrong end condition, extrapolation or interval choice at a knot shows at 1e-3 or
more; leaving out OpenSim's 2e-13 end-knot snapping or its side at a knot fails too.

GCVSpline (error variance 0) is compared with the GCVSpline opensim reads from the same XML,
with a tolerance of GCV_REL = 1e-10 of the scale: OpenSim refits it with Woltring's GCVSPL,
whose smoothing parameter stops at its floor 1e-15 / el, so its spline is the interpolating
natural spline only to roundoff amplified by the fit's conditioning, which grows with the
degree (measured over 11 random splines per degree and size: <= 3e-15 of the scale for degree
1, 3e-14 for 3, 5e-13 for 5, 1.1e-11 for 7 with the fewest points). A wrong degree, end
condition or extrapolation, or the other side at a degree-1 knot, shows at 1e-3 or more.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from myotwin.osim.errors import OsimError, Where
from myotwin.osim.functions import (Kind, evaluate, is_constant_zero, is_identity,
                                    piecewise_polynomial, read_function)
from opensim_live import opensim_package
from shared_reference import SHARED, needs

opensim = opensim_package()

GAIT = SHARED / "reference/opensim/models/gait10dof18musc_subject01.osim"
OWNER = Where("test.osim", "TransformAxis", "translation1", "CustomJoint knee_r")
REL = 1e-12
GCV_REL = 1e-10
XY_TYPES = {"SimmSpline": opensim.SimmSpline,
            "PiecewiseLinearFunction": opensim.PiecewiseLinearFunction,
            "PiecewiseConstantFunction": opensim.PiecewiseConstantFunction}


def _words(values) -> str:
    return " ".join(repr(float(v)) for v in values)


def _xy_element(tag: str, x, y) -> ET.Element:
    return ET.fromstring(f"<{tag} name='function'><x>{_words(x)}</x><y>{_words(y)}</y></{tag}>")


def _opensim_from_xml(tmp_path, text: str):
    """An opensim Function read by opensim from `text` (one function element)."""
    path = tmp_path / "function.xml"
    path.write_text('<?xml version="1.0" encoding="UTF-8" ?>\n'
                    f'<OpenSimDocument Version="40000">{text}</OpenSimDocument>')
    obj = opensim.OpenSimObject.makeObjectFromFile(str(path))
    return obj, opensim.Function.safeDownCast(obj)  # keep obj: it owns the function


def _samples(knots, rng, lo=-1.0, hi=1.0) -> np.ndarray:
    """Random points within and beyond the knots, and every knot exactly, one ulp and 1e-13,
    3e-13 on either side."""
    knots = np.asarray(knots, dtype=float)
    a, b = (knots[0], knots[-1]) if knots.size else (lo, hi)
    near = [knots, np.nextafter(knots, -np.inf), np.nextafter(knots, np.inf)]
    near += [knots + s for s in (-3e-13, -1e-13, 1e-13, 3e-13)]
    return np.concatenate([rng.uniform(a - 1.0, b + 1.0, 150), *near])


def _opensim_values(function, xs) -> np.ndarray:
    """(n, 3) value, first and second derivative by opensim."""
    rows = []
    for x in xs:
        v = opensim.Vector(1, float(x))
        rows.append((function.calcValue(v), function.calcDerivative([0], v),
                     function.calcDerivative([0, 0], v)))
    return np.array(rows)


@jax.jit
def _three(fn, xs):
    """(n, 3) value, first and second derivative: vmap of evaluate and its grads (`fn` a jit
    argument, so one compilation serves every function of the same structure)."""
    d1 = jax.grad(evaluate, argnums=1)
    d2 = jax.grad(d1, argnums=1)
    return jax.vmap(lambda q: jnp.stack([evaluate(fn, q), d1(fn, q), d2(fn, q)]))(xs)


def _ours(fn, xs) -> np.ndarray:
    return np.asarray(_three(fn, jnp.asarray(xs)))


def _agree(fn, function, xs, what: str, rel: float = REL) -> None:
    """Assert agreement to `rel` of each quantity's scale (module docstring)."""
    expected = _opensim_values(function, xs)
    got = _ours(fn, xs)
    for j, quantity in enumerate(("value", "first derivative", "second derivative")):
        scale = np.max(np.abs(expected[:, j]))
        error = np.abs(got[:, j] - expected[:, j])
        i = int(np.argmax(error))
        assert error[i] <= rel * scale, (
            f"{what}: {quantity} at x = {xs[i]!r}: ours {got[i, j]!r}, OpenSim "
            f"{expected[i, j]!r} (scale {scale:.3g})")


# ---------------------------------------------------------------- each type against OpenSim

@pytest.mark.parametrize("tag, n", [(tag, n) for tag in XY_TYPES for n in (1, 2, 3, 4, 5, 9)
                                    if n >= (1 if tag == "PiecewiseConstantFunction" else 2)])
def test_xy_functions_match_opensim(tag, n):
    # 2, 3 and more than 3 points: the three cases of SimmSpline's end conditions
    rng = np.random.default_rng(100 + n)
    x = np.sort(rng.uniform(-2.0, 2.0, n))
    y = rng.normal(0.0, 0.1, n)
    function = XY_TYPES[tag]()
    for a, b in zip(x, y):
        function.addPoint(float(a), float(b))
    fn = read_function(_xy_element(tag, x, y), OWNER)
    assert fn.kind.value == tag
    _agree(fn, function, _samples(x, rng), f"{tag} of {n} points")


def test_simm_spline_of_close_knots_matches_opensim():
    # Knots 1.7e-4 apart (as in the gait model's moving points) and one gap below OpenSim's
    # TINY_NUMBER = 1e-7, which it widens to 1e-7 in the coefficients only.
    x = np.array([-0.3, 0.0, 0.00017453, 0.00034907, 0.02, 0.02 + 5e-8, 0.1])
    y = np.array([0.04, 0.0617576, 0.0617669, 0.0617762, 0.063, 0.0631, 0.07])
    function = opensim.SimmSpline()
    for a, b in zip(x, y):
        function.addPoint(float(a), float(b))
    fn = read_function(_xy_element("SimmSpline", x, y), OWNER)
    _agree(fn, function, _samples(x, np.random.default_rng(3)), "close knots")


@pytest.mark.parametrize("kind, make, text", [
    ("Constant", lambda: opensim.Constant(-0.37), "<value>-0.37</value>"),
    ("LinearFunction", lambda: opensim.LinearFunction(2.5, -0.3),
     "<coefficients>2.5 -0.3</coefficients>"),
    ("PolynomialFunction", lambda: _polynomial([0.3, -1.2, 0.7, 2.0, -0.5]),
     "<coefficients>0.3 -1.2 0.7 2.0 -0.5</coefficients>"),
    ("PolynomialFunction", lambda: _polynomial([4.2]), "<coefficients>4.2</coefficients>"),
])
def test_constant_linear_and_polynomial_match_opensim(kind, make, text):
    fn = read_function(ET.fromstring(f"<{kind}>{text}</{kind}>"), OWNER)
    _agree(fn, make(), _samples([], np.random.default_rng(5), -3.0, 3.0), kind)


def _polynomial(coefficients):
    vector = opensim.Vector(len(coefficients), 0.0)
    for i, c in enumerate(coefficients):
        vector.set(i, c)
    return opensim.PolynomialFunction(vector)


SCALED_KNEE_SPLINE = (  # gait10dof18musc_subject01.osim, knee_r translation2
    "<MultiplierFunction name='function'><function><SimmSpline>"
    "<x> -2.0944 -1.22173 -0.523599 -0.349066 -0.174533 0.159149 2.0944</x>"
    "<y> -0.4226 -0.4082 -0.399 -0.3976 -0.3966 -0.395264 -0.396</y>"
    "</SimmSpline></function><scale>1.14724</scale></MultiplierFunction>")
NESTED_MULTIPLIERS = (
    "<MultiplierFunction><function><MultiplierFunction><function><PiecewiseLinearFunction>"
    "<x>0 1 3</x><y>1 -2 0.5</y></PiecewiseLinearFunction></function><scale>-0.7</scale>"
    "</MultiplierFunction></function><scale>3.25</scale></MultiplierFunction>")
NATURAL_CUBIC_SPLINE = ("<NaturalCubicSpline><x>0 0.5 1.5 2 3.5</x>"
                        "<y>0.1 0.4 -0.2 0.3 0</y></NaturalCubicSpline>")


@pytest.mark.parametrize("text", [SCALED_KNEE_SPLINE, NESTED_MULTIPLIERS, NATURAL_CUBIC_SPLINE],
                         ids=["scaled_knee_spline", "nested_multipliers", "NaturalCubicSpline"])
def test_multipliers_and_the_natural_cubic_spline_alias_match_opensim(tmp_path, text):
    owner, function = _opensim_from_xml(tmp_path, text)
    fn = read_function(ET.fromstring(text), OWNER)
    _agree(fn, function, _samples([-2.1, 3.5], np.random.default_rng(9)), text[:40])
    if text is NATURAL_CUBIC_SPLINE:  # OpenSim 4 maps the old name to SimmSpline
        assert function.getConcreteClassName() == "SimmSpline" and fn.kind is Kind.SIMM_SPLINE


@pytest.mark.parametrize("text, knots", [
    ("<StepFunction><transition_start_time>0.1</transition_start_time><transition_end_time>0.3"
     "</transition_end_time><start_value>0.05</start_value><end_value>0.8</end_value>"
     "</StepFunction>", [0.1, 0.3]),
    ("<StepFunction><transition_start_time>0.5</transition_start_time><transition_end_time>0.3"
     "</transition_end_time><start_value>0.2</start_value><end_value>-1</end_value>"
     "</StepFunction>", [0.3, 0.5]),       # a transition written right to left
    ("<StepFunction/>", [0.99, 1.01]),      # OpenSim's defaults
    ("<Sine><amplitude>0.2</amplitude><omega>6</omega><phase>0.1</phase><offset>0.3</offset>"
     "</Sine>", [-2.0, 2.0]),
    ("<Sine/>", [-2.0, 2.0]),
    ("<MultiplierFunction><function><Sine><omega>-3</omega></Sine></function><scale>0.5"
     "</scale></MultiplierFunction>", [-1.0, 1.0]),
], ids=["step", "step_reversed", "step_defaults", "sine", "sine_defaults", "scaled_sine"])
def test_step_and_sine_match_opensim(tmp_path, text, knots):
    # Functions of time (a PrescribedController's), read with sine=True; the step's value
    # and both derivatives inside, outside and at its ends (C2 there: a wrong quintic or a
    # swapped side shows at 1e-2).
    owner, function = _opensim_from_xml(tmp_path, text)
    fn = read_function(ET.fromstring(text), OWNER, sine=True)
    _agree(fn, function, _samples(knots, np.random.default_rng(17)), text[:30])


def test_a_sine_is_refused_where_a_polynomial_is_needed_and_a_step_needs_a_transition():
    with pytest.raises(OsimError, match="Sine is not a supported function type here"):
        read_function(ET.fromstring("<Sine/>"), OWNER)
    with pytest.raises(OsimError, match="Sine is not a supported function type here"):
        read_function(ET.fromstring("<MultiplierFunction><function><Sine/></function>"
                                    "</MultiplierFunction>"), OWNER)
    step = "<StepFunction><transition_start_time>0.3</transition_start_time>" \
           "<transition_end_time>0.3</transition_end_time></StepFunction>"
    with pytest.raises(OsimError, match="must differ .* both are 0.3"):
        read_function(ET.fromstring(step), OWNER, sine=True)
    with pytest.raises(ValueError, match="Sine is not a piecewise polynomial"):
        piecewise_polynomial(read_function(ET.fromstring("<Sine/>"), OWNER, sine=True))
    assert is_constant_zero(read_function(ET.fromstring("<Sine><amplitude>0</amplitude>"
                                                        "</Sine>"), OWNER, sine=True))
    assert not is_constant_zero(read_function(ET.fromstring("<Sine/>"), OWNER, sine=True))


def test_gait_knee_and_moving_point_functions_match_opensim(tmp_path):
    # Every function of the knees' TransformAxes and of the MovingPathPoints, read from the
    # file by both, over the knee angle and beyond (the knots span -2.0944 .. 2.0944).
    root = ET.parse(needs(GAIT)).getroot()
    places = [("TransformAxis", f"{j.get('name')}/{a.get('name')}", a[-1])
              for j in root.iter("CustomJoint") if j.get("name") in ("knee_r", "knee_l")
              for a in j.iter("TransformAxis")]
    places += [("MovingPathPoint", f"{p.get('name')}/{loc}", p.find(loc)[0])
               for p in root.iter("MovingPathPoint")
               for loc in ("x_location", "y_location", "z_location")]
    splines = [name for _, name, e in places if e.find(".//SimmSpline") is not None]
    assert len(places) == 24 and len(splines) == 16, "gait model: 4 knee + 12 point splines"
    rng = np.random.default_rng(11)
    for tag, name, elem in places:
        owner, function = _opensim_from_xml(tmp_path, ET.tostring(elem, encoding="unicode"))
        fn = read_function(elem, Where(GAIT.name, tag, name))
        knots = [float(v) for v in (elem.findtext(".//x") or "0").split()]
        _agree(fn, function, _samples(knots, rng), name)
        zero_axis = name.endswith(("rotation2", "rotation3", "translation3"))
        assert is_constant_zero(fn) == zero_axis, name
        assert is_identity(fn) == name.endswith("rotation1"), name


def _gcv_text(half, x, y, extra="<error_variance>0</error_variance>") -> str:
    return (f"<GCVSpline name='function'><half_order>{half}</half_order>{extra}"
            f"<x>{_words(x)}</x><y>{_words(y)}</y></GCVSpline>")


@pytest.mark.parametrize("half, extra_points", [(h, e) for h in (1, 2, 3, 4) for e in (0, 6)])
def test_gcv_splines_match_opensim_reading_the_same_xml(tmp_path, half, extra_points):
    # Degree 2 half - 1 with the fewest points it allows and with 6 more; irregular knots
    # (gaps from 0.03 to 1). Within, at, one ulp and 1e-13 from the knots, and beyond both ends.
    degree = 2 * half - 1
    rng = np.random.default_rng(40 + 10 * half + extra_points)
    x = np.cumsum(rng.uniform(0.03, 1.0, degree + 1 + extra_points)) - 1.0
    y = rng.normal(0.0, 0.1, x.size)
    text = _gcv_text(half, x, y)
    owner, function = _opensim_from_xml(tmp_path, text)
    assert function.getConcreteClassName() == "GCVSpline"
    fn = read_function(ET.fromstring(text), OWNER)
    assert fn.kind is Kind.GCV_SPLINE and fn.coefficients.shape[1] == degree + 1
    xs = _samples(x, rng)
    _agree(fn, function, xs, f"GCVSpline of degree {degree}, {x.size} points", rel=GCV_REL)
    # the engine's form: the same pieces between the knots and beyond them
    p = piecewise_polynomial(fn)
    between = xs[:150]
    piece = np.sum(between[:, None] >= p.breaks, axis=1)
    u = between - p.origins[piece]
    value = sum(p.coefficients[piece, j] * u ** j for j in range(degree + 1))
    np.testing.assert_allclose(value, _ours(fn, between)[:, 0], rtol=1e-13, atol=1e-15)


def test_gcv_spline_as_opensim_writes_it_matches_opensim(tmp_path):
    # OpenSim writes <weights> and <coefficients> too and ignores both when it reads (it
    # refits from x and y); no <error_variance> means 0.
    x = np.array([-1.2, -0.9, -0.1, 0.05, 0.4, 1.3, 1.35, 2.0])
    y = np.array([0.3, 0.1, -0.2, 0.25, 0.0, 0.4, 0.41, -0.1])
    extra = f"<weights>{_words(np.arange(1.0, 9.0))}</weights><coefficients>1 2 3</coefficients>"
    text = _gcv_text(3, x, y, extra)
    owner, function = _opensim_from_xml(tmp_path, text)
    fn = read_function(ET.fromstring(text), OWNER)
    _agree(fn, function, _samples(x, np.random.default_rng(8)), "as written", rel=GCV_REL)


# ---------------------------------------------------------------- JAX transformations

def _knee_spline():
    text = ("<MultiplierFunction><function><SimmSpline><x>-2 -1 -0.2 0.3 1.5 2</x>"
            "<y>-0.0032 0.0041 0.0021 -0.0052 -0.0054 -0.0052</y></SimmSpline></function>"
            "<scale>1.14724</scale></MultiplierFunction>")
    return read_function(ET.fromstring(text), OWNER)


def test_evaluate_jits_vmaps_and_differentiates():
    fn = _knee_spline()
    xs = jnp.linspace(-2.5, 2.5, 41)
    scalar = jax.jit(lambda q: evaluate(fn, q))  # the function closed over: constants
    one_by_one = np.array([float(scalar(x)) for x in xs])
    np.testing.assert_array_equal(np.asarray(jax.jit(jax.vmap(scalar))(xs)), one_by_one)
    np.testing.assert_array_equal(np.asarray(scalar(xs)), one_by_one, "elementwise on arrays")
    # the function is a pytree: an argument of a jitted function, gradients reach its leaves
    np.testing.assert_array_equal(np.asarray(jax.jit(evaluate)(fn, xs)), one_by_one)
    d_scale = jax.jit(jax.grad(lambda f: evaluate(f, 0.1)))(fn).scale
    inner = jax.jit(lambda q: evaluate(fn.inner, q))
    assert float(d_scale) == pytest.approx(float(inner(0.1)), rel=1e-15)
    # grad against central differences (h = 1e-6: truncation ~h^2 f''' ~ 1e-14, rounding
    # ~1e-16 |f| / h ~ 1e-12), away from the knots where the cubic is smooth
    grad = jax.jit(jax.vmap(jax.grad(scalar)))
    pts = jnp.array([-2.3, -1.5, -0.5, 0.0, 0.9, 1.8, 2.4])
    h = 1e-6
    central = (scalar(pts + h) - scalar(pts - h)) / (2 * h)
    np.testing.assert_allclose(np.asarray(grad(pts)), np.asarray(central), rtol=0, atol=1e-9)


def test_piecewise_polynomial_reproduces_evaluate_between_knots():
    fn = _knee_spline()
    p = piecewise_polynomial(fn)
    xs = np.array([-3.0, -1.7, -0.6, 0.0, 0.7, 1.9, 2.0 + 1e-9, 4.0])  # no knot, no window
    piece = np.sum(xs[:, None] >= p.breaks, axis=1)
    u = xs - p.origins[piece]
    value = sum(p.coefficients[piece, j] * u ** j for j in range(p.coefficients.shape[1]))
    ours = np.asarray(jax.jit(evaluate)(fn, jnp.asarray(xs)))
    np.testing.assert_allclose(value, ours, rtol=1e-14, atol=1e-18)


def test_constant_zero_and_identity():
    def read(text):
        return read_function(ET.fromstring(text), OWNER)

    assert is_constant_zero(read("<Constant><value>0</value></Constant>"))
    assert is_constant_zero(read("<Constant/>")), "OpenSim's default value is 0"
    assert is_constant_zero(read("<MultiplierFunction><function><Constant><value>-0</value>"
                                 "</Constant></function><scale>2</scale></MultiplierFunction>"))
    assert is_constant_zero(read("<SimmSpline><x>0 1 2</x><y>0 0 0</y></SimmSpline>"))
    assert not is_constant_zero(read("<Constant><value>1e-300</value></Constant>"))
    assert not is_constant_zero(read("<LinearFunction><coefficients>1 0</coefficients>"
                                     "</LinearFunction>"))
    assert is_identity(read("<LinearFunction><coefficients> 1 0</coefficients>"
                            "</LinearFunction>"))
    assert is_identity(read("<LinearFunction/>")), "OpenSim's default coefficients are (1, 0)"
    assert not is_identity(read("<LinearFunction><coefficients>1 1e-17</coefficients>"
                                "</LinearFunction>"))
    assert not is_identity(read("<PolynomialFunction><coefficients>1 0</coefficients>"
                                "</PolynomialFunction>"))


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("text, expected", [
    ("<GCVSpline name='f'><half_order>2</half_order><error_variance>0.01</error_variance>"
     "<x>0 1 2 3</x><y>0 1 0 1</y></GCVSpline>",
     ["GCVSpline 'f'", "<error_variance> must be 0", "'0.01'", "smoothing"]),
    ("<GCVSpline><half_order>2</half_order><error_variance>-1</error_variance>"
     "<x>0 1 2 3</x><y>0 1 0 1</y></GCVSpline>",
     ["<error_variance> must be 0", "'-1'", "cross-validation"]),
    ("<GCVSpline><x>0 1 2 3</x><y>0 1 0 1</y></GCVSpline>",
     ["GCVSpline", "required property <half_order> is missing"]),
    ("<GCVSpline><half_order>5</half_order><x>0 1 2 3</x><y>0 1 0 1</y></GCVSpline>",
     ["<half_order> must be 1, 2, 3 or 4", "'5'"]),
    ("<GCVSpline><half_order>two</half_order><x>0 1 2 3</x><y>0 1 0 1</y></GCVSpline>",
     ["<half_order> must be 1, 2, 3 or 4", "'two'"]),
    ("<GCVSpline><half_order>3</half_order><x>0 1 2 3 4</x><y>0 1 0 1 0</y></GCVSpline>",
     ["GCVSpline of <half_order> 3 (degree 5) needs at least 6 points, got 5", "'0 1 2 3 4'"]),
    ("<GCVSpline><half_order>1</half_order><x>0 1 1</x><y>0 1 2</y></GCVSpline>",
     ["GCVSpline", "strictly increasing", "'1' then '1'"]),
    ("<GCVSpline><half_order>1</half_order><x>0 1</x><y>0 1 2</y></GCVSpline>",
     ["same length", "2 values in <x>"]),
    ("<GCVSpline><half_order>1</half_order><degree>1</degree><x>0 1</x><y>0 1</y></GCVSpline>",
     ["<degree> is not part of"]),
    ("<GCVSpline><half_order>1</half_order><x>0 1</x><y>0 1</y><weights>1 w</weights>"
     "</GCVSpline>", ["<weights> must be numbers", "'1 w'"]),
    ("<ExpressionBasedFunction/>", ["ExpressionBasedFunction", "not a supported function type"]),
    ("<SimmSpline><x>0 2 1</x><y>0 1 2</y></SimmSpline>",
     ["strictly increasing", "'2' then '1'", "'0 2 1'"]),
    ("<PiecewiseLinearFunction><x>0 1 1</x><y>0 1 2</y></PiecewiseLinearFunction>",
     ["PiecewiseLinearFunction", "strictly increasing", "'1' then '1'"]),
    ("<SimmSpline><x>0 1 2</x><y>0 1</y></SimmSpline>",
     ["same length", "3 values in <x> ('0 1 2')", "2 in <y> ('0 1')"]),
    ("<SimmSpline><x>0.5</x><y>1</y></SimmSpline>", ["at least 2 points, got 1", "'0.5'"]),
    ("<PiecewiseConstantFunction><x/><y/></PiecewiseConstantFunction>",
     ["at least 1 points, got 0"]),
    ("<SimmSpline><y>1 2</y></SimmSpline>", ["required property <x> is missing"]),
    ("<SimmSpline><x>0 1 a</x><y>0 1 2</y></SimmSpline>", ["<x> must be numbers", "'0 1 a'"]),
    ("<SimmSpline><x>0 1 2</x><y>0 nan 2</y></SimmSpline>", ["<y> must be finite", "'0 nan 2'"]),
    ("<SimmSpline><x>0 1</x><y>0 1</y><z>3</z></SimmSpline>", ["<z> is not part of"]),
    ("<LinearFunction><coefficients>1 0 2</coefficients></LinearFunction>",
     ["<coefficients> must be 2 numbers", "'1 0 2'"]),
    ("<Constant><value>one</value></Constant>", ["<value> must be a number", "'one'"]),
    ("<PolynomialFunction><coefficients/></PolynomialFunction>", ["at least one number"]),
    ("<MultiplierFunction><function/><scale>2</scale></MultiplierFunction>",
     ["<function> must hold exactly one function, got []"]),
    ("<MultiplierFunction><scale>2</scale></MultiplierFunction>", ["<function> is missing"]),
    ("<MultiplierFunction><function><Constant/></function><scale>inf</scale>"
     "</MultiplierFunction>", ["<scale> must be finite", "'inf'"]),
    ("<MultiplierFunction><function><SimmSpline><x>1 0</x><y>0 1</y></SimmSpline></function>"
     "</MultiplierFunction>", ["SimmSpline (MultiplierFunction, TransformAxis translation1, "
                               "CustomJoint knee_r)", "'1' then '0'"]),
])
def test_bad_input_is_an_osim_error_naming_file_element_and_value(text, expected):
    with pytest.raises(OsimError) as info:
        read_function(ET.fromstring(text), OWNER)
    message = str(info.value)
    for part in ("test.osim", "TransformAxis translation1", *expected):
        assert part in message, f"{part!r} not in {message!r}"
