"""A MyoSuite rollout (MuJoCo muscles on tendons over wrapping cylinders with side sites, joint
limits) compiles into XLA's whole-loop calls.

`myotwin.configure_jax` (conftest) lets XLA's CPU compiler run a small `while` loop as one
compiled call (jax_setup.py); a scatter or a library call (LAPACK custom call, YNNPACK dot) in
the loop prevents it, and the elbow's RK4 step took 2.5x longer (benchmarks/RESULTS.md,
"MuJoCo muscles", session 32). The wrapped paths' code (paths/obstacle.py, length.py,
moment_arms.py) is written without them. Checked on the compiled HLO, not on wall time, for
RK4 and for MuJoCo's Euler (the files' own integrator: the implicit damping's extra Cholesky
factor of M + h D must stay on scalars, engine/cholesky.py)."""

import jax
import jax.numpy as jnp
import pytest

from myotwin.engine.integrators import Integrator
from myotwin.jax_setup import small_loop_option_set
from myotwin.musculoskeletal import MusculoskeletalState, load_mjcf, rollout
from shared_reference import SHARED

ELBOW = SHARED / "reference" / "mujoco" / "myosuite" / "myoelbow_2dof6muscles_nomesh.xml"


@pytest.mark.parametrize("integrator", [Integrator.RK4, Integrator.EULER])
def test_a_myosuite_rollout_loop_is_compiled_whole(integrator):
    if not small_loop_option_set():
        pytest.skip("XLA's small-loop option is not in XLA_FLAGS (MYOTWIN_SMALL_LOOP_BYTES=0 "
                    "or the caller's own backend extra options): loops are not hoisted")
    if not ELBOW.exists():
        pytest.skip(f"MyoSuite reference model {ELBOW} is absent")
    msm = load_mjcf(ELBOW)
    assert msm.skeleton.paths.n_wraps > 0   # the wrapped paths are what this checks
    state = MusculoskeletalState(jnp.array([0.6, 0.6]), jnp.zeros(2), jnp.zeros(6),
                                 jnp.zeros(6))
    text = jax.jit(lambda s: rollout(msm, s, jnp.full(6, 0.5), 1e-3, 20, integrator)
                   ).lower(state).compile().as_text()
    loops = text.count(" while(")
    assert loops > 0
    assert "custom-call" not in text and "__ynn_fusion" not in text
    assert " scatter(" not in text, "a scatter is left in the program"
    # XLA wraps each hoisted loop (nested ones included) in a call carrying this attribute
    assert text.count("xla_cpu_small_call") == loops, "a loop is not compiled whole"
