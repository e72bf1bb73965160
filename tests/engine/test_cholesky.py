"""engine/cholesky.py: the unrolled small Cholesky against LAPACK (NumPy) and a closed-form
derivative, and the reason it exists: a rollout with it compiles into one small-loop call.

Tolerances: the factor and the solve are backward stable; for the well-conditioned matrices
below (condition number < 1e3) the forward error is a few hundred ulps at most, so 1e-12
relative is tight enough to catch a wrong sum order or a missing term (errors of O(1))."""

import jax
import jax.extend.core
import jax.numpy as jnp
import numpy as np
import pytest

from myotwin import engine
from myotwin.engine import cholesky
from myotwin.engine.integrators import Integrator
from myotwin.jax_setup import small_loop_option_set


def _spd(rng, n):
    a = rng.standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


@pytest.mark.parametrize("n", [1, 2, 3, 6, cholesky.SMALL_N, cholesky.SMALL_N + 1, 20])
def test_factor_and_solve_match_lapack(n):
    rng = np.random.default_rng(n)
    a = _spd(rng, n)
    b = rng.standard_normal(n)
    bm = rng.standard_normal((n, 4))
    fac = cholesky.factor(jnp.asarray(a))
    lower = np.tril(np.asarray(fac.lower))
    ref = np.linalg.cholesky(a)
    assert np.max(np.abs(lower - ref)) <= 1e-12 * np.max(np.abs(ref)), "Cholesky factor L"
    for rhs in (b, bm):
        x = np.asarray(cholesky.solve(fac, jnp.asarray(rhs)))
        x_ref = np.linalg.solve(a, rhs)
        assert x.shape == x_ref.shape
        assert np.max(np.abs(x - x_ref)) <= 1e-12 * np.max(np.abs(x_ref)), "solution of A x = b"
    # forward substitution only (limits.py: J M^-1 J^T = Y^T Y with Y = L^-1 J^T)
    y = np.asarray(cholesky.solve_lower(fac, jnp.asarray(bm)))
    y_ref = np.linalg.solve(ref, bm)
    assert np.max(np.abs(y - y_ref)) <= 1e-12 * np.max(np.abs(y_ref)), "solution of L y = b"
    assert np.max(np.abs(y.T @ y - bm.T @ np.linalg.solve(a, bm))) <= 1e-12 * np.max(
        np.abs(bm.T @ np.linalg.solve(a, bm))), "B^T A^-1 B = Y^T Y"


@pytest.mark.parametrize("n", [1, 4, 10, 16])
def test_lower_inverse_columns_match_numpy(n):
    """Columns of L^-1 at a few indices, rows below each (the rest is zero), against
    NumPy's inverse of LAPACK's factor, and (A^-1)[d, e] = z_d . z_e against np.linalg.inv:
    roundoff of a well-conditioned system (1e-12 relative)."""
    rng = np.random.default_rng(n + 7)
    x = rng.normal(size=(n, n))
    a = x @ x.T + n * np.eye(n)
    cols = sorted({0, n // 2, n - 1})
    z = cholesky.lower_inverse_columns(cholesky.factor(jnp.asarray(a)), cols)
    inv_l = np.linalg.inv(np.linalg.cholesky(a))
    for d in cols:
        assert sorted(z[d]) == list(range(d, n))
        got = np.array([float(z[d][k]) for k in range(d, n)])
        np.testing.assert_allclose(got, inv_l[d:, d], rtol=1e-12, atol=1e-14)
    inv_a = np.linalg.inv(a)
    for d in cols:
        for e in cols:
            got = sum(float(z[d][k]) * float(z[e][k]) for k in range(max(d, e), n))
            assert abs(got - inv_a[d, e]) <= 1e-12 * np.abs(inv_a).max()
    with pytest.raises(ValueError, match="SMALL_N"):
        cholesky.lower_inverse_columns(cholesky.factor(jnp.eye(cholesky.SMALL_N + 1)), [0])


def test_reverse_mode_of_the_small_factor_and_solve_has_no_pad():
    """The unrolled factor and substitutions take entries and rows by lax.split, whose
    transpose is one concatenation: their lowered gradient has no pad (the transpose of an
    indexed entry a[i, j] of a differentiated array, one small kernel each). Checked on the
    lowered StableHLO itself; the values are checked against LAPACK above."""
    rng = np.random.default_rng(3)
    a, b = jnp.asarray(_spd(rng, 5)), jnp.asarray(rng.standard_normal(5))

    def loss(a, b):
        return jnp.sum(cholesky.solve(cholesky.factor(a), b) ** 2)

    text = jax.jit(jax.grad(loss, argnums=(0, 1))).lower(a, b).as_text()
    assert "stablehlo.pad" not in text


@pytest.mark.parametrize("n", [5, cholesky.GRAD_SMALL_N + 4])
def test_solve_gradient_matches_closed_form(n):
    """d/dA of c . A^-1 b = -(A^-T c) (A^-1 b)^T (matrix calculus), through the unrolled
    factor and both substitutions (n = 5), or LAPACK's (n above GRAD_SMALL_N) (A enters
    symmetrically: the gradient is taken w.r.t. a symmetric parametrisation A = (S + S^T) / 2)."""
    rng = np.random.default_rng(7)
    a, b, c = _spd(rng, n), rng.standard_normal(n), rng.standard_normal(n)

    def loss(s):
        sym = 0.5 * (s + s.T)
        return jnp.dot(jnp.asarray(c), cholesky.solve(cholesky.factor(sym), jnp.asarray(b)))

    grad = np.asarray(jax.grad(loss)(jnp.asarray(a)))
    x, y = np.linalg.solve(a, b), np.linalg.solve(a.T, c)
    full = -np.outer(y, x)
    expected = 0.5 * (full + full.T)
    assert np.max(np.abs(grad - expected)) <= 1e-12 * np.max(np.abs(expected))


@pytest.mark.parametrize("n", [cholesky.GRAD_SMALL_N, cholesky.GRAD_SMALL_N + 4])
def test_derivatives_of_the_factor_routes_match_closed_forms(n):
    """Directional derivatives (jax.jvp) along a symmetric dA, on both sides of GRAD_SMALL_N
    (unrolled loops differentiated entry by entry; LAPACK's rules), against closed forms of
    d(A^-1) = -A^-1 dA A^-1: of B^T A^-1 B = Y^T Y with Y = `solve_lower` (L^-1 B), and of
    (A^-1)[d, e] = z_d . z_e from `lower_inverse_columns`. Roundoff of well-conditioned
    systems: 1e-12 relative."""
    rng = np.random.default_rng(n + 11)
    a, bm = _spd(rng, n), rng.standard_normal((n, 3))
    da = rng.standard_normal((n, n))
    da = jnp.asarray(da + da.T)
    inv = np.linalg.inv(a)
    d_inv = -inv @ np.asarray(da) @ inv
    cols = [0, n // 2, n - 1]

    def gram(a):
        y = cholesky.solve_lower(cholesky.factor(a), jnp.asarray(bm))
        return y.T @ y

    def inverse_entries(a):
        z = cholesky.lower_inverse_columns(cholesky.factor(a), cols)
        return jnp.stack([sum(z[d][k] * z[e][k] for k in range(max(d, e), n))
                          for d in cols for e in cols])

    _, d_gram = jax.jvp(gram, (jnp.asarray(a),), (da,))
    expected = bm.T @ d_inv @ bm
    assert np.max(np.abs(d_gram - expected)) <= 1e-12 * np.max(np.abs(expected))
    _, d_entries = jax.jvp(inverse_entries, (jnp.asarray(a),), (da,))
    expected = np.array([d_inv[d, e] for d in cols for e in cols])
    assert np.max(np.abs(d_entries - expected)) <= 1e-12 * np.max(np.abs(expected))


@pytest.mark.parametrize("n", [cholesky.GRAD_SMALL_N, cholesky.GRAD_SMALL_N + 1])
def test_only_derivatives_above_grad_small_n_call_lapack(n):
    """The route itself, on the jaxprs: for GRAD_SMALL_N < n <= SMALL_N the undifferentiated
    factor-and-solve is unrolled (no LAPACK primitive: a rollout of it compiles whole), its
    reverse-mode derivative calls LAPACK (cholesky, triangular_solve); at n = GRAD_SMALL_N
    neither does (its derivative is the unrolled loops' own)."""
    rng = np.random.default_rng(5)
    a, b = jnp.asarray(_spd(rng, n)), jnp.asarray(rng.standard_normal(n))

    def loss(a, b):
        return jnp.sum(cholesky.solve(cholesky.factor(a), b) ** 2)

    def primitives(fn):
        names = set()

        def walk(jaxpr):
            for eqn in jaxpr.eqns:
                names.add(eqn.primitive.name)
            for sub in jax.extend.core.subjaxprs(jaxpr):
                walk(sub)
        walk(jax.make_jaxpr(fn)(a, b).jaxpr)
        return names

    lapack = {"cholesky", "triangular_solve"}
    assert not lapack & primitives(loss)
    in_gradient = lapack & primitives(jax.grad(loss, argnums=(0, 1)))
    if n > cholesky.GRAD_SMALL_N:
        assert in_gradient == lapack
    else:
        assert not in_gradient


def test_not_positive_definite_gives_nan():
    """As LAPACK through JAX: NaN, which the integrators' divergence checks then report."""
    fac = cholesky.factor(jnp.array([[1.0, 2.0], [2.0, 1.0]]))
    assert np.isnan(np.asarray(fac.lower)).any()


CHAIN = """<mujoco><option timestep="0.001"/><worldbody>
  <body><joint type="hinge" axis="0 1 0" range="-1 1" limited="true"/>
    <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.02" mass="0.5"/>
    <body pos="0 0 -0.3"><joint type="ball"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.02" mass="0.4"/></body>
  </body></worldbody></mujoco>"""


def test_rollout_compiles_into_one_small_loop_call():
    """With myotwin.configure_jax (conftest), XLA's CPU compiler turns the rollout's loop into
    one compiled call (frontend attribute `xla_cpu_small_call`), which a LAPACK custom call in
    the step would prevent (cholesky.py, jax_setup.py). A hinge limit makes the step run the
    limit QP too. Checked on the compiled HLO, not on wall time."""
    import mujoco

    if not small_loop_option_set():
        pytest.skip("XLA's small-loop option is not in XLA_FLAGS (MYOTWIN_SMALL_LOOP_BYTES=0 "
                    "or the caller's own backend extra options): loops are not hoisted")
    model = engine.compile_model(mujoco.MjModel.from_xml_string(CHAIN))
    q0 = jnp.asarray(model.qpos0).at[0].set(0.9)
    qd0 = jnp.zeros(model.n_v)
    ctrl = jnp.zeros(model.n_u)
    text = jax.jit(lambda q, qd: engine.rollout(model, q, qd, ctrl, 1e-3, 100, Integrator.RK4)
                   ).lower(q0, qd0).compile().as_text()
    assert "custom-call" not in text, "a custom call (LAPACK?) is left in the rollout"
    assert "xla_cpu_small_call" in text, "the rollout loop was not compiled as one call"
