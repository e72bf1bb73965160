"""`jax.vmap` over states and over model parameters vs loops over MuJoCo 4.0 (issue 3)."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from myotwin import engine
from myotwin.engine.batching import model_axes
from myotwin.engine.builder import ModelBuilder

from random_trees import random_state, random_tree_mjcf

N_BATCH = 6


def _rel_err(ours, ref) -> float:
    ours, ref = np.asarray(ours), np.asarray(ref)
    return float(np.abs(ours - ref).max() / max(np.abs(ref).max(), 1e-300))


@pytest.mark.parametrize("seed", [3])
def test_vmap_over_states_matches_a_loop_over_mujoco(seed):
    """A batch of random (q, qd) through one vmapped, jitted call vs mj_forward per state, on
    random trees with every joint type. Tolerance 1e-10 relative to the largest entry as in
    test_vs_mujoco.py (observed ~1e-15: same formulas in float64; vmap changes no arithmetic
    beyond XLA's batched kernels)."""
    m = mujoco.MjModel.from_xml_string(random_tree_mjcf(seed))
    assert set(m.jnt_type.tolist()) == {0, 1, 2, 3}, "free, ball, slide and hinge all present"
    model = engine.compile_model(m)
    rng = np.random.default_rng(seed)
    states = [random_state(m, rng) for _ in range(N_BATCH)]
    qs = jnp.array([q for q, _ in states])
    qds = jnp.array([qd for _, qd in states])
    batched = jax.jit(jax.vmap(
        lambda q, qd: (engine.mass_matrix(model, q), engine.bias_forces(model, q, qd),
                       engine.forward_dynamics(model, q, qd, jnp.zeros(0)))))
    mass, bias, qacc = batched(qs, qds)
    assert mass.shape == (N_BATCH, m.nv, m.nv) and qacc.shape == (N_BATCH, m.nv)
    for k, (q, qd) in enumerate(states):
        d = mujoco.MjData(m)
        d.qpos[:], d.qvel[:] = q, qd
        mujoco.mj_forward(m, d)
        full_m = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, full_m)
        for name, ours, ref in (("M", mass[k], full_m), ("qfrc_bias", bias[k], d.qfrc_bias),
                                ("qacc", qacc[k], d.qacc)):
            err = _rel_err(ours, ref)
            assert err <= 1e-10, f"seed {seed} state {k}: {name} relative error {err:.2e}"


def _chain() -> ModelBuilder:
    """3 links (hinge, hinge + slide, hinge) with springs, damping, armature, a motor and a
    servo; no contact, no limits."""
    b = ModelBuilder("chain", timestep_s=0.001, integrator="RK4", contact=False)
    b.add_body("l1", pos=(0, 0, 1), mass=1.0, com=(0, 0, -0.25), inertia=(0.02, 0.021, 0.002))
    b.add_joint("l1", "hinge", name="h1", axis=(0, 1, 0), damping=0.1, armature=0.01)
    b.add_body("l2", "l1", pos=(0, 0, -0.5), mass=0.7, com=(0.05, 0, -0.2),
               inertia=(0.01, 0.012, 0.003, 0.001, 0.0, -0.0005))
    b.add_joint("l2", "hinge", name="h2", axis=(1, 0, 0.3), stiffness=2.0, spring_ref=0.2)
    b.add_joint("l2", "slide", name="s2", axis=(0, 0, 1), stiffness=40.0, damping=0.5)
    b.add_body("l3", "l2", pos=(0.1, 0, -0.4), mass=0.4, com=(0, 0.02, -0.15),
               inertia=(0.004, 0.004, 0.001))
    b.add_joint("l3", "hinge", name="h3", axis=(0, 1, 0))
    b.add_motor("h1", gear=2.0)
    b.add_position_servo("h3", kp=4.0, kv=0.3)
    return b


def _mujoco_rollout(m, q0, qd0, ctrl, n_steps):
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:], d.ctrl[:] = q0, qd0, ctrl
    qs = [d.qpos.copy()]
    for _ in range(n_steps):
        mujoco.mj_step(m, d)
        qs.append(d.qpos.copy())
    return np.array(qs)


def test_vmap_over_body_masses_of_a_rollout_matches_mujoco():
    """A batch of segment masses (inertias unchanged, as MjModel.body_mass edits do in MuJoCo)
    through one vmapped RK4 rollout of 300 steps at 1 ms vs MuJoCo RK4 with each mass set.
    Tolerance 1e-8 relative (issue 3); observed ~1e-13 (roundoff accumulated over the steps,
    as in test_dynamics.py's single rollouts)."""
    b = _chain()
    model, m = b.build(), b.mj_model()
    rng = np.random.default_rng(21)
    scales = rng.uniform(0.5, 2.0, size=(N_BATCH, model.n_body))
    scales[:, 0] = 1.0  # the world has no mass
    masses = np.asarray(model.body_mass)[None] * scales
    q0, qd0, ctrl, n_steps = rng.uniform(-0.5, 0.5, m.nq), rng.normal(size=m.nv), [0.3, 0.4], 300

    batch = dataclasses.replace(model, body_mass=jnp.asarray(masses))
    run = jax.jit(jax.vmap(
        lambda mdl: engine.simulate(mdl, q0, qd0, ctrl, n_steps * 0.001, 0.001, "rk4")[0],
        in_axes=(model_axes(model, body_mass=0),)))
    q = np.asarray(run(batch))
    assert q.shape == (N_BATCH, n_steps + 1, m.nq)

    refs = []
    for k in range(N_BATCH):
        m.body_mass[:] = masses[k]
        refs.append(_mujoco_rollout(m, q0, qd0, ctrl, n_steps))
        err = _rel_err(q[k], refs[k])
        assert err <= 1e-8, f"mass set {k}: q over {n_steps} steps, relative error {err:.2e}"
    # The masses matter: the trajectories differ by far more than the tolerance.
    spread = min(_rel_err(refs[k], refs[0]) for k in range(1, N_BATCH))
    assert spread > 1e-3, f"mass batch barely changes the motion ({spread:.1e}): weak test"


def test_model_axes_marks_only_the_named_fields():
    model = _chain().build()
    axes = model_axes(model, body_mass=0, gravity=1)
    assert axes.body_mass == 0 and axes.gravity == 1 and axes.body_inertia is None
    assert all(leaf in (0, 1) for leaf in jax.tree_util.tree_leaves(axes))  # None: no leaf
    assert axes.body_parent == model.body_parent  # static topology copied
    with pytest.raises(ValueError, match="'body_parent' is static topology and cannot be"):
        model_axes(model, body_parent=0)
    with pytest.raises(ValueError, match="'segment_mass' is not a Model field; batchable"):
        model_axes(model, segment_mass=0)
    with pytest.raises(ValueError, match="axis for 'body_mass' must be an int"):
        model_axes(model, body_mass="0")
    with pytest.raises(ValueError, match="axis for 'body_mass' must be an int, got True"):
        model_axes(model, body_mass=True)
    assert model_axes(model, body_mass=np.int64(0)).body_mass == 0   # refused before
    with pytest.raises(ValueError, match="model_axes: expected an engine Model"):
        model_axes(None, body_mass=0)    # before: TypeError from dataclasses.replace
