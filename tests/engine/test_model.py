"""Model compilation: pytree structure, immutability, validation errors, differentiability."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from myotwin import engine
from myotwin.invitro.frog.mjcf import build_frog_mjcf

from random_trees import random_state, random_tree_mjcf

_TWO_BODIES = """
<mujoco>
  <worldbody>
    <body name="a" {a_attrs}><joint name="ja" type="hinge"/><geom size="0.1" mass="1"/></body>
    <body name="b" pos="1 0 0"><joint name="jb" type="hinge"/><geom size="0.1" mass="1"/></body>
  </worldbody>
  {extra}
</mujoco>
"""


def _compile(xml: str) -> engine.Model:
    return engine.compile_model(mujoco.MjModel.from_xml_string(xml))


def test_model_is_an_immutable_pytree_with_static_topology():
    model = _compile(random_tree_mjcf(1))
    leaves, treedef = jax.tree_util.tree_flatten(model)
    assert all(leaf.dtype == jnp.float64 for leaf in leaves), "parameters are float64 leaves"
    assert len(leaves) == 28  # 13 kinematic + 10 dynamics + 5 joint-limit parameters
    rebuilt = jax.tree_util.tree_unflatten(treedef, leaves)
    assert rebuilt.body_parent == model.body_parent and isinstance(model.body_parent, tuple)
    with pytest.raises(dataclasses.FrozenInstanceError):
        model.body_mass = model.body_mass * 2


def test_load_reads_an_mjcf_file(tmp_path):
    path = tmp_path / "frog.xml"
    path.write_text(build_frog_mjcf())
    model = engine.load(path)
    m = mujoco.MjModel.from_xml_string(build_frog_mjcf())
    assert (model.n_q, model.n_v, model.n_body) == (m.nq, m.nv, m.nbody)
    np.testing.assert_array_equal(np.asarray(model.qpos0), m.qpos0)
    # a path given to compile_model (which takes an MjModel) is named, with the way out; it
    # raised an AttributeError ('str' object has no attribute 'neq') from engine/equality.py
    with pytest.raises(TypeError, match=r"compile_model: expected a mujoco.MjModel, got str "
                                        r"'.*frog.xml'; for an MJCF file use engine.load"):
        engine.compile_model(str(path))
    # before: MuJoCo's "ParseXML: Error opening file 'None'", and "empty file" for a directory
    with pytest.raises(ValueError, match="engine.load: expected an MJCF file's path, got "
                                         "NoneType"):
        engine.load(None)
    with pytest.raises(ValueError, match=f"{tmp_path}: is a directory, not an MJCF file"):
        engine.load(tmp_path)
    with pytest.raises(ValueError, match=f"{tmp_path / 'nope.xml'}: no such MJCF file"):
        engine.load(tmp_path / "nope.xml")


def test_compile_neither_modifies_nor_aliases_the_mujoco_model():
    m = mujoco.MjModel.from_xml_string(random_tree_mjcf(2))
    before = m.body_mass.copy()
    model = engine.compile_model(m)
    np.testing.assert_array_equal(m.body_mass, before)
    m.body_mass[1] = 99.0  # the caller's later edits must not reach the frozen model
    assert float(model.body_mass[1]) == before[1]


@pytest.mark.parametrize(
    ("a_attrs", "extra", "element"),
    [
        ('mocap="true"', "", "mocap body #1 'a'"),
        ('gravcomp="1"', "", "body #1 'a' has gravcomp"),
    ],
)
def test_unsupported_features_are_rejected_naming_the_element(a_attrs, extra, element):
    xml = _TWO_BODIES.format(a_attrs=a_attrs, extra=extra)
    if "mocap" in a_attrs:  # a mocap body cannot have joints
        xml = xml.replace('<joint name="ja" type="hinge"/>', "")
    with pytest.raises(ValueError, match=element):
        _compile(xml)


def test_disabled_gravity_gives_zero_gravity():
    xml = _TWO_BODIES.format(a_attrs="", extra="").replace(
        "<mujoco>", '<mujoco><option><flag gravity="disable"/></option>'
    )
    assert np.all(np.asarray(_compile(xml).gravity) == 0.0)


def test_hinge_and_slide_jacobians_are_derivatives_of_site_positions():
    # For hinge/slide dofs qd = dq/dt, so jacfwd of site positions must equal the translational
    # site Jacobian. Forward-mode AD is exact up to roundoff (~1e-15 relative).
    m = mujoco.MjModel.from_xml_string(build_frog_mjcf())
    model = engine.compile_model(m)
    q, _ = random_state(m, np.random.default_rng(7))
    hinge_q = jnp.arange(7, m.nq)  # root free joint first, then hinges (qpos 7.., qvel 6..)
    q = jnp.asarray(q)
    site_pos = jax.jit(lambda qh: engine.site_poses(model, q.at[hinge_q].set(qh))[0])
    dpos = jax.jit(jax.jacfwd(site_pos))(q[hinge_q])
    jacp, _ = jax.jit(engine.site_jacobians)(model, q)
    np.testing.assert_allclose(dpos, jacp[:, :, 6:], rtol=0, atol=1e-12 * np.abs(jacp).max())


def test_vmap_over_body_masses_scales_the_mass_matrix():
    # M is linear in the inertial parameters: scaling every mass and inertia by s (armature 0)
    # scales M by s; vmap over a model-parameter axis must give exactly that.
    m = mujoco.MjModel.from_xml_string(build_frog_mjcf())
    model = engine.compile_model(m)
    q, _ = random_state(m, np.random.default_rng(3))
    scales = jnp.array([0.5, 1.0, 2.0])

    def scaled_mass(s):
        scaled = dataclasses.replace(
            model, body_mass=model.body_mass * s, body_inertia=model.body_inertia * s
        )
        return engine.mass_matrix(scaled, q)

    batch = jax.jit(jax.vmap(scaled_mass))(scales)
    base = jax.jit(engine.mass_matrix)(model, q)
    expected = scales[:, None, None] * base[None]
    np.testing.assert_allclose(batch, expected, rtol=0, atol=1e-13 * float(np.abs(expected).max()))
