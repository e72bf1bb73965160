"""`fiber-mms`: method of manufactured solutions for one fiber (Gfrerer & Simeon 2021, Sec. 5.1).

Prescribed motion (Eq. 75), reference X(theta) = [theta, 0, 0] (|A_1| = 1, L = 1 m):

    x(theta, t) = [theta, 0, 0] + [0, cos theta, sin 8 theta] (1 - cos t),   theta in [0, 1],

muscle fraction gamma_M = 16 (1 - theta)^2 theta^2 (Eq. 74), Table-1 proxy material
(`material.table1_material`), r_0 = 0.05 m, rho = 900 kg/m^3. Both ends follow x(0, t) and
x(1, t) (prescribed positions, free tangents); the start is at rest, as Eq. (75) is at t = 0.
The line force that makes Eq. (75) an exact solution is the strong form of Eq. (38) (Eq. 76 with
the inertia term, which our copy omits):

    b(theta, t) = A_0 rho x_tt - d/dtheta (A_0 S^11 |A_1| a_1) / |A_1|,

with S^11 of `material.stress_s11` evaluated on the exact a_1 = x_theta and da_1/dt = x_theta,t.
The seed derived it with Matlab's symbolic toolbox. We differentiate the closed-form x(theta, t)
and the closed-form S^11 with JAX automatic differentiation instead (exact derivatives of the
same expressions, evaluated in float64; no sympy dependency). Its independence from the
discretisation is checked in tests/fiber/test_mms.py against central differences of the flux.

Activation alpha(t) = 0.1 (1 - cos pi t) / 2 (choice; the seed's Table 1 is missing): with the
Table-1 proxies (S_max = 3 mu^M) a larger activation makes the total fiber stress decrease with
stretch on the descending limb of the bell (material softening, an ill-posed problem on which
Newton at large steps fails); alpha <= ~0.12 keeps it monotone, and the seed's own upper-limb
activations stay below 0.14.

Error (Sec. 5.1): ||u_2^h(0.5, t) - cos(0.5) (1 - cos t)||_L2(0, T), T = 1 s, by the rectangle
rule on the backward-Euler time grid. time_order: least-squares slope of log error vs log dt
on the finest mesh for dt <= T/160 (`ORDER_FIT_MAX_DT_S`); space_errors: error vs the exact
solution at one small dt per number of elements (the time error is a floor there);
space_differences_to_finest: the same norm of the difference to the finest mesh at that dt,
which removes the (mesh-independent) time error.
"""

from __future__ import annotations

import math
import pathlib

import jax
import jax.numpy as jnp
import numpy as np

from myotwin import fiber
from myotwin.fiber.material import stress_s11
from myotwin.repro.output import prepare_output, pyplot, write_summary

T_END_S = 1.0
R0_M = 0.05
RHO_KG_M3 = 900.0
ACTIVATION_MAX = 0.1
#: The order is fitted for dt <= T/160: above, the fiber's stiff axial and transverse modes
#: (omega dt >~ 1) make backward Euler pre-asymptotic (local orders 0.8-0.9 there; measured
#: ratios e(2 dt)/e(dt) 1.81, 1.86, 1.90, 1.95 for dt = T/80 ... T/640 on 8 elements against a
#: T/10240 reference -- they tend to 2).
ORDER_FIT_MAX_DT_S = T_END_S / 160

#: (meshes, step counts) of the study; the time order is fitted on the finest mesh.
QUICK = dict(space_elements=(4, 8, 16, 32), space_steps=320,
             time_elements=64, time_steps=(160, 320, 640))
FULL = dict(space_elements=(4, 8, 16, 32), space_steps=1280,
            time_elements=64, time_steps=(20, 40, 80, 160, 320, 640, 1280, 2560))


def gamma_m(theta):
    """Muscle fraction of Eq. (74)."""
    return 16.0 * (1.0 - theta) ** 2 * theta**2


def activation(t):
    """alpha(t) = ACTIVATION_MAX (1 - cos pi t) / 2."""
    return ACTIVATION_MAX * 0.5 * (1.0 - jnp.cos(jnp.pi * t))


def exact_position(theta, t):
    """x(theta, t) of Eq. (75) for scalar theta, t: (3,) in m."""
    return (jnp.array([theta, 0.0, 0.0])
            + jnp.array([0.0, jnp.cos(theta), jnp.sin(8.0 * theta)]) * (1.0 - jnp.cos(t)))


def _flux(material, theta, t):
    """A_0 S^11 |A_1| a_1 of the exact motion (N), the quantity differentiated in Eq. (76)."""
    a1 = jax.jacfwd(exact_position, 0)(theta, t)
    a1_dot = jax.jacfwd(jax.jacfwd(exact_position, 0), 1)(theta, t)
    s11 = stress_s11(material, gamma_m(theta), activation(t), a1, a1_dot, 1.0)
    return math.pi * R0_M**2 * s11 * a1


@jax.jit
def manufactured_line_force(material, theta, t):
    """b(theta, t) (n, 3) in N/m at parameters theta (n,): the strong form of Eq. (38)."""
    def one(th):
        acc = jax.jacfwd(jax.jacfwd(exact_position, 1), 1)(th, t)
        return (RHO_KG_M3 * math.pi * R0_M**2 * acc
                - jax.jacfwd(lambda s: _flux(material, s, t))(th))

    return jax.vmap(one)(theta)


def build_model(n_elements: int) -> fiber.FiberModel:
    return fiber.compile_fiber(
        fiber.straight_reference([0.0, 0.0, 0.0], [1.0, 0.0, 0.0]), n_elements, r0_m=R0_M,
        gamma_m=gamma_m, material=fiber.table1_material(), rho_kg_m3=RHO_KG_M3,
        ends=(fiber.EndCondition.PINNED, fiber.EndCondition.PINNED), name=f"mms-{n_elements}")


def _ends(t):
    c = 1.0 - math.cos(t)
    return np.array([0.0, c, 0.0, 1.0, math.cos(1.0) * c, math.sin(8.0) * c])


def solve(n_elements: int, n_steps: int):
    """Backward-Euler run to T_END_S. Returns (t (n+1,), u_2^h(0.5, t) (n+1,), iterations (n,))."""
    model = build_model(n_elements)
    theta = np.asarray(model.qp_theta).reshape(-1)

    def loads(t):
        b = manufactured_line_force(model.material, theta, t)
        return fiber.FiberLoads(float(activation(t)), b.reshape(model.n_el, model.n_qp, 3),
                                _ends(t))

    state = fiber.FiberState(model.ref_q, jnp.zeros(model.n_dof))
    traj = fiber.simulate(model, state, 0.0, T_END_S / n_steps, n_steps, loads)
    x_mid, _ = fiber.evaluate(traj.q, model.node_theta, [0.5])
    return traj.t, x_mid[:, 0, 1], traj.newton_iterations


def l2_error(t, u2) -> float:
    """||u_2^h(0.5, .) - u_2(0.5, .)||_L2(0, T) by the rectangle rule at t_1..t_N."""
    dt = t[1] - t[0]
    exact = math.cos(0.5) * (1.0 - np.cos(t))
    return float(np.sqrt(dt * np.sum((u2[1:] - exact[1:]) ** 2)))


def run(out_dir: pathlib.Path, quick: bool = False) -> dict:
    """Convergence study of Sec. 5.1 / Fig. 3; writes fig3_mms.png and summary.json."""
    out_dir = prepare_output(out_dir)
    plt = pyplot()

    cfg = QUICK if quick else FULL
    iters, failures = [], {}
    time_errors = {}
    for n_steps in cfg["time_steps"]:
        try:
            t, u2, it = solve(cfg["time_elements"], n_steps)
        except fiber.FiberNewtonError as exc:  # recorded, left out of the fit
            failures[f"{cfg['time_elements']} el, dt = T/{n_steps}"] = str(exc)
            continue
        time_errors[n_steps] = l2_error(t, u2)
        iters.append(it)
        if n_steps == cfg["space_steps"]:
            finest = (t, u2)
    steps = sorted(time_errors)
    dts = np.array([T_END_S / n for n in steps])
    errs = np.array([time_errors[n] for n in steps])
    fit = dts <= ORDER_FIT_MAX_DT_S * (1 + 1e-12)
    order = float(np.polyfit(np.log(dts[fit]), np.log(errs[fit]), 1)[0])
    space_errors, space_diffs = {}, {}
    for n_el in cfg["space_elements"]:
        try:
            t, u2, it = solve(n_el, cfg["space_steps"])
        except fiber.FiberNewtonError as exc:
            failures[f"{n_el} el, dt = T/{cfg['space_steps']}"] = str(exc)
            continue
        space_errors[n_el] = l2_error(t, u2)
        # the same dt on the finest mesh removes the (mesh-independent) time error
        space_diffs[n_el] = float(np.sqrt((t[1] - t[0]) * np.sum((u2 - finest[1]) ** 2)))
        iters.append(it)
    space_errors[cfg["time_elements"]] = time_errors[cfg["space_steps"]]

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    ax = axes[0]
    ax.loglog(dts, errs, "o-", label=f"$N_e$ = {cfg['time_elements']}")
    ax.loglog(dts, errs[-1] * dts / dts[-1], "k--", label="slope 1")
    ax.set(xlabel=r"$\Delta t$ (s)", ylabel=r"$\|u_2^h(0.5,t)-u_2(0.5,t)\|_{L_2(0,T)}$ (m)",
           title=f"time convergence (order {order:.3f} for $\\Delta t \\leq$ T/160)")
    ax.legend()
    ax = axes[1]
    n_el = np.array(sorted(space_errors))
    ax.loglog(n_el, [space_errors[n] for n in n_el], "s-", label="vs exact")
    n_d = np.array(sorted(space_diffs))
    ax.loglog(n_d, [space_diffs[n] for n in n_d], "^--",
              label=f"vs $N_e$ = {cfg['time_elements']}, same $\\Delta t$")
    ax.set(xlabel="$N_e$", ylabel="error (m)",
           title=rf"space, $\Delta t$ = T/{cfg['space_steps']}")
    ax.set_xticks(n_el, [str(n) for n in n_el])
    ax.minorticks_off()
    ax.legend()
    ax = axes[2]
    t, u2 = finest
    ax.plot(t, math.cos(0.5) * (1 - np.cos(t)), "k-", label="exact (Eq. 75)")
    ax.plot(t[::8], u2[::8], "r.", label=f"$N_e$ = {cfg['time_elements']}")
    ax.set(xlabel="t (s)", ylabel=r"$u_2(0.5, t)$ (m)", title="mid-point displacement")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_dir / "fig3_mms.png", dpi=120)
    plt.close(fig)

    all_iters = np.concatenate(iters)
    summary = {
        "time_order": order,
        "space_errors": {str(k): v for k, v in sorted(space_errors.items())},
        "time_order_fit_max_dt_s": ORDER_FIT_MAX_DT_S,
        "time_errors": {"n_elements": cfg["time_elements"],
                        "dt_s": {f"{T_END_S / n:.6g}": time_errors[n] for n in steps}},
        "failures": failures,
        "space_differences_to_finest": {str(k): v for k, v in sorted(space_diffs.items())},
        "space_dt_s": T_END_S / cfg["space_steps"],
        "newton_iterations_mean": float(all_iters.mean()),
        "newton_iterations_max": int(all_iters.max()),
        "quick": bool(quick),
        "setup": {"T_s": T_END_S, "r0_m": R0_M, "rho_kg_m3": RHO_KG_M3,
                  "activation_max": ACTIVATION_MAX, "material": "table1_material()",
                  "n_qp": 4},
    }
    write_summary(out_dir, summary)
    return summary
