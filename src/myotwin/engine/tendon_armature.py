"""Tendon armature (MuJoCo 4.0 `tendon_armature`, the `armature` attribute of a tendon): an
inertia a_t attached to the tendon's length, kinetic energy 0.5 a_t Ldot_t^2 with Ldot_t = J_t qd
(MuJoCo's documentation; units kg for a spatial tendon, kg per squared unit of a fixed tendon's
length). Lagrange's equations add, for every such tendon t,
  M(q)      += a_t J_t^T J_t                        (MuJoCo qM)
  c(q, qd)  += a_t J_t^T (Jdot_t qd)                (MuJoCo qfrc_bias)
with Jdot_t qd the tendon's length acceleration at qdd = 0. This is the seed's Eq. 7 (Wang et
al. 2022) for one mass in the tendon's length coordinate instead of points in space, so it
reaches every consumer of the mass matrix and the bias force: forward and inverse dynamics,
energies, the integrators (MuJoCo's Euler solves with M + dt D, M including the armature).

Jdot_t qd, as MuJoCo 4.0 computes it (checked against its qfrc_bias):
  fixed tendon: 0 (coefficients on hinge/slide joints, a constant J_t);
  spatial tendon: MuJoCo accepts armature only on tendons without wrapping geoms (its
  compiler: "geom wrapping not supported by tendon armature"; `compile_tendon_armature`
  refuses the case too, e.g. an MjModel edited after compilation). The path is then straight
  segments between consecutive sites of a branch, each divided by its branch's pulley divisor
  D. Per segment, with delta = x1 - x0, l = |delta|, u = delta / l and the sites' velocities
  v and bias accelerations a (classical, at qdd = 0; the engine's velocity stage via
  `inertia.anchors.point_rates`):
     ldot = u . (v1 - v0),   lddot = u . (a1 - a0) + (|v1 - v0|^2 - (u . (v1 - v0))^2) / l,
  and Jdot_t qd = sum of lddot / D over the tendon's segments. Its Jacobian row is
  J_t = sum u^T (J_x1 - J_x0) / D from the sites' tangents (MuJoCo ten_J).
A segment shorter than MuJoCo's mjMINVAL contributes nothing (its direction is undefined).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

_STATIC = {"static": True}


@dataclasses.dataclass(frozen=True)
class TendonArmature:
    """The model's tendons with armature (a JAX pytree; k of them, s straight segments).

    armature (k,): a_t (kg, or kg per squared unit of a fixed tendon's length).
    fixed_coef_v (k, n_v): a fixed tendon's coefficients at its dofs (J_t), zero rows for
      spatial tendons.
    segment_divisor (s,): the pulley divisor of each segment's branch.
    Static: tendon_id (k,) MuJoCo ids; segment_site0, segment_site1 (s,) site ids;
      segment_tendon (s,) the row in 0..k-1 each segment belongs to; names (k,).
    """

    armature: jax.Array
    fixed_coef_v: jax.Array
    segment_divisor: jax.Array
    tendon_id: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    segment_site0: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    segment_site1: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    segment_tendon: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    names: tuple[str, ...] = dataclasses.field(metadata=_STATIC)


jax.tree_util.register_dataclass(
    TendonArmature,
    data_fields=[f.name for f in dataclasses.fields(TendonArmature)
                 if not f.metadata.get("static")],
    meta_fields=[f.name for f in dataclasses.fields(TendonArmature)
                 if f.metadata.get("static")])


def _segments(m, t: int, what: str) -> list[tuple[int, int, float]]:
    """(site0, site1, divisor) of each straight segment of spatial tendon t; ValueError if the
    tendon wraps a geom."""
    import mujoco

    wt = mujoco.mjtWrap
    out, prev, divisor = [], None, 1.0
    for w in range(m.tendon_adr[t], m.tendon_adr[t] + m.tendon_num[t]):
        kind = int(m.wrap_type[w])
        if kind == wt.mjWRAP_PULLEY:
            prev, divisor = None, float(m.wrap_prm[w])
        elif kind == wt.mjWRAP_SITE:
            site = int(m.wrap_objid[w])
            if prev is not None:
                out.append((prev, site, divisor))
            prev = site
        else:
            raise ValueError(
                f"{what}: armature {float(m.tendon_armature[t]):g} on a tendon that wraps a "
                "geom; MuJoCo's compiler refuses this (\"geom wrapping not supported by tendon "
                "armature\") and so does the engine: set tendon_armature to 0 or remove the "
                "wrap")
    return out


def compile_tendon_armature(m) -> TendonArmature | None:
    """The `TendonArmature` of a compiled MjModel `m` (only read), or None if no tendon has
    armature. Raises ValueError (naming the tendon) for armature on a geom-wrapping tendon."""
    from myotwin.engine.model import is_spatial_tendon
    from myotwin.engine.tendons import fixed_tendon_coefficients, tendon_label

    if not hasattr(m, "tendon_armature"):
        return None
    armature = np.asarray(m.tendon_armature, dtype=np.float64).reshape(m.ntendon)
    keep = [t for t in range(m.ntendon) if armature[t] != 0]
    if not keep:
        return None
    segments = []
    for row, t in enumerate(keep):
        if armature[t] < 0:
            raise ValueError(f"{tendon_label(m, t)}: negative armature {armature[t]:g} (kg)")
        if is_spatial_tendon(m, t):
            segments += [(s0, s1, div, row) for s0, s1, div in _segments(m, t, tendon_label(m, t))]
    _, coef_v = fixed_tendon_coefficients(m, keep)
    f64 = lambda x: jnp.asarray(np.array(x, dtype=np.float64), dtype=jnp.float64)  # noqa: E731
    return TendonArmature(
        armature=f64(armature[keep]),
        fixed_coef_v=f64(coef_v),
        segment_divisor=f64([s[2] for s in segments]),
        tendon_id=tuple(keep),
        segment_site0=tuple(s[0] for s in segments),
        segment_site1=tuple(s[1] for s in segments),
        segment_tendon=tuple(s[3] for s in segments),
        names=tuple(tendon_label(m, t) for t in keep),
    )


def _segment_sum(arm: TendonArmature, x: jax.Array) -> jax.Array:
    """(k, ...) per-tendon sums of per-segment values x (s, ...) (a static 0/1 matrix)."""
    onto = np.zeros((len(arm.tendon_id), len(arm.segment_tendon)))
    onto[np.asarray(arm.segment_tendon, dtype=np.int64), np.arange(onto.shape[1])] = 1.0
    return jnp.tensordot(jnp.asarray(onto, x.dtype), x, axes=1)


def _segment_geometry(model, kin):
    """(u (s, 3) unit directions, l (s,) lengths, sites0, sites1 (static index arrays))."""
    from myotwin.paths.safe import MINVAL, norm, safe_div

    arm = model.tendon_armature
    s0 = np.asarray(arm.segment_site0, dtype=np.int64)
    s1 = np.asarray(arm.segment_site1, dtype=np.int64)
    delta = kin.site_pos_world[s1] - kin.site_pos_world[s0]
    length = norm(delta)
    length = jnp.where(length < MINVAL, 0.0, length)
    return safe_div(delta, length[:, None]), length, s0, s1


def tendon_armature_jacobians(model, kin) -> jax.Array:
    """(k, n_v) J_t of the tendons with armature at the kinematics `kin` (MuJoCo ten_J rows)."""
    from myotwin.engine.jacobian import site_tangents

    arm = model.tendon_armature
    jac = arm.fixed_coef_v.astype(kin.site_pos_world.dtype)
    if arm.segment_tendon:
        u, _, s0, s1 = _segment_geometry(model, kin)
        tangents = site_tangents(model, kin)                       # (n_v, n_site, 3)
        rows = jnp.einsum("sk,vsk->sv", u, tangents[:, s1] - tangents[:, s0])
        jac = jac + _segment_sum(arm, rows / arm.segment_divisor[:, None])
    return jac


def tendon_armature_mass(model, kin) -> jax.Array:
    """(n_v, n_v) sum_t a_t J_t^T J_t at the kinematics `kin`."""
    jac = tendon_armature_jacobians(model, kin)
    return jac.T @ (model.tendon_armature.armature[:, None] * jac)


def tendon_armature_bias(model, kin, bodies) -> jax.Array:
    """(n_v,) sum_t a_t J_t^T (Jdot_t qd) at the kinematics `kin` and the velocity stage
    `bodies` (`engine.twists.BodyMotion` at qd; module docstring)."""
    from myotwin.inertia.anchors import point_rates
    from myotwin.paths.safe import safe_div

    arm = model.tendon_armature
    dtype = kin.site_pos_world.dtype
    if not arm.segment_tendon:   # fixed tendons only: Jdot = 0
        return jnp.zeros(model.n_v, dtype)
    u, length, s0, s1 = _segment_geometry(model, kin)
    site_body = np.asarray(model.site_body, dtype=np.int64).reshape(-1)
    sites = np.concatenate([s0, s1])
    vel, acc = point_rates(model, kin, bodies, kin.site_pos_world[sites], site_body[sites])
    n = s0.shape[0]
    dv, da = vel[n:] - vel[:n], acc[n:] - acc[:n]
    along = jnp.sum(u * dv, axis=-1)
    lddot = jnp.sum(u * da, axis=-1) + safe_div(jnp.sum(dv * dv, -1) - along * along, length)
    jdot_qd = _segment_sum(arm, lddot / arm.segment_divisor)       # (k,)
    return tendon_armature_jacobians(model, kin).T @ (arm.armature * jdot_qd)
