"""The issue's public contract: `myotwin.load(path)` carries the MJCF's spatial tendons, and
`myotwin.muscle_lengths(model, q)` (n_muscles,) / `myotwin.moment_arms(model, q)` (n_v,
n_muscles), r = -dL/dq, agree with MuJoCo 4.0.0's ten_length / -ten_J^T.

Tolerance 1e-9 m (issue 4, acceptance 1); both sides evaluate the same float64 formulas, so the
observed error is roundoff (~1e-16). Random states: qpos0 plus seeded perturbations of the
hinge/slide coordinates (free/ball quaternions are left at qpos0)."""

from __future__ import annotations

import pathlib

import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import myotwin
from myotwin import engine
from myotwin.invitro.frog.mjcf import build_frog_mjcf
from myotwin.models import chain
from shared_reference import SHARED

MYOSUITE = SHARED / "reference" / "mujoco" / "myosuite"
FIXED_AND_SPATIAL = """<mujoco><worldbody>
  <site name="o" pos="0 0 0.5"/>
  <body pos="0 0 0"><joint name="a" type="hinge" axis="0 1 0"/>
    <geom type="capsule" fromto="0 0 0 0 0 -0.4" size="0.03" mass="1"/>
    <site name="i" pos="0.05 0 -0.3"/>
    <body pos="0 0 -0.4"><joint name="b" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.03" mass="1"/></body></body>
  </worldbody><tendon><fixed name="coupling"><joint joint="a" coef="1"/>
  <joint joint="b" coef="-1"/></fixed><spatial name="m1"><site site="o"/><site site="i"/>
  </spatial></tendon></mujoco>"""


def _file(name: str, tmp_path: pathlib.Path) -> pathlib.Path:
    if name == "frog":
        path = tmp_path / "frog.xml"
        path.write_text(build_frog_mjcf())
        return path
    if name == "fixed_and_spatial":
        path = tmp_path / "fixed_and_spatial.xml"
        path.write_text(FIXED_AND_SPATIAL)
        return path
    path = MYOSUITE / name
    if not path.exists():
        pytest.skip(f"MyoSuite reference model {path} is absent")
    return path


def _mujoco(m, q):
    d = mujoco.MjData(m)
    d.qpos[:] = q
    mujoco.mj_fwdPosition(m, d)
    jac = np.zeros((m.ntendon, m.nv))
    for t in range(m.ntendon):
        adr, nnz = m.ten_J_rowadr[t], m.ten_J_rownnz[t]
        jac[t, m.ten_J_colind[adr:adr + nnz]] = d.ten_J[adr:adr + nnz]
    return np.array(d.ten_length), jac


@pytest.mark.parametrize("name", ["frog", "myoelbow_2dof6muscles_nomesh.xml",
                                  "fixed_and_spatial"])
def test_load_then_lengths_and_moment_arms_match_mujoco(name, tmp_path):
    path = _file(name, tmp_path)
    m = mujoco.MjModel.from_xml_path(str(path))
    model = myotwin.load(path)
    spatial = [t for t in range(m.ntendon)
               if m.wrap_type[m.tendon_adr[t]] != mujoco.mjtWrap.mjWRAP_JOINT]
    assert model.paths.n_paths == len(spatial) >= 1
    rng = np.random.default_rng(3)
    scalar = [int(m.jnt_qposadr[j]) for j in range(m.njnt)
              if m.jnt_type[j] in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE)]
    for _ in range(3):
        q = np.array(m.qpos0)
        q[scalar] += rng.uniform(-0.4, 0.4, size=len(scalar))
        ten_length, ten_j = _mujoco(m, q)
        lengths = np.asarray(myotwin.muscle_lengths(model, q))
        arms = np.asarray(myotwin.moment_arms(model, q))
        assert lengths.shape == (len(spatial),) and arms.shape == (m.nv, len(spatial))
        err_l = np.abs(lengths - ten_length[spatial]).max()
        err_r = np.abs(arms + ten_j[spatial].T).max()
        assert err_l <= 1e-9, f"{name}: muscle length error {err_l:.2e} m vs MuJoCo ten_length"
        assert err_r <= 1e-9, f"{name}: moment arm error {err_r:.2e} vs MuJoCo -ten_J^T"


def test_model_without_paths_is_a_clear_error():
    model = myotwin.compile_model(mujoco.MjModel.from_xml_string(
        '<mujoco><worldbody><body><joint type="hinge"/><geom size="0.1"/></body></worldbody>'
        "</mujoco>"))
    assert model.paths is None
    with pytest.raises(ValueError, match="no musculotendon paths"):
        myotwin.muscle_lengths(model, np.zeros(1))


def test_wrong_shapes_and_nonfinite_configurations():
    """A q of the wrong shape is named (engine/arguments.py); a non-finite q gives NaN lengths
    and moment arms."""
    model = myotwin.compile_model(mujoco.MjModel.from_xml_string(FIXED_AND_SPATIAL))
    with pytest.raises(ValueError, match=r"muscle_lengths: q has shape \(3,\), expected \(2,\) "
                                         r"\(the model's n_q = 2\)"):
        myotwin.muscle_lengths(model, np.zeros(3))
    with pytest.raises(ValueError, match=r"lengthening_speeds: qd has shape \(1,\)"):
        myotwin.lengthening_speeds(model, np.zeros(2), np.zeros(1))
    for bad in (np.nan, np.inf):
        q = np.array([bad, 0.1])
        assert np.all(np.isnan(np.asarray(myotwin.muscle_lengths(model, q))))
        assert np.all(np.isnan(np.asarray(myotwin.moment_arms(model, q))))
    assert np.all(np.isfinite(np.asarray(myotwin.muscle_lengths(model, np.array([0.2, 0.1])))))


def test_lists_and_integer_configurations_are_taken_as_float_arrays():
    """A q given as a list (which jax.jit splits into scalars: it raised JAX's
    TracerArrayConversionError) or as integers (which jax.jacfwd refuses: "requires real-valued
    inputs") gives what the float array gives, bit for bit, and against MuJoCo's ten_length
    (1e-12 m, roundoff)."""
    m = mujoco.MjModel.from_xml_string(FIXED_AND_SPATIAL)
    model = myotwin.compile_model(m)
    reference = np.asarray(myotwin.muscle_lengths(model, np.array([1.0, 0.0])))
    np.testing.assert_allclose(reference, _mujoco(m, [1.0, 0.0])[0][1:], rtol=0, atol=1e-12)
    for q in ([1, 0], (1.0, 0.0), np.array([1, 0]), jnp.array([1, 0])):
        np.testing.assert_array_equal(np.asarray(myotwin.muscle_lengths(model, q)), reference)
        np.testing.assert_array_equal(np.asarray(myotwin.moment_arms(model, q)),
                                      np.asarray(myotwin.moment_arms(model, np.array([1., 0.]))))


def test_nonfinite_configuration_gives_nan_path_lengths_everywhere():
    """The engine's own path lengths (actuator lengths of tendon motors, through straight, via
    point and cylinder-wrapped paths) are NaN at a non-finite q too, not the 0 m that guarded
    square roots mapping NaN to 0 gave (paths/safe.py)."""
    model = myotwin.compile_model(mujoco.MjModel.from_xml_string(chain.mjcf(wrap=True)))
    assert model.n_u == 5
    for bad in (np.nan, np.inf):
        q = np.array([0.1, bad, 0.2])
        assert np.all(np.isnan(np.asarray(engine.actuator_length(model, q))))
        assert np.all(np.isnan(np.asarray(myotwin.muscle_lengths(model, q))))
    assert np.all(np.isfinite(np.asarray(engine.actuator_length(model, np.zeros(3)))))
