"""Dry friction of dofs and tendons (MuJoCo `frictionloss`): MuJoCo 4.0's friction constraint
rows (mjCNSTR_FRICTION_DOF, mjCNSTR_FRICTION_TENDON), solved with the limit rows (limits.py).

Each dof d with frictionloss mu_d > 0 gives one row with J = e_d; each tendon t with
frictionloss mu_t > 0 one row with J = J_t, its length Jacobian (MuJoCo ten_J; `tendons.py`).
The rows are always instantiated (no distance: efc_pos = 0, margin 0) and precede the limit
rows (MuJoCo's order: friction rows, dofs then tendons, then limit rows). Their force is
bounded, -mu <= f <= mu: a box constraint in the dual QP of limits.py, so that the friction
force opposes the motion with at most mu, and holds it still (stiction) while the other forces
are smaller. The soft-constraint law is the limits' at r = 0: impedance d = d(0) (solimp's d0,
or (d0 + dwidth)/2 when flat), reference acceleration aref = -B J qd (no position term),
regulariser R = max(mjMINVAL, (1 - d)/d invweight0) with dof_invweight0 or tendon_invweight0;
solref and solimp are MJCF's solreffriction / solimpfriction (MuJoCo dof_solref, dof_solimp,
tendon_solref_fri, tendon_solimp_fri). MuJoCo's Newton, CG and PGS solvers minimise the same
convex problem; mj_inverse assigns f = clip(-(J qacc - aref) / R, -mu, mu).
The frictionloss disable flag and the constraint disable flag remove the rows (as MuJoCo).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

_STATIC = {"static": True}


@dataclasses.dataclass(frozen=True)
class FrictionModel:
    """The model's friction rows (a JAX pytree; k of them: dofs first, then tendons).

    frictionloss (k,): mu, the largest friction force (N or N m; per unit of a fixed
      tendon's length).
    solref (k, 2), solimp (k, 5), invweight0 (k,): the rows' soft-constraint parameters.
    coef_v (k, n_v): J of the dof rows (e_d) and fixed-tendon rows (their coefficients); zero
      rows for spatial tendons, whose J comes from the paths.
    Static: dof (k,) the dof of each row (-1 for tendon rows); tendon_id (k,) MuJoCo tendon id
      (-1 for dof rows); spatial (k,) bools; names (k,) for messages.
    """

    frictionloss: jax.Array
    solref: jax.Array
    solimp: jax.Array
    invweight0: jax.Array
    coef_v: jax.Array
    dof: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    tendon_id: tuple[int, ...] = dataclasses.field(metadata=_STATIC)
    spatial: tuple[bool, ...] = dataclasses.field(metadata=_STATIC)
    names: tuple[str, ...] = dataclasses.field(metadata=_STATIC)


jax.tree_util.register_dataclass(
    FrictionModel,
    data_fields=[f.name for f in dataclasses.fields(FrictionModel)
                 if not f.metadata.get("static")],
    meta_fields=[f.name for f in dataclasses.fields(FrictionModel)
                 if f.metadata.get("static")])


def compile_friction(m) -> FrictionModel | None:
    """The `FrictionModel` of a compiled MjModel `m` (only read), or None if no dof or tendon
    has frictionloss or the frictionloss or constraint flag is disabled. Raises ValueError
    (naming the dof or tendon) for a negative frictionloss or a solreffriction that mixes the
    standard and direct formats."""
    import mujoco

    from myotwin.engine.limits import check_solref
    from myotwin.engine.model import is_spatial_tendon
    from myotwin.engine.tendons import fixed_tendon_coefficients, tendon_label

    dsbl = m.opt.disableflags
    if dsbl & (mujoco.mjtDisableBit.mjDSBL_FRICTIONLOSS | mujoco.mjtDisableBit.mjDSBL_CONSTRAINT):
        return None
    rows = []  # (dof, tendon, frictionloss, solref, solimp, invweight0, name)
    for d in range(m.nv):
        if m.dof_frictionloss[d] == 0:
            continue
        j = int(m.dof_jntid[d])
        name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j)
        what = f"dof {d} of joint #{j}" + (f" '{name}'" if name else "")
        rows.append((d, -1, m.dof_frictionloss[d], m.dof_solref[d], m.dof_solimp[d],
                     m.dof_invweight0[d], what))
    for t in range(m.ntendon):
        if m.tendon_frictionloss[t] == 0:
            continue
        rows.append((-1, t, m.tendon_frictionloss[t], m.tendon_solref_fri[t],
                     m.tendon_solimp_fri[t], m.tendon_invweight0[t], tendon_label(m, t)))
    if not rows:
        return None
    for _, _, mu, solref, _, _, what in rows:
        if mu < 0:
            raise ValueError(f"{what}: negative frictionloss {float(mu):g}")
        check_solref(solref, what, "solreffriction")
    coef_v = np.zeros((len(rows), m.nv))
    for r, (d, *_) in enumerate(rows):
        if d >= 0:
            coef_v[r, d] = 1.0
    _, tendon_coef = fixed_tendon_coefficients(m, [row[1] for row in rows])
    coef_v += tendon_coef   # zero rows for dofs (id -1) and spatial tendons
    f64 = lambda x: jnp.asarray(np.array(x, dtype=np.float64), dtype=jnp.float64)  # noqa: E731
    col = lambda k: [row[k] for row in rows]  # noqa: E731
    return FrictionModel(
        frictionloss=f64(col(2)),
        solref=f64(col(3)).reshape(len(rows), 2),
        solimp=f64(col(4)).reshape(len(rows), 5),
        invweight0=f64(col(5)),
        coef_v=f64(coef_v),
        dof=tuple(int(x) for x in col(0)),
        tendon_id=tuple(int(x) for x in col(1)),
        spatial=tuple(t >= 0 and bool(is_spatial_tendon(m, t)) for t in col(1)),
        names=tuple(col(6)),
    )


def friction_jacobian(model, q: jax.Array, stages=None) -> jax.Array:
    """(k, n_v) J of the friction rows at configuration q (n_q,) (module docstring; stages:
    the evaluation's `engine.stages.Stages`, or None)."""
    from myotwin.engine.tendons import tendon_rows

    fr = model.friction
    coef_q = jnp.zeros((len(fr.dof), model.n_q), dtype=q.dtype)   # lengths are not needed
    return tendon_rows(model, q, fr.tendon_id, fr.spatial, coef_q, fr.coef_v,
                       "tendon frictionloss", stages)[1]
