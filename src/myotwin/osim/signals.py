"""OpenSim 4.6's preprocessing of coordinate data for inverse dynamics, in NumPy/SciPy.

`InverseDynamicsTool::run` (OpenSim/Tools/InverseDynamicsTool.cpp) prepares the coordinates
file in this order, and `coordinate_trajectories` does the same:

1. read the table as written (degrees stay degrees);
2. when `lowpass_cutoff_frequency_for_coordinates` >= 0: `Storage::pad(n_rows / 2)` (`pad`;
   the time column is padded the same way, so it runs from 2 t_0 - t_pad to
   2 t_last - t_(n-1-pad)), then `Storage::lowpassIIR(cutoff)` (`lowpass_storage`), which
   first resamples the padded table onto a uniform grid when its steps are not uniform
   (`resample`: quintic GCV spline, grid t_0, t_0 + dt, ... by repeated addition of the
   smallest step dt) and then runs `Signal::LowpassIIR` (`lowpass_iir`) on every column;
3. when the file says `inDegrees=yes`: rotational columns times pi/180
   (`SimbodyEngine::convertDegreesToRadians`);
4. `GCVSplineSet(5, storage)`: one interpolating natural quintic spline per column
   (`natural_spline`); q, qd, qdd at time t are its value and first two derivatives;
5. output times (`output_times`): the rows of the *prepared* table from the last row at or
   before max(first time, start) to the last row at or before min(last time, end)
   (`Storage::findIndex`). With filtering the grid is the resampled one, which is why
   subject01_walk_IK.mot (t = 0, 0.01666667, ... with steps 0.01666666 and 0.01666667) gives
   -1.25 + 75 * 0.01666666 = -0.0000005 s as the first output time, and 151 rows up to
   2.4999985 s.

Splines: OpenSim's `GCVSpline` (GCVSpline.cpp) calls Simbody's
`SplineFitter::fitFromErrorVariance(degree, x, y, 0)`, i.e. Woltring's GCVSPL (gcvspl.cpp) in
mode 3 with variance 0, whose search drives the smoothing parameter to its floor 1e-15 / el:
the result is the natural spline of degree 2m - 1 through the points (derivatives m .. 2m-2
zero at both ends) to ~1e-13 relative, which `scipy.interpolate.make_interp_spline` builds
exactly. Outside the knots Woltring's `SPLDER` continues the natural spline as the polynomial
of degree m - 1 (the Taylor polynomial at the end knot), which `NaturalSpline` reproduces.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy.interpolate import BSpline, make_interp_spline

#: SimTK::Eps (double machine epsilon): Storage::lowpassIIR's test for uneven steps.
_EPS = float(np.finfo(np.float64).eps)
#: Storage::MAX_RESAMPLE_SIZE: resampling never makes more steps than this.
MAX_RESAMPLE_SIZE = 100_000
#: GCVSplineSet's degree for the coordinates (InverseDynamicsTool, AnalyzeTool): quintic.
COORDINATE_SPLINE_DEGREE = 5
#: SimTK_DEGREE_TO_RADIAN as a double (the long-double pi / 180 rounds to the same value).
DEGREE_TO_RADIAN = math.pi / 180.0


def pad(values, n_pad: int) -> np.ndarray:
    """`values` (n, ...) padded with n_pad rows before and after, along axis 0.

    Reproduces OpenSim's `Signal::Pad(int, Array<double>&)` (Signal.cpp), which
    `Storage::pad` applies to the time column and to every data column: the rows are
    reflected about the first and last rows and negated ("reflect and negate"),
    s[-k] = 2 x[0] - x[k], s[n-1+k] = 2 x[n-1] - x[n-1-k], which keeps value and slope at the
    ends. A pad of n or more is done by repeated pads of at most n - 1 rows, as OpenSim does.
    """
    x = np.asarray(values, dtype=np.float64)
    if n_pad <= 0:
        return x.copy()
    target = x.shape[0] + 2 * n_pad
    if x.shape[0] < 2:
        raise ValueError(f"cannot pad a signal of {x.shape[0]} sample(s)")
    while x.shape[0] < target:
        step = min((target - x.shape[0]) // 2, x.shape[0] - 1)
        x = _pad_once(x, step)
    return x


def _pad_once(x: np.ndarray, p: int) -> np.ndarray:
    n = x.shape[0]
    before = 2.0 * x[0] - x[np.arange(p, 0, -1)]
    after = 2.0 * x[n - 1] - x[np.arange(n - 2, n - 2 - p, -1)]
    return np.concatenate([before, x, after], axis=0)


def iir_coefficients(dt_s: float, cutoff_hz: float) -> tuple[np.ndarray, np.ndarray]:
    """(a, b) of OpenSim's 3rd-order Butterworth lowpass for sample interval dt_s.

    As `Signal::LowpassIIR` (Signal.cpp): bilinear transform with prewarping,
    w_a = tan(pi f_c dt); a cutoff at or above half the sampling rate is lowered to 0.49 of
    the sampling rate (OpenSim warns and does the same). y[i] = sum_k a[k] x[i-k]
    - sum_{k>=1} b[k] y[i-k].
    """
    fs = 1.0 / dt_s
    if cutoff_hz >= 0.5 * fs:
        cutoff_hz = 0.49 * fs
    wc = 2 * math.pi * cutoff_hz
    wa = math.tan(wc * dt_s / 2.0)
    wa2 = wa * wa
    wa3 = wa * wa * wa
    denom = (wa + 1) * (wa * wa + wa + 1.0)
    a = np.array([wa3 / denom, 3 * wa3 / denom, 3 * wa3 / denom, wa3 / denom])
    b = np.array([1.0, (3 * wa3 + 2 * wa2 - 2 * wa - 3) / denom,
                  (3 * wa3 - 2 * wa2 - 2 * wa + 3) / denom,
                  (wa - 1) * (wa2 - wa + 1) / denom])
    return a, b


def lowpass_iir(values, dt_s: float, cutoff_hz: float) -> np.ndarray:
    """`values` (n, ...) filtered along axis 0 forward then backward (zero phase).

    Reproduces `Signal::LowpassIIR(T, fc, N, sig, sigf)` (Signal.cpp): a 3rd-order Butterworth
    recursion (`iir_coefficients`) whose first three outputs are the inputs themselves (no
    initial conditions), run on the signal, then on the reversed result, then reversed back.
    The arithmetic is done in OpenSim's order so that results agree to the last bits.
    """
    x = np.asarray(values, dtype=np.float64)
    if x.shape[0] < 4:
        raise ValueError(f"the IIR lowpass needs at least 4 samples, got {x.shape[0]}")
    a, b = iir_coefficients(dt_s, cutoff_hz)
    once = _iir_pass(x, a, b)
    return _iir_pass(once[::-1], a, b)[::-1].copy()


def _iir_pass(x: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    y = x.copy()
    for i in range(3, x.shape[0]):
        y[i] = (a[0] * x[i] + a[1] * x[i - 1] + a[2] * x[i - 2] + a[3] * x[i - 3]
                - b[1] * y[i - 1] - b[2] * y[i - 2] - b[3] * y[i - 3])
    return y


@dataclasses.dataclass(frozen=True)
class NaturalSpline:
    """The interpolating natural spline of odd `degree` through (knots_s, values).

    Evaluates like Simbody's `Spline` from GCVSPL (`SimTK_splder_`): inside [knots_s[0],
    knots_s[-1]] the spline; outside, the Taylor polynomial of degree m - 1 (m = (degree+1)/2)
    at the end knot, i.e. the natural extension. `values` may be (n,) or (n, n_columns).
    """

    knots_s: np.ndarray
    degree: int
    bspline: BSpline

    def __call__(self, t, derivative: int = 0) -> np.ndarray:
        """The `derivative`-th time derivative at times t (shape t.shape + value shape)."""
        t_in = np.asarray(t, dtype=np.float64)
        t = np.atleast_1d(t_in)
        out = np.array(self.bspline(t, nu=derivative))
        half = (self.degree + 1) // 2
        for end, outside in ((self.knots_s[0], t < self.knots_s[0]),
                             (self.knots_s[-1], t > self.knots_s[-1])):
            if np.any(outside):
                out[outside] = self._tail(end, t[outside], derivative, half)
        return out.reshape(t_in.shape + out.shape[1:])

    def _tail(self, end: float, t: np.ndarray, derivative: int, half: int) -> np.ndarray:
        h = (t - end).reshape(t.shape + (1,) * (self.bspline.c.ndim - 1))
        total = np.zeros(t.shape + self.bspline.c.shape[1:])
        for j in range(half - derivative):
            total = total + self.bspline(end, nu=derivative + j) * h ** j / math.factorial(j)
        return total


def natural_spline(times_s, values, degree: int = 5) -> NaturalSpline:
    """OpenSim's `GCVSpline(degree, n, x, y)` with zero error variance (GCVSpline.cpp).

    `GCVSplineSet(5, storage)` makes one per column (the coordinate splines of the ID tool);
    `ExternalForce` makes cubic ones (degree 3) of the load data. `values` is (n,) or
    (n, n_columns) with n >= degree + 1 samples at strictly increasing times_s.
    """
    x = np.asarray(times_s, dtype=np.float64)
    y = np.asarray(values, dtype=np.float64)
    if degree not in (1, 3, 5, 7):
        raise ValueError(f"GCV spline degree must be 1, 3, 5 or 7, got {degree}")
    if x.shape[0] < degree + 1:
        raise ValueError(f"a degree-{degree} GCV spline needs at least {degree + 1} points, "
                         f"got {x.shape[0]}")
    if np.any(np.diff(x) <= 0.0):
        k = int(np.argmax(np.diff(x) <= 0.0))
        raise ValueError(f"spline knots must increase strictly: t[{k}] = {float(x[k])!r}, "
                         f"t[{k + 1}] = {float(x[k + 1])!r}")
    half = (degree + 1) // 2
    ends = [(order, np.zeros(y.shape[1:])) for order in range(half, degree)]
    bc = (ends, ends) if ends else None
    return NaturalSpline(x, degree, make_interp_spline(x, y, k=degree, bc_type=bc))


def resample(times_s, values, dt_s: float, degree: int = 5):
    """(times_s, values) resampled on a uniform grid of step dt_s: (new_times_s, new_values).

    Reproduces `Storage::resample(dt, degree)` (Storage.cpp) with
    `GCVSplineSet::constructStorage(0, dt)`: the step is enlarged if it would make more than
    MAX_RESAMPLE_SIZE steps; the grid starts at the first time and grows by repeated
    floating-point addition of dt while <= the last time (so it carries OpenSim's rounding);
    values come from the natural spline of `degree` through every column.
    """
    t = np.asarray(times_s, dtype=np.float64)
    if t.shape[0] <= 1:
        return t.copy(), np.asarray(values, dtype=np.float64).copy()
    grid = _uniform_grid(t[0], t[-1], _resample_step(t, dt_s))
    return grid, natural_spline(t, values, degree)(grid)


def _resample_step(times_s: np.ndarray, dt_s: float) -> float:
    """dt_s, enlarged as Storage::resample does if it would make > MAX_RESAMPLE_SIZE steps."""
    span = times_s[-1] - times_s[0]
    return float(span / MAX_RESAMPLE_SIZE) if span / dt_s > MAX_RESAMPLE_SIZE else dt_s


def _uniform_grid(first_s: float, last_s: float, dt_s: float) -> np.ndarray:
    grid = []
    x = float(first_s)
    while x <= last_s:
        grid.append(x)
        x += dt_s
    return np.asarray(grid)


def _lowpass_plan(times_s: np.ndarray) -> tuple[float, bool]:
    """(dt_s, resampled?) as Storage::lowpassIIR decides them for these times."""
    n = times_s.shape[0]
    if n < 4:
        raise ValueError(f"the IIR lowpass needs at least 4 samples, got {n}")
    dt_min = float(np.min(np.diff(times_s)))
    if dt_min < _EPS:
        # OpenSim logs "storage cannot be resampled" and leaves the data unfiltered.
        raise ValueError(f"times must increase by more than {_EPS:g} s to be filtered; the "
                         f"smallest step is {dt_min!r} s")
    average = (times_s[-1] - times_s[0]) / (n - 1)
    return dt_min, bool(average - dt_min > _EPS)


def lowpass_storage(times_s, values, cutoff_hz: float):
    """OpenSim's `Storage::lowpassIIR(cutoff)`: (times_s, values) -> (new_times_s, filtered).

    The smallest time step dt is the filter's sample interval; when the average step exceeds
    it by more than machine epsilon the table is first resampled at dt (`resample`, quintic),
    which changes the time column. Then every column goes through `lowpass_iir`.
    """
    t = np.asarray(times_s, dtype=np.float64)
    y = np.asarray(values, dtype=np.float64)
    dt_s, uneven = _lowpass_plan(t)
    if uneven:
        dt_s = _resample_step(t, dt_s)          # the step Storage::resample returns
        t, y = resample(t, y, dt_s, degree=5)
    return t, lowpass_iir(y, dt_s, cutoff_hz)


def prepared_times(times_s, cutoff_hz: float | None) -> np.ndarray:
    """The time column of the coordinate table after the ID tool's padding and filtering."""
    t = np.asarray(times_s, dtype=np.float64)
    if cutoff_hz is None or cutoff_hz < 0:
        return t.copy()
    t = pad(t, t.shape[0] // 2)
    dt_s, uneven = _lowpass_plan(t)
    return _uniform_grid(t[0], t[-1], _resample_step(t, dt_s)) if uneven else t


def prepare_coordinates(times_s, values, cutoff_hz: float | None, in_degrees: bool,
                        rotational_mask) -> tuple[np.ndarray, np.ndarray]:
    """Steps 1-3 of the module docstring: (times_s, values (n, n_coord) in SI) to spline.

    cutoff_hz None or negative: no padding and no filtering (OpenSim's default -1).
    rotational_mask (n_coord,) bool: the columns that are rotational coordinates (converted
    from degrees when in_degrees; translations stay in m).
    """
    t = np.asarray(times_s, dtype=np.float64)
    y = np.asarray(values, dtype=np.float64)
    if y.ndim != 2 or y.shape[0] != t.shape[0]:
        raise ValueError(f"values must be (n_times, n_coord) with n_times = {t.shape[0]}, "
                         f"got {y.shape}")
    mask = np.asarray(rotational_mask, dtype=bool)
    if mask.shape != (y.shape[1],):
        raise ValueError(f"rotational_mask must have one flag per column ({y.shape[1]}), "
                         f"got shape {mask.shape}")
    if cutoff_hz is not None and cutoff_hz >= 0:
        n_pad = t.shape[0] // 2
        t, y = lowpass_storage(pad(t, n_pad), pad(y, n_pad), cutoff_hz)
    else:
        y = y.copy()
    if in_degrees:
        y[:, mask] = y[:, mask] * DEGREE_TO_RADIAN
    return t, y


def output_times(ik_times_s, start_time_s: float = -math.inf, end_time_s: float = math.inf,
                 cutoff_hz: float | None = None) -> np.ndarray:
    """The times at which OpenSim's ID tool solves and reports, for these IK times.

    As `InverseDynamicsTool::run`: on the prepared table (`prepared_times`: padded and, for
    uneven steps, resampled when cutoff_hz >= 0), start = max(first time, start_time_s),
    final = min(last time, end_time_s); the rows from `findIndex(start)` to
    `findIndex(final)`, where findIndex(t) is the last row whose time is <= t (row 0 if none).
    A range beyond the data thus gives one row (the last, or the first), as in OpenSim.
    """
    t = prepared_times(ik_times_s, cutoff_hz)
    start = max(t[0], start_time_s)
    final = min(t[-1], end_time_s)
    i0, i1 = _find_index(t, start), _find_index(t, final)
    if i1 < i0:
        raise ValueError(f"no output times: the time range [{start_time_s!r}, {end_time_s!r}] s "
                         f"ends before it starts on the data ({float(t[0])!r} to "
                         f"{float(t[-1])!r} s)")
    return t[i0:i1 + 1].copy()


def _find_index(times_s: np.ndarray, t: float) -> int:
    """Storage::findIndex(t): the last row with time <= t, or 0."""
    return max(int(np.searchsorted(times_s, t, side="right")) - 1, 0)


def coordinate_trajectories(times_s, values, cutoff_hz: float | None, in_degrees: bool,
                            rotational_mask, t_out):
    """(q, qd, qdd), each (n_out, n_coord) in SI, as OpenSim's ID tool evaluates them.

    `prepare_coordinates` (pad, IIR lowpass with resampling, degrees -> radians), then the
    natural quintic spline of every column (`GCVSplineSet(5, ...)`) and its first two
    derivatives at t_out (s). Rotational columns are in rad, rad/s, rad/s^2; translational
    ones in m, m/s, m/s^2.
    """
    t, y = prepare_coordinates(times_s, values, cutoff_hz, in_degrees, rotational_mask)
    spline = natural_spline(t, y, degree=COORDINATE_SPLINE_DEGREE)
    t_out = np.asarray(t_out, dtype=np.float64)
    return spline(t_out, 0), spline(t_out, 1), spline(t_out, 2)
