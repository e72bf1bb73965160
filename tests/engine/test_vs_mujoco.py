"""Engine vs MuJoCo 4.0 (the reference for every number), at seeded random states.

Models: the frog of the in vitro-VR issue, the MyoSuite elbows and fingers (skipped if the
reference files are absent; their tendons and muscles are ignored by the engine), and seeded
random forests with every joint type. Quantities: body poses, subtree COM, site poses, site
Jacobians (mj_jacSite), mass matrix (mj_fullM, armature included), bias forces (qfrc_bias).

Tolerance 1e-10 relative to the largest entry of the MuJoCo array: both sides are float64
evaluations of the same formulas through a few dozen operations per entry (rounding ~1e-15
each), so anything above ~1e-13 would be a modelling difference, not roundoff.
"""

from __future__ import annotations


import jax
import mujoco
import numpy as np
import pytest

from myotwin import engine
from myotwin.invitro.frog.mjcf import build_frog_mjcf

from random_trees import random_state, random_tree_mjcf
from shared_reference import SHARED

REL_TOL = 1e-10
N_STATES = 3
MYOSUITE = SHARED / "reference" / "mujoco" / "myosuite"
MYOSUITE_FILES = [
    "myoelbow_1dof6muscles_nomesh.xml",
    "myoelbow_2dof6muscles_nomesh.xml",
    "finger_v0.xml",
    "myofinger_v0.xml",
]
RANDOM_SEEDS = list(range(6))


def _mj_model(name: str) -> mujoco.MjModel:
    if name == "frog":
        return mujoco.MjModel.from_xml_string(build_frog_mjcf())
    if name.startswith("random_tree_"):
        return mujoco.MjModel.from_xml_string(random_tree_mjcf(int(name.rsplit("_", 1)[1])))
    path = MYOSUITE / name
    if not path.exists():
        pytest.skip(f"MyoSuite reference model {path} is absent")
    return mujoco.MjModel.from_xml_path(str(path))


MODEL_NAMES = ["frog", *MYOSUITE_FILES, *(f"random_tree_{s}" for s in RANDOM_SEEDS)]


@jax.jit
def _engine_all(model, q, qd):
    kin = engine.kinematics(model, q)
    jacp, jacr = engine.site_jacobians(model, q)
    return kin, jacp, jacr, engine.mass_matrix(model, q), engine.bias_forces(model, q, qd)


def _mujoco_all(m, q, qd):
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = q, qd
    mujoco.mj_forward(m, d)
    jacp = np.zeros((m.nsite, 3, m.nv))
    jacr = np.zeros((m.nsite, 3, m.nv))
    for s in range(m.nsite):
        mujoco.mj_jacSite(m, d, jacp[s], jacr[s], s)
    mass = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, mass)
    return d, jacp, jacr, mass


def _assert_close(name: str, ours, ref) -> None:
    ours, ref = np.asarray(ours), np.asarray(ref)
    assert ours.shape == ref.shape, f"{name}: shape {ours.shape} != MuJoCo {ref.shape}"
    scale = max(np.abs(ref).max(initial=0.0), 1e-300)
    err = np.abs(ours - ref).max(initial=0.0) / scale
    assert err <= REL_TOL, f"{name}: relative error {err:.3e} > {REL_TOL:g} vs MuJoCo"


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_engine_matches_mujoco(name):
    m = _mj_model(name)
    model = engine.compile_model(m)
    rng = np.random.default_rng(MODEL_NAMES.index(name))
    for _ in range(N_STATES):
        q, qd = random_state(m, rng)
        kin, jacp, jacr, mass, bias = _engine_all(model, q, qd)
        d, ref_jacp, ref_jacr, ref_mass = _mujoco_all(m, q, qd)
        _assert_close(f"{name} body xpos", kin.body_pos_world, d.xpos)
        _assert_close(f"{name} body xmat", kin.body_rot_world, d.xmat.reshape(-1, 3, 3))
        _assert_close(f"{name} body xipos", kin.body_com_world, d.xipos)
        _assert_close(f"{name} subtree_com", kin.subtree_com_world, d.subtree_com)
        _assert_close(f"{name} site_xpos", kin.site_pos_world, d.site_xpos)
        _assert_close(f"{name} site_xmat", kin.site_rot_world, d.site_xmat.reshape(-1, 3, 3))
        _assert_close(f"{name} site jacp", jacp, ref_jacp)
        _assert_close(f"{name} site jacr", jacr, ref_jacr)
        _assert_close(f"{name} mass matrix", mass, ref_mass)
        _assert_close(f"{name} qfrc_bias", bias, d.qfrc_bias)


def test_random_trees_cover_every_joint_type():
    types = set()
    for s in RANDOM_SEEDS:
        types |= set(int(t) for t in _mj_model(f"random_tree_{s}").jnt_type)
    assert types == {int(t) for t in engine.JointType}
