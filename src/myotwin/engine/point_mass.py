"""Point masses: bodies with mass and no rotational inertia about their centre of mass.

OpenSim (Simbody) accepts a body whose inertia is zero, e.g. the rods of OpenSim's
double_pendulum.osim: a point mass on a pin still has the inertia m d^2 about the pin, so the
joint-space mass matrix is positive definite. MuJoCo's compiler refuses it ("mass and inertia
of moving bodies must be larger than mjMINVAL", per body, mjMINVAL = 1e-15), and the engine's
models are compiled by MuJoCo. So a point mass is written to MJCF with a stand-in inertia
(STAND_IN_INERTIA_KGM2 on each principal axis, what MuJoCo's compiler and `mj_model()` see)
and a custom numeric that marks it:

    <body name="rod1"><inertial pos="..." mass="1" diaginertia="1e-14 1e-14 1e-14"/> ...
    <custom><numeric name="point_mass:rod1" data="1e-14"/></custom>

`compile_model` sets the marked bodies' inertia back to exactly zero, so the engine's dynamics
are those of the point mass. Whether the mass matrix is then invertible depends on the joints
(a point mass on its own hinge axis has no inertia about it; one on a free or ball joint none
about any axis): `check_mass_matrix` tests it at the reference pose (qpos0) and names the
dofs left without inertia. A singularity that only some poses reach (e.g. a point mass on the
line through two parallel hinge axes) is not found here; the simulation then stops at its
divergence check.
"""

from __future__ import annotations

import dataclasses

import numpy as np

#: Prefix of the MJCF custom numerics that mark a body as a point mass.
NUMERIC_PREFIX = "point_mass:"
#: Inertia (kg m^2, each principal moment) given to MuJoCo's compiler for a point mass: 10x
#: mjMINVAL (1e-15), the smallest it accepts with margin. Only `mj_model()` carries it.
STAND_IN_INERTIA_KGM2 = 1e-14
#: A mass matrix whose smallest eigenvalue is below this fraction of its largest is singular
#: to float64 (about 1e3 x the roundoff of the largest one).
SINGULAR_RELATIVE = 1e-13


def point_mass_bodies(mj_model) -> tuple[int, ...]:
    """Ids of the bodies marked `point_mass:<body>` in a compiled MjModel (sorted).

    ValueError naming the numeric if the body is missing, massless, or was compiled with an
    inertia other than the stand-in (the marker belongs to ModelBuilder's point masses)."""
    import mujoco

    bodies = []
    for i in range(mj_model.nnumeric):
        name = mujoco.mj_id2name(mj_model, mujoco.mjtObj.mjOBJ_NUMERIC, i) or ""
        if not name.startswith(NUMERIC_PREFIX):
            continue
        where = f"custom numeric '{name}'"
        body = name[len(NUMERIC_PREFIX):]
        b = mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_BODY, body)
        if b < 0:
            raise ValueError(f"{where}: no body named '{body}'")
        adr, size = int(mj_model.numeric_adr[i]), int(mj_model.numeric_size[i])
        data = np.array(mj_model.numeric_data[adr:adr + size], dtype=np.float64)
        if size != 1 or data[0] != STAND_IN_INERTIA_KGM2:
            raise ValueError(f"{where}: data must be the stand-in inertia "
                             f"{STAND_IN_INERTIA_KGM2!r}, got {data.tolist()}")
        inertia = np.asarray(mj_model.body_inertia[b], dtype=np.float64)
        if mj_model.body_mass[b] <= 0.0 or np.any(inertia != STAND_IN_INERTIA_KGM2):
            raise ValueError(f"{where}: body '{body}' has mass {float(mj_model.body_mass[b]):g} kg and "
                             f"inertia {inertia.tolist()} kg m^2; a point mass has mass > 0 "
                             f"and the stand-in inertia {STAND_IN_INERTIA_KGM2!r}")
        bodies.append(int(b))
    return tuple(sorted(bodies))


def with_point_masses(model, mj_model, bodies: tuple[int, ...]):
    """`model` with the inertia of `bodies` set to zero; ValueError if the mass matrix at
    qpos0 is then singular (naming the point masses and the dofs without inertia)."""
    import jax.numpy as jnp

    if not bodies:
        return model
    inertia = np.array(model.body_inertia)
    inertia[list(bodies)] = 0.0
    model = dataclasses.replace(model, body_inertia=jnp.asarray(inertia))
    check_mass_matrix(model, mj_model, bodies)
    return model


def check_mass_matrix(model, mj_model, bodies: tuple[int, ...]) -> None:
    """ValueError if the skeleton's mass matrix at qpos0 is singular (see module docstring)."""
    import mujoco

    from myotwin.engine.mass import mass_matrix

    m = np.asarray(mass_matrix(model, model.qpos0))
    if m.size == 0:
        return
    values, vectors = np.linalg.eigh(m)
    if values[0] > SINGULAR_RELATIVE * max(values[-1], 0.0):
        return
    null = np.abs(vectors[:, 0])
    dofs = [d for d in range(model.n_v) if null[d] > 1e-6 * null.max()]
    joints = sorted({mujoco.mj_id2name(mj_model, mujoco.mjtObj.mjOBJ_JOINT,
                                       int(mj_model.dof_jntid[d])) or f"#{d}" for d in dofs})
    names = [mujoco.mj_id2name(mj_model, mujoco.mjtObj.mjOBJ_BODY, b) for b in bodies]
    raise ValueError(
        f"point masses {names} (bodies with zero inertia) leave the mass matrix singular at the "
        f"reference pose qpos0 (eigenvalues {values[0]:.3g} to {values[-1]:.3g}): no inertia "
        f"along a motion of joints {joints}; a point mass on its own joint's axis or on a "
        "ball/free joint needs an inertia")
