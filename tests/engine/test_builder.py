"""The Python model builder vs the same model hand-written in MJCF (MuJoCo 4.0 compiles both),
its validation errors, the exactness of `to_mjcf`, and an analytic pendulum period."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest
from scipy.special import ellipk

from myotwin import engine
from myotwin.engine.builder import ModelBuilder

from random_trees import random_state


def _unit(*v) -> tuple[float, ...]:
    v = np.asarray(v, dtype=np.float64)
    return tuple(float(x) for x in v / np.linalg.norm(v))


Q_TORSO = _unit(0.9, 0.1, -0.2, 0.3)
Q_THIGH = _unit(0.95, 0.0, 0.3, 0.05)
Q_THIGH_INERTIA = _unit(0.8, 0.5, 0.1, 0.0)
Q_ANKLE_SITE = _unit(0.7, 0.0, 0.0, 0.7)
AXIS_KNEE = (0.0, 1.0, 0.1)  # not unit: MuJoCo normalises it in both routes


def _g(*v) -> str:
    return " ".join(f"{x:.17g}" for x in v)


def _builder() -> ModelBuilder:
    """A floating torso, a leg (ball hip, hinge+slide knee, hinge ankle) and an arm; every
    joint type, sites, geoms, motors and servos; random-looking but fixed numbers."""
    b = ModelBuilder("twin", gravity=(0.3, -0.2, -9.81), timestep_s=0.001, contact=False)
    b.add_geom("world", "plane", size=(0, 0, 0.1), name="floor")
    b.add_site("world", "origin", pos=(0.1, 0.2, 0.0))
    b.add_body("torso", pos=(0.0, 0.0, 1.2), quat=Q_TORSO, mass=4.2, com=(0.01, -0.02, 0.1),
               inertia=(0.3, 0.25, 0.12, 0.01, -0.02, 0.005))
    b.add_joint("torso", "free", damping=0.05)
    b.add_geom("torso", "box", size=(0.1, 0.15, 0.2))
    b.add_body("thigh", "torso", pos=(0.05, 0.1, -0.2), quat=Q_THIGH, mass=1.7,
               com=(0.0, 0.0, -0.18), inertia=(0.03, 0.028, 0.004), inertia_quat=Q_THIGH_INERTIA)
    b.add_joint("thigh", "ball", name="hip", anchor=(0.0, 0.0, 0.02), armature=0.01, damping=0.2)
    b.add_geom("thigh", "capsule", size=(0.04,), fromto=(0, 0, 0, 0, 0, -0.4))
    b.add_body("shank", "thigh", pos=(0.0, 0.0, -0.4), mass=1.1, com=(0.01, 0.0, -0.2),
               inertia=(0.02, 0.021, 0.002))
    b.add_joint("shank", "hinge", name="knee", axis=AXIS_KNEE, anchor=(0.0, 0.0, 0.01),
                stiffness=3.0, spring_ref=-0.3, damping=0.4, armature=0.02, ref=0.1)
    b.add_joint("shank", "slide", name="knee_slide", axis=(0, 0, 1), stiffness=50.0, damping=1.0)
    b.add_site("shank", "ankle_site", pos=(0.0, 0.0, -0.4), quat=Q_ANKLE_SITE)
    b.add_body("foot", "shank", pos=(0.02, 0.0, -0.42), mass=0.4, com=(0.03, 0.0, -0.01),
               inertia=(0.002, 0.003, 0.0015))
    b.add_joint("foot", "hinge", name="ankle", axis=(0, 1, 0))
    b.add_geom("foot", "sphere", size=(0.03,), pos=(0.06, 0.0, -0.02))
    b.add_site("foot", "toe", pos=(0.1, 0.0, -0.03))
    b.add_body("arm", "torso", pos=(0.0, -0.2, 0.15), mass=0.9, com=(0.0, 0.0, -0.15),
               inertia=(0.01, 0.01, 0.001))
    b.add_joint("arm", "hinge", name="shoulder", axis=(1, 0, 0), damping=0.1)
    b.add_motor("knee", gear=2.0, ctrl_range=(-1.0, 1.0))
    b.add_position_servo("ankle", kp=8.0, kv=0.5, force_range=(-3.0, 3.0))
    b.add_position_servo("knee_slide", kp=20.0, gear=0.5)
    b.add_motor("shoulder")
    return b


HAND_MJCF = f"""
<mujoco model="twin">
  <compiler angle="radian" autolimits="true"/>
  <option timestep="0.001" gravity="0.3 -0.2 -9.81" integrator="RK4">
    <flag contact="disable"/>
  </option>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 0.1"/>
    <site name="origin" pos="0.1 0.2 0"/>
    <body name="torso" pos="0 0 1.2" quat="{_g(*Q_TORSO)}">
      <inertial pos="0.01 -0.02 0.1" mass="4.2" fullinertia="0.3 0.25 0.12 0.01 -0.02 0.005"/>
      <joint name="torso_free" type="free" damping="0.05"/>
      <geom type="box" size="0.1 0.15 0.2"/>
      <body name="thigh" pos="0.05 0.1 -0.2" quat="{_g(*Q_THIGH)}">
        <inertial pos="0 0 -0.18" quat="{_g(*Q_THIGH_INERTIA)}" mass="1.7"
                  diaginertia="0.03 0.028 0.004"/>
        <joint name="hip" type="ball" pos="0 0 0.02" armature="0.01" damping="0.2"/>
        <geom type="capsule" size="0.04" fromto="0 0 0 0 0 -0.4"/>
        <body name="shank" pos="0 0 -0.4">
          <inertial pos="0.01 0 -0.2" mass="1.1" diaginertia="0.02 0.021 0.002"/>
          <joint name="knee" axis="{_g(*AXIS_KNEE)}" pos="0 0 0.01" stiffness="3"
                 springref="-0.3" damping="0.4" armature="0.02" ref="0.1"/>
          <joint name="knee_slide" type="slide" axis="0 0 1" stiffness="50" damping="1"/>
          <site name="ankle_site" pos="0 0 -0.4" quat="{_g(*Q_ANKLE_SITE)}"/>
          <body name="foot" pos="0.02 0 -0.42">
            <inertial pos="0.03 0 -0.01" mass="0.4" diaginertia="0.002 0.003 0.0015"/>
            <joint name="ankle" axis="0 1 0"/>
            <geom type="sphere" size="0.03" pos="0.06 0 -0.02"/>
            <site name="toe" pos="0.1 0 -0.03"/>
          </body>
        </body>
      </body>
      <body name="arm" pos="0 -0.2 0.15">
        <inertial pos="0 0 -0.15" mass="0.9" diaginertia="0.01 0.01 0.001"/>
        <joint name="shoulder" axis="1 0 0" damping="0.1"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="knee_motor" joint="knee" gear="2" ctrlrange="-1 1"/>
    <position name="ankle_position" joint="ankle" kp="8" kv="0.5" forcerange="-3 3"/>
    <position name="knee_slide_position" joint="knee_slide" kp="20" gear="0.5"/>
    <motor name="shoulder_motor" joint="shoulder"/>
  </actuator>
</mujoco>
"""


def _model_arrays(m: mujoco.MjModel) -> dict[str, np.ndarray]:
    """Every numeric array of an MjModel (~490: topology, parameters, name addresses), options."""
    out = {}
    for name in dir(m):
        if name.startswith("_"):
            continue
        value = getattr(m, name)
        if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
            out[name] = value
    for name in ("timestep", "gravity", "integrator", "disableflags", "enableflags"):
        out[f"opt.{name}"] = np.asarray(getattr(m.opt, name))
    return out


def _assert_same_mj_model(ours: mujoco.MjModel, ref: mujoco.MjModel, what: str) -> None:
    a, b = _model_arrays(ours), _model_arrays(ref)
    assert a.keys() == b.keys()
    differ = [k for k in a if a[k].shape != b[k].shape or not np.array_equal(a[k], b[k])]
    assert not differ, f"{what}: MjModel arrays differ: {differ}"


def test_builder_compiles_to_the_same_mjmodel_as_hand_written_mjcf():
    # Identical inputs through MuJoCo's compiler: every numeric array must be bit-identical.
    _assert_same_mj_model(_builder().mj_model(), mujoco.MjModel.from_xml_string(HAND_MJCF),
                          "builder vs hand-written MJCF")


def _rel_err(ours, ref) -> float:
    ours, ref = np.asarray(ours), np.asarray(ref)
    return float(np.abs(ours - ref).max() / max(np.abs(ref).max(), 1e-300))


def test_builder_model_dynamics_match_mujoco_on_hand_written_mjcf():
    """M, bias forces, site poses at 1e-12 relative (identical inputs; the engine's roundoff is
    ~1e-15, test_vs_mujoco.py); qacc at 1e-10 (a Cholesky solve amplifies roundoff by
    cond(M))."""
    model = _builder().build()
    m = mujoco.MjModel.from_xml_string(HAND_MJCF)
    assert (model.n_q, model.n_v, model.n_u) == (m.nq, m.nv, m.nu) == (15, 13, 4)
    fns = jax.jit(lambda q, qd, u: (
        engine.mass_matrix(model, q), engine.bias_forces(model, q, qd),
        engine.site_poses(model, q), engine.forward_dynamics(model, q, qd, u)))
    rng = np.random.default_rng(11)
    for k in range(3):
        d = mujoco.MjData(m)
        d.qpos[:], d.qvel[:] = random_state(m, rng)
        d.ctrl[:] = rng.uniform(-1.5, 1.5, size=m.nu)
        mujoco.mj_forward(m, d)
        full_m = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, full_m)
        mass, bias, (site_pos, site_mat), qacc = fns(d.qpos, d.qvel, d.ctrl)
        checks = [("M", mass, full_m, 1e-12), ("qfrc_bias", bias, d.qfrc_bias, 1e-12),
                  ("site_xpos", site_pos, d.site_xpos, 1e-12),
                  ("site_xmat", np.reshape(site_mat, (m.nsite, 9)), d.site_xmat, 1e-12),
                  ("qacc", qacc, d.qacc, 1e-10)]
        for name, ours, ref, tol in checks:
            err = _rel_err(ours, ref)
            assert err <= tol, f"state {k}: {name} relative error {err:.2e} > {tol:g}"


def test_to_mjcf_is_exact_and_loads_in_mujoco(tmp_path):
    # The MJCF is written with shortest round-trip floats, so numbers that are not short
    # decimals (random doubles) must survive exactly: file -> MuJoCo -> same MjModel, and the
    # inputs appear bit-exactly in MuJoCo's compiled arrays. (MuJoCo's own MjSpec.to_xml
    # writes 6 significant digits, which is why the builder writes its MJCF itself.)
    rng = np.random.default_rng(5)
    mass, com, pos = rng.uniform(0.5, 2.0), rng.normal(size=3) * 0.1, rng.normal(size=3)
    damping, rng_range = rng.uniform(0.1, 1.0), np.sort(rng.uniform(-2.0, 2.0, size=2))
    b = _builder()
    b.add_body("random", "torso", pos=pos, mass=mass, com=com,
               inertia=(0.011, 0.012, 0.013, 1e-4, -2e-4, 3e-4))
    b.add_joint("random", "hinge", name="random_hinge", axis=(0, 0, 1), damping=damping,
                range=rng_range)
    table = rng.normal(size=3)
    b.add_numeric("gain_table", table)
    path = tmp_path / "twin.xml"
    path.write_text(b.to_mjcf())
    from_file = mujoco.MjModel.from_xml_path(str(path))
    _assert_same_mj_model(b.mj_model(), from_file, "to_mjcf file vs builder")
    i = mujoco.mj_name2id(from_file, mujoco.mjtObj.mjOBJ_BODY, "random")
    j = mujoco.mj_name2id(from_file, mujoco.mjtObj.mjOBJ_JOINT, "random_hinge")
    assert from_file.body_mass[i] == mass and np.array_equal(from_file.body_pos[i], pos)
    assert np.array_equal(from_file.jnt_range[j], rng_range) and from_file.jnt_limited[j]
    assert from_file.dof_damping[from_file.jnt_dofadr[j]] == damping
    np.testing.assert_array_equal(from_file.numeric("gain_table").data, table)
    # The engine model from the file equals the builder's, leaf by leaf.
    ours, loaded = b.build(), engine.load(path)
    for leaf_a, leaf_b in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(loaded)):
        np.testing.assert_array_equal(leaf_a, leaf_b)
    assert jax.tree_util.tree_structure(ours) == jax.tree_util.tree_structure(loaded)


def _pendulum(d_m: float, mass: float, i_yy: float) -> ModelBuilder:
    """Physical pendulum: hinge about y at anchor a, COM a distance d below it, inertia about
    the COM given in full form with off-diagonal xz (rotation about y: I_yy unchanged)."""
    b = ModelBuilder("pendulum", gravity=(0, 0, -9.81), contact=False)
    anchor = np.array([0.1, 0.0, 0.05])
    b.add_body("rod", pos=(0, 0, 1), mass=mass, com=anchor - np.array([0, 0, d_m]),
               inertia=(0.8 * i_yy, i_yy, 0.5 * i_yy, 0.0, 0.1 * i_yy, 0.0))
    b.add_joint("rod", "hinge", name="pivot", axis=(0, 1, 0), anchor=anchor)
    b.add_geom("rod", "capsule", size=(0.02,), fromto=(*anchor, *(anchor - [0, 0, d_m])))
    return b


def _period(t, theta, theta_dot) -> float:
    """Mean period from upward zero crossings, each located by cubic Hermite interpolation of
    (theta, theta_dot) over its step (interpolation error O(dt^4))."""
    crossings = []
    for k in np.nonzero((theta[:-1] < 0) & (theta[1:] >= 0))[0]:
        h = t[k + 1] - t[k]
        p0, p1, m0, m1 = theta[k], theta[k + 1], theta_dot[k] * h, theta_dot[k + 1] * h
        coeffs = [2 * p0 - 2 * p1 + m0 + m1, -3 * p0 + 3 * p1 - 2 * m0 - m1, m0, p0]
        roots = [r.real for r in np.roots(coeffs) if abs(r.imag) < 1e-12 and 0 <= r.real <= 1]
        crossings.append(t[k] + h * roots[0])
    return float(np.mean(np.diff(crossings)))


@pytest.mark.parametrize(("amplitude", "tol"), [(1e-3, 1e-6), (0.8, 1e-9)])
def test_pendulum_period_matches_the_analytic_period(amplitude, tol):
    """Small amplitude vs T0 = 2 pi sqrt(I / (m g d)), I = I_yy + m d^2 (parallel axes): the
    residual is the finite-amplitude correction T0 amplitude^2 / 16 = 6e-8 relative, so
    tol 1e-6. Large amplitude vs the exact period 4 sqrt(I / (m g d)) K(sin^2(amplitude / 2))
    (complete elliptic integral): residual is RK4's phase error, ~(omega dt)^4 ~ 1e-11 at
    dt 1 ms, so tol 1e-9."""
    d_m, mass, i_yy = 0.35, 1.3, 0.02
    model = _pendulum(d_m, mass, i_yy).build()
    inertia, mgd = i_yy + mass * d_m**2, mass * 9.81 * d_m
    if amplitude < 0.01:
        expected = 2 * np.pi * np.sqrt(inertia / mgd)
    else:
        expected = 4 * np.sqrt(inertia / mgd) * ellipk(np.sin(amplitude / 2) ** 2)
    q, qd, t = engine.simulate(model, jnp.array([amplitude]), jnp.zeros(1), jnp.zeros(0),
                               4.0, 0.001, "rk4")
    period = _period(np.asarray(t), np.asarray(q[:, 0]), np.asarray(qd[:, 0]))
    err = abs(period - expected) / expected
    assert err <= tol, f"period {period:.12g} s vs analytic {expected:.12g} s: rel err {err:.2e}"


# ----------------------------------------------------------------------------- validation

def _base() -> ModelBuilder:
    b = ModelBuilder()
    b.add_body("a", mass=1.0, inertia=(0.1, 0.1, 0.1))
    b.add_joint("a", "hinge", name="ja")
    b.add_body("b", "a", mass=1.0, inertia=(0.1, 0.1, 0.1))
    b.add_joint("b", "ball", name="jb")
    b.add_body("w", "a", mass=1.0, inertia=(0.1, 0.1, 0.1))  # welded to "a" (no joint)
    return b


_ERRORS = [
    (lambda b: b.add_body("c", mass=-1.0, inertia=(1, 1, 1)), "body 'c': mass must be >= 0"),
    (lambda b: b.add_body("c", mass=1.0, inertia=(1, 1, 1, 2, 0, 0)),
     "body 'c': inertia .* is not positive definite"),
    (lambda b: b.add_body("c", mass=1.0, inertia=(1, 0, 1)), "body 'c': .*not positive definite"),
    (lambda b: b.add_body("c", mass=1.0, inertia=(1, 1, 2.5)),
     re.escape("body 'c': inertia (1, 1, 2.5) violates the triangle inequality")),
    (lambda b: b.add_body("c", mass=1.0, inertia=(1, 1)), "body 'c': inertia must be 3 .* or 6"),
    (lambda b: b.add_body("c", mass=1.0), "body 'c': inertia is required"),
    (lambda b: b.add_body("c", inertia=(1, 1, 1)), "body 'c': mass is required"),
    (lambda b: b.add_body("c", mass=0.0, inertia=(1, 1, 1)),
     "body 'c': a massless body .* zero inertia"),
    (lambda b: b.add_body("c", mass=1.0, inertia=(1, 1, 1, 0, 0, 0), inertia_quat=(1, 0, 0, 0)),
     "body 'c': inertia_quat is only for principal moments"),
    (lambda b: b.add_body("c", mass=1.0, inertia_from_geoms=True),
     "body 'c': inertia_from_geoms=True excludes"),
    (lambda b: b.add_body("c", "nope", mass=1.0, inertia=(1, 1, 1)),
     "body 'c': unknown body 'nope'"),
    (lambda b: b.add_body("a", mass=1.0, inertia=(1, 1, 1)), "duplicate body name 'a'"),
    (lambda b: b.add_body("world", mass=1.0, inertia=(1, 1, 1)), "duplicate body name 'world'"),
    (lambda b: b.add_body("", mass=1.0, inertia=(1, 1, 1)), "body name must be a non-empty"),
    (lambda b: b.add_body("c", quat=(1, 0, 0, 0.1), mass=1.0, inertia=(1, 1, 1)),
     "body 'c': quat must be a unit quaternion .* norm 1.00498"),
    (lambda b: b.add_body("c", pos=(0, np.nan, 0), mass=1.0, inertia=(1, 1, 1)),
     "body 'c': pos must be finite"),
    (lambda b: b.add_body("c", pos=(0, 0), mass=1.0, inertia=(1, 1, 1)),
     "body 'c': pos must have 3 entries"),
    (lambda b: b.add_body("c", mass="heavy", inertia=(1, 1, 1)),
     "body 'c': mass must be a number, got 'heavy'"),
    (lambda b: b.add_joint("a", "hinge", axis=(0, 0, 0)), "joint 'a_hinge1': axis .* zero length"),
    (lambda b: b.add_joint("a", "screw"), "joint of body 'a': unknown joint kind 'screw'"),
    (lambda b: b.add_joint("nope", "hinge"), "joint of body 'nope': unknown body 'nope'"),
    (lambda b: b.add_joint("world", "hinge"), "cannot be attached to the world body"),
    (lambda b: b.add_joint("a", "slide", name="ja"), "duplicate joint name 'ja'"),
    (lambda b: b.add_joint("a", "hinge", damping=-0.1), "joint 'a_hinge1': damping must be >= 0"),
    (lambda b: b.add_joint("a", "hinge", stiffness=-1), "joint 'a_hinge1': stiffness must be >= 0"),
    (lambda b: b.add_joint("a", "hinge", armature=-1), "joint 'a_hinge1': armature must be >= 0"),
    (lambda b: b.add_joint("a", "hinge", range=(1.0, -1.0)),
     "joint 'a_hinge1': range must be .* lower < upper"),
    (lambda b: b.add_joint("b", "ball", range=(-1.0, 1.0)),
     re.escape("joint 'b_ball1': a ball joint's range is (0, max angle rad)")),
    (lambda b: b.add_joint("b", "ball", axis=(1, 0, 0)),
     "joint 'b_ball1': axis does not apply to a ball joint"),
    (lambda b: b.add_joint("b", "ball", ref=0.3), "joint 'b_ball1': ref applies to hinge/slide"),
    (lambda b: b.add_joint("a", "free"), "joint 'a_free': a free joint must be its body's only"),
    (lambda b: b.add_joint("w", "free", name="fw"), "joint 'fw': a free joint's body must be a "
     "child of the world"),
    (lambda b: b.add_geom("a", "torus", size=(1,)), "geom of body 'a': unknown geom kind 'torus'"),
    (lambda b: b.add_geom("a", "capsule", size=(0.1,)), "geom of body 'a': size must have 2"),
    (lambda b: b.add_geom("a", "sphere", size=(-0.1,)), "geom of body 'a': size must be > 0"),
    (lambda b: b.add_geom("a", "sphere", size=(0.1,), fromto=(0, 0, 0, 1, 0, 0)),
     "fromto is only for capsule/cylinder"),
    (lambda b: b.add_geom("a", "capsule", size=(0.1,), fromto=(0, 0, 0, 0, 0, 0)),
     "fromto end points coincide"),
    (lambda b: b.add_geom("a", "sphere", size=(0.1,), density=1000.0),
     "density/mass only apply to a body added with inertia_from_geoms=True"),
    (lambda b: b.add_geom("a", "sphere", size=(0.1,), condim=2), "condim must be 1, 3, 4 or 6"),
    (lambda b: b.add_geom("a", "sphere", size=(0.1,), contype=-1), "contype must be a non-neg"),
    # 3.0 passed `in (1, 3, 4, 6)` and was written as condim="3.0", which MuJoCo refused
    (lambda b: b.add_geom("a", "sphere", size=(0.1,), condim=3.0),
     r"condim must be 1, 3, 4 or 6, got 3.0"),
    (lambda b: b.add_motor("ja", gear=True), "actuator 'ja_motor': gear must be a number, got "
     "True"),
    # strings are not numbers, even numeric ones (float("0.5") took them before)
    (lambda b: b.add_motor("ja", gear="2"), "actuator 'ja_motor': gear must be a number, got '2'"),
    (lambda b: b.add_body("c", pos=("0", "0", "1"), mass=1.0, inertia=(1, 1, 1)),
     re.escape("body 'c': pos must be 3 numbers, got ('0', '0', '1')")),
    (lambda b: b.add_body("c", pos=(0, True, 0), mass=1.0, inertia=(1, 1, 1)),
     re.escape("body 'c': pos must be 3 numbers, got (0, True, 0)")),
    (lambda b: b.add_site("a", "s", size=0.0), "site 's': size must be > 0"),
    (lambda b: b.add_site("nope", "s"), "site 's': unknown body 'nope'"),
    (lambda b: b.add_motor("nope"), "actuator 'nope_motor': unknown joint 'nope'"),
    (lambda b: b.add_motor("jb"), "actuator 'jb_motor': joint 'jb' is a ball joint"),
    (lambda b: b.add_motor("ja", gear=0.0), "actuator 'ja_motor': gear must be nonzero"),
    (lambda b: b.add_motor("ja", ctrl_range=(1, 1)), "actuator 'ja_motor': ctrl_range must be"),
    (lambda b: b.add_position_servo("ja", kp=0.0), "position servo on joint 'ja': kp must be > 0"),
    (lambda b: b.add_position_servo("ja", kp=1.0, kv=-1.0), "kv must be >= 0"),
    (lambda b: b.add_numeric("n", []), "numeric 'n': data must be a number or a non-empty"),
    (lambda b: b.add_numeric("n", [1.0, np.inf]), "numeric 'n': data must be finite"),
]


@pytest.mark.parametrize(("call", "message"), _ERRORS)
def test_bad_input_is_rejected_naming_element_field_and_value(call, message):
    b = _base()
    before = b.to_mjcf()
    with pytest.raises(ValueError, match=message):
        call(b)
    assert b.to_mjcf() == before, "a rejected element must leave the builder unchanged"


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"timestep_s": 0.0}, "model 'model': timestep_s must be > 0"),
    ({"integrator": "rk45"}, "model 'model': integrator must be one of"),
    ({"gravity": (0, 0)}, "model 'model': gravity must have 3 entries"),
    ({"name": ""}, "model name must be a non-empty string"),
    ({"contact": "false"}, "model 'model': contact must be True or False, got 'false'"),
    ({"timestep_s": True}, "model 'model': timestep_s must be a number, got True"),
])
def test_bad_options_are_rejected(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ModelBuilder(**kwargs)


def test_mujoco_compiler_errors_are_reported_naming_the_element():
    # A massless leaf body on a joint passes our checks (massless bodies are legal as inner
    # links) but MuJoCo rejects it; the message says so and names the body.
    b = ModelBuilder("leaf")
    b.add_body("ghost", mass=0.0)
    b.add_joint("ghost", "hinge")
    with pytest.raises(ValueError, match=r"MuJoCo's compiler rejected model 'leaf'.*"
                                         r"mass and inertia of moving bodies(.|\n)*'ghost'"):
        b.build()


def test_inertia_from_geoms_only_when_asked():
    # A 0.1 m sphere of density 1000 kg/m^3 has m = 4/3 pi r^3 rho and I = 2/5 m r^2 (analytic);
    # an explicit body's geoms add nothing.
    b = ModelBuilder()
    b.add_body("ball", inertia_from_geoms=True)
    b.add_joint("ball", "free")
    b.add_geom("ball", "sphere", size=(0.1,), density=1000.0)
    b.add_body("explicit", mass=2.0, inertia=(0.1, 0.1, 0.1))
    b.add_joint("explicit", "hinge")
    b.add_geom("explicit", "sphere", size=(0.5,))
    m = b.mj_model()
    mass = 4 / 3 * np.pi * 0.1**3 * 1000.0
    np.testing.assert_allclose(m.body_mass[1:], [mass, 2.0], rtol=1e-14)
    np.testing.assert_allclose(m.body_inertia[1], [0.4 * mass * 0.01] * 3, rtol=1e-12)
    np.testing.assert_array_equal(m.body_inertia[2], [0.1, 0.1, 0.1])
