"""OpenSim `Function`s of one coordinate, read from .osim XML and evaluated in JAX.

    fn = read_function(elem, axis.where)    # elem: <SimmSpline>, <MultiplierFunction>, ...
    evaluate(fn, q)                         # pure; jit, vmap and grad go through it

A TransformAxis function or a MovingPathPoint location is then a jittable, differentiable
function of its coordinate. Types: Constant, LinearFunction, PolynomialFunction, SimmSpline
(with OpenSim 4's aliases NaturalCubicSpline and natCubicSpline, which its type registry maps
to SimmSpline), PiecewiseLinearFunction, PiecewiseConstantFunction, MultiplierFunction,
GCVSpline with error variance 0 (the interpolating spline; a smoothing fit is refused),
StepFunction, and Sine where a function of time is read (`read_function(..., sine=True)`: a
controller's; geometry takes piecewise polynomials only).

Each type is stored as a piecewise polynomial: its coefficients are computed once, in NumPy,
by the same double-precision operations in the same order as OpenSim (so they are the same
numbers; GCVSpline's are the exact interpolant, see below); `evaluate` picks the piece
branch-free (a comparison count) and runs Horner's rule. First and second derivatives come
from autodiff and equal OpenSim's calcDerivative up to rounding. OpenSim's rules
(opensim-core OpenSim/Common/*.cpp, SimTK::Function):

* SimmSpline: Forsythe, Malcolm & Moler's cubic spline (Computer Methods for Mathematical
  Computations, 1977, SPLINE). The third derivative at each end knot equals that of the
  cubic through the four end points (divided differences); 3 points give the parabola
  through them, 2 points the straight line. Knot spacings are taken as at least
  TINY_NUMBER = 1e-7. Outside [x_0, x_n-1]: the straight line through the end point with
  the end slope (second derivative 0). Within ROUNDOFF_ERROR = 2e-13 inside an end knot:
  that knot's value, slope and second derivative.
* PiecewiseLinearFunction: the same extrapolation and end-knot rules, slopes
  (y_k+1 - y_k) / max(1e-7, x_k+1 - x_k); the last slope is continued to the right.
* PiecewiseConstantFunction: y_k between x_k and x_k+1 (each value holds up to the next
  knot), y_0 left of x_0 too, y_n-1 from 2e-13 below the last knot on; derivatives are 0.
* At an interior knot hit exactly, OpenSim's bisection picks the interval on one side or
  the other (by the knot's index); the same side is picked here, so kinks (piecewise
  linear slopes) and jumps (piecewise constant values) agree there too.
* GCVSpline (half_order m = 1..4, error_variance, x, y, weights, coefficients): OpenSim 4.6
  refits it whenever it is read (createSimTKFunction: Simbody's SplineFitter, Woltring's
  GCVSPL, from x and y with the stored error_variance; a negative one means a fit by
  generalized cross-validation); the stored weights and coefficients are not used. With
  variance 0 the smoothing parameter goes to its floor and the fit is the natural spline of
  degree 2m - 1 through the points (derivatives m .. 2m-2 zero at both ends) to roundoff
  (`signals.natural_spline`; scipy's PPoly.from_spline gives its pieces); outside the knots
  Simbody's SPLDER continues it by the Taylor polynomial of degree m - 1 at the end knot. At a
  knot hit exactly it takes the interval to the right of the knot (the right tail at the last
  one), which matters for m = 1 only; there is no end-knot snapping. Its coefficients are
  therefore not OpenSim's numbers but the same spline up to the fit's roundoff (~1e-15 to
  1e-11 of the scale, growing with the degree). Refused: a non-zero error_variance (a smoothing
  fit), fewer than 2m points (OpenSim fails too), a half_order other than 1..4 (degrees 1, 3,
  5, 7: the ones GCVSpline::setDegree allows; OpenSim fails on the default 0).
* StepFunction (transition_start_time x0, transition_end_time x1, start_value y0, end_value
  y1; SimTK::Function::Step): y0 on x0's side of the transition, y1 on x1's side, and
  y0 + (y1 - y0) s(u), u = (x - x0) / (x1 - x0), in between, with the quintic s(u) = 10 u^3 -
  15 u^4 + 6 u^5 (C2 at both ends). x1 may precede x0 (then y1 is on the left); x0 = x1 is
  refused (Simbody refuses it). Stored as three polynomial pieces; no end-knot snapping.
* Sine (amplitude A, omega w rad per unit of x, phase p, offset c): A sin(w x + p) + c.
* LinearFunction: coefficients (slope, intercept), slope * x + intercept. PolynomialFunction:
  coefficients from the highest power down, Horner's rule. MultiplierFunction: the inner
  function times `scale`, derivatives likewise.
* Absent properties take OpenSim's defaults: Constant value 0, LinearFunction (1, 0),
  PolynomialFunction (1,), MultiplierFunction scale 1, GCVSpline error_variance 0 (its
  half_order defaults to 0, on which OpenSim fails: required here), StepFunction (0.99, 1.01,
  0, 1), Sine (1, 1, 0, 0).
"""

from __future__ import annotations

import dataclasses
import enum
import math
import xml.etree.ElementTree as ET

import jax
import jax.numpy as jnp
import numpy as np
from scipy.interpolate import PPoly

from myotwin.engine.coupling import PiecewisePolynomial
from myotwin.osim.errors import Where
from myotwin.osim.signals import natural_spline
from myotwin.osim.xml_values import Node

#: OpenSim's SimmMacros.h: the smallest knot spacing used, and the end-knot snapping window.
TINY_NUMBER = 1e-7
ROUNDOFF_ERROR = 2e-13


class Kind(enum.Enum):
    """The OpenSim function type (aliases of SimmSpline are SIMM_SPLINE)."""

    CONSTANT = "Constant"
    LINEAR = "LinearFunction"
    POLYNOMIAL = "PolynomialFunction"
    SIMM_SPLINE = "SimmSpline"
    PIECEWISE_LINEAR = "PiecewiseLinearFunction"
    PIECEWISE_CONSTANT = "PiecewiseConstantFunction"
    MULTIPLIER = "MultiplierFunction"
    GCV_SPLINE = "GCVSpline"
    STEP = "StepFunction"
    SINE = "Sine"


_TAGS = {**{k.value: k for k in Kind}, "NaturalCubicSpline": Kind.SIMM_SPLINE,
         "natCubicSpline": Kind.SIMM_SPLINE}
_XY = {Kind.SIMM_SPLINE: 2, Kind.PIECEWISE_LINEAR: 2, Kind.PIECEWISE_CONSTANT: 1}  # min points
#: GCVSpline's properties (OpenSim 4.6 GCVSpline::setupProperties); weights and coefficients
#: are read past: the fit uses neither (createSimTKFunction refits from x, y and overwrites
#: the coefficients).
_GCV_PROPERTIES = ("half_order", "error_variance", "x", "y", "weights", "coefficients")
_STEP_PROPERTIES = ("transition_start_time", "transition_end_time", "start_value",
                    "end_value")
_SINE_PROPERTIES = ("amplitude", "omega", "phase", "offset")
_STATIC = {"static": True}


@dataclasses.dataclass(frozen=True, eq=False)
class OsimFunction:
    """One OpenSim function of one variable (a JAX pytree; see the module docstring).

    Leaves (float64, NumPy): knots (n_knots,); origins (n_pieces,) and coefficients
      (n_pieces, degree + 1): piece p is sum_j coefficients[p, j] (x - origins[p])**j;
      scale: the MultiplierFunction factor (1 otherwise); inner: the multiplied function (a
      MultiplierFunction's own knots, origins and coefficients are unused placeholders).
    Pieces of an x-y function (n_knots = n): 0 left of x_0, 1 + k on [x_k, x_k+1), n right
      of x_n-1, n + 1 at the last knot. Functions without knots have one piece.
    Static: kind, tag (as written), tie_pieces (n_knots,): the piece OpenSim uses when x
      equals that knot exactly.
    """

    knots: np.ndarray
    origins: np.ndarray
    coefficients: np.ndarray
    scale: float = 1.0
    inner: OsimFunction | None = None
    kind: Kind = dataclasses.field(default=Kind.CONSTANT, metadata=_STATIC)
    tag: str = dataclasses.field(default="Constant", metadata=_STATIC)
    tie_pieces: tuple[int, ...] = dataclasses.field(default=(), metadata=_STATIC)


_DATA = [f.name for f in dataclasses.fields(OsimFunction) if not f.metadata.get("static")]
_META = [f.name for f in dataclasses.fields(OsimFunction) if f.metadata.get("static")]
jax.tree_util.register_dataclass(OsimFunction, data_fields=_DATA, meta_fields=_META)


# ---------------------------------------------------------------- evaluation

def evaluate(fn: OsimFunction, x) -> jax.Array:
    """The value of `fn` at x (any shape, elementwise), as OpenSim's calcValue; jax.grad of
    it gives calcDerivative's first and second derivatives, at the knots too."""
    if fn.kind is Kind.MULTIPLIER:
        return evaluate(fn.inner, x) * fn.scale
    x = jnp.asarray(x)
    if fn.kind is Kind.SINE:
        amplitude, omega, phase, offset = (fn.coefficients[0, j] for j in range(4))
        return amplitude * jnp.sin(omega * x + phase) + offset
    n = len(fn.tie_pieces)
    if n == 0:
        piece = jnp.zeros(x.shape, dtype=int)
        dx = x - fn.origins[0]
    else:
        knots = jnp.asarray(fn.knots)
        count = jnp.sum(x[..., None] >= knots, axis=-1)        # knots at or left of x
        nearest = jnp.clip(count - 1, 0, n - 1)
        tie = jnp.asarray(fn.tie_pieces)[nearest]
        piece = jnp.where(x == knots[nearest], tie, count)
        dx = x - jnp.asarray(fn.origins)[piece]
        if fn.kind not in (Kind.GCV_SPLINE, Kind.STEP):  # Simbody's do not snap to the ends
            near_first = (x >= knots[0]) & (jnp.abs(x - knots[0]) <= ROUNDOFF_ERROR)
            near_last = (x <= knots[-1]) & (jnp.abs(x - knots[-1]) <= ROUNDOFF_ERROR)
            piece = jnp.where(near_first, 1, jnp.where(near_last, n + 1, piece))
            dx = x - jnp.asarray(fn.origins)[piece]
            # Snapped to an end knot: OpenSim evaluates there (dx = 0); the slope stays d/dx.
            dx = jnp.where(near_first | near_last, dx - jax.lax.stop_gradient(dx), dx)
    coefficients = jnp.asarray(fn.coefficients)[piece]
    value = coefficients[..., -1]
    for j in range(fn.coefficients.shape[1] - 2, -1, -1):
        value = coefficients[..., j] + dx * value
    return value


def is_constant_zero(fn: OsimFunction) -> bool:
    """True if `fn` is exactly 0 everywhere (e.g. Constant 0, or a multiple of it)."""
    if fn.kind is Kind.MULTIPLIER:
        return fn.scale == 0.0 or is_constant_zero(fn.inner)
    if fn.kind is Kind.SINE:
        amplitude, omega, phase, offset = fn.coefficients[0]
        return offset == 0.0 and (amplitude == 0.0 or (omega == 0.0 and phase == 0.0))
    return bool(np.all(fn.coefficients == 0.0))


def is_constant(fn: OsimFunction) -> bool:
    """True for a Constant, or a MultiplierFunction of one: the same value for every x."""
    if fn.kind is Kind.MULTIPLIER:
        return is_constant(fn.inner)
    return fn.kind is Kind.CONSTANT


def is_linear(fn: OsimFunction) -> bool:
    """True for a LinearFunction (any slope and intercept)."""
    return fn.kind is Kind.LINEAR


def is_identity(fn: OsimFunction) -> bool:
    """True for a LinearFunction with coefficients exactly (1, 0): f(x) = x."""
    return fn.kind is Kind.LINEAR and fn.coefficients.tolist() == [[0.0, 1.0]]


def piecewise_polynomial(fn: OsimFunction) -> PiecewisePolynomial:
    """`fn` as an `engine.coupling.PiecewisePolynomial` (breaks = the knots; a multiplier's
    scale folded into the coefficients, which changes the result by rounding only). That form
    picks pieces by x >= break alone, so it leaves out OpenSim's choice of interval at an
    interior knot hit exactly and its 2e-13 snapping to the end knots: it differs from
    `evaluate` at exactly those points (a kink's slope, the curvature at the last knot).
    ValueError for a Sine (not a polynomial; `read_function` reads one only with sine=True)."""
    if fn.kind is Kind.SINE:
        raise ValueError("a Sine is not a piecewise polynomial")
    if fn.kind is Kind.MULTIPLIER:
        inner = piecewise_polynomial(fn.inner)
        return inner._replace(coefficients=inner.coefficients * fn.scale)
    k = fn.knots.size
    return PiecewisePolynomial(fn.knots.copy(), fn.origins[:k + 1].copy(),
                               fn.coefficients[:k + 1].copy())


# ---------------------------------------------------------------- reading

def read_function(elem: ET.Element, where: Where, *, sine: bool = False) -> OsimFunction:
    """The function element `elem` (e.g. <SimmSpline>) of the element at `where` (e.g. a
    TransformAxis); anything malformed or unsupported is an OsimError naming both. sine: a
    Sine is accepted (a function of time, e.g. a PrescribedController's; geometry needs
    piecewise polynomials, `piecewise_polynomial`), also inside a MultiplierFunction."""
    owner = " ".join(s for s in (where.tag, where.name) if s)
    node = Node(elem, where.inside(elem.tag, elem.get("name", ""),
                                   f"{owner}, {where.context}" if where.context else owner))
    kind = _TAGS.get(elem.tag)
    supported = [t for t, k in _TAGS.items() if sine or k is not Kind.SINE]
    if elem.tag not in supported:
        raise node.error(f"{elem.tag} is not a supported function type here; supported: "
                         f"{', '.join(supported)}")
    if kind is Kind.MULTIPLIER:
        node.check_children(("function", "scale"))
        inner = list(node.require("function"))
        if len(inner) != 1:
            raise node.error(f"<function> must hold exactly one function, got "
                             f"{[e.tag for e in inner]}")
        return OsimFunction(np.zeros(0), np.zeros(1), np.zeros((1, 1)),
                            scale=node.number("scale", 1.0),
                            inner=read_function(inner[0], node.where, sine=sine),
                            kind=kind, tag=elem.tag)
    if kind in _XY:
        return _xy_function(node, kind)
    if kind is Kind.GCV_SPLINE:
        return _gcv_spline(node)
    if kind is Kind.STEP:
        return _step(node)
    if kind is Kind.SINE:
        node.check_children(_SINE_PROPERTIES)
        values = [node.number(tag, default) for tag, default in zip(_SINE_PROPERTIES,
                                                                     (1.0, 1.0, 0.0, 0.0))]
        return OsimFunction(np.zeros(0), np.zeros(1), np.array([values]), kind=kind,
                            tag=elem.tag)
    if kind is Kind.CONSTANT:
        node.check_children(("value",))
        ascending = [node.number("value", 0.0)]
    elif kind is Kind.LINEAR:
        node.check_children(("coefficients",))
        slope, intercept = node.numbers("coefficients", 2, (1.0, 0.0))
        ascending = [intercept, slope]
    else:
        node.check_children(("coefficients",))
        ascending = list(_numbers(node, "coefficients", (1.0,)))[::-1]
        if not ascending:
            raise node.error("<coefficients> must hold at least one number, got ''")
    return OsimFunction(np.zeros(0), np.zeros(1), np.array([ascending], dtype=float),
                        kind=kind, tag=elem.tag)


def _numbers(node: Node, tag: str, default=None) -> tuple[float, ...]:
    """Property `tag` as any number of finite numbers (`default` if absent, else required)."""
    if default is not None and node.find(tag) is None:
        return default
    raw = node.text(tag)
    try:
        values = tuple(float(word) for word in raw.split())
    except ValueError:
        raise node.error(f"<{tag}> must be numbers, got {raw!r}") from None
    if not all(map(math.isfinite, values)):
        raise node.error(f"<{tag}> must be finite, got {raw!r}")
    return values


def _points(node: Node, min_points: int, what: str) -> tuple[tuple[float, ...], ...]:
    """Properties <x>, <y>: as many finite numbers each, at least `min_points` (`what` needs
    them), x strictly increasing."""
    x, y = _numbers(node, "x"), _numbers(node, "y")
    if len(x) != len(y):
        raise node.error(f"<x> and <y> must have the same length, got {len(x)} values in <x> "
                         f"({node.text('x')!r}) and {len(y)} in <y> ({node.text('y')!r})")
    if len(x) < min_points:
        raise node.error(f"{what} needs at least {min_points} points, got {len(x)} "
                         f"(<x> {node.text('x')!r})")
    words = node.text("x").split()
    for i in range(len(x) - 1):
        if not x[i] < x[i + 1]:
            raise node.error(f"<x> must be strictly increasing, got {words[i]!r} then "
                             f"{words[i + 1]!r} in {node.text('x')!r}")
    return x, y


def _xy_function(node: Node, kind: Kind) -> OsimFunction:
    node.check_children(("x", "y"))
    x, y = _points(node, _XY[kind], f"a {node.tag}")
    if kind is Kind.SIMM_SPLINE:
        b, c, d = _simm_spline(x, y)
        intervals = list(zip(y, b, c, d))
        left, right, last = (y[0], b[0], 0.0, 0.0), (y[-1], b[-1], 0.0, 0.0), intervals[-1]
    elif kind is Kind.PIECEWISE_LINEAR:
        intervals = [(y[i], (y[i + 1] - y[i]) / max(TINY_NUMBER, x[i + 1] - x[i]))
                     for i in range(len(x) - 1)]
        left, right = (y[0], intervals[0][1]), (y[-1], intervals[-1][1])
        last = right
    else:
        intervals = [(v,) for v in y]
        left, right, last = (y[0],), (y[-1],), (y[-1],)
    n = len(x)
    rows = [left, *intervals[:n - 1], right, last]
    origins = [x[0], *x[:n - 1], x[-1], x[-1]]
    ties = tuple([1] + [1 + _bisection(n, m) for m in range(1, n - 1)] + [n + 1])[:n]
    return OsimFunction(np.array(x), np.array(origins), np.array(rows, dtype=float),
                        kind=kind, tag=node.tag, tie_pieces=ties)


def _gcv_spline(node: Node) -> OsimFunction:
    """A GCVSpline with error variance 0: the interpolating natural spline of degree
    2 half_order - 1 (`signals.natural_spline`), as pieces in the layout of `_xy_function`;
    outside the knots the Taylor polynomials of degree half_order - 1 at the end knots."""
    node.check_children(_GCV_PROPERTIES)
    raw = node.text("half_order")
    try:
        half = int(raw)
    except ValueError:
        half = 0
    if not 1 <= half <= 4:
        raise node.error(f"<half_order> must be 1, 2, 3 or 4 (degree 1, 3, 5 or 7), got {raw!r}")
    variance = node.number("error_variance", 0.0)
    if variance != 0.0:
        raise node.error(f"<error_variance> must be 0 (the spline through the points), got "
                         f"{node.text('error_variance')!r}: a smoothing fit (positive) or one by "
                         f"generalized cross-validation (negative) is not supported")
    for tag in ("weights", "coefficients"):  # unused by OpenSim, but they must be numbers
        _numbers(node, tag, ())
    degree = 2 * half - 1
    x, y = _points(node, degree + 1, f"a GCVSpline of <half_order> {half} (degree {degree})")
    bspline = natural_spline(x, y, degree).bspline
    pieces = PPoly.from_spline(bspline)
    # The intervals of positive length of the B-spline's knots are [x_k, x_k+1].
    starts = np.searchsorted(pieces.x, x[:-1], side="right") - 1
    assert np.array_equal(pieces.x[starts + 1], x[1:]), "natural spline knots"
    intervals = pieces.c[::-1, starts].T                   # ascending powers of x - x_k
    factorials = [math.factorial(j) for j in range(degree + 1)]
    left, right = ([float(bspline(end, nu=j)) / factorials[j] if j < half else 0.0
                    for j in range(degree + 1)] for end in (x[0], x[-1]))
    n = len(x)
    rows = [left, *intervals, right, right]
    origins = [x[0], *x[:n - 1], x[-1], x[-1]]
    # At a knot hit exactly Simbody's SPLDER takes the interval to its right (the right tail
    # at the last knot): the piece x >= knot picks, so no tie differs from that count, and
    # the last-knot piece n + 1 (only reached by a tie or by snapping, neither used) repeats
    # the right tail.
    return OsimFunction(np.array(x), np.array(origins), np.array(rows, dtype=float),
                        kind=Kind.GCV_SPLINE, tag=node.tag, tie_pieces=tuple(range(1, n + 1)))


def _step(node: Node) -> OsimFunction:
    """A StepFunction (module docstring) in the layout of `_xy_function`: pieces left of the
    transition, across it (quintic in x - its left end) and right of it."""
    node.check_children(_STEP_PROPERTIES)
    x0, x1, y0, y1 = (node.number(tag, default) for tag, default in zip(
        _STEP_PROPERTIES, (0.99, 1.01, 0.0, 1.0)))
    if x0 == x1:
        raise node.error(f"<transition_start_time> and <transition_end_time> must differ (a "
                         f"zero-length transition), both are {x0!r}")
    (left, y_left), (right, y_right) = sorted([(x0, y0), (x1, y1)])
    h, rise = right - left, y_right - y_left
    across = [y_left, 0.0, 0.0, 10.0 * rise / h**3, -15.0 * rise / h**4, 6.0 * rise / h**5]
    rows = [[y_left] + [0.0] * 5, across, [y_right] + [0.0] * 5, [y_right] + [0.0] * 5]
    return OsimFunction(np.array([left, right]), np.array([left, left, right, right]),
                        np.array(rows), kind=Kind.STEP, tag=node.tag, tie_pieces=(1, 2))


def _bisection(n: int, m: int) -> int:
    """The interval k (x_k <= x <= x_k+1) OpenSim's bisection over n knots settles on for x
    equal to interior knot m: it halves [i, j) from (0, n) until x_k <= x <= x_k+1."""
    low, high = 0, n
    while True:
        k = (low + high) // 2
        if m < k:
            high = k
        elif m > k + 1:
            low = k
        else:
            return k


def _simm_spline(x, y) -> tuple[list[float], list[float], list[float]]:
    """OpenSim's SimmSpline coefficients b, c, d (n each): on [x_k, x_k+1] the spline is
    y_k + b_k t + c_k t^2 + d_k t^3, t = x - x_k; b, c at the last knot are its end slope
    and half curvature. Forsythe-Malcolm-Moler, in OpenSim's order of operations."""
    n = len(x)
    h = [max(TINY_NUMBER, x[i + 1] - x[i]) for i in range(n - 1)]
    slopes = [(y[i + 1] - y[i]) / h[i] for i in range(n - 1)]
    if n == 2:
        return [slopes[0]] * 2, [0.0, 0.0], [0.0, 0.0]
    # Tridiagonal system for sigma (a sixth of the second derivative at each knot): diagonal
    # `diag`, off-diagonal h, right-hand side `rhs` (differences of successive slopes).
    diag = [-h[0]] + [2.0 * (h[i - 1] + h[i]) for i in range(1, n - 1)] + [-h[n - 2]]
    rhs = [0.0] + [slopes[i] - slopes[i - 1] for i in range(1, n - 1)] + [0.0]
    if n > 3:  # end third derivatives from the cubics through the four end points
        span = lambda i, j: max(TINY_NUMBER, x[j] - x[i])  # noqa: E731
        first = rhs[2] / span(1, 3) - rhs[1] / span(0, 2)
        last = rhs[n - 2] / span(n - 3, n - 1) - rhs[n - 3] / span(n - 4, n - 2)
        rhs[0] = first * h[0] * h[0] / span(0, 3)
        rhs[n - 1] = -last * h[n - 2] * h[n - 2] / span(n - 4, n - 1)
    for i in range(1, n):
        t = h[i - 1] / diag[i - 1]
        diag[i] -= t * h[i - 1]
        rhs[i] -= t * rhs[i - 1]
    sigma = rhs
    sigma[n - 1] /= diag[n - 1]
    for i in range(n - 2, -1, -1):
        sigma[i] = (sigma[i] - h[i] * sigma[i + 1]) / diag[i]
    b = [(y[i + 1] - y[i]) / h[i] - h[i] * (sigma[i + 1] + 2.0 * sigma[i])
         for i in range(n - 1)]
    b.append((y[n - 1] - y[n - 2]) / h[n - 2] + h[n - 2] * (sigma[n - 2] + 2.0 * sigma[n - 1]))
    d = [(sigma[i + 1] - sigma[i]) / h[i] for i in range(n - 1)]
    d.append(d[n - 2])
    c = [3.0 * s for s in sigma]
    return b, c, d
