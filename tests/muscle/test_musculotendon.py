"""Musculotendon mechanics vs OpenSim's oracles, closed forms, finite differences and MuJoCo.

Oracles: testDeGrooteFregly2016Muscle.cpp (notes Sec. 3.2: the "tendon compliance"
equilibrium l~ = 0.9305004 and the curve values at l~ = 1), the fixed-width pennation
geometry differentiated numerically, central differences of our own functions for gradients
(STYLE 13), and MuJoCo 4.0's actuator force on a tendon transmission for the sign convention.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from myotwin.muscle import (
    build_muscles,
    equilibrium,
    generalized_forces,
    muscle_outputs,
    tendon_force,
    tendon_state_derivative,
)

# OpenSim's "tendon compliance" setup (base Muscle defaults, pennation 0.12 rad, a = 1).
F_ISO, L_OPT, L_TS, V_MAX, PHI = 1000.0, 0.1, 0.2, 10.0, 0.12
OPENSIM_EQ_NORM_FIBER_LENGTH = 0.9305004

_equilibrium = jax.jit(equilibrium)
_outputs = jax.jit(muscle_outputs)
_state_dot = jax.jit(tendon_state_derivative)


def _degroote(tendon="explicit_force", **kw):
    # Muscle 0 is OpenSim's test muscle; 1 and 2 differ (vmap over different parameters).
    args = dict(max_isometric_force_N=[F_ISO, 800.0, 1500.0],
                optimal_fiber_length_m=[L_OPT, 0.12, 0.08],
                tendon_slack_length_m=[L_TS, 0.25, 0.15],
                pennation_at_optimal_rad=[PHI, 0.0, 0.3],
                max_contraction_velocity_Lopt_per_s=V_MAX)
    args.update(kw)
    return build_muscles(["opensim", "b", "c"], curves="degroote2016", tendon=tendon, **args)


def _mt_setup():
    l_mt = jnp.array([L_OPT * math.cos(PHI) + L_TS, 0.37, 0.225])
    v_mt = jnp.array([-0.21 * V_MAX * L_OPT, 0.05, -0.1])
    return l_mt, v_mt


def test_degroote_equilibrium_matches_opensim():
    # OpenSim bisects on the tendon force to 1e-10 and quotes 7 digits (rounding 5e-8): 1e-6.
    m = _degroote()
    l_mt, v_mt = _mt_setup()
    eq = _equilibrium(m, 1.0, l_mt, v_mt)
    assert bool(jnp.all(eq.converged)), eq.residual
    l_norm = float(eq.fiber_length_m[0]) / L_OPT
    assert l_norm == pytest.approx(OPENSIM_EQ_NORM_FIBER_LENGTH, abs=1e-6)
    # At equilibrium the fiber force along the tendon equals the tendon force, and with the
    # equilibrium's zero tendon velocity the explicit state does not move (roundoff).
    out = _outputs(m, 1.0, l_mt, v_mt, eq.tendon_state)
    np.testing.assert_allclose(out.fiber_force_N * out.cos_pennation, out.tendon_force_N,
                               rtol=1e-12)
    np.testing.assert_allclose(out.tendon_velocity_m_per_s, 0.0, atol=1e-12)
    np.testing.assert_allclose(out.norm_fiber_length, eq.fiber_length_m / m.optimal_fiber_length_m,
                               rtol=1e-12)
    np.testing.assert_allclose(_state_dot(m, 1.0, l_mt, v_mt, eq.tendon_state), 0.0, atol=1e-9)


def test_damped_model_equilibrium_is_a_fixed_point_too():
    # Millard damped model (state = fiber length): at the equilibrium with v_MT = 0 the fiber
    # does not move; with v_MT != 0 the fiber velocity is v_MT cos(phi) (zero tendon velocity)
    # up to the Newton tolerance of the damped velocity solve.
    m = build_muscles(["a", "b"], curves="millard2012", tendon="damped_fiber_length",
                      max_isometric_force_N=[1000.0, 500.0], optimal_fiber_length_m=0.1,
                      tendon_slack_length_m=0.2, pennation_at_optimal_rad=[0.0, 0.3])
    l_mt, v_mt = jnp.array([0.31, 0.30]), jnp.array([0.0, 0.1])
    eq = _equilibrium(m, 0.5, l_mt, v_mt)
    assert bool(jnp.all(eq.converged)), eq.residual
    out = _outputs(m, 0.5, l_mt, v_mt, eq.tendon_state)
    np.testing.assert_allclose(out.fiber_velocity_m_per_s, v_mt * out.cos_pennation, atol=1e-12)
    np.testing.assert_allclose(out.tendon_velocity_m_per_s, 0.0, atol=1e-12)


def test_rigid_tendon_at_optimal_length_matches_opensim_values():
    # l~ = 1, v~ = 0: F_T = F_iso (a f_L(1) f_V(0) + f_PE(1)) cos(phi_opt) with OpenSim's
    # f_L(1) = f_V(0) = 1 and f_PE(1) = 0.0182288 (De Groote; 6 digits: 5e-8 F_iso) or 0
    # (Millard, f_PE starts at 1). Fiber length l_opt and pennation phi_opt (OpenSim's test).
    a = jnp.array([1.0, 0.5, 0.2])
    for curves, fpe1 in (("degroote2016", 0.0182288), ("millard2012", 0.0)):
        m = build_muscles(["x", "y", "z"], curves=curves, tendon="rigid",
                          max_isometric_force_N=F_ISO, optimal_fiber_length_m=L_OPT,
                          tendon_slack_length_m=L_TS, pennation_at_optimal_rad=[PHI, 0.0, 0.4])
        phi = np.array([PHI, 0.0, 0.4])
        l_mt = L_OPT * np.cos(phi) + L_TS
        out = _outputs(m, a, l_mt, 0.0)
        np.testing.assert_allclose(out.fiber_length_m, L_OPT, rtol=1e-14)
        np.testing.assert_allclose(out.pennation_rad, phi, atol=1e-14)
        expected = F_ISO * (np.asarray(a) + fpe1) * np.cos(phi)
        np.testing.assert_allclose(out.tendon_force_N, expected, atol=1e-4, err_msg=curves)


@pytest.mark.parametrize("curves", ["degroote2016", "thelen2003", "millard2012"])
def test_a_slack_unpennated_rigid_musculotendon_bears_no_force(curves):
    """An unpennated rigid-tendon muscle whose path is at or below its tendon slack length
    has no fiber left: OpenSim's clamp (fiber at its minimum, 0 for an unpennated De Groote
    or Thelen muscle; velocity 0, no fiber force) leaves tendon force exactly 0 while the path
    shortens, with finite outputs and derivatives (0 / 0 in the pennation geometry used to
    give NaN)."""
    m = build_muscles(["s"], curves=curves, tendon="rigid", max_isometric_force_N=F_ISO,
                      optimal_fiber_length_m=L_OPT, tendon_slack_length_m=L_TS)

    def force(l_mt, v_mt):
        return tendon_force(m, jnp.array([0.5]), jnp.array([l_mt]), jnp.array([v_mt]),
                            jnp.zeros(1))[0]

    for l_mt in (L_TS - 0.05, L_TS):
        assert float(force(l_mt, -0.1)) == 0.0
        grads = jax.grad(force, argnums=(0, 1))(l_mt, -0.1)
        assert all(np.isfinite(float(g)) for g in grads)
    outs = _outputs(m, 0.5, L_TS - 0.05, -0.1)
    assert all(np.isfinite(np.asarray(v)).all() for v in outs)


def test_rigid_tendon_fiber_kinematics_match_finite_differences():
    # Fixed-width geometry along a prescribed l_MT(t): the fiber velocity and pennation rate
    # returned equal central differences of the returned fiber length and pennation
    # (h = 1e-6 s: truncation ~1e-12, rounding 1e-16/1e-6 = 1e-10 -> 1e-8 tolerance).
    m = build_muscles(["p"], curves="millard2012", tendon="rigid", max_isometric_force_N=F_ISO,
                      optimal_fiber_length_m=L_OPT, tendon_slack_length_m=L_TS,
                      pennation_at_optimal_rad=0.35)

    def mt(t):
        return 0.29 + 0.02 * jnp.sin(7.0 * t), 0.14 * jnp.cos(7.0 * t)

    t, h = 0.3, 1e-6
    now = _outputs(m, 0.5, *mt(t))
    plus, minus = _outputs(m, 0.5, *mt(t + h)), _outputs(m, 0.5, *mt(t - h))
    fd_len = (plus.fiber_length_m - minus.fiber_length_m) / (2 * h)
    fd_pen = (plus.pennation_rad - minus.pennation_rad) / (2 * h)
    assert float(now.fiber_velocity_m_per_s[0]) == pytest.approx(float(fd_len[0]), abs=1e-8)
    assert float(now.pennation_velocity_rad_per_s[0]) == pytest.approx(float(fd_pen[0]),
                                                                       abs=1e-8)
    w = L_OPT * math.sin(0.35)
    assert float(now.fiber_length_m[0] * jnp.sin(now.pennation_rad[0])) == pytest.approx(w)


def test_stiff_tendon_limit_approaches_rigid_tendon():
    # Tendon strain 1e-6 at one normalized force: the tendon stretches <= l_ts 1e-6 f~_T, so
    # the equilibrium force differs from the rigid-tendon force by about
    # F_iso |d f~_M/d l~| l_ts 1e-6 f~_T / l_opt ~ 1e-2 N: tolerance 5e-5 relative.
    l_mt, v_mt = _mt_setup()
    stiff = _degroote(tendon_strain_at_one_norm_force=1e-6)
    eq = _equilibrium(stiff, 0.7, l_mt, v_mt)
    compliant = _outputs(stiff, 0.7, l_mt, v_mt, eq.tendon_state)
    rigid = _outputs(_degroote(tendon="rigid"), 0.7, l_mt, v_mt)
    np.testing.assert_allclose(compliant.tendon_force_N, rigid.tendon_force_N, rtol=5e-5)


def test_gradients_match_central_differences():
    # Implicit-function-theorem derivatives of the solves (equilibrium; damped velocity)
    # vs central differences in float64. Steps 1e-6 (relative); truncation ~1e-12 relative,
    # rounding ~1e-10 relative: tolerance 1e-6 relative.
    m = build_muscles(["g"], curves="millard2012", tendon="damped_fiber_length",
                      max_isometric_force_N=F_ISO, optimal_fiber_length_m=L_OPT,
                      tendon_slack_length_m=L_TS, pennation_at_optimal_rad=0.2)

    @jax.jit
    def f(x):
        # x = (l_MT, activation, l_ts, fiber length): equilibrium fiber length at
        # (l_MT, a, l_ts), and the damped fiber speed at the fiber length x[3].
        l_mt, a, l_ts, l_m = x
        mm = dataclasses.replace(m, tendon_slack_length_m=jnp.atleast_1d(l_ts))
        eq_length = equilibrium(mm, a, l_mt, 0.05).fiber_length_m[0]
        speed = tendon_state_derivative(mm, a, l_mt, 0.05, jnp.atleast_1d(l_m))[0]
        return jnp.stack([eq_length, speed])

    x = jnp.array([0.305, 0.6, L_TS, 0.101])
    jac = np.asarray(jax.jit(jax.jacfwd(f))(x))
    for i in range(4):
        h = 1e-6 * float(x[i])
        fd = np.asarray(f(x.at[i].add(h)) - f(x.at[i].add(-h))) / (2 * h)
        np.testing.assert_allclose(jac[:, i], fd, rtol=1e-6, err_msg=f"d/dx[{i}]")
    # Every entry but d(equilibrium)/d(fiber length input) is a real dependence.
    assert np.all(np.abs(np.delete(jac.ravel(), 3)) > 1e-3), jac


def test_generalized_forces_match_mujoco_tendon_actuators():
    # MuJoCo applies a tendon actuator force `force` as qfrc_actuator = ten_J^T force with
    # ten_J = dL/dq; a tension F is force = -F. With r = -ten_J^T our r @ F must agree to
    # roundoff (1e-12 relative).
    xml = """
    <mujoco>
      <worldbody>
        <site name="s0" pos="0 0 0.4"/>
        <body name="b1">
          <joint name="j1" type="hinge" axis="0 1 0"/>
          <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02"/>
          <site name="s1" pos="0.2 0 0.05"/>
          <body name="b2" pos="0.3 0 0">
            <joint name="j2" type="hinge" axis="0 1 1"/>
            <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02"/>
            <site name="s2" pos="0.15 0.02 0.03"/>
          </body>
        </body>
      </worldbody>
      <tendon>
        <spatial name="t0"><site site="s0"/><site site="s1"/><site site="s2"/></spatial>
        <spatial name="t1"><site site="s0"/><site site="s2"/></spatial>
      </tendon>
      <actuator>
        <motor tendon="t0"/>
        <motor tendon="t1"/>
      </actuator>
    </mujoco>"""
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    rng = np.random.default_rng(3)
    for _ in range(3):
        data.qpos[:] = rng.uniform(-1, 1, model.nq)
        tension = rng.uniform(10, 500, 2)
        data.ctrl[:] = -tension
        mujoco.mj_forward(model, data)
        ten_j = np.array(data.ten_J).reshape(model.ntendon, model.nv)
        ours = np.asarray(generalized_forces(-ten_j.T, tension))
        np.testing.assert_allclose(ours, data.qfrc_actuator, rtol=1e-12,
                                   atol=1e-12 * np.abs(data.qfrc_actuator).max())
    with pytest.raises(ValueError, match="moment_arms"):
        generalized_forces(np.zeros((2, 3)), np.zeros(2))
    with pytest.raises(ValueError, match=r"tendon_forces must be numbers, got \[True, 1.0\]"):
        generalized_forces(np.zeros((3, 2)), [True, 1.0])   # a tension of 1 N before


def test_equilibrium_reports_failure_for_a_slack_musculotendon():
    # l_MT < l_ts: no fiber length balances a slack tendon against a positive fiber force.
    m = _degroote()
    eq = _equilibrium(m, 1.0, jnp.array([0.15, 0.37, 0.225]), 0.0)
    assert list(np.asarray(eq.converged)) == [False, True, True]


@pytest.mark.parametrize("kwargs, fragment", [
    ({"max_isometric_force_N": [-1.0, 1.0]}, "muscle 'm0': max_isometric_force_N must be > 0"),
    ({"optimal_fiber_length_m": [0.1, 0.0]}, "muscle 'm1': optimal_fiber_length_m must be > 0"),
    ({"tendon_slack_length_m": [0.2, float("nan")]}, "muscle 'm1': tendon_slack_length_m"),
    ({"pennation_at_optimal_rad": [0.0, 1.6]}, "muscle 'm1': pennation_at_optimal_rad"),
    ({"max_contraction_velocity_Lopt_per_s": [10.0, 10.0, 10.0]}, "one per muscle"),
    ({"tendon_strain_at_one_norm_force": -0.05}, "tendon_strain_at_one_norm_force"),
    ({"fiber_damping": 0.0}, "fiber_damping must be > 0 for the damped"),
    ({"tau_act_s": -0.01}, "muscle 'm0' activation: tau_act_s"),
    ({"names": ["m0", "m0"]}, "duplicate muscle names"),
    ({"names": "BRA"}, r"names must be a sequence of muscle names, got the string 'BRA' "
                       r"\(for one muscle: \['BRA'\]\)"),     # tuple("BRA"): B, R and A
    ({"names": None}, r"build_muscles: names must be a sequence of muscle names, got None"),
    ({"curves": "hill"}, r"curves 'hill': expected one of \['millard2012', "),
    ({"tendon": "stiff"}, r"tendon 'stiff': expected one of \["),
    ({"activation_law": "fast"}, r"activation_law 'fast': expected one of \["),
    ({"tendon": "explicit_force"}, "needs the De Groote 2016 curves"),
    ({"curves": "degroote2016", "tendon": "explicit_force", "fiber_damping": 0.1},
     "fiber_damping must be 0 for the explicit"),
    ({"tendon": "fiber_length"}, "tendon model 'fiber_length' needs the De Groote 2016"),
    ({"curves": "thelen2003", "tendon": "fiber_length", "fiber_damping": 0.1},
     "fiber_damping must be 0 for the undamped fiber-length"),
    ({"curves": "degroote2016", "tendon": "rigid", "active_force_width_scale": 0.5},
     "active_force_width_scale"),
    ({"millard_curve_parameters": {"fiber_force_length": {"curviness": 2.0}}},
     "must all be given"),
    ({"millard_curve_parameters": [1]},     # dict()'s TypeError before
     r"build_muscles: millard_curve_parameters must be a dict, got \[1\]"),
    ({"millard_curve_parameters": {"force_velocity": 1.0}},            # TypeError before
     r"muscle 'm0': Millard curve parameters 'force_velocity' must be a dict"),
    ({"millard_curve_parameters": {"fiber_force_length": {"bogus": 1.0}}},
     r"unknown parameters \['bogus'\] of the Millard curve 'fiber_force_length'; it takes"),
    ({"millard_curve_parameters": {"force_velocity": {"isometric_slope": "5"}}},   # was 5.0
     r"muscle 'm0'.force_velocity: isometric_slope must be a number, got '5'"),
    ({"millard_curve_parameters": {"fiber_force_length": {"curviness": True}}},
     r"muscle 'm0'.fiber_force_length: curviness must be a number, got True"),
    ({"min_fiber_length_m": [0.01, -0.01]}, "muscle 'm1': min_fiber_length_m must be >= 0"),
    ({"min_fiber_length_m": float("inf")}, "min_fiber_length_m"),
    # numbers only: True was taken as 1.0, "0.1" as 0.1, a dict failed inside float()
    ({"max_isometric_force_N": True}, "muscle 'm0': max_isometric_force_N must be a number, "
                                      "got True"),
    ({"optimal_fiber_length_m": [0.1, "0.1"]},
     "muscle 'm1': optimal_fiber_length_m must be a number, got '0.1'"),
    ({"tau_act_s": "0.01"}, "muscle 'm0': tau_act_s must be a number, got '0.01'"),
    ({"fiber_damping": [0.1, None]}, "muscle 'm1': fiber_damping must be a number, got None"),
    ({"max_isometric_force_N": {"f": 1.0}}, r"muscle 'm0': max_isometric_force_N must be a "
                                            r"number, got \{'f': 1.0\}"),
])
def test_bad_muscle_parameters_are_rejected(kwargs, fragment):
    args = dict(names=["m0", "m1"], curves="millard2012", tendon="damped_fiber_length",
                max_isometric_force_N=1000.0, optimal_fiber_length_m=0.1,
                tendon_slack_length_m=0.2)
    args.update(kwargs)
    names = args.pop("names")
    with pytest.raises(ValueError, match=fragment):
        build_muscles(names, **args)


@pytest.mark.parametrize("curves, tendon", [("millard2012", "damped_fiber_length"),
                                            ("degroote2016", "explicit_force"),
                                            ("thelen2003", "fiber_length"), ("mujoco", "rigid")])
def test_no_names_give_the_group_of_no_muscles(curves, tendon):
    """The group of no muscles (a skeleton moved by its actuators alone): every leaf is that of
    a one-muscle group with a leading axis of 0, so the muscle code's vmaps and sums see an
    empty axis; a per-muscle sequence must then be empty too."""
    args = dict(curves=curves, tendon=tendon, max_isometric_force_N=1000.0,
                optimal_fiber_length_m=0.1, tendon_slack_length_m=0.2)
    none, one = build_muscles([], **args), build_muscles(["m0"], **args)
    assert none.n_muscles == 0 and none.names == () and none.tendon is one.tendon
    empty, single = ([(jnp.shape(x), jnp.result_type(x)) for x in jax.tree_util.tree_leaves(m)]
                     for m in (none, one))
    assert len(empty) == len(single) > 10
    assert empty == [((0, *shape[1:]), dtype) for shape, dtype in single]
    with pytest.raises(ValueError, match=r"expected a scalar or 0 values \(one per muscle\), "
                                         r"got shape \(1,\)"):
        build_muscles([], **{**args, "max_isometric_force_N": [1000.0]})


def test_state_and_model_mismatches_are_rejected():
    with pytest.raises(ValueError, match="needs a tendon_state"):
        muscle_outputs(_degroote(), 1.0, 0.3, 0.0)
    rigid = _degroote(tendon="rigid")
    with pytest.raises(ValueError, match="rigid tendon has no fiber equilibrium"):
        equilibrium(rigid, 1.0, 0.3, 0.0)
    with pytest.raises(ValueError, match="rigid tendon has no state"):
        tendon_state_derivative(rigid, 1.0, 0.3, 0.0, 0.5)
    # one number for every muscle or one per muscle; a (1,) tendon state for these three
    # muscles was broadcast silently, a (4,) length failed inside jnp.broadcast_to
    with pytest.raises(ValueError, match=r"tendon_state has shape \(1,\), expected \(\) or "
                                         r"\(3,\), one per muscle"):
        muscle_outputs(_degroote(), 1.0, 0.3, 0.0, jnp.array([0.5]))
    with pytest.raises(ValueError, match=r"mt_length_m has shape \(4,\)"):
        equilibrium(_degroote(), 1.0, jnp.full(4, 0.3), 0.0)
    # numbers only: True was activation 1.0 and "0.3" a length of 0.3 m, also under jit
    with pytest.raises(ValueError, match="activation must be numbers, got True"):
        muscle_outputs(_degroote(), True, 0.3, 0.0, 0.5)
    with pytest.raises(ValueError, match="mt_length_m must be numbers, got '0.3'"):
        equilibrium(_degroote(), 0.5, "0.3", 0.0)
    m = _degroote()
    with pytest.raises(ValueError, match="activation must be numbers, got a traced bool array"):
        jax.jit(lambda a: tendon_force(m, a, 0.3, 0.0, 0.5))(True)
