"""Cubic Hermite elements on the fiber parameter theta in [0, 1] and Gauss-Legendre quadrature.

Gfrerer & Simeon 2021 (Multibody Syst. Dyn. 52:1-30), Sec. 4.1, Eqs. (52)-(53): the centreline
x(theta) is C1 piecewise cubic. Each node carries its position x_i (3,) and its tangent
dx/dtheta_i (3,), i.e. 6 dofs per node in 3-D. On element e = [theta_e, theta_e+1] with length
h_e and local coordinate xi = (theta - theta_e) / h_e in [0, 1]

    x(xi) = phi_1(xi) x_a + phi_2(xi) h_e x'_a + phi_3(xi) x_b + phi_4(xi) h_e x'_b,   (52)

    phi_1 = 1 + xi^2 (2 xi - 3),  phi_2 = xi (xi (xi - 2) + 1),
    phi_3 = -xi^2 (2 xi - 3),     phi_4 = xi^2 (xi - 1).                                  (53)

The tangents are derivatives with respect to theta (not xi), hence the factor h_e: neighbouring
elements of different lengths then share one tangent dof and the centreline stays C1.

Global dof layout (the "naming grammar" of the fiber package): node i owns dofs
[6 i, 6 i + 3) (position, m) and [6 i + 3, 6 i + 6) (tangent dx/dtheta, m per unit theta).
Element e touches the 12 consecutive dofs [6 e, 6 e + 12), so every assembled matrix is banded
with half-bandwidth 11 (`BANDWIDTH`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.scalars import is_integer

#: Dofs per node (position and tangent in 3-D) and per element (two nodes).
DOF_PER_NODE = 6
DOF_PER_ELEMENT = 12
#: Half-bandwidth of assembled matrices: |i - j| <= 11 for any two dofs of one element.
BANDWIDTH = DOF_PER_ELEMENT - 1


def _xp(x):
    """NumPy for concrete NumPy/Python input (compile time, output), jax.numpy otherwise."""
    return jnp if isinstance(x, jax.Array) else np


def shape_functions(xi):
    """Hermite shape functions (Eq. 53) at xi: array (..., 4) ordered (phi_1..phi_4)."""
    xp = _xp(xi)
    xi = xp.asarray(xi)
    return xp.stack(
        [1.0 + xi**2 * (2.0 * xi - 3.0), xi * (xi * (xi - 2.0) + 1.0),
         -(xi**2) * (2.0 * xi - 3.0), xi**2 * (xi - 1.0)],
        axis=-1,
    )


def shape_derivatives(xi):
    """d phi / d xi of Eq. (53) at xi: array (..., 4)."""
    xp = _xp(xi)
    xi = xp.asarray(xi)
    return xp.stack(
        [6.0 * xi * (xi - 1.0), 3.0 * xi**2 - 4.0 * xi + 1.0,
         -6.0 * xi * (xi - 1.0), 3.0 * xi**2 - 2.0 * xi],
        axis=-1,
    )


def gauss_legendre(n_points: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre points and weights mapped to [0, 1]: (n_points,), (n_points,).

    Exact for polynomials of degree 2 n_points - 1; the weights sum to 1.
    """
    if not is_integer(n_points) or n_points < 1:
        raise ValueError(f"quadrature: number of Gauss points must be an integer >= 1, "
                         f"got {n_points!r}")
    x, w = np.polynomial.legendre.leggauss(int(n_points))
    return 0.5 * (x + 1.0), 0.5 * w


def element_coefficients(q_e, h):
    """Nodal dofs of one element (12,) -> coefficient rows (4, 3) = (x_a, h x'_a, x_b, h x'_b).

    With these rows, x(xi) = phi(xi) @ C and dx/dtheta = (dphi(xi) @ C) / h.
    """
    c = q_e.reshape(4, 3)
    scale = jnp.array([1.0, h, 1.0, h])
    return c * scale[:, None]


def interpolate(q_e, h, phi, dphi):
    """Centreline and tangent of one element at tabulated points.

    q_e (12,) nodal dofs, h element length in theta, phi and dphi (n_points, 4) tables of
    `shape_functions` / `shape_derivatives`. Returns x (n_points, 3) in m and
    x_theta = dx/dtheta (n_points, 3) in m per unit theta.
    """
    c = element_coefficients(q_e, h)
    return phi @ c, (dphi @ c) / h


def gather_virtual_work(f_value, f_tangent, h, phi, dphi, weights):
    """Element generalised force (12,) of point loads on x and on dx/dtheta.

    For a virtual work  sum_k w_k h (f_value_k . dx_k + f_tangent_k . d(x_theta)_k)  with
    f_value, f_tangent (n_points, 3), this returns its coefficients on the 12 element dofs
    (position a, tangent a, position b, tangent b), i.e. the discrete integral of
    f_value N_j + f_tangent N_j' over the element. `weights` (n_points,) are on [0, 1].
    """
    wh = (weights * h)[:, None]
    rows = phi.T @ (f_value * wh) + dphi.T @ (f_tangent * wh) / h  # (4, 3) per coefficient row
    scale = jnp.array([1.0, h, 1.0, h])
    return (rows * scale[:, None]).reshape(12)


def element_dof_index(n_elements: int) -> np.ndarray:
    """Global dof indices of each element: int array (n_elements, 12)."""
    return DOF_PER_NODE * np.arange(n_elements)[:, None] + np.arange(DOF_PER_ELEMENT)[None, :]


def evaluate(q, node_theta, theta):
    """Centreline x(theta) and dx/dtheta of a discretised fiber at arbitrary parameters (NumPy).

    q (..., n_dof) global dofs (any leading batch shape, e.g. a trajectory), node_theta
    (n_node,) increasing, theta (n,) in [0, 1]. Returns (x (..., n, 3), x_theta (..., n, 3)).
    For output and error measures; the physics uses `interpolate` on tabulated points. A q
    whose last axis is not 6 per node is a ValueError naming it.
    """
    node_theta = np.asarray(node_theta, dtype=np.float64)
    theta = np.atleast_1d(np.asarray(theta, dtype=np.float64))
    n_el = node_theta.shape[0] - 1
    n_dof = DOF_PER_NODE * (n_el + 1)
    if np.ndim(q) < 1 or np.shape(q)[-1] != n_dof:
        raise ValueError(f"evaluate: q has shape {np.shape(q)}, expected (..., {n_dof}) "
                         f"({DOF_PER_NODE} per node of the {n_el + 1} in node_theta)")
    e = np.clip(np.searchsorted(node_theta, theta, side="right") - 1, 0, n_el - 1)
    h = (node_theta[e + 1] - node_theta[e])[:, None]
    xi = (theta - node_theta[e]) / h[:, 0]
    q = np.asarray(q, dtype=np.float64)
    nodes = q.reshape(q.shape[:-1] + (n_el + 1, DOF_PER_NODE))
    xa, ta = nodes[..., e, :3], nodes[..., e, 3:]
    xb, tb = nodes[..., e + 1, :3], nodes[..., e + 1, 3:]
    phi, dphi = shape_functions(xi), shape_derivatives(xi)
    x = phi[:, 0:1] * xa + phi[:, 1:2] * h * ta + phi[:, 2:3] * xb + phi[:, 3:4] * h * tb
    xt = (dphi[:, 0:1] * xa + dphi[:, 1:2] * h * ta + dphi[:, 2:3] * xb
          + dphi[:, 3:4] * h * tb) / h
    return x, xt
