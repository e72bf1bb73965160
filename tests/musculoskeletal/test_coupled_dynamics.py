"""A 3-hinge chain driven by four Hill-type muscles on its paths (`myotwin.musculoskeletal`).

Oracles outside the code under test:
  * the power balance dE/dt = P_active + P_damping of the whole system (skeleton energies
    with the muscle mass points, the muscles' elastic energies), a law that holds only if the
    coupling sign, moment arms, path speeds, mass matrix and muscle state equations agree;
  * MuJoCo: the skeleton's acceleration equals mj_forward's qacc with the muscles' tendon
    forces applied as tendon motors (the massless model);
  * a reference ODE solver (scipy DOP853 at rtol 1e-12) for the RK4 trajectory, and its
    convergence order;
  * central differences for the gradient of a rollout.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest
from scipy.integrate import solve_ivp

from myotwin import engine, inertia
from myotwin import muscle as mu
from myotwin import musculoskeletal as ms
from myotwin.models import chain
from myotwin.paths.on_model import muscle_lengths

from gradient_check import value_and_gradient

NAMES = chain.MUSCLES
EXCITATION = jnp.array([0.3, 0.2, 0.4, 0.25])
Q0 = jnp.array([0.4, -0.3, 0.2])
QD0 = jnp.array([0.3, -0.5, 0.8])

TENDONS = {"explicit_force": "degroote2016", "damped_fiber_length": "millard2012",
           "rigid": "degroote2016", "fiber_length": "degroote2016"}


def _xml(damping=0.01):
    """The chain of benchmarks/inertial.py (`myotwin.models.chain`: three hinges, one straight
    and three via-point paths) with a tendon motor per path (idle unless the MuJoCo comparison
    drives them); damping on the first hinge."""
    return chain.mjcf(actuated=True, damping=damping)


def _muscles(skeleton, tendon):
    length = np.asarray(muscle_lengths(skeleton, Q0))
    return mu.build_muscles(NAMES, curves=TENDONS[tendon], tendon=tendon,
                            max_isometric_force_N=2000.0,
                            optimal_fiber_length_m=list(0.55 * length),
                            tendon_slack_length_m=list(0.5 * length),
                            pennation_at_optimal_rad=0.1)


def _skeleton(damping=0.01, with_mass=False, inertial=NAMES):
    """The chain; with_mass: 0.2 kg in 20 points on each path of `inertial`."""
    model = engine.compile_model(mujoco.MjModel.from_xml_string(_xml(damping)))
    if with_mass:
        for name in inertial:
            model = inertia.with_muscle_mass(model, name, 0.2, 20)
    return model


@pytest.mark.parametrize("tendon", sorted(TENDONS))
@pytest.mark.parametrize("with_mass", [False, True], ids=["massless", "inertial"])
def test_power_balance_of_the_coupled_system(tendon, with_mass):
    """dE/dt along the state derivative equals the power of the active elements and fiber
    dampers (energy.py): with the joint damping removed and the motors idle, nothing else
    does work. Observed |dE/dt - P| ~ 1e-13 W of P ~ 46 W (roundoff); tolerance 1e-10
    relative, far below any modelling error (a wrong sign or moment arm changes dE/dt at
    order one)."""
    msm = ms.musculoskeletal_model(_skeleton(0.0, with_mass), _muscles(_skeleton(0.0), tendon))
    x0 = ms.equilibrium_state(msm, Q0, QD0, 0.2)

    @jax.jit
    def balance(x):
        rate = ms.state_derivative(msm, x, EXCITATION)  # hinges: the q rate is qd itself
        de_dt = jax.jvp(lambda y: ms.mechanical_energy(msm, y), (x,), (rate,))[1]
        return de_dt, ms.muscle_input_power(msm, x)

    de_dt, power = balance(x0)
    assert abs(float(power)) > 1.0
    assert abs(float(de_dt - power)) <= 1e-10 * abs(float(power))


def test_muscle_forces_act_like_mujoco_tendon_motors():
    """The skeleton's acceleration under the muscles equals MuJoCo's qacc with each muscle's
    tendon force F applied by a motor on its path (gear -1, ctrl = F: generalized force
    -ten_J^T (-F) ... = r F), joint damping included, at two activation states. Tolerance
    1e-9 rad/s^2 of accelerations ~10-100: the engine's agreement with mj_forward
    (tests/engine). `ms.rates` and `ms.muscle_drive` are the compiled exports
    (musculoskeletal/api.py): one compiled program each serves both states."""
    skeleton = _skeleton()
    msm = ms.musculoskeletal_model(skeleton, _muscles(skeleton, "explicit_force"))
    x0 = ms.equilibrium_state(msm, Q0, QD0, 0.2)
    mj = mujoco.MjModel.from_xml_string(_xml())
    data = mujoco.MjData(mj)
    ms.rates.clear_cache()
    ms.muscle_drive.clear_cache()
    for activation in ([0.5, 0.1, 0.3, 0.2], [0.05, 0.9, 0.6, 0.4]):
        x = x0._replace(activation=jnp.array(activation))
        qdd, _, _ = ms.rates(msm, x, EXCITATION)
        force = ms.muscle_drive(msm, x, EXCITATION)[0].outputs.tendon_force_N
        data.qpos[:], data.qvel[:] = np.asarray(Q0), np.asarray(QD0)
        data.ctrl[:] = np.asarray(force)
        mujoco.mj_forward(mj, data)
        assert np.max(np.abs(np.asarray(force))) > 50.0
        np.testing.assert_allclose(np.asarray(qdd), data.qacc, rtol=0, atol=1e-9,
                                   err_msg=f"activations {activation}")
    assert ms.rates._cache_size() == 1
    assert ms.muscle_drive._cache_size() == 1


def _reference(msm, x0, duration):
    """scipy DOP853 on the flattened state (hinges: q' = qd)."""
    n_v, n_m = msm.skeleton.n_v, msm.n_muscles

    @jax.jit
    def f(y):
        x = ms.MusculoskeletalState(y[:n_v], y[n_v:2 * n_v], y[2 * n_v:2 * n_v + n_m],
                                    y[2 * n_v + n_m:])
        return jnp.concatenate(ms.state_derivative(msm, x, EXCITATION))

    y0 = np.concatenate([np.asarray(v) for v in x0])
    sol = solve_ivp(lambda t, y: np.asarray(f(jnp.asarray(y))), (0.0, duration), y0,
                    method="DOP853", rtol=1e-12, atol=1e-12)
    return sol.y[:, -1]


def test_rk4_converges_to_a_reference_solver_at_fourth_order():
    """The coupled RK4 (engine.integrators.rk4_step_with) against scipy's DOP853 on the same
    right-hand side, 0.05 s, rigid-tendon muscles, mass points on the straight path: the
    error falls ~16x per halving of dt (required order 3.5-4.5) and is below 1e-7 at
    dt = 0.25 ms. The right-hand side must be smooth along the motion for this, so neither
    Millard's damped fiber-length model (its curves' segment joins) nor mass points on
    via-point paths (a point's Jacobian jumps where it passes a via point, seed §3.2) are
    used here; the power-balance test covers those."""
    skeleton = _skeleton(with_mass=True, inertial=("straight",))
    msm = ms.musculoskeletal_model(skeleton, _muscles(_skeleton(), "rigid"))
    x0 = ms.equilibrium_state(msm, Q0, QD0, 0.2)
    ref = _reference(msm, x0, 0.05)
    errors = []
    for n in (100, 200):
        states = ms.rollout(msm, x0, EXCITATION, 0.05 / n, n)
        end = np.concatenate([np.asarray(v[-1]) for v in states])
        errors.append(np.max(np.abs(end - ref)))
    order = np.log2(errors[0] / errors[1])
    assert 3.5 <= order <= 4.5, (errors, order)
    assert errors[1] < 1e-7


def test_gradient_of_a_rollout_matches_central_differences():
    """Reverse mode through the coupled rollout (30 RK4 steps of 1 ms, rigid-tendon muscles,
    mass points on every path) w.r.t. the excitations, against central differences
    (h = 1e-5, truncation ~h^2 times third derivatives: ~1e-9 relative here). Tolerance 1e-6
    relative."""
    skeleton = _skeleton(with_mass=True, inertial=("straight",))
    msm = ms.musculoskeletal_model(skeleton, _muscles(_skeleton(), "rigid"))
    x0 = ms.equilibrium_state(msm, Q0, QD0, 0.2)

    def rollout_loss(u):
        states = ms.rollout(msm, x0, u, 1e-3, 30, "semi_implicit_euler")
        return jnp.sum(states.q[-1] ** 2) + jnp.sum(states.qd[-1])

    loss, gradient = value_and_gradient(rollout_loss)
    grad = np.asarray(gradient(EXCITATION))
    h = 1e-5
    fd = np.array([(float(loss(EXCITATION.at[i].add(h))) - float(loss(EXCITATION.at[i].add(-h))))
                   / (2 * h) for i in range(4)])
    assert np.max(np.abs(fd)) > 1e-3
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-9 * np.max(np.abs(fd)))


def test_simulate_returns_every_step_and_the_activation_follows_its_excitation():
    """`simulate` with constant excitation returns n + 1 states and times; the activation of a
    De Groote muscle approaches its excitation (first-order law, tau_act 15 ms: after 0.2 s
    within 1 % of the step u - a0)."""
    skeleton = _skeleton()
    msm = ms.musculoskeletal_model(skeleton, _muscles(skeleton, "rigid"))
    x0 = ms.equilibrium_state(msm, Q0, jnp.zeros(3), 0.05)
    u = jnp.array([0.3, 0.2, 0.4, 0.25])
    states, t = ms.simulate(msm, x0, u, 0.2, 1e-3)
    assert states.q.shape == (201, 3) and t.shape == (201,) and float(t[-1]) == pytest.approx(0.2)
    np.testing.assert_allclose(np.asarray(states.activation[-1]), np.asarray(u),
                               atol=0.01 * float(jnp.max(u - 0.05)))


def test_bad_input_is_rejected_with_a_message():
    skeleton = _skeleton()
    muscles = _muscles(skeleton, "rigid")
    with pytest.raises(ValueError, match="unknown path 'nope'"):
        ms.musculoskeletal_model(skeleton, muscles, ["straight", "via1", "via2", "nope"])
    with pytest.raises(ValueError, match=r"path 0.7: expected a path name or an integer index"):
        ms.musculoskeletal_model(skeleton, muscles, [0.7, 1, 2, 3])   # int(0.7) = 0 before
    msm0 = ms.musculoskeletal_model(skeleton, muscles)
    with pytest.raises(ValueError, match="n_points must be a positive integer, got 2.7"):
        ms.with_muscle_masses(msm0, 0.1, 2.7)                        # int(2.7) = 2 before
    with pytest.raises(ValueError, match="3 paths for 4 muscles"):
        ms.musculoskeletal_model(skeleton, muscles, ["straight", "via1", "via2"])
    with pytest.raises(ValueError, match="both pull on path 'via1'"):
        ms.musculoskeletal_model(skeleton, muscles, ["straight", "via1", "via1", "via3"])
    with pytest.raises(ValueError, match=r"coupling must be one of \['length_gradient', "
                       r"'opensim'\], got 'mujoco'"):
        ms.musculoskeletal_model(skeleton, muscles, coupling="mujoco")
    with pytest.raises(ValueError, match="coupling 'opensim' needs .* muscle mass present"):
        ms.musculoskeletal_model(_skeleton(with_mass=True), muscles, coupling="opensim")
    msm = ms.musculoskeletal_model(skeleton, muscles)
    x0 = ms.equilibrium_state(msm, Q0, QD0, 0.1)
    with pytest.raises(ValueError, match="'bdf1' is not available"):
        ms.simulate(msm, x0, 0.2, 0.01, 1e-3, "bdf1")
    with pytest.raises(ValueError, match=r"entry \(2,\) is 1.5"):
        ms.simulate(msm, x0, [0.1, 0.2, 1.5, 0.0], 0.01, 1e-3)
    for bad in (1.5, -3.0):   # one number for every muscle (its check never fired)
        with pytest.raises(ValueError, match=rf"excitation must be finite and in \[0, 1\], "
                                             rf"got {bad}"):
            ms.simulate(msm, x0, bad, 0.01, 1e-3)
    # numbers only: True ran as 1.0, "0.5" as 0.5
    for bad in (True, "0.5", [0.1, True, 0.0, 0.0]):
        with pytest.raises(ValueError, match=re.escape(f"simulate: excitation must be numbers, "
                                                       f"got {bad!r}")):
            ms.simulate(msm, x0, bad, 0.01, 1e-3)
    with pytest.raises(ValueError, match=r"simulate: state0 must be a MusculoskeletalState "
                                         r"\(equilibrium_state\), got list"):   # a TypeError
        ms.simulate(msm, [x0.q, x0.qd, x0.activation], 0.1, 0.01, 1e-3)
    with pytest.raises(ValueError, match=r"simulate: state0.activation must be numbers"):
        ms.simulate(msm, x0._replace(activation=[True, 0.1, 0.1, 0.1]), 0.1, 0.01, 1e-3)
    # rollout: a string failed in JAX's argument interpretation, True ran as 1.0, a tuple
    # state with AttributeError
    with pytest.raises(ValueError, match="rollout: dt_s must be numbers, got '0.001'"):
        ms.rollout(msm, x0, 0.1, "0.001", 2)
    for bad in (np.nan, -1e-3, 0.0):     # NaN states, backwards in time, standing still
        with pytest.raises(ValueError, match=re.escape(f"rollout: dt_s must be finite and > 0, "
                                                       f"got {bad!r}")):
            ms.rollout(msm, x0, 0.1, bad, 2)
    # external loads: a BodyLoads (musculoskeletal.body_loads) or None; a start time, numbers
    with pytest.raises(ValueError, match=r"rollout: loads must be a BodyLoads \(body_loads\) "
                                         r"or None, got dict"):
        ms.rollout(msm, x0, 0.1, 1e-3, 2, loads={"force": 1.0})
    with pytest.raises(ValueError, match="rollout: t0_s must be numbers, got '0'"):
        ms.rollout(msm, x0, 0.1, 1e-3, 2, t0_s="0")
    with pytest.raises(ValueError, match="rollout: excitation must be numbers, got True"):
        ms.rollout(msm, x0, True, 1e-3, 2)
    with pytest.raises(ValueError, match=r"rollout: state0 must be a MusculoskeletalState "
                                         r"\(equilibrium_state\), got tuple"):
        ms.rollout(msm, tuple(x0), 0.1, 1e-3, 2)
    for bad in (-1, 2.5):     # JAX's broadcast_in_dim / "Shapes must be 1D sequences" before
        with pytest.raises(ValueError, match=rf"rollout: n_steps must be an integer >= 0, "
                                             rf"got {bad}"):
            ms.rollout(msm, x0, 0.1, 1e-3, bad)
    with pytest.raises(ValueError, match="excitation has shape"):
        ms.simulate(msm, x0, jnp.zeros((3, 4)), 0.01, 1e-3)
    # a non-finite initial state is the caller's, not a divergence: refused by name
    with pytest.raises(ValueError, match=r"simulate: state0.q is not finite: entry \(0,\) is "
                                         r"nan"):
        ms.simulate(msm, x0._replace(q=jnp.array([np.nan, 0.0, 0.0])), 0.1, 0.01, 1e-3)
    with pytest.raises(FloatingPointError, match=r"not finite or exceeds 1e\+10 at step 0"):
        ms.simulate(msm, x0._replace(qd=jnp.array([2e10, 0.0, 0.0])), 0.1, 0.01, 1e-3)
    # the compiled state functions (musculoskeletal/api.py) name a wrong shape at trace time
    u = jnp.full(4, 0.2)
    with pytest.raises(ValueError, match=r"rates: state.activation has shape \(3,\), expected "
                                         r"\(4,\) \(n_muscles = 4\)"):
        ms.rates(msm, x0._replace(activation=jnp.zeros(3)), u)
    with pytest.raises(ValueError, match=r"state_derivative: excitation has shape \(2,\), "
                                         r"expected \(4,\) or a scalar"):
        ms.state_derivative(msm, x0, jnp.zeros(2))
    with pytest.raises(ValueError, match=r"muscle_outputs_at: state.q has shape \(4,\), "
                                         r"expected \(3,\) \(the model's n_q = 3\)"):
        ms.muscle_outputs_at(msm, x0._replace(q=jnp.zeros(4)))
    with pytest.raises(ValueError, match="rates: expected a MusculoskeletalModel"):
        ms.rates(skeleton, x0, u)
    # the rollouts check it before their jit (JAX's "Error interpreting argument" before)
    with pytest.raises(ValueError, match="rollout: expected a MusculoskeletalModel"):
        ms.simulate(skeleton, x0, 0.1, 0.01, 1e-3)
    table = ms.input_table([0.0], [[0.1] * 4], np.zeros((1, skeleton.n_u)))
    with pytest.raises(ValueError, match="adaptive_rollout: expected a MusculoskeletalModel"):
        ms.adaptive_rollout(skeleton, x0, 0.0, [0.01], table, rtol=1e-6, atol=1e-6)
    # and bools or a state that is not one: True was taken as 1.0 (a bool tracer made a float),
    # a tuple failed with AttributeError ('q')
    with pytest.raises(ValueError, match=re.escape("rates: excitation must be numbers, got a "
                                                   "traced bool array of shape ()")):
        ms.rates(msm, x0, True)
    with pytest.raises(ValueError, match=re.escape("state_derivative: state.activation must be "
                                                   "numbers, got a traced bool array of shape "
                                                   "(4,)")):
        ms.state_derivative(msm, x0._replace(activation=jnp.ones(4, dtype=bool)), u)
    with pytest.raises(ValueError, match=r"mechanical_energy: state must be a "
                                         r"MusculoskeletalState \(equilibrium_state\), got tuple"):
        ms.mechanical_energy(msm, tuple(x0))
    with pytest.raises(ValueError, match=r"rollout: state.q has shape \(5,\), expected \(3,\)"):
        ms.simulate(msm, x0._replace(q=jnp.zeros(5)), 0.2, 0.01, 1e-3)
    with pytest.raises(ValueError, match=r"equilibrium_state: qd has shape \(2,\), expected "
                                         r"\(3,\) \(the model's n_v = 3\)"):
        ms.equilibrium_state(msm, Q0, jnp.zeros(2), 0.1)
    with pytest.raises(ValueError, match="equilibrium_state: activation of muscle 'via1' is "
                                         r"1.5, expected a value in \[0, 1\]"):
        ms.equilibrium_state(msm, Q0, QD0, [0.1, 1.5, 0.1, 0.1])
    with pytest.raises(ValueError, match=r"equilibrium_state: qd must be finite, got \[inf, "):
        ms.equilibrium_state(msm, Q0, jnp.array([np.inf, 0.0, 0.0]), 0.1)   # "slack" before
    # numbers only: True was activation 1.0 and "0" a coordinate 0
    with pytest.raises(ValueError, match="equilibrium_state: activation must be numbers, got "
                                         "True"):
        ms.equilibrium_state(msm, Q0, QD0, True)
    with pytest.raises(ValueError, match=re.escape("equilibrium_state: q must be numbers, got "
                                                   "['0', 0.1, 0.2]")):
        ms.equilibrium_state(msm, ["0", 0.1, 0.2], QD0, 0.1)


def test_a_slack_musculotendon_has_no_equilibrium_state():
    skeleton = _skeleton()
    length = np.asarray(muscle_lengths(skeleton, Q0))
    muscles = mu.build_muscles(NAMES, curves="degroote2016", tendon="explicit_force",
                               max_isometric_force_N=500.0, optimal_fiber_length_m=0.1,
                               tendon_slack_length_m=list(length + 0.2))
    msm = ms.musculoskeletal_model(skeleton, muscles)
    with pytest.raises(ValueError, match="no fiber equilibrium for muscles"):
        ms.equilibrium_state(msm, Q0, QD0, 0.1)
