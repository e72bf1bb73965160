"""The frog's rollout (free base, limited hinges, smooth contacts, servos, applied forces;
n_v = 10) compiles into XLA's whole-loop calls.

`myotwin.configure_jax` (conftest) lets XLA's CPU compiler run a small `while` loop as one
compiled call (jax_setup.py). A scatter (limits.py's rows were `.at[].set`), a LAPACK call
(cholesky.py above SMALL_N) or a dot of two matrices (a YNNPACK fusion: twists.py,
contact.py, limits.py, cholesky.py before `spatial.mat_mat`) in the step keeps the loop on
the per-kernel executor, which made the frog's RK4 step 2.3x slower (benchmarks/RESULTS.md,
session 10). Checked on the compiled HLO, not on wall time.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from myotwin import engine
from myotwin.engine.integrators import Integrator
from myotwin.invitro.frog import FrogSpec
from myotwin.invitro.frog.engine_jump import frog_inputs, load_engine_frog, support_xfrc
from myotwin.jax_setup import small_loop_option_set


def test_frog_rollout_loops_are_compiled_whole():
    if not small_loop_option_set():
        pytest.skip("XLA's small-loop option is not in XLA_FLAGS (MYOTWIN_SMALL_LOOP_BYTES=0 "
                    "or the caller's own backend extra options): loops are not hoisted")
    spec = FrogSpec()
    frog = load_engine_frog(spec)
    model = frog.model
    assert model.n_v == 10 and model.contact is not None
    assert np.any(np.asarray(model.joint_limited)), "the frog should exercise the limit QP"
    n = 20
    ctrl, support = frog_inputs(spec, n, 1e-3)
    xfrc = support_xfrc(model, support, frog.support_body)
    q0 = jnp.asarray(frog.mj_model.key_qpos[0] if frog.mj_model.nkey else model.qpos0)
    text = jax.jit(lambda q, qd: engine.rollout(model, q, qd, jnp.asarray(ctrl), 1e-3, n,
                                                Integrator.RK4, xfrc_applied=xfrc)
                   ).lower(q0, jnp.zeros(model.n_v)).compile().as_text()
    loops = text.count(" while(")
    assert loops > 0
    assert "custom-call" not in text, "a custom call (LAPACK?) is left in the rollout"
    assert "__ynn_fusion" not in text, "a dot became a YNNPACK fusion"
    assert " scatter(" not in text, "a scatter is left in the rollout"
    # XLA wraps each hoisted loop (nested ones included) in a call carrying this attribute
    assert text.count("xla_cpu_small_call") == loops, "a loop not compiled whole"
