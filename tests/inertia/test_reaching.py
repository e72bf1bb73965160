"""The reaching arm (`models.arm_reaching`) and the `reaching` reproduction (seed §4.7).

References outside the code under test:
  * MuJoCo 4.0.0 on the arm's MJCF: mass matrix (mj_fullM), hand site position, tendon lengths
    and which tendons wrap (ten_wrapnum / wrap_obj) at the task's start and target postures;
  * central differences of the reaching loss (a rollout of the inertial arm): the forward-mode
    AD gradient used by the optimiser must agree to 1e-5 relative (issue 4's acceptance);
  * the task itself: BFGS with that gradient must bring the hand to the target.
The optimisation runs on the quick model (mass on the three triceps heads only: the deltoids'
sphere wraps would add a second wrap type to compile; the full run covers them).
"""

from __future__ import annotations

import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from myotwin import engine
from myotwin.models import arm_reaching as arm
from myotwin.repro import reaching

#: engine vs MuJoCo: the same float64 formulas; the residual is roundoff (observed ~1e-16).
ROUNDOFF_TOL = 1e-10
#: AD gradient vs central differences (issue 4): the central-difference truncation at step
#: 1e-4 (in units of 0.05 N m) and roundoff of the loss are both ~1e-10 relative here.
GRAD_TOL = 1e-5
#: Final hand distance after the quick optimisation: the regulariser moves the optimum by
#: ~1 um (full run: 0.84 um); 0.1 mm leaves room for BFGS's stopping tolerance.
REACH_TOL_M = 1e-4


def test_arm_matches_mujoco_and_wraps_are_active():
    mj = arm.path_builder().mj_model()
    model = arm.build(muscle_mass=False)
    data = mujoco.MjData(mj)
    hand = arm.site_id("hand")
    for q in (reaching.Q0, reaching.Q_TARGET, (0.3, 0.2, 0.05, 1.5)):
        data.qpos[:] = q
        mujoco.mj_forward(mj, data)
        ref = np.zeros((mj.nv, mj.nv))
        mujoco.mj_fullM(mj, data, ref)
        ours = np.asarray(engine.mass_matrix(model, jnp.asarray(q)))
        np.testing.assert_allclose(ours, ref, rtol=0, atol=ROUNDOFF_TOL * np.abs(ref).max(),
                                   err_msg=f"arm mass matrix vs mj_fullM at q={q}")
        pos = np.asarray(engine.site_poses(model, jnp.asarray(q))[0][hand])
        np.testing.assert_allclose(pos, data.site_xpos[hand], rtol=0, atol=ROUNDOFF_TOL,
                                   err_msg="hand site position")
        from myotwin.paths.length import muscle_lengths

        lengths = np.asarray(muscle_lengths(model.paths, model, jnp.asarray(q)))
        np.testing.assert_allclose(lengths, data.ten_length, rtol=0, atol=ROUNDOFF_TOL,
                                   err_msg="muscle lengths vs MuJoCo ten_length")
        # every muscle wraps its obstacle in these postures: MuJoCo's path has 4 points
        # (origin, two tangent points, insertion), 2 when the wrap is off
        for t in range(mj.ntendon):
            assert data.ten_wrapnum[t] == 4, (
                f"{arm.MUSCLES[t]} does not wrap at q={q} (MuJoCo wrap points "
                f"{data.ten_wrapnum[t]})")
    # the muscles' mass is moved out of the upper arm (de Leva's segment mass)
    assert float(model.body_mass[1]) == pytest.approx(
        arm.segment("upper_arm")[0] - sum(arm.MUSCLE_MASS_KG.values()), rel=1e-12)


@pytest.fixture(scope="module")
def quick_task():
    return reaching.Task(reaching.reaching_model(quick=True))


def test_gradient_matches_central_differences(quick_task):
    p0 = np.zeros(4)
    _, g_ad = quick_task.loss_and_grad(p0)
    g_fd = np.zeros(4)
    for k in range(4):
        e = np.zeros(4)
        e[k] = reaching.FD_STEP
        plus = quick_task.loss_and_grad(p0 + e)[0]      # the loss value of the same function
        minus = quick_task.loss_and_grad(p0 - e)[0]
        g_fd[k] = (plus - minus) / (2 * reaching.FD_STEP)
    err = np.linalg.norm(g_ad - g_fd) / np.linalg.norm(g_fd)
    assert err <= GRAD_TOL, f"AD gradient {g_ad} vs central differences {g_fd}: {err:.2e}"


def test_quick_optimisation_reaches_target(quick_task):
    res = reaching.optimise(quick_task, with_gradient=True, maxiter=reaching.QUICK_MAXITER)

    def miss(p):
        """|x(t_end) - x*| from the loss minus its torque term (no second compilation)."""
        tau = np.asarray(quick_task.tau_hold) + reaching.TORQUE_SCALE_NM * np.asarray(p)
        value = quick_task.loss_and_grad(np.asarray(p))[0]
        return reaching.POS_SCALE_M * np.sqrt(max(value - tau @ tau
                                                  / reaching.REG_SCALE_NM ** 2, 0.0))

    start, end = miss(np.zeros(4)), miss(res["p"])
    assert start > 0.2, f"the target should be > 20 cm away, is {start:.3f} m"
    miss = end
    assert miss <= REACH_TOL_M, f"hand {miss * 1e3:.3f} mm from the target after " \
                                f"{res['nit']} BFGS iterations ({res['message']})"


class _RosenbrockTask:
    """Stands in for `reaching.Task` (same `loss` / `rollouts` interface) on the 4-D Rosenbrock
    function, whose minimum is known in closed form: 0 at (1, 1, 1, 1)."""

    def __init__(self):
        self.rollouts = 0

    def loss(self, p):
        self.rollouts += 1
        p = np.asarray(p, dtype=float)
        return float(np.sum(100.0 * (p[1:] - p[:-1] ** 2) ** 2 + (1.0 - p[:-1]) ** 2))


def test_derivative_free_optimiser_reaches_a_known_minimum():
    # The gradient-free side of the reaching comparison (Nelder-Mead with restarts) on a
    # function with a known minimum, from the same start p = 0: it must get there (tolerance
    # 1e-5 in p: the simplex tolerance is 1e-6, the narrow valley stretches the error along
    # it; observed 1.5e-7), count every evaluation as a rollout and keep its history.
    task = _RosenbrockTask()
    res = reaching.optimise_derivative_free(task, maxfev=20000)
    np.testing.assert_allclose(res["p"], np.ones(4), atol=1e-5,
                               err_msg=f"Nelder-Mead stopped at {res['p']} ({res['message']})")
    assert res["loss"] < 1e-8
    assert res["rollouts"] == task.rollouts == len(res["history"])
    assert res["nelder_mead_runs"] >= 2       # the last run is the one that no longer improves
