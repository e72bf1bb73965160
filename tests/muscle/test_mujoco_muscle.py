"""MuJoCo's muscle curves and activation law (`muscle.mujoco_muscle`, `ActivationLaw.MUJOCO`)
against MuJoCo's own functions, called through its Python bindings: mju_muscleGain,
mju_muscleBias and mju_muscleDynamics (engine_util_misc.c of the installed MuJoCo).

Random parameters over and beyond MyoSuite's (range, force or scale/acc0, lmin, lmax, vmax,
fpmax, fvmax; lengths 0.1 m past each end of the length range, velocities to 3 vmax L0 either
way; tausmooth 0 or up to 0.5, control and activation in [-0.2, 1.2]) at 4000 draws each, so
every piece of every curve is hit. MuJoCo's normalization (L = r0 + (l - l_lo)/L0, V = v/(L0
vmax), module docstring) is done here in NumPy, then our curves give -F0 f_L f_V and -F0 f_PE.
Tolerance 1e-12 relative to 1 + |MuJoCo's value|: the same double-precision formulas in
another association order (observed <= 8e-16; the activation's derivative is bitwise equal).
The Muscle check includes slack musculotendons (shorter than the tendon slack length, L < 0),
where MuJoCo's force is 0 and ours must be too, with finite derivatives, and negative
slack-length offsets l_lo - r0 L0 < 0 (which MuJoCo accepts). The passive curve's
integral (the fiber's elastic energy) against adaptive quadrature of the curve
(scipy.integrate.quad, 1e-12 requested): 1e-10.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest
from scipy.integrate import quad

from myotwin.muscle import activation_derivative, activation_dynamics, build_muscles
from myotwin.muscle import mujoco_muscle as mm

N_DRAWS = 4000
TOL = 1e-12
MINVAL = 1e-15


def _draws(rng):
    """(prm (n, 9), lengthrange (n, 2), acc0 (n,), length (n,), velocity (n,))."""
    n = N_DRAWS
    r0, r1 = rng.uniform(0.3, 0.95, n), rng.uniform(1.0, 1.7, n)
    force = np.where(rng.random(n) < 0.5, -1.0, rng.uniform(10, 1000, n))
    prm = np.stack([r0, r1, force, rng.uniform(1, 300, n), rng.uniform(0.0, 0.8, n),
                    rng.uniform(1.1, 3.0, n), rng.uniform(1, 20, n), rng.uniform(0.0, 2.0, n),
                    rng.uniform(1.0, 1.8, n)], axis=1)
    lr = np.sort(rng.uniform(0.05, 0.5, (n, 2)), axis=1)
    length = rng.uniform(lr[:, 0] - 0.1, lr[:, 1] + 0.1)
    l0 = (lr[:, 1] - lr[:, 0]) / (r1 - r0)
    velocity = rng.uniform(-3, 3, n) * l0 * prm[:, 6]
    return prm, lr, rng.uniform(0.01, 5, n), length, velocity


def _normalized(prm, lr, acc0, length, velocity):
    f0 = np.where(prm[:, 2] >= 0, prm[:, 2], prm[:, 3] / np.maximum(MINVAL, acc0))
    l0 = (lr[:, 1] - lr[:, 0]) / np.maximum(MINVAL, prm[:, 1] - prm[:, 0])
    big_l = prm[:, 0] + (length - lr[:, 0]) / np.maximum(MINVAL, l0)
    return f0, big_l, velocity / np.maximum(MINVAL, l0 * prm[:, 6])


def test_gain_and_bias_match_mujoco():
    prm, lr, acc0, length, velocity = _draws(np.random.default_rng(0))
    f0, big_l, big_v = _normalized(prm, lr, acc0, length, velocity)
    gain = -f0 * np.asarray(mm.active_force_length(big_l, prm[:, 4], prm[:, 5])
                            * mm.force_velocity(big_v, prm[:, 8]))
    bias = -f0 * np.asarray(mm.passive_force_length(big_l, prm[:, 5], prm[:, 7]))
    ref_gain = np.array([mujoco.mju_muscleGain(length[i], velocity[i], lr[i], acc0[i], prm[i])
                         for i in range(N_DRAWS)])
    ref_bias = np.array([mujoco.mju_muscleBias(length[i], lr[i], acc0[i], prm[i])
                         for i in range(N_DRAWS)])
    err_gain = np.max(np.abs(gain - ref_gain) / (1 + np.abs(ref_gain)))
    err_bias = np.max(np.abs(bias - ref_bias) / (1 + np.abs(ref_bias)))
    print(f"gain {err_gain:.1e}, bias {err_bias:.1e} (relative to 1 + |MuJoCo|)")
    assert err_gain <= TOL and err_bias <= TOL
    # every piece was visited: outside, rising, both sides of the plateau, falling; each
    # velocity branch; both passive branches
    lmin, lmax = prm[:, 4], prm[:, 5]
    a, b = 0.5 * (lmin + 1), 0.5 * (1 + lmax)
    pieces = [big_l < lmin, (big_l >= lmin) & (big_l <= a), (big_l > a) & (big_l <= 1),
              (big_l > 1) & (big_l <= b), (big_l > b) & (big_l <= lmax), big_l > lmax]
    y = prm[:, 8] - 1
    pieces += [big_v <= -1, (big_v > -1) & (big_v <= 0), (big_v > 0) & (big_v <= y), big_v > y]
    assert all(p.sum() > 20 for p in pieces), [int(p.sum()) for p in pieces]


def test_activation_matches_mujoco():
    rng = np.random.default_rng(1)
    ctrl, act = rng.uniform(-0.2, 1.2, N_DRAWS), rng.uniform(-0.2, 1.2, N_DRAWS)
    dynprm = np.stack([rng.uniform(0.005, 0.05, N_DRAWS), rng.uniform(0.02, 0.1, N_DRAWS),
                       np.where(rng.random(N_DRAWS) < 0.5, 0.0,
                                rng.uniform(0.01, 0.5, N_DRAWS))], axis=1)
    law = activation_dynamics("mujoco", dynprm[:, 0], dynprm[:, 1], smoothing=dynprm[:, 2])
    ours = np.asarray(activation_derivative(law, act, ctrl))
    ref = np.array([mujoco.mju_muscleDynamics(ctrl[i], act[i], dynprm[i])
                    for i in range(N_DRAWS)])
    err = np.max(np.abs(ours - ref) / (1 + np.abs(ref)))
    print(f"da/dt {err:.1e} (relative to 1 + |MuJoCo|)")
    assert err <= TOL
    # the control range clamps before MuJoCo's [0, 1] (mj_fwdActuation, then the dynamics)
    ranged = activation_dynamics("mujoco", min_excitation=0.2, max_excitation=0.6)
    ours = np.asarray(activation_derivative(ranged, act, ctrl))
    ref = np.array([mujoco.mju_muscleDynamics(np.clip(ctrl[i], 0.2, 0.6), act[i],
                                              np.array([0.01, 0.04, 0.0]))
                    for i in range(N_DRAWS)])
    assert np.max(np.abs(ours - ref) / (1 + np.abs(ref))) <= TOL


@pytest.mark.parametrize("lmax, fpmax", [(1.6, 1.3), (2.9, 0.4)])
def test_passive_integral_matches_quadrature(lmax, fpmax):
    for end in (0.8, 1.0, 1.2, 0.5 * (1 + lmax), 1.9, 3.5):
        ref, _ = quad(lambda s: float(mm.passive_force_length(s, lmax, fpmax)), 0.5, end,
                      points=[1.0, 0.5 * (1 + lmax)], epsabs=1e-13, epsrel=1e-12)
        ours = float(mm.passive_force_length_integral(end, lmax, fpmax))
        assert abs(ours - ref) <= 1e-10, (end, ours, ref)


def test_the_muscle_with_mujoco_curves_is_mujocos_force():
    """A `Muscle` built with the MuJoCo curves: tendon force = -(gain act + bias) for a
    muscle of optimal length L0 and tendon slack l_lo - r0 L0 (`musculoskeletal.mjcf`)."""
    from myotwin.muscle import dynamics

    rng = np.random.default_rng(2)
    prm, lr, acc0, length, velocity = (x[:50] for x in _draws(rng))
    f0, _, _ = _normalized(prm, lr, acc0, length, velocity)
    l0 = (lr[:, 1] - lr[:, 0]) / (prm[:, 1] - prm[:, 0])
    slack = lr[:, 0] - prm[:, 0] * l0
    keep = np.isfinite(slack)       # all: a negative offset is MuJoCo's too (myofinger's adabR)
    names = [f"m{i}" for i in range(int(keep.sum()))]
    muscles = build_muscles(
        names, curves="mujoco", tendon="rigid", max_isometric_force_N=f0[keep],
        optimal_fiber_length_m=l0[keep], tendon_slack_length_m=slack[keep],
        max_contraction_velocity_Lopt_per_s=prm[keep, 6],
        mujoco_curve_parameters={"lmin": prm[keep, 4], "lmax": prm[keep, 5],
                                 "fpmax": prm[keep, 7], "fvmax": prm[keep, 8]})
    act = rng.uniform(0, 1, len(names))
    out = dynamics(muscles, act, act, jnp.asarray(length[keep]), jnp.asarray(velocity[keep]),
                   jnp.zeros(len(names))).outputs
    idx = np.flatnonzero(keep)
    ref = np.array([-(mujoco.mju_muscleGain(length[i], velocity[i], lr[i], acc0[i], prm[i]) * a
                      + mujoco.mju_muscleBias(length[i], lr[i], acc0[i], prm[i]))
                    for i, a in zip(idx, act)])
    err = np.max(np.abs(np.asarray(out.tendon_force_N) - ref) / (1 + np.abs(ref)))
    slack_now = length[keep] < slack[keep]
    n_negative = int((slack < 0).sum())
    print(f"tendon force {err:.1e} over {len(names)} muscles ({int(slack_now.sum())} slack, "
          f"{n_negative} with a negative offset)")
    assert len(names) >= 20 and slack_now.sum() >= 3 and n_negative >= 3 and err <= TOL
    # a slack musculotendon (shorter than its tendon: no fiber left) has finite derivatives
    grad = jax.grad(lambda lengths: jnp.sum(dynamics(
        muscles, act, act, lengths, jnp.asarray(velocity[keep]),
        jnp.zeros(len(names))).outputs.tendon_force_N))(jnp.asarray(length[keep]))
    assert np.isfinite(np.asarray(grad)).all()


@pytest.mark.parametrize("kwargs, message", [
    ({"tendon": "explicit_force"}, "MuJoCo's muscle has none"),
    ({"pennation_at_optimal_rad": 0.1}, "no pennation"),
    ({"fiber_damping": 0.1}, "no fiber damping"),
    ({"mujoco_curve_parameters": {"lmin": 1.2}}, "lmin must be in [0, 1)"),
    ({"mujoco_curve_parameters": {"lmax": 0.9}}, "lmax must be > 1"),
    ({"mujoco_curve_parameters": {"fvmax": 0.5}}, "fvmax must be >= 1"),
    ({"mujoco_curve_parameters": {"vmax": 2}}, "unknown ['vmax']"),
    ({"min_excitation": 0.7, "max_excitation": 0.2}, "must be ordered"),
    ({"tendon_strain_at_one_norm_force": 0.04}, "does not apply to the MuJoCo curves"),
    ({"passive_strain_at_one_norm_force": 0.5}, "does not apply to the MuJoCo curves"),
    ({"active_force_width_scale": 1.5}, "De Groote 2016 curves only"),
    ({"force_velocity_shape": 0.3}, "Thelen 2003 curves only"),
    ({"millard_curve_parameters": {"force_velocity": {}}}, "Millard 2012 curves only"),
    ({"curves": "degroote2016", "tendon": "rigid", "mujoco_curve_parameters": {"lmin": 0.4}},
     "apply to the MuJoCo curves only"),
    ({"curves": "degroote2016", "tendon": "rigid", "min_excitation": 0.1},
     "apply to the MuJoCo law only"),
    ({"mujoco_curve_parameters": {"lmin": True}}, "muscle 'm': lmin must be a number, got True"),
    ({"max_excitation": "1"}, "muscle 'm': max_excitation must be a number, got '1'"),
])
def test_bad_mujoco_muscles_are_refused(kwargs, message):
    args = dict(curves="mujoco", tendon="rigid", max_isometric_force_N=100.0,
                optimal_fiber_length_m=0.1, tendon_slack_length_m=0.2)
    with pytest.raises(ValueError) as err:
        build_muscles(["m"], **{**args, **kwargs})
    assert message in str(err.value)
