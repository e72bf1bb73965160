"""Public maximal twists (seed Wang et al. 2022 §3, Eqs. 2-5) vs MuJoCo 4.0.

body_velocities = J_mr qd vs `mjData.cvel` after mj_forward; body_bias_accelerations =
Jdot_mr qd vs `mjData.cacc` from mj_rnePostConstraint with qacc = 0 and zero gravity (MuJoCo's
cacc is the com-based spatial acceleration including the fictitious (0, -g) of the world).
Random forests of random_trees.py carry every joint type (free, ball, slide, hinge, several
joints per body)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from myotwin import engine

from random_trees import random_state, random_tree_mjcf

# Same recursions in float64 on both sides (MuJoCo mj_comVel / mj_rnePostConstraint): the
# residual is roundoff, ~1e-15 relative to the largest entry.
REL_TOL = 1e-10


def _rel(ours, ref) -> float:
    ours, ref = np.asarray(ours), np.asarray(ref)
    return float(np.abs(ours - ref).max() / max(np.abs(ref).max(), 1e-300))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_twists_match_mujoco_cvel_and_cacc(seed):
    m = mujoco.MjModel.from_xml_string(random_tree_mjcf(seed, n_bodies=10))
    types = set(int(t) for t in m.jnt_type)
    model = engine.compile_model(m)
    fns = jax.jit(lambda q, qd: (engine.body_velocities(model, q, qd),
                                 engine.body_bias_accelerations(model, q, qd)))
    rng = np.random.default_rng(seed)
    gravity = m.opt.gravity.copy()
    for _ in range(3):
        d = mujoco.MjData(m)
        d.qpos[:], d.qvel[:] = random_state(m, rng)
        mujoco.mj_forward(m, d)
        vel, acc = fns(d.qpos, d.qvel)
        assert vel.shape == acc.shape == (m.nbody, 6)
        err = _rel(vel, d.cvel)
        assert err <= REL_TOL, f"seed {seed}: body_velocities vs cvel, relative error {err:.2e}"
        d.qacc[:] = 0.0
        m.opt.gravity[:] = 0.0
        mujoco.mj_rnePostConstraint(m, d)
        m.opt.gravity[:] = gravity
        err = _rel(acc, d.cacc)
        assert err <= REL_TOL, f"seed {seed}: bias accelerations vs cacc, relative error {err:.2e}"
        assert np.abs(d.cacc).max() > 1.0  # a real velocity-product term, not zeros
    assert len(types) >= 3, f"seed {seed}: joint types {types}"


def test_full_acceleration_matches_mujoco_cacc_at_its_qacc():
    """cacc at MuJoCo's own qacc with gravity = (0, -g) + Jdot_mr qd + J_mr qacc (seed Eq. 5):
    the bias acceleration composes with the dof motion vectors as documented."""
    m = mujoco.MjModel.from_xml_string(random_tree_mjcf(4, n_bodies=10))
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    model = engine.compile_model(m)
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = random_state(m, np.random.default_rng(4))
    mujoco.mj_forward(m, d)
    mujoco.mj_rnePostConstraint(m, d)
    kin = engine.kinematics(model, jnp.asarray(d.qpos))
    s = engine.dof_motion(model, kin)
    moves = jnp.asarray(model.dof_ancestor_mask(), dtype=float)
    gravity = jnp.concatenate([jnp.zeros(3), -jnp.asarray(m.opt.gravity)])
    acc = (gravity[None] + engine.body_bias_accelerations(model, d.qpos, d.qvel)
           + moves @ (s * jnp.asarray(d.qacc)[:, None]))
    err = _rel(acc, d.cacc)
    assert err <= REL_TOL, f"cacc at MuJoCo's qacc: relative error {err:.2e}"


def test_point_velocity_from_twist_matches_mujoco_object_velocity():
    """The linear part of a twist is the velocity of the material point at the tree's reference
    point: a site's velocity v_lin + w x (p - c) equals MuJoCo's mj_objectVelocity (world
    frame) of that site."""
    m = mujoco.MjModel.from_xml_string(random_tree_mjcf(5, n_bodies=10))
    model = engine.compile_model(m)
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = random_state(m, np.random.default_rng(5))
    mujoco.mj_forward(m, d)
    twist = np.asarray(engine.body_velocities(model, d.qpos, d.qvel))
    checked = 0
    for s in range(m.nsite):
        b = m.site_bodyid[s]
        if b == 0:
            continue
        ref = d.subtree_com[m.body_rootid[b]]
        w, v = twist[b, :3], twist[b, 3:]
        ours = np.concatenate([w, v + np.cross(w, d.site_xpos[s] - ref)])
        res = np.zeros(6)
        mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_SITE, s, res, 0)
        err = _rel(ours, res)
        assert err <= REL_TOL, f"site {s}: velocity from twist, relative error {err:.2e}"
        checked += 1
    assert checked >= 3
