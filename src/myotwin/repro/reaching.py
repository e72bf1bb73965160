"""`reaching`: differentiable reaching with inertial muscles (Wang et al. 2022 §4.7, Fig. 1d).

Seed §4.7: an arm with three deltoid heads on sphere-capped cylinders and three triceps heads
on cylinders; "the task parameters are the constant torques to be applied to the shoulder
(3 DOF) and elbow (1 DOF) joints. We use fminunc as the optimizer with our analytical
derivatives. As a comparison, when we run fminunc in gradient-free mode, it takes an
order-of-magnitude more time to optimize, requiring many more simulation runs."

Task (choices): the arm `myotwin.models.arm_reaching` with all six muscles carrying mass
(Type III, library positions), starting at rest in the posture `Q0` (upper arm slightly forward
and abducted, elbow flexed 80 deg); the hand (site `hand`) must be at the target x* = hand
position of the posture `Q_TARGET` (a point 20 cm further forward and up, reachable) at
t_end = `T_END_S`. Parameters p (4,): tau = tau_hold + `TORQUE_SCALE_NM` p, tau_hold the
torques that hold Q0 against gravity (inverse dynamics with the muscle points, so p = 0 keeps
the arm still: the initial guess). The scale 0.05 N m preconditions BFGS, which starts from an
identity Hessian: without damping, a constant 1 N m moves the hand by ~0.3 m in 0.5 s, so with
p in N m the first BFGS step would be hundreds of N m (it was, and the rollout overflowed).
Loss (the notes' reaching template, w_pos |x - x*|^2 + w_reg |tau|^2, made dimensionless for
a human arm):
    loss(p) = |x(t_end) - x*|^2 / (1 cm)^2 + |tau|^2 / (100 N m)^2,
so a 1 cm miss costs as much as 100 N m of torque (the optimal torques are ~5 N m: the
regulariser moves the optimum by ~1 um).
Integration: semi-implicit Euler, dt = `DT_S` (the arm's fastest motion here has periods of
~0.1 s). Gradient: forward-mode automatic differentiation through the rollout (`jax.jacfwd`,
4 tangents), exact to roundoff. Why not reverse mode: the mass-point terms are already second
derivatives of the wrap geometry (Eq. 5's Jdot qd by nested jvp), and reverse mode through the
rollout differentiates them once more. It works (`Task.loss_and_grad_reverse`; equal to the
forward-mode gradient to 6e-15), but with 4 parameters it is the dearer mode: on this machine
(session 18, `benchmarks/reaching_gradients.py`) it compiles in 5.5-6.5 min with 8.5 GB of
memory at its peak (forward mode: 1.5 min, 3.4 GB) and runs in 2.5-3.8x the forward-mode
gradient's time. (In session 3 its compilation did not finish within 10 min and 9 GB.)
Optimisers (times exclude the one-time XLA compilation of each function, reported
separately; wall and CPU):
  (a) gradient: scipy `minimize(method="BFGS")`, default options, jac = the AD gradient;
  (b) gradient-free: scipy Nelder-Mead (MATLAB's fminsearch), derivative-free, with tight
      tolerances (`NELDER_MEAD_TOLERANCES`), restarted from its last point until a restart
      stops improving; whether it found the optimum of (a) is reported
      (`same_optimum_as_gradient_free`: final losses equal to `SAME_OPTIMUM_REL`); in the full
      run it stalls at a worse point (docs/inertia.md), so its time is a lower bound;
  (c) also reported, `finite_difference_bfgs`: BFGS with jac=None, scipy's forward-difference
      gradient (4 + 1 rollouts per gradient), which is what fminunc without a user gradient
      does (the seed's "gradient-free mode"). It is a gradient method with an approximate
      gradient: with the same iterations as (a) it costs 5 rollouts per gradient against at
      least 1 for any exact gradient, so its ratio to (a) is bounded by 5 for 4 parameters,
      and with our forward-mode gradient (~4 rollouts) it is ~1 (docs/inertia.md).
  The acceptance's "gradient-free" is (b); (c) is given next to it so the claim can be read
  either way.

Summary: gradient_time_s (a), gradient_free_time_s (b) (wall), speedup = (b) / (a), their CPU
times, iterations, function/gradient evaluations and rollouts of each run, final_distance_m
(gradient run; also the gradient-free run's), grad_fd_rel_error (AD gradient vs central
differences, step 1e-4, at p = 0: |g_AD - g_FD| / |g_FD|), finite_difference_bfgs (c), the
optimal torques, and checks of the path model along the optimal motion: the wrap state of
every muscle at every step (the library positions' Jacobian jumps when a wrap switches) and
the clearance of the deltoid paths from the humeral shaft (the cap-only approximation of the
seed's capsule, docs/models.md). Acceptance (issue 4): speedup >= 10, grad_fd_rel_error <=
1e-5; results in docs/inertia.md. Figures: reaching_paths.png (hand paths and target),
reaching_convergence.png (best loss vs rollouts for the three optimisers).
quick: the same task with the mass on the three triceps heads only (one wrap type; this halves
the compilation, for CI), at most `QUICK_MAXITER` BFGS iterations.
"""

from __future__ import annotations

import pathlib
import time

import numpy as np

from myotwin.repro.output import prepare_output, pyplot, write_summary

Q0 = (0.1, 0.15, 0.0, 1.4)
Q_TARGET = (0.5, 0.25, 0.1, 1.6)
T_END_S = 0.5
DT_S = 0.01
TORQUE_SCALE_NM = 0.05
POS_SCALE_M = 0.01
REG_SCALE_NM = 100.0
FD_STEP = 1e-4
#: Nelder-Mead stopping tolerances: simplex size 1e-6 in p (5e-8 N m) and loss spread 1e-12
#: (the loss is ~4e-3 at the optimum; 1e-12 is ~1e-8 cm^2 of squared miss).
NELDER_MEAD_TOLERANCES = {"xatol": 1e-6, "fatol": 1e-12}
NELDER_MEAD_MAXFEV = 20000
#: Two runs found the same optimum if their final losses agree to this (relative): BFGS's own
#: stopping test (gradient norm 1e-5) leaves ~1e-6 (AD and finite-difference runs: 2e-6).
SAME_OPTIMUM_REL = 1e-4
QUICK_MUSCLES = ("TRIlong", "TRIlat", "TRImed")
QUICK_MAXITER = 40


def reaching_model(quick: bool = False):
    """The arm with its muscle mass (quick: on the triceps heads only)."""
    from myotwin import inertia
    from myotwin.models import arm_reaching as arm

    if not quick:
        return arm.build()
    model = arm.build(muscle_mass=False)
    for name in QUICK_MUSCLES:
        model = inertia.with_muscle_mass(model, name, arm.MUSCLE_MASS_KG[name], arm.N_POINTS)
    return model


class Task:
    """The reaching problem on `model`: rollouts, loss, AD gradient (all jitted lazily)."""

    def __init__(self, model):
        import jax
        import jax.numpy as jnp

        from myotwin import engine
        from myotwin.engine.integrators import Integrator
        from myotwin.models import arm_reaching as arm

        self.model = model
        self.hand = arm.site_id("hand")
        self.q0 = jnp.asarray(Q0)
        self.n_steps = round(T_END_S / DT_S)
        zeros = jnp.zeros(model.n_v)
        self.tau_hold = jax.jit(engine.inverse_dynamics)(model, self.q0, zeros, zeros)
        self.target = engine.site_poses(model, jnp.asarray(Q_TARGET))[0][self.hand]

        def trajectory(p):
            tau = self.tau_hold + TORQUE_SCALE_NM * p
            q, qd = engine.rollout(model, self.q0, zeros, tau, DT_S, self.n_steps,
                                   Integrator.SEMI_IMPLICIT_EULER)
            return q, qd, tau

        def loss(p):
            q, _, tau = trajectory(p)
            miss = engine.site_poses(model, q[-1])[0][self.hand] - self.target
            return jnp.sum(miss * miss) / POS_SCALE_M ** 2 + jnp.sum(tau * tau) / REG_SCALE_NM ** 2

        def loss_and_grad(p):
            def value_twice(x):  # one rollout: the aux output is the jvp's primal
                value = loss(x)
                return value, value

            grad, value = jax.jacfwd(value_twice, has_aux=True)(p)
            return value, grad

        self._trajectory = jax.jit(trajectory)
        self._loss = jax.jit(loss)
        self._loss_and_grad = jax.jit(loss_and_grad)
        self._loss_and_grad_reverse = jax.jit(jax.value_and_grad(loss))
        self.rollouts = 0

    def compile(self) -> dict:
        """Compile the loss and the loss+gradient (seconds of wall time each)."""
        p = np.zeros(4)
        out = {}
        for name, fn in (("loss", self._loss), ("loss_and_grad", self._loss_and_grad)):
            t = time.perf_counter()
            fn(p)
            out[name] = time.perf_counter() - t
        return out

    def loss(self, p) -> float:
        """Loss at p (4,) (one rollout)."""
        self.rollouts += 1
        return float(self._loss(np.asarray(p, dtype=np.float64)))

    def loss_and_grad(self, p) -> tuple[float, np.ndarray]:
        """(loss, d loss / d p (4,)) by forward-mode AD through the rollout."""
        self.rollouts += 1
        value, grad = self._loss_and_grad(np.asarray(p, dtype=np.float64))
        return float(value), np.asarray(grad, dtype=np.float64)

    def loss_and_grad_reverse(self, p) -> tuple[float, np.ndarray]:
        """The same by reverse-mode AD (`jax.value_and_grad`): one rollout and its adjoint pass.
        Not used by the reproduction (module docstring); `benchmarks/reaching_gradients.py`
        compares the two modes."""
        self.rollouts += 1
        value, grad = self._loss_and_grad_reverse(np.asarray(p, dtype=np.float64))
        return float(value), np.asarray(grad, dtype=np.float64)

    def trajectory(self, p):
        """(q (n+1, 4), qd (n+1, 4), tau (4,)) for parameters p."""
        q, qd, tau = self._trajectory(np.asarray(p, dtype=np.float64))
        return np.asarray(q), np.asarray(qd), np.asarray(tau)

    def hand_path(self, q) -> np.ndarray:
        """(n, 3) hand positions along the configurations q (n, 4)."""
        import jax

        from myotwin import engine

        pos = jax.jit(jax.vmap(lambda x: engine.site_poses(self.model, x)[0][self.hand]))
        return np.asarray(pos(q))


def central_difference_gradient(task: Task, p, step: float = FD_STEP) -> np.ndarray:
    """Central differences of the loss, step `step` in each parameter (8 rollouts)."""
    p = np.asarray(p, dtype=np.float64)
    grad = np.zeros_like(p)
    for k in range(p.size):
        e = np.zeros_like(p)
        e[k] = step
        grad[k] = (task.loss(p + e) - task.loss(p - e)) / (2.0 * step)
    return grad


def optimise(task: Task, with_gradient: bool, maxiter: int) -> dict:
    """scipy BFGS from p = 0, with the AD gradient or scipy's forward differences."""
    from scipy.optimize import minimize

    history = []

    def record(value):
        history.append((task.rollouts, value))
        return value

    if with_gradient:
        def fun(p):
            value, grad = task.loss_and_grad(p)
            return record(value), grad
    else:
        def fun(p):
            return record(task.loss(p))

    task.rollouts = 0
    wall, cpu = time.perf_counter(), time.process_time()
    res = minimize(fun, np.zeros(4), jac=True if with_gradient else None, method="BFGS",
                   options={"maxiter": maxiter})
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"p": res.x.tolist(), "loss": float(res.fun), "success": bool(res.success),
            "message": str(res.message), "nit": int(res.nit), "nfev": int(res.nfev),
            "njev": int(getattr(res, "njev", 0) or 0), "rollouts": task.rollouts,
            "wall_s": wall, "cpu_s": cpu, "history": history}


def optimise_derivative_free(task: Task, maxfev: int) -> dict:
    """scipy Nelder-Mead from p = 0 (derivative-free; MATLAB's fminsearch), restarted from its
    last point (a fresh simplex) until a restart no longer lowers the loss by more than 1e-9
    relative, at most `maxfev` rollouts in all. One run stops on its tolerances
    (`NELDER_MEAD_TOLERANCES`) when the simplex collapses; restarting is the standard remedy
    (Nelder-Mead has no convergence guarantee). On the full arm it still ends 37 % above the
    gradient run's loss (docs/inertia.md)."""
    from scipy.optimize import minimize

    history = []

    def fun(p):
        value = task.loss(p)
        history.append((task.rollouts, value))
        return value

    task.rollouts = 0
    wall, cpu = time.perf_counter(), time.process_time()
    x, best, nit, runs, res = np.zeros(4), np.inf, 0, 0, None
    while task.rollouts < maxfev:
        res = minimize(fun, x, method="Nelder-Mead",
                       options={"maxfev": maxfev - task.rollouts, **NELDER_MEAD_TOLERANCES})
        nit += int(res.nit)
        runs += 1
        improved = not np.isfinite(best) or res.fun < best - 1e-9 * abs(best)
        if res.fun < best:
            x, best = res.x, float(res.fun)
        if not improved:
            break
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"p": x.tolist(), "loss": best, "success": bool(res.success),
            "message": str(res.message), "nit": nit, "nfev": task.rollouts, "njev": 0,
            "nelder_mead_runs": runs, "rollouts": task.rollouts, "wall_s": wall, "cpu_s": cpu,
            "history": history}


def path_checks(task: Task, q: np.ndarray) -> dict:
    """Wrap state of each muscle along q (n, 4) and the deltoids' clearance from the shaft."""
    import jax
    import jax.numpy as jnp

    from myotwin import engine, inertia
    from myotwin.inertia.path_fraction import path_pieces, piece_layout
    from myotwin.models import arm_reaching as arm

    model = task.model
    names = list(model.paths.path_names)
    layout = piece_layout(model.paths, tuple(range(len(names))))
    deltoids = [names.index(m) for m in ("DELT1", "DELT2", "DELT3")]
    humerus = 1  # body ids in MJCF order: world 0, humerus 1, forearm 2

    def geometry(x):
        kin = engine.kinematics(model, x)
        anchors = inertia.path_anchors(model.paths, kin, layout.wraps)
        pieces = path_pieces(model.paths, anchors, layout)
        # straight piece after the cap: tangent point 1 -> insertion, in the humerus frame
        rot, pos = kin.body_rot_world[humerus], kin.body_pos_world[humerus]
        clear = []
        for d in deltoids:
            w = layout.wraps.index(model.paths.unit_wrap[model.paths.unit_path.index(d)])
            a = rot.T @ (pieces.arcs.t1_world[w] - pos)
            b = rot.T @ (anchors.site_pos_world[model.paths.unit_site1[
                model.paths.unit_path.index(d)]] - pos)
            s = jnp.linspace(0.0, 1.0, 41)[:, None]
            seg = a + s * (b - a)
            below_head = seg[:, 2] < 0.0            # the shaft starts below the head centre
            radial = jnp.sqrt(seg[:, 0] ** 2 + seg[:, 1] ** 2)
            clear.append(jnp.min(jnp.where(below_head, radial, jnp.inf)))
        return pieces.arcs.active, jnp.stack(clear)

    active, clearance = jax.jit(jax.vmap(geometry))(jnp.asarray(q))
    active, clearance = np.asarray(active), np.asarray(clearance)
    wrap_names = [names[model.paths.unit_path[model.paths.wrap_unit[w]]] for w in layout.wraps]
    return {"wrap_active_fraction": {n: float(active[:, k].mean())
                                     for k, n in enumerate(wrap_names)},
            "wrap_switches": int(np.sum(active[1:] != active[:-1])),
            "deltoid_min_shaft_distance_m": float(clearance.min()),
            "shaft_radius_m": arm.SHAFT_RADIUS_M,
            "deltoid_clear_of_shaft": bool(clearance.min() >= arm.SHAFT_RADIUS_M)}


def run(out_dir: pathlib.Path, quick: bool = False) -> dict:
    """Optimise the reaching torques with and without the AD gradient; summary + figures."""
    out_dir = prepare_output(out_dir)
    task = Task(reaching_model(quick))
    compile_s = task.compile()
    p0 = np.zeros(4)
    g_ad = task.loss_and_grad(p0)[1]
    g_fd = central_difference_gradient(task, p0)
    grad_err = float(np.linalg.norm(g_ad - g_fd) / np.linalg.norm(g_fd))
    maxiter = QUICK_MAXITER if quick else 200
    with_grad = optimise(task, True, maxiter)
    free = optimise_derivative_free(task, NELDER_MEAD_MAXFEV)
    fd = optimise(task, False, maxiter)
    q_opt, _, tau_opt = task.trajectory(with_grad["p"])
    q_init, _, _ = task.trajectory(p0)
    q_free, _, _ = task.trajectory(free["p"])
    q_fd, _, _ = task.trajectory(fd["p"])
    hand = {"initial": task.hand_path(q_init), "gradient": task.hand_path(q_opt),
            "gradient_free": task.hand_path(q_free),
            "finite_difference_bfgs": task.hand_path(q_fd)}
    target = np.asarray(task.target)
    dist = {k: float(np.linalg.norm(v[-1] - target)) for k, v in hand.items()}
    speedup = free["wall_s"] / with_grad["wall_s"]
    speedup_fd = fd["wall_s"] / with_grad["wall_s"]
    same_optimum = (abs(free["loss"] - with_grad["loss"])
                    <= SAME_OPTIMUM_REL * abs(with_grad["loss"]))
    summary = {
        "gradient_time_s": with_grad["wall_s"],
        "gradient_free_time_s": free["wall_s"],
        "speedup": speedup,
        "gradient_cpu_s": with_grad["cpu_s"], "gradient_free_cpu_s": free["cpu_s"],
        "speedup_cpu": free["cpu_s"] / with_grad["cpu_s"],
        "final_distance_m": dist["gradient"],
        "final_distance_gradient_free_m": dist["gradient_free"],
        "initial_distance_m": dist["initial"],
        "grad_fd_rel_error": grad_err,
        "grad_ad": g_ad.tolist(), "grad_central_difference": g_fd.tolist(),
        "gradient_cost_rollouts": _gradient_cost(task),
        "finite_difference_bfgs": {
            "time_s": fd["wall_s"], "cpu_s": fd["cpu_s"], "speedup": speedup_fd,
            "final_distance_m": dist["finite_difference_bfgs"], "rollouts": fd["rollouts"],
            "nit": fd["nit"],
            "speedup_bound": "with equal iterations at most n + 1 = 5 (forward differences "
                             "cost 5 rollouts per gradient, an exact gradient at least 1)"},
        "acceptance": {"speedup_ge_10": bool(speedup >= 10.0),
                       "same_optimum_as_gradient_free": bool(same_optimum),
                       "grad_fd_rel_error_le_1e-5": bool(grad_err <= 1e-5)},
        "optimal_torque_Nm": tau_opt.tolist(),
        "hold_torque_Nm": np.asarray(task.tau_hold).tolist(),
        "target_m": target.tolist(),
        "runs": {name: {k: v for k, v in r.items() if k != "history"} for name, r in
                 (("gradient", with_grad), ("gradient_free", free),
                  ("finite_difference_bfgs", fd))},
        "compile_wall_s": compile_s,
        "path_checks_optimal_motion": path_checks(task, q_opt),
        "setup": {"q0_rad": Q0, "q_target_rad": Q_TARGET, "t_end_s": T_END_S, "dt_s": DT_S,
                  "integrator": "semi_implicit_euler", "torque_scale_Nm": TORQUE_SCALE_NM,
                  "loss": f"|x - x*|^2 / ({POS_SCALE_M} m)^2 + |tau|^2 / "
                          f"({REG_SCALE_NM} N m)^2",
                  "gradient": "forward-mode AD (jax.jacfwd) through the rollout",
                  "optimiser": "scipy BFGS, default tolerances, maxiter "
                               f"{maxiter}, with the AD gradient",
                  "gradient_free_optimiser": "scipy Nelder-Mead, "
                                             f"{NELDER_MEAD_TOLERANCES}",
                  "finite_difference_bfgs": "scipy BFGS with jac=None (forward "
                                            "differences; fminunc's gradient-free mode)",
                  "muscles_with_mass": list(QUICK_MUSCLES) if quick else "all six",
                  "n_points_per_muscle": _points_per_muscle(task.model)},
    }
    _plot(out_dir, hand, target, {"BFGS, AD gradient": with_grad["history"],
                                  "Nelder-Mead (gradient-free)": free["history"],
                                  "BFGS, finite differences": fd["history"]})
    write_summary(out_dir, summary)
    return summary


def _gradient_cost(task: Task, repeats: int = 5) -> float:
    """CPU time of one loss + AD gradient over that of one loss (best of `repeats`)."""
    import jax

    p = np.full(4, 0.1)

    def best(fn):
        times = []
        for _ in range(repeats):
            t = time.process_time()
            jax.block_until_ready(fn(p))
            times.append(time.process_time() - t)
        return min(times)

    return best(task._loss_and_grad) / best(task._loss)


def _points_per_muscle(model) -> int:
    mm = model.muscle_mass
    return 0 if mm is None else mm.n_points // len(mm.inertial_paths())


def _plot(out_dir: pathlib.Path, hand: dict, target: np.ndarray, histories: dict) -> None:
    plt = pyplot()

    fig, axes = plt.subplots(1, 2, figsize=(10, 4.5))
    styles = {"initial": ("k", ":"), "gradient": ("C0", "-"), "gradient_free": ("C1", "--"),
              "finite_difference_bfgs": ("C2", "-.")}
    for name, path in hand.items():
        color, ls = styles[name]
        for ax, (i, j) in zip(axes, ((0, 2), (0, 1))):
            ax.plot(path[:, i], path[:, j], ls, color=color, label=name.replace("_", " "))
            ax.plot(path[-1, i], path[-1, j], "o", color=color, ms=4)
    for ax, (i, j), lab in zip(axes, ((0, 2), (0, 1)), (("x (m)", "z (m)"), ("x (m)", "y (m)"))):
        ax.plot(target[i], target[j], "r*", ms=12, label="target")
        ax.set(xlabel=lab[0], ylabel=lab[1], aspect="equal")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    axes[0].set_title("hand path, side view")
    axes[1].set_title("hand path, top view")
    fig.tight_layout()
    fig.savefig(out_dir / "reaching_paths.png", dpi=120)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 4))
    for label, hist in histories.items():
        if hist:
            r, v = np.asarray(hist, dtype=float).T
            ax.semilogy(r, np.minimum.accumulate(v), label=label)
    ax.set(xlabel="rollouts (forward-mode gradient counted as one)", ylabel="best loss",
           title="reaching: optimiser progress")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out_dir / "reaching_convergence.png", dpi=120)
    plt.close(fig)
