"""Segmented quintic Bezier curves: the curve machinery of Millard et al. 2013 (OpenSim).

Millard, Uchida, Seth, Delp 2013, "Flexing computational muscle: modeling and simulation of
musculotendon dynamics", J Biomech Eng 135:021005, Appendix; OpenSim's
`SegmentedQuinticBezierToolkit` and `SmoothSegmentedFunction`.

A curve y(x) is a chain of n_seg quintic Bezier segments, each a parametric pair
(x(u), y(u)), u in [0, 1], with control points `ctrl_x[k]`, `ctrl_y[k]` (6 each). Segment k
spans x in [ctrl_x[k, 0], ctrl_x[k, 5]] and segments are contiguous. Every segment is a
"corner" between two knots (x0, y0, dy/dx0) and (x1, y1, dy/dx1) (`corner_control_points`):

    (x_c, y_c) = intersection of the two knot tangents (mid point if the slopes are equal
                 within sqrt(eps));  c = 0.1 + 0.8 curviness  (OpenSim `scaleCurviness`);
    control x = (x0, x0 + c (x_c - x0), same, x1 + c (x_c - x1), same, x1), same for y.

so each segment leaves its knots with exactly the knot slopes, and is C2 there (the repeated
control points zero the second derivative at the ends). Outside [x_lo, x_hi] the curve is
extended linearly with its end slopes.

Evaluation solves x(u) = x for u (x(u) is strictly increasing on every C-shaped corner), then
returns y(u). The solve is a safeguarded Newton iteration (Newton step, bisection when the step
leaves the bracket) with a fixed iteration count, so it is jit/vmap/grad friendly; derivatives
of u come from the implicit-function theorem (`jax.custom_jvp`):

    du = (dx - sum_i B_i(u) d ctrl_x_i) / x'(u),

never from the iterations, so dy/dx = y'(u)/x'(u), higher derivatives and derivatives with
respect to the control points are exact. The integral from x_lo is exact: on a segment
int y dx = int_0^u y(s) x'(s) ds is a degree-9 polynomial integral, done by 5-point
Gauss-Legendre quadrature (exact to roundoff); OpenSim integrates numerically instead.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np

#: Fixed iteration count of the safeguarded Newton solve of x(u) = x. On every default and
#: extreme-curviness OpenSim curve the residual reaches roundoff after 8 iterations (checked
#: on 20001 points per segment); 12 leaves a margin.
N_ITER_U = 12

#: Binomial coefficients of the degree-5 Bernstein basis.
_BINOM5 = np.array([1.0, 5.0, 10.0, 10.0, 5.0, 1.0])

#: 5-point Gauss-Legendre nodes and weights on [0, 1] (exact for degree <= 9).
_GL_T, _GL_W = np.polynomial.legendre.leggauss(5)
_GL_T = 0.5 * (_GL_T + 1.0)
_GL_W = 0.5 * _GL_W


@dataclasses.dataclass(frozen=True)
class BezierCurve:
    """A smooth segmented quintic Bezier curve y(x) (a JAX pytree, all leaves float64).

    ctrl_x, ctrl_y (n_seg, 6): control points of each segment (x strictly increasing).
    slope_lo, slope_hi (): dy/dx of the linear extensions left of x_lo and right of x_hi.
    Leading batch axes (e.g. one curve per muscle) are allowed; evaluate those with vmap.
    """

    ctrl_x: jax.Array
    ctrl_y: jax.Array
    slope_lo: jax.Array
    slope_hi: jax.Array

    @property
    def x_lo(self) -> jax.Array:
        return self.ctrl_x[..., 0, 0]

    @property
    def x_hi(self) -> jax.Array:
        return self.ctrl_x[..., -1, 5]

    @property
    def y_lo(self) -> jax.Array:
        return self.ctrl_y[..., 0, 0]

    @property
    def y_hi(self) -> jax.Array:
        return self.ctrl_y[..., -1, 5]


jax.tree_util.register_dataclass(
    BezierCurve, data_fields=["ctrl_x", "ctrl_y", "slope_lo", "slope_hi"], meta_fields=[])


def scale_curviness(curviness):
    """OpenSim `scaleCurviness`: c = 0.1 + 0.8 curviness, curviness in [0, 1]."""
    return 0.1 + 0.8 * curviness


def corner_control_points(x0, y0, dydx0, x1, y1, dydx1, c):
    """Control points (ctrl_x (6,), ctrl_y (6,)) of one corner segment (Millard 2013 App.).

    c is the scaled curviness (`scale_curviness`). Traceable (jnp only) so that curve
    parameters may be differentiated; `check_corner` validates the C shape.
    """
    x0, y0, dydx0, x1, y1, dydx1, c = (jnp.asarray(v, dtype=float)
                                       for v in (x0, y0, dydx0, x1, y1, dydx1, c))
    parallel = jnp.abs(dydx0 - dydx1) <= np.sqrt(np.finfo(float).eps)
    denom = jnp.where(parallel, 1.0, dydx0 - dydx1)
    x_c = jnp.where(parallel, 0.5 * (x0 + x1), (y1 - y0 - x1 * dydx1 + x0 * dydx0) / denom)
    y_c = (x_c - x1) * dydx1 + y1
    x0m, y0m = x0 + c * (x_c - x0), y0 + c * (y_c - y0)
    x1m, y1m = x1 + c * (x_c - x1), y1 + c * (y_c - y1)
    return (jnp.stack([x0, x0m, x0m, x1m, x1m, x1]),
            jnp.stack([y0, y0m, y0m, y1m, y1m, y1]))


def check_corner(x0, y0, dydx0, x1, y1, dydx1, where: str) -> None:
    """Raise ValueError unless the knots make a C-shaped corner (OpenSim's check).

    The tangent intersection must be closer to each knot than the knots are to each other,
    and x must increase along the segment (so x(u) is invertible).
    """
    x0, y0, dydx0, x1, y1, dydx1 = (float(v) for v in (x0, y0, dydx0, x1, y1, dydx1))
    if not x1 > x0:
        raise ValueError(f"{where}: corner knots must have increasing x, got x0={x0}, x1={x1}")
    if abs(dydx0 - dydx1) > np.sqrt(np.finfo(float).eps):
        x_c = (y1 - y0 - x1 * dydx1 + x0 * dydx0) / (dydx0 - dydx1)
    else:
        x_c = 0.5 * (x0 + x1)
    y_c = (x_c - x1) * dydx1 + y1
    a = (x_c - x0) ** 2 + (y_c - y0) ** 2
    b = (x_c - x1) ** 2 + (y_c - y1) ** 2
    d = (x1 - x0) ** 2 + (y1 - y0) ** 2
    if not (d > a and d > b and x0 < x_c < x1):
        raise ValueError(
            f"{where}: knots ({x0:g}, {y0:g}, slope {dydx0:g}) -> ({x1:g}, {y1:g}, slope "
            f"{dydx1:g}) do not form a C-shaped corner (tangent intersection x={x_c:g})")


def from_knots(knots, curviness_c) -> BezierCurve:
    """Curve through knots [(x, y, dy/dx), ...] (n_seg + 1 of them) with one scaled curviness
    per segment (scalar or (n_seg,)). The linear extensions take the end knots' slopes."""
    n_seg = len(knots) - 1
    cs = jnp.broadcast_to(jnp.asarray(curviness_c, dtype=float), (n_seg,))
    xs, ys = [], []
    for k in range(n_seg):
        px, py = corner_control_points(*knots[k], *knots[k + 1], cs[k])
        xs.append(px)
        ys.append(py)
    return BezierCurve(jnp.stack(xs), jnp.stack(ys),
                       jnp.asarray(knots[0][2], dtype=float),
                       jnp.asarray(knots[-1][2], dtype=float))


def swap_axes(curve: BezierCurve) -> BezierCurve:
    """The inverse curve x(y) of a strictly increasing curve (OpenSim builds the force-velocity
    inverse this way): control points swapped, extension slopes inverted."""
    return BezierCurve(curve.ctrl_y, curve.ctrl_x, 1.0 / curve.slope_lo, 1.0 / curve.slope_hi)


def _power_matrix() -> np.ndarray:
    """M (6, 6) with B_i^5(u) = sum_j M[j, i] u^j (Bernstein -> power basis)."""
    m = np.zeros((6, 6))
    for i in range(6):
        for j in range(i, 6):
            m[j, i] = math.comb(5, i) * math.comb(5 - i, j - i) * (-1.0) ** (j - i)
    return m


_M_POWER = _power_matrix()


def _bernstein(u):
    """(..., 6) degree-5 Bernstein weights at u (B_i^5(u) = C(5,i) u^i (1-u)^(5-i))."""
    u = jnp.asarray(u)[..., None]
    return _BINOM5 * u ** np.arange(6) * (1.0 - u) ** np.arange(5, -1, -1)


def _poly(ctrl, u):
    """sum_i B_i^5(u) ctrl_i by Horner's rule in the power basis (few ops: compiles fast)."""
    a = _M_POWER @ ctrl
    out = a[5]
    for j in range(4, -1, -1):
        out = out * u + a[j]
    return out


def _poly_du(ctrl, u):
    """d/du of `_poly(ctrl, u)`."""
    a = _M_POWER @ ctrl
    out = 5.0 * a[5]
    for j in range(4, 0, -1):
        out = out * u + j * a[j]
    return out


def _solve_u_iterations(px, x):
    """Safeguarded Newton for x(u) = x on [0, 1] (x(u) increasing), N_ITER_U iterations."""
    u0 = jnp.clip((x - px[0]) / (px[5] - px[0]), 0.0, 1.0)

    def body(_, carry):
        u, lo, hi = carry
        f = _poly(px, u) - x
        df = _poly_du(px, u)
        lo = jnp.where(f < 0.0, u, lo)
        hi = jnp.where(f < 0.0, hi, u)
        step = u - f / jnp.where(df > 0.0, df, 1.0)
        ok = (df > 0.0) & (step >= lo) & (step <= hi)
        return jnp.where(ok, step, 0.5 * (lo + hi)), lo, hi

    zero, one = jnp.zeros_like(u0), jnp.ones_like(u0)
    u, _, _ = jax.lax.fori_loop(0, N_ITER_U, body, (u0, zero, one))
    return u


@jax.custom_jvp
def solve_u(px, x):
    """Parameter u in [0, 1] with sum_i B_i(u) px_i = x, for px (6,) increasing and scalar x
    in [px[0], px[5]]. Differentiable in px and x by the implicit-function theorem."""
    return _solve_u_iterations(px, x)


@solve_u.defjvp
def _solve_u_jvp(primals, tangents):
    px, x = primals
    dpx, dx = tangents
    u = solve_u(px, x)
    return u, (dx - _bernstein(u) @ dpx) / _poly_du(px, u)


def _locate(curve: BezierCurve, x):
    """Segment index, its control points and u for x clipped into the curve's domain."""
    xc = jnp.clip(x, curve.x_lo, curve.x_hi)
    k = jnp.sum(xc >= curve.ctrl_x[1:, 0]).astype(int)
    px, py = curve.ctrl_x[k], curve.ctrl_y[k]
    return k, px, py, solve_u(px, xc)


def _value_scalar(curve: BezierCurve, x):
    _, _, py, u = _locate(curve, x)
    return (_poly(py, u)
            + curve.slope_lo * jnp.minimum(x - curve.x_lo, 0.0)
            + curve.slope_hi * jnp.maximum(x - curve.x_hi, 0.0))


def _partial_integral(px, py, u):
    """int_0^u y(s) x'(s) ds for one segment (degree 9: 5-point Gauss-Legendre is exact)."""
    s = u * _GL_T
    g = _poly(py, s) * _poly_du(px, s)
    return u * jnp.sum(_GL_W * g)


def _integral_scalar(curve: BezierCurve, x):
    k, px, py, u = _locate(curve, x)
    full = jax.vmap(_partial_integral, in_axes=(0, 0, None))(curve.ctrl_x, curve.ctrl_y, 1.0)
    before = jnp.concatenate([jnp.zeros(1), jnp.cumsum(full)])[k]
    d_lo = jnp.minimum(x - curve.x_lo, 0.0)
    d_hi = jnp.maximum(x - curve.x_hi, 0.0)
    return (before + _partial_integral(px, py, u)
            + curve.y_lo * d_lo + 0.5 * curve.slope_lo * d_lo ** 2
            + curve.y_hi * d_hi + 0.5 * curve.slope_hi * d_hi ** 2)


def value(curve: BezierCurve, x) -> jax.Array:
    """y(x) for an unbatched curve; x of any shape (elementwise)."""
    x = jnp.asarray(x, dtype=float)
    return jnp.vectorize(lambda xi: _value_scalar(curve, xi))(x)


def integral(curve: BezierCurve, x) -> jax.Array:
    """int_{x_lo}^{x} y(s) ds for an unbatched curve; x of any shape (elementwise). Left of
    x_lo the linear extension is integrated (the result is then negative or zero)."""
    x = jnp.asarray(x, dtype=float)
    return jnp.vectorize(lambda xi: _integral_scalar(curve, xi))(x)


def derivative(curve: BezierCurve, x) -> jax.Array:
    """dy/dx for an unbatched curve; x of any shape (by jax through the implicit u)."""
    x = jnp.asarray(x, dtype=float)
    return jnp.vectorize(jax.grad(lambda xi: _value_scalar(curve, xi)))(x)


def knots(curve: BezierCurve) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) of the n_seg + 1 knots (segment end points) of an unbatched curve, as NumPy."""
    cx, cy = np.asarray(curve.ctrl_x), np.asarray(curve.ctrl_y)
    return np.append(cx[:, 0], cx[-1, 5]), np.append(cy[:, 0], cy[-1, 5])
