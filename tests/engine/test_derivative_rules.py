"""The custom JVP rules of the small products (spatial.py) and static row maps (rows.py).

Reference outside the rules: central differences. For a bilinear map f(a, b) the central
difference (f(a + h ta, b + h tb) - f(a - h ta, b - h tb)) / 2h equals the derivative exactly
(the quadratic terms cancel), and so it does for a quadratic form and a linear map; with h = 1
it is exact up to roundoff, so the tolerance is 1e-12 absolute on O(1) inputs. The rules are
also compared with JAX's differentiation of the component form, forward (jvp, jacfwd under
vmap) and reverse (vjp), to 1e-13 (the same products summed in another order), and the tables
are checked to reproduce the functions' values.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from myotwin.engine import rows, spatial

jax.config.update("jax_enable_x64", True)

TOL = 1e-13
BILINEAR = [("quat_mul", 4, 4), ("cross", 3, 3), ("cross_motion", 6, 6), ("cross_force", 6, 6)]


def _rand(key, *shape):
    return jax.random.normal(jax.random.PRNGKey(key), shape)


def _central(f, primals, tangents, h=1.0):
    """Central difference of f along `tangents`: exact for (bi)linear and quadratic maps."""
    plus = f(*[p + h * t for p, t in zip(primals, tangents)])
    minus = f(*[p - h * t for p, t in zip(primals, tangents)])
    return (plus - minus) / (2.0 * h)


def _close_fd(rule_tangent, fd):
    np.testing.assert_allclose(np.asarray(rule_tangent), np.asarray(fd), rtol=0, atol=1e-12)


def _close(a, b):
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        assert np.shape(x) == np.shape(y)
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=0, atol=TOL)


@pytest.mark.parametrize("name,n_a,n_b", BILINEAR)
def test_bilinear_rules_match_autodiff_of_the_component_form(name, n_a, n_b):
    fn = getattr(spatial, name)
    raw = fn.__wrapped__                        # the component form, differentiated by JAX
    a, b = _rand(0, 5, n_a), _rand(1, n_b)       # broadcast: b is shared by the 5 rows
    ta, tb = _rand(2, 5, n_a), _rand(3, n_b)
    _close_fd(jax.jvp(fn, (a, b), (ta, tb))[1], _central(raw, (a, b), (ta, tb)))
    _close(jax.jvp(fn, (a, b), (ta, tb)), jax.jvp(raw, (a, b), (ta, tb)))
    out, pull = jax.vjp(fn, a, b)
    out_ref, pull_ref = jax.vjp(raw, a, b)
    ct = _rand(4, *out.shape)
    _close(out, out_ref)
    _close(pull(ct), pull_ref(ct))
    _close(jax.vmap(jax.jacfwd(fn, argnums=(0, 1)))(a, _rand(5, 5, n_b)),
           jax.vmap(jax.jacfwd(raw, argnums=(0, 1)))(a, _rand(5, 5, n_b)))
    # the table is the map: f(a, b)_i = sum_jk T[i, j, k] a_j b_k
    table = fn.table()
    _close(jnp.einsum("ijk,nj,k->ni", table, a, b), raw(a, b))


def test_quat_to_mat_rule_and_its_quadratic_form():
    q, tq = _rand(0, 7, 4), _rand(1, 7, 4)
    raw = spatial.quat_to_mat.__wrapped__
    _close_fd(jax.jvp(spatial.quat_to_mat, (q,), (tq,))[1], _central(raw, (q,), (tq,)))
    _close(jax.jvp(spatial.quat_to_mat, (q,), (tq,)), jax.jvp(raw, (q,), (tq,)))
    out, pull = jax.vjp(spatial.quat_to_mat, q)
    ct = _rand(2, *out.shape)
    _close(pull(ct), jax.vjp(raw, q)[1](ct))
    _close(jnp.einsum("abjk,nj,nk->nab", spatial.quat_to_mat.table(), q, q), raw(q))


def test_dot_last_rule():
    a, b, ta, tb = _rand(0, 4, 3), _rand(1, 3), _rand(2, 4, 3), _rand(3, 3)
    raw = spatial.dot_last.fun
    _close_fd(jax.jvp(spatial.dot_last, (a, b), (ta, tb))[1], _central(raw, (a, b), (ta, tb)))
    _close(jax.jvp(spatial.dot_last, (a, b), (ta, tb)), jax.jvp(raw, (a, b), (ta, tb)))
    ct = _rand(4, 4)
    _close(jax.vjp(spatial.dot_last, a, b)[1](ct), jax.vjp(raw, a, b)[1](ct))


def test_rules_with_one_argument_constant():
    """Symbolic-zero tangents (a constant argument) are skipped, not multiplied out."""
    a, b, ta = _rand(0, 4), _rand(1, 4), _rand(2, 4)
    _close(jax.jvp(lambda x: spatial.quat_mul(x, b), (a,), (ta,)),
           jax.jvp(lambda x: spatial.quat_mul.__wrapped__(x, b), (a,), (ta,)))
    g = jax.grad(lambda y: jnp.sum(spatial.cross(jnp.ones(3), y) ** 2))(b[:3])
    g_ref = jax.grad(lambda y: jnp.sum(jnp.cross(jnp.ones(3), y) ** 2))(b[:3])
    _close(g, g_ref)


@pytest.mark.parametrize("axis,index", [(0, [3, 0, 0, 2]), (1, [[4, 1], [0, 0]]),
                                        (2, [2, 2, 1, 0, 1])])
def test_take_matches_jnp_take_with_its_derivatives(axis, index):
    x, t = _rand(0, 4, 5, 3), _rand(1, 4, 5, 3)
    index = np.array(index)

    def f(v):
        return rows.take(v, index, axis)

    def ref(v):
        return jnp.take(v, index, axis=axis)

    _close(f(x), np.take(np.asarray(x), index, axis=axis))          # NumPy's indexing
    _close_fd(jax.jvp(f, (x,), (t,))[1], _central(f, (x,), (t,)))
    _close(jax.jvp(f, (x,), (t,)), jax.jvp(ref, (x,), (t,)))
    out, pull = jax.vjp(f, x)
    ct = _rand(2, *out.shape)
    _close(pull(ct), jax.vjp(ref, x)[1](ct))
    _close(jax.vmap(f)(jnp.stack([x, t])), jax.vmap(ref)(jnp.stack([x, t])))


def test_take_pairs_and_masked_sum():
    x, t = _rand(0, 4, 5, 3), _rand(1, 4, 5, 3)
    first, second = np.array([1, 3, 0]), np.array([0, 4, 4])
    _close(jax.jvp(lambda v: rows.take_pairs(v, first, second), (x,), (t,)),
           jax.jvp(lambda v: v[first, second], (x,), (t,)))
    mask = np.array([[1, 0, 1, 1], [0, 0, 0, 0], [0, 1, 0, 0]], dtype=bool)
    dense = mask.astype(float)
    _close(rows.masked_sum(mask, x), np.einsum("nm,m...->n...", dense, np.asarray(x)))
    _close_fd(jax.jvp(lambda v: rows.masked_sum(mask, v), (x,), (t,))[1],
              _central(lambda v: rows.masked_sum(mask, v), (x,), (t,)))
    _close(jax.jvp(lambda v: rows.masked_sum(mask, v), (x,), (t,)),
           jax.jvp(lambda v: jnp.einsum("nm,m...->n...", dense, v), (x,), (t,)))
    ct = _rand(2, 3, 5, 3)
    _close(jax.vjp(lambda v: rows.masked_sum(mask, v), x)[1](ct),
           jax.vjp(lambda v: jnp.einsum("nm,m...->n...", dense, v), x)[1](ct))


def test_static_product_single_and_batched():
    """rows.static_product is NumPy's matrix @ x alone and under vmap (its custom_vmap rule),
    nested vmap included; forward and reverse derivatives alone and batched; and it emits no
    dot for one trajectory (a dot would be a YNNPACK fusion there) but one under vmap."""
    matrix = np.array([[1, 0, 1, 1], [0, 0, 0, 0], [0, 1, 0, 0], [1, 1, 1, 1]], dtype=bool)
    dense = matrix.astype(float)
    x, t, ct = _rand(0, 4, 6), _rand(1, 4, 6), _rand(2, 4, 6)
    batch = _rand(3, 5, 4, 6)

    def f(v):
        return rows.static_product(matrix, v)

    _close(f(x), dense @ np.asarray(x))
    _close(jax.vmap(f)(batch), np.einsum("nm,bmk->bnk", dense, np.asarray(batch)))
    _close(jax.vmap(jax.vmap(f))(batch[None].repeat(2, 0)),
           np.einsum("nm,abmk->abnk", dense, np.asarray(batch[None].repeat(2, 0))))
    _close_fd(jax.jvp(f, (x,), (t,))[1], _central(f, (x,), (t,)))
    _close(jax.vjp(f, x)[1](ct), (dense.T @ np.asarray(ct),))
    _close(jax.vmap(lambda v, c: jax.vjp(f, v)[1](c)[0])(batch, batch),
           np.einsum("mn,bmk->bnk", dense, np.asarray(batch)))
    _close(jax.vmap(jax.jacfwd(f))(batch),
           np.broadcast_to(np.einsum("nm,kl->nkml", dense, np.eye(6)), (5, 4, 6, 4, 6)))
    assert "dot_general" not in jax.jit(f).lower(x).as_text()
    assert jax.jit(jax.vmap(f)).lower(batch).as_text().count("dot_general") == 1


def test_row_selections_under_vmap_match_numpy():
    """The custom_vmap rules of rows.take, take_pairs and masked_sum (static slices behind
    the batch axis) give jnp indexing's rows and cotangents: batched, nested, on an operand
    the vmap does not batch (the rule's unbatched branch), and with an empty index."""
    batch = _rand(0, 6, 5, 4, 3)                     # (batch, rows 5, 4, 3)
    index = np.array([3, 4, 0, 0, 2])
    first, second = np.array([1, 3, 0, 4]), np.array([0, 3, 3, 1])
    mask = np.array([[1, 0, 1, 1, 0], [0, 0, 0, 0, 0], [0, 1, 0, 0, 1]], dtype=bool)
    cases = [  # (ours, jnp reference) on one operand (5, 4, 3)
        (lambda v: rows.take(v, index), lambda v: v[index]),
        (lambda v: rows.take(v, np.array([3, 0, 0]), axis=1), lambda v: v[:, [3, 0, 0]]),
        (lambda v: rows.take(v, np.zeros(0, dtype=int)), lambda v: v[np.zeros(0, dtype=int)]),
        (lambda v: rows.take(v, np.arange(200) % 3 * 2 % 5),            # > _MAX_SLICES runs
         lambda v: v[np.arange(200) % 3 * 2 % 5]),
        (lambda v: rows.take_pairs(v, first, second), lambda v: v[first, second]),
        (lambda v: rows.take_pairs(v, first, second % 3, 2), lambda v: v[first, :, second % 3]),
        (lambda v: rows.masked_sum(mask, v),
         lambda v: jnp.einsum("nm,m...->n...", mask.astype(float), v)),
    ]
    for ours, ref in cases:
        _close(jax.vmap(ours)(batch), jax.vmap(ref)(batch))
        nested = jnp.stack([batch, 2.0 * batch])
        _close(jax.vmap(jax.vmap(ours))(nested), jax.vmap(jax.vmap(ref))(nested))
        # the operand closed over inside a vmap over something else: unbatched in the rule
        _close(jax.vmap(lambda s: s * ours(batch[0]))(jnp.arange(3.0)),
               jax.vmap(lambda s: s * ref(batch[0]))(jnp.arange(3.0)))
        ct = _rand(1, *jax.vmap(ref)(batch).shape)
        _close(jax.vmap(lambda v, c: jax.vjp(ours, v)[1](c)[0])(batch, ct),
               jax.vmap(lambda v, c: jax.vjp(ref, v)[1](c)[0])(batch, ct))


def test_take_rejects_an_index_out_of_range():
    with pytest.raises(IndexError, match=r"index out of range \[0, 4\)"):
        rows.take(jnp.zeros((4, 3)), np.array([0, 4]))


def test_reverse_mode_of_the_kinematics_has_no_pad_or_scatter_from_these_ops():
    """The point of the rules: the gradient of a kinematic chain's site positions, lowered,
    contains no pad (transposed component slice) from spatial.py and no scatter-add
    (transposed gather) from the tree traversal in kinematics.py."""
    from myotwin.engine.builder import WORLD, ModelBuilder
    from myotwin.engine.kinematics import kinematics

    b = ModelBuilder()
    parent = WORLD
    for i in range(3):
        body = b.add_body(f"link{i}", parent, pos=(0, 0, -0.3), mass=1.0,
                          inertia=(0.01, 0.01, 0.01))
        if i == 1:
            b.add_joint(body, "ball")
        else:
            b.add_joint(body, "hinge", axis=(0, 1, 0))
        b.add_site(body, f"s{i}", pos=(0.1, 0, -0.2))
        parent = body
    model = b.build()

    def loss(q):
        return jnp.sum(kinematics(model, q).site_pos_world ** 2)

    q = jnp.asarray(model.qpos0)
    text = jax.jit(jax.grad(loss)).lower(q).as_text(debug_info=True)
    bad = [line for line in text.splitlines()
           if ("stablehlo.pad" in line or "stablehlo.scatter" in line)]
    assert bad == [], bad[:3]


TENDON_CHAIN = """<mujoco><option timestep="0.001"><flag contact="disable"/></option><worldbody>
  <site name="o" pos="0.03 0 0.05"/>
  <body name="b1"><joint name="j1" type="hinge" axis="0 1 0" stiffness="0.5"/>
    <inertial pos="0 0 -0.15" mass="0.5" diaginertia="0.004 0.004 0.0002"/>
    <site name="v1" pos="0.03 0 -0.2"/>
    <body name="b2" pos="0 0 -0.3"><joint type="ball" stiffness="0.2"/>
      <inertial pos="0 0 -0.15" mass="0.4" diaginertia="0.003 0.003 0.0002"/>
      <site name="v2" pos="0.03 0 -0.15"/>
      <body name="b3" pos="0 0 -0.3"><joint type="hinge" axis="1 0 0"/>
        <inertial pos="0 0 -0.15" mass="0.3" diaginertia="0.002 0.002 0.0001"/>
        <site name="i3" pos="0.02 0 -0.1"/></body></body></body>
</worldbody>
<tendon><spatial name="straight"><site site="o"/><site site="i3"/></spatial>
  <spatial name="via"><site site="o"/><site site="v1"/><site site="v2"/><site site="i3"/></spatial>
</tendon>
<actuator><motor tendon="straight" gear="-1"/><motor tendon="via" gear="-1"/>
  <motor joint="j1" gear="2"/></actuator></mujoco>"""


def test_reverse_mode_of_a_tendon_driven_step_has_no_scatter():
    """The whole step of a muscle-driven model -- kinematics, CRBA, RNEA, springs, tendon and
    joint actuators (path lengths and length Jacobians), the semi-implicit update with a ball
    joint's quaternion -- selects rows only through rows.py: its lowered gradient contains no
    scatter (the transpose of a plain gather, or a segment sum)."""
    import mujoco

    from myotwin import engine
    from myotwin.engine.integrators import semi_implicit_euler_step

    model = engine.compile_model(mujoco.MjModel.from_xml_string(TENDON_CHAIN))

    def loss(q, qd):
        q1, qd1 = semi_implicit_euler_step(model, q, qd, jnp.array([3.0, 2.0, 0.1]), 1e-3)
        return jnp.sum(q1 ** 2) + jnp.sum(qd1 ** 2)

    q = jnp.asarray(model.qpos0) + 0.1
    text = jax.jit(jax.grad(loss, argnums=(0, 1))).lower(q, jnp.ones(model.n_v)).as_text()
    assert "stablehlo.scatter" not in text


def test_take_of_every_row_in_order_is_the_array_itself():
    x = _rand(0, 4, 3)
    assert rows.take(x, np.arange(4)) is x
    assert rows.take(x, np.arange(3), axis=1) is x
    _close(rows.take(x, np.arange(4)[::-1]), np.asarray(x)[::-1])   # a permutation still gathers


def test_computed_once_is_the_identity_with_its_derivatives():
    """fusion.computed_once(x) is x, in value, forward and reverse mode, alone and under vmap;
    alone it is a reduction (what keeps XLA from fusing it into its consumers), under vmap no
    operation at all (engine/fusion.py)."""
    from myotwin.engine.fusion import computed_once

    x, t = _rand(0, 4, 3), _rand(1, 4, 3)

    def f(v):
        return jnp.sin(computed_once(v * v))

    def g(v):
        return jnp.sin(v * v)

    _close(f(x), g(x))
    _close(jax.jvp(f, (x,), (t,)), jax.jvp(g, (x,), (t,)))
    _close(jax.vjp(f, x)[1](t), jax.vjp(g, x)[1](t))
    _close(jax.vmap(jax.grad(lambda v: jnp.sum(f(v))))(jnp.stack([x, t])),
           jax.vmap(jax.grad(lambda v: jnp.sum(g(v))))(jnp.stack([x, t])))
    for v in (jnp.arange(4, dtype=jnp.int32), jnp.array([True, False])):  # dtype kept
        out = computed_once(v)
        assert out.dtype == v.dtype and np.array_equal(out, v)
    assert "reduce" in jax.jit(f).lower(x).as_text()
    assert "reduce" not in jax.jit(jax.vmap(f)).lower(jnp.stack([x, t])).as_text()


@pytest.mark.parametrize("name", ["take", "take_pairs", "masked_sum", "static_product"])
def test_reverse_over_forward_second_derivatives_of_the_row_maps(name):
    """jax.grad of a forward-mode derivative (a Hessian-vector product, what a gradient through
    moment arms from jacfwd needs) through each row map. These failed before their JVP rules
    returned their value through themselves: JAX cannot linearize the custom_vmap primal.
    Reference: phi(x) = sum w (A x)^3 for the map's 0/1 matrix A has the Hessian
    A^T diag(6 w A x) A, so grad_x <grad phi(x), v> = A^T (6 w (A x)(A v)), in NumPy; 1e-12."""
    x, v = _rand(0, 4, 5), _rand(1, 4, 5)
    first, second = np.array([1, 3, 0, 3]), np.array([0, 4, 4, 4])
    mask = np.array([[1, 0, 1, 1], [0, 0, 0, 0], [0, 1, 0, 0]], dtype=bool)
    index = np.array([3, 0, 0, 2])
    maps = {"take": (lambda y: rows.take(y, index), np.eye(4)[index]),
            "masked_sum": (lambda y: rows.masked_sum(mask, y), mask.astype(float)),
            "static_product": (lambda y: rows.static_product(mask, y), mask.astype(float))}
    if name == "take_pairs":
        flat = np.eye(20)[first * 5 + second]                       # on x.ravel()
        fn = rows.take_pairs
        phi_map = (lambda y: fn(y, first, second)), flat
    else:
        phi_map = maps[name]
    fmap, a = phi_map
    w = np.asarray(_rand(2, a.shape[0], *([] if name == "take_pairs" else [5])))

    def phi(y):
        return jnp.sum(w * fmap(y) ** 3)

    hvp = jax.grad(lambda y: jax.jvp(phi, (y,), (v,))[1])(x)
    if name == "take_pairs":
        ax, av = a @ np.asarray(x).ravel(), a @ np.asarray(v).ravel()
        want = (a.T @ (6 * w * ax * av)).reshape(4, 5)
    else:
        ax, av = a @ np.asarray(x), a @ np.asarray(v)
        want = a.T @ (6 * w * ax * av)
    _close_fd(hvp, want)
