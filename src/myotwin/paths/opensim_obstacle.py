"""OpenSim's obstacle-set cylinder (WrapCylinderObst; Garner & Pandy 2000) for one segment.

A myotwin extension (no MJCF equivalent): the closed-form single-cylinder case of the
obstacle-set method of Garner & Pandy (2000, Comput Methods Biomech Biomed Engin 3:1-30), as
OpenSim 4.6 implements it (`WrapCylinderObst::wrapLine`, opensim-core
OpenSim/Simulation/Wrap/WrapCylinderObst.cpp, re-implemented from this description). The path
always wraps in the declared direction (right- or left-handed about the cylinder's z axis)
unless that would take it more than half way round; whether the straight segment touches the
cylinder does not matter (the obstacle-set method's "contact" is decided by the wrap angle).

In the cylinder frame (axis = z), with end points P = p1, S = p2 and R = 0.8 r h (h = +1 right-
handed, -1 left-handed; OpenSim wraps at 80 % of the declared radius):
* insideRadius if Px^2 + Py^2 < R^2 or Sx^2 + Sy^2 < R^2;
* tangent points in the cross-section, dP = Px^2 + Py^2, kP = sqrt(dP - R^2):
    Q = R (R Px - kP Py, R Py + kP Px) / dP,   T = R (R Sx + kS Sy, R Sy - kS Sx) / dS;
* noWrap if R (Qx Ty - Qy Tx) < 0 (the wrap would exceed 180 degrees);
* arc QT = |R| acos(1 - |Q - T|^2 / (2 R^2)), 2-D lengths PQ = |Q - P|_xy, TS = |T - S|_xy,
  heights Qz = Pz + (Sz - Pz) PQ / (PQ + TS + QT), Tz = Sz + (Pz - Sz) TS / (PQ + TS + QT);
* status wrapped; the wrap length is QT (OpenSim counts only the arc, not the helix's rise:
  the path length is |P Q| + QT + |T S| with 3-D straight pieces, which is shorter than the
  geodesic sqrt(QT^2 + (Tz - Qz)^2) by the axial part -- reproduced, not corrected).
The cylinder's length is not used (infinite, as in OpenSim).
"""

from __future__ import annotations

import jax.numpy as jnp

from myotwin.paths.opensim_cylinder import INSIDE_RADIUS, NO_WRAP, WRAPPED, CylinderWrap
from myotwin.paths.safe import safe_acos, safe_atan2, safe_div, safe_sqrt

#: OpenSim WrapCylinderObst wraps at this fraction of the declared radius.
RADIUS_FACTOR = 0.8


def opensim_obstacle_wrap(p1, p2, radius, handedness) -> CylinderWrap:
    """WrapCylinderObst::wrapLine for the segment p1-p2 (cylinder frame, (3,) each).

    radius (m): the declared radius (wrapping uses 0.8 of it); handedness: +1 right-handed,
    -1 left-handed (may be traced). Returns status, tangent points Q, T, the arc length and
    the arc's turn about +z."""
    r = RADIUS_FACTOR * radius * handedness
    d_p = p1[0] ** 2 + p1[1] ** 2
    d_s = p2[0] ** 2 + p2[1] ** 2
    inside = (d_p - r * r < 0.0) | (d_s - r * r < 0.0)
    k_p, k_s = safe_sqrt(d_p - r * r), safe_sqrt(d_s - r * r)
    q_xy = safe_div(r, d_p) * jnp.stack([r * p1[0] - k_p * p1[1], r * p1[1] + k_p * p1[0]])
    t_xy = safe_div(r, d_s) * jnp.stack([r * p2[0] + k_s * p2[1], r * p2[1] - k_s * p2[0]])
    too_far = r * (q_xy[0] * t_xy[1] - q_xy[1] * t_xy[0]) < 0.0
    pq = safe_sqrt(jnp.sum((q_xy - p1[:2]) ** 2))
    ts = safe_sqrt(jnp.sum((t_xy - p2[:2]) ** 2))
    chord2 = jnp.sum((q_xy - t_xy) ** 2)
    arc = jnp.abs(r * safe_acos(1.0 - 0.5 * safe_div(chord2, r * r)))
    total = pq + ts + arc
    qz = p1[2] + (p2[2] - p1[2]) * safe_div(pq, total)
    tz = p2[2] + (p1[2] - p2[2]) * safe_div(ts, total)
    status = jnp.where(inside, INSIDE_RADIUS, jnp.where(too_far, NO_WRAP, WRAPPED))
    # the arc's signed rotation about +z from Q to T (at most half a turn, so the short way)
    turn = safe_atan2(q_xy[0] * t_xy[1] - q_xy[1] * t_xy[0], jnp.dot(q_xy, t_xy))
    return CylinderWrap(status.astype(jnp.int32), jnp.concatenate([q_xy, qz[None]]),
                        jnp.concatenate([t_xy, tz[None]]), arc, turn)
