"""An ExternalLoads file as the loads of a forward simulation (`osim forward --external-loads`,
OpenSim's ForwardTool `external_loads_file`).

Each ExternalForce that applies force (`external_loads.py` reads the file and its data) becomes
one load of a `musculoskeletal.body_loads.BodyLoads`: its applied body, the body of its force
and torque frame and of its point frame (ground = 0), and its force, point and torque data as
the functions of time OpenSim's ExternalForce makes of them (`external_loads.LoadCurve`: a
constant for one row, piecewise linear with the end slopes continued for two or three, else
the natural cubic GCV spline continued linearly), written as piecewise polynomials so that the
integrator evaluates them at any time in JAX. A force without a point acts at its body's
origin; a missing force or torque is zero. At every state the point and the force follow
their frames (a point in ground stays in ground), as OpenSim's ExternalForce::computeForce
applies them (`body_loads` docstring).
"""

from __future__ import annotations

import math

import numpy as np

from myotwin.engine.piecewise import PiecewisePolynomial
from myotwin.musculoskeletal.body_loads import BodyLoads, body_loads
from myotwin.osim.external_loads import ExternalLoads, LoadCurve
from myotwin.osim.inverse_dynamics import frame_index
from myotwin.osim.loader import OsimModel


def _constant(value: float) -> PiecewisePolynomial:
    return PiecewisePolynomial(np.zeros(0), np.zeros(1), np.array([[value]]))


def curve_polynomials(curve: LoadCurve | None) -> list[PiecewisePolynomial]:
    """The three columns of `curve` (None: zeros) as piecewise polynomials of time, equal to
    `LoadCurve.__call__` everywhere (tests/osim/test_osim_forward_external_loads.py)."""
    if curve is None:
        return [_constant(0.0)] * 3
    x, y = curve.times_s, curve.values
    if x.size == 1:                                  # OpenSim's Constant
        return [_constant(float(v)) for v in y[0]]
    if x.size <= 3:                                  # PiecewiseLinearFunction, end slopes on
        slopes = np.diff(y, axis=0) / np.diff(x)[:, None]
        return [PiecewisePolynomial(x[1:-1].copy(), x[:-1].copy(),
                                    np.stack([y[:-1, k], slopes[:, k]], axis=1))
                for k in range(3)]
    spline = curve.spline.bspline                    # natural cubic, linear beyond the ends
    inner = np.stack([spline(x[:-1], nu=j) / math.factorial(j) for j in range(4)], axis=1)
    out = []
    for k in range(3):
        left = [spline(x[0], nu=j)[k] for j in range(2)] + [0.0, 0.0]
        right = [spline(x[-1], nu=j)[k] for j in range(2)] + [0.0, 0.0]
        coefficients = np.vstack([left, inner[:, :, k], right])
        origins = np.concatenate([[x[0]], x[:-1], [x[-1]]])
        out.append(PiecewisePolynomial(x.copy(), origins, coefficients))
    return out


def forward_loads(loaded: OsimModel, loads: ExternalLoads) -> BodyLoads:
    """The forces of `loads` that apply force, on `loaded`'s bodies (module docstring);
    ValueError naming the force for a frame that is not a body of the model or ground, or a
    force applied to ground."""
    forces = [f for f in loads.forces if f.applies_force]
    body, force_frame, point_frame, components = [], [], [], []
    for f in forces:
        what = f"{loads.path.name}: ExternalForce {f.name!r}"
        body.append(frame_index(loaded, f.applied_to_body, f"{what} applied_to_body"))
        if body[-1] == 0:
            raise ValueError(f"{what}: a force applied to ground moves nothing")
        force_frame.append(frame_index(loaded, f.force_expressed_in_body,
                                       f"{what} force_expressed_in_body"))
        point_frame.append(body[-1] if f.point_curve is None else frame_index(
            loaded, f.point_expressed_in_body, f"{what} point_expressed_in_body"))
        for curve in (f.force_curve, f.point_curve, f.torque_curve):
            components += curve_polynomials(curve)
    return body_loads(body, force_frame, point_frame, components)
