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
4 tangents), exact to roundoff. Why not reverse mode or the engine's implicit adjoint: the
mass-point terms are already second derivatives of the wrap geometry (Eq. 5's Jdot qd by
nested jvp); reverse mode through the rollout differentiates them once more and its XLA
compilation did not finish in 10 min and 9 GB on this machine (BDF1's adjoint needs the same
reverse pass through the residual); forward mode with 4 parameters costs ~4.7 forward
rollouts (measured) and compiles in ~2-3 min.
Optimisers: scipy `minimize(method="BFGS")` with the same options twice: (a) jac = the AD
gradient; (b) jac=None: scipy's forward-difference gradient (4 + 1 rollouts per gradient, step
sqrt(machine eps) relative), like fminunc's gradient-free mode. Times exclude the one-time XLA
compilation of each function (reported separately), wall and CPU.

Summary: gradient_time_s, gradient_free_time_s (wall), speedup, their CPU times, iterations,
function/gradient evaluations and rollouts of each run, final_distance_m (gradient run; also
the gradient-free run's), grad_fd_rel_error (AD gradient vs central differences, step 1e-4, at
p = 0: |g_AD - g_FD| / |g_FD|), the optimal torques, and checks of the path model along the
optimal motion: the wrap state of every muscle at every step (the library positions' Jacobian
jumps when a wrap switches) and the clearance of the deltoid paths from the humeral shaft (the
cap-only approximation of the seed's capsule, docs/models.md). Acceptance (issue 4): speedup
>= 10, grad_fd_rel_error <= 1e-5. Result (full run, docs/inertia.md): the gradient agrees to
1e-10, but the speedup is ~1.1, not 10: both runs take the same 12 BFGS iterations; the
gradient-free run needs 5 rollouts per gradient (70 vs 14), while one forward-mode gradient
costs ~4.7 rollouts. Figures: reaching_paths.png (hand paths and target),
reaching_convergence.png (loss vs rollouts for both optimisers).
quick: the same task with the mass on the three triceps heads only (one wrap type; this halves
the compilation, for CI), at most 15 iterations each.
"""

from __future__ import annotations

import json
import pathlib
import time

import numpy as np

Q0 = (0.1, 0.15, 0.0, 1.4)
Q_TARGET = (0.5, 0.25, 0.1, 1.6)
T_END_S = 0.5
DT_S = 0.01
TORQUE_SCALE_NM = 0.05
POS_SCALE_M = 0.01
REG_SCALE_NM = 100.0
FD_STEP = 1e-4
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
            grad, value = jax.jacfwd(lambda x: (loss(x), loss(x)), has_aux=True)(p)
            return value, grad

        self._trajectory = jax.jit(trajectory)
        self._loss = jax.jit(loss)
        self._loss_and_grad = jax.jit(loss_and_grad)
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
    import jax

    jax.config.update("jax_enable_x64", True)  # entry point (STYLE 14)
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    task = Task(reaching_model(quick))
    compile_s = task.compile()
    p0 = np.zeros(4)
    g_ad = task.loss_and_grad(p0)[1]
    g_fd = central_difference_gradient(task, p0)
    grad_err = float(np.linalg.norm(g_ad - g_fd) / np.linalg.norm(g_fd))
    maxiter = QUICK_MAXITER if quick else 200
    with_grad = optimise(task, True, maxiter)
    without = optimise(task, False, maxiter)
    q_opt, _, tau_opt = task.trajectory(with_grad["p"])
    q_init, _, _ = task.trajectory(p0)
    q_free, _, _ = task.trajectory(without["p"])
    hand = {"initial": task.hand_path(q_init), "gradient": task.hand_path(q_opt),
            "gradient_free": task.hand_path(q_free)}
    target = np.asarray(task.target)
    dist = {k: float(np.linalg.norm(v[-1] - target)) for k, v in hand.items()}
    speedup = without["wall_s"] / with_grad["wall_s"]
    summary = {
        "gradient_time_s": with_grad["wall_s"],
        "gradient_free_time_s": without["wall_s"],
        "speedup": speedup,
        "gradient_cpu_s": with_grad["cpu_s"], "gradient_free_cpu_s": without["cpu_s"],
        "speedup_cpu": without["cpu_s"] / with_grad["cpu_s"],
        "final_distance_m": dist["gradient"],
        "final_distance_gradient_free_m": dist["gradient_free"],
        "initial_distance_m": dist["initial"],
        "grad_fd_rel_error": grad_err,
        "grad_ad": g_ad.tolist(), "grad_central_difference": g_fd.tolist(),
        "acceptance": {"speedup_ge_10": bool(speedup >= 10.0),
                       "grad_fd_rel_error_le_1e-5": bool(grad_err <= 1e-5)},
        "optimal_torque_Nm": tau_opt.tolist(),
        "hold_torque_Nm": np.asarray(task.tau_hold).tolist(),
        "target_m": target.tolist(),
        "runs": {"gradient": {k: v for k, v in with_grad.items() if k != "history"},
                 "gradient_free": {k: v for k, v in without.items() if k != "history"}},
        "compile_wall_s": compile_s,
        "path_checks_optimal_motion": path_checks(task, q_opt),
        "setup": {"q0_rad": Q0, "q_target_rad": Q_TARGET, "t_end_s": T_END_S, "dt_s": DT_S,
                  "integrator": "semi_implicit_euler", "torque_scale_Nm": TORQUE_SCALE_NM,
                  "loss": f"|x - x*|^2 / ({POS_SCALE_M} m)^2 + |tau|^2 / "
                          f"({REG_SCALE_NM} N m)^2",
                  "gradient": "forward-mode AD (jax.jacfwd) through the rollout",
                  "optimiser": "scipy BFGS, default tolerances, maxiter "
                               f"{maxiter}; gradient-free: jac=None (forward differences)",
                  "muscles_with_mass": list(QUICK_MUSCLES) if quick else "all six",
                  "n_points_per_muscle": _points_per_muscle(task.model)},
    }
    _plot(out_dir, hand, target, with_grad["history"], without["history"])
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def _points_per_muscle(model) -> int:
    mm = model.muscle_mass
    return 0 if mm is None else mm.n_points // len(mm.inertial_paths())


def _plot(out_dir: pathlib.Path, hand: dict, target: np.ndarray, hist_g, hist_f) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4.5))
    styles = {"initial": ("k", ":"), "gradient": ("C0", "-"), "gradient_free": ("C1", "--")}
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
    for hist, label in ((hist_g, "BFGS, AD gradient"), (hist_f, "BFGS, finite differences")):
        if hist:
            r, v = np.asarray(hist, dtype=float).T
            ax.semilogy(r, np.minimum.accumulate(v), label=label)
    ax.set(xlabel="rollouts (forward-mode gradient counted as one)", ylabel="best loss",
           title="reaching: optimiser progress")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out_dir / "reaching_convergence.png", dpi=120)
    plt.close(fig)
