"""Central differences of a fiber system's reduced Newton residual (the outside check of the
exact sparse tangent in test_fiber_coupling.py and test_fiber_fiber.py)."""

import numpy as np

from myotwin.fiber import system_stepping as ss


def central_difference_tangent(system, z, ctx, h: float = 1e-7) -> np.ndarray:
    """(n_z, n_z) d residual / d z by central differences of step h (float64: truncation
    ~h^2, cancellation ~eps/h, both ~1e-9 of the entries here)."""
    fd = np.empty((z.size, z.size))
    for j in range(z.size):
        e = np.zeros(z.size)
        e[j] = h
        rp = ss._evaluate(system, ss._fill(system, z + e, ctx.u_prev), ctx, False, 0)[1]
        rm = ss._evaluate(system, ss._fill(system, z - e, ctx.u_prev), ctx, False, 0)[1]
        fd[:, j] = (rp.residual - rm.residual) / (2 * h)
    return fd
