"""EngineFrogPlant (the JAX engine as the in vitro-VR plant) against MujocoFrogPlant (MuJoCo 4.0.0).

docs/invitro/frog.md §16. Two engine plants are compiled once each (~20-25 s apiece):
`exact` with one RK4 step per 1 ms plant step (MuJoCo's own step, for the contact-free
comparison) and the default one (4 RK4 steps of 0.25 ms, as the frog's smooth contact needs).
"""

from __future__ import annotations

import math

import jax
import mujoco
import numpy as np
import pytest

from myotwin.invitro.config import load_config
from myotwin.invitro.experiment import run_condition
from myotwin.invitro.frog.engine_plant import EngineFrogPlant
from myotwin.invitro.frog.plant import MujocoFrogPlant
from myotwin.invitro.plant import Plant

HINGES = ("tmt_rad", "ankle_rad", "knee_rad", "hip_rad")
LIFT_M = 0.05          # the frog raised 5 cm: no floor contact within 50 ms
N_STEPS = 50           # 50 ms at the loop's 1 ms step


@pytest.fixture(scope="module", autouse=True)
def _x64():
    """The engine runs in float64 (STYLE 14): on for this module only, restored after."""
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", previous)


@pytest.fixture(scope="module")
def mj_plant(_x64):
    return MujocoFrogPlant()


@pytest.fixture(scope="module")
def exact(_x64):
    return EngineFrogPlant(substeps=1)


@pytest.fixture(scope="module")
def plant(_x64):
    return EngineFrogPlant()


def _run_both(eng, mj, tension_N, lift_m=0.0):
    """Reset both plants (raised by lift_m), pull with a constant tension for N_STEPS steps;
    per step (MTU length, hinge angles, floor flag, qpos) of each plant."""
    eng.reset()
    mj.reset()
    if lift_m:
        q = eng.qpos
        q[2] += lift_m
        eng.set_state(q, eng.qvel)
        mj.data.qpos[2] += lift_m
        mujoco.mj_forward(mj.model, mj.data)
    names = mj.channel_names
    cols = [names.index(h) for h in HINGES]
    fc = names.index("floor_contacts")
    out = {"engine": [], "mujoco": []}
    for p, key in ((eng, "engine"), (mj, "mujoco")):
        p.set_muscle_tension(tension_N)
        rows = [(p.mtu_length_m(), np.array(p.channels())[cols], 0.0, np.zeros(0))]
        for _ in range(N_STEPS):
            p.step()
            c = np.array(p.channels())
            rows.append((p.mtu_length_m(), c[cols], c[fc], c[1:1 + mj.model.nq]))
        out[key] = rows
    return out


def test_satisfies_the_plant_protocol_with_mujocos_channels(plant, mj_plant):
    # The loop reads channels by name and writes them next to MujocoFrogPlant's in ticks.csv:
    # same names in the same order, same step, same start state and start MTU length (both
    # compute the path of the keyframe pose: MuJoCo's ten_length vs myotwin.muscle_lengths,
    # agreement to float64 roundoff, 1e-12 m).
    assert isinstance(plant, Plant)
    assert plant.channel_names == mj_plant.channel_names
    assert plant.dt_s == mj_plant.dt_s
    plant.reset()
    mj_plant.reset()
    assert abs(plant.mtu_length_m() - mj_plant.mtu_length_m()) < 1e-12, "start MTU length"
    ce, cm = np.array(plant.channels()), np.array(mj_plant.channels())
    assert len(ce) == len(plant.channel_names)
    for name in ("t_plant_s", "knee_target_rad", "hip_target_rad", "forelimb_N", *HINGES,
                 "com_x_m", "com_z_m", "snout_x_m", "snout_z_m", "toe_x_m", "hip_z_m",
                 "tmt_moment_arm_m", "ankle_moment_arm_m", "knee_moment_arm_m"):
        i = plant.channel_names.index(name)
        assert abs(ce[i] - cm[i]) < 1e-12, f"channel {name}: engine {ce[i]} vs MuJoCo {cm[i]}"
    assert plant.fault() is None


@pytest.mark.parametrize("tension_N", [0.0, 0.5])
def test_in_the_air_mtu_length_and_angles_follow_mujoco(exact, mj_plant, tension_N):
    # Raised 5 cm, the frog falls without touching the floor for 50 ms, so the two contact
    # laws play no part: the same MJCF dynamics (servos, joint-limit soft constraints, the
    # plantaris motor on the wrapped tendon, forelimb support as xfrc_applied) stepped by the
    # same RK4 (MuJoCo 4.0.0's Munthe-Kaas form) at the same 1 ms step. Measured: |dL| 2.5e-16
    # m, |d angle| 6e-14 rad; tolerance 1e-9 (roundoff of differently ordered sums, amplified
    # by the stiff joint stops the foot swings into when the muscle pulls).
    run = _run_both(exact, mj_plant, tension_N, lift_m=LIFT_M)
    for k, (e, m) in enumerate(zip(run["engine"], run["mujoco"])):
        assert e[2] == 0 and m[2] == 0, f"floor contact at step {k}: the comparison needs none"
        assert abs(e[0] - m[0]) < 1e-9, f"MTU length at step {k}: {e[0]} vs MuJoCo {m[0]}"
        np.testing.assert_allclose(e[1], m[1], rtol=0, atol=1e-9,
                                   err_msg=f"hinge angles at step {k}")
        np.testing.assert_allclose(e[3], m[3], rtol=0, atol=1e-9, err_msg=f"qpos at step {k}")
    shortening = run["mujoco"][0][0] - run["mujoco"][-1][0]
    if tension_N > 0:
        # 0.5 N shortens the MTU by ~18 mm in 50 ms (to its folded-foot minimum), in both.
        assert shortening > 0.015, f"MuJoCo MTU shortened only {shortening} m under 0.5 N"
    else:
        assert shortening < 0.0, "without tension the falling leg extends (MTU lengthens)"


def test_resting_on_the_floor_with_zero_tension_follows_mujoco(plant, mj_plant):
    # The crouched frog on the floor, muscle slack, servos extending the hip and knee: over
    # the first 50 ms (stance, before takeoff at ~60 ms) the engine (smooth Hertz/Hunt-Crossley
    # contact, 4 RK4 steps of 0.25 ms) and MuJoCo (soft-constraint contact, RK4 at 1 ms) differ
    # only through the contact laws, which carry the weight from the first step. Measured: MTU
    # length within 0.22 mm (of a 1.9 mm excursion), hinge angles within 0.056 rad (the TMT
    # joint, where the toe sinks differently into the two floors). Tolerances: 0.5 mm, 0.1 rad.
    run = _run_both(plant, mj_plant, 0.0)
    dl = max(abs(e[0] - m[0]) for e, m in zip(run["engine"], run["mujoco"]))
    da = max(np.abs(e[1] - m[1]).max() for e, m in zip(run["engine"], run["mujoco"]))
    excursion = max(m[0] for m in run["mujoco"]) - run["mujoco"][0][0]
    assert all(e[2] == 1 for e in run["engine"][1:]), "the engine frog must stay in stance"
    assert excursion > 1e-3, "the servos must stretch the MTU in stance"
    assert dl < 5e-4, f"MTU length differs from MuJoCo's by {dl} m in stance"
    assert da < 0.1, f"hinge angles differ from MuJoCo's by {da} rad in stance"


def test_constant_tension_on_the_floor_shortens_the_mtu_as_in_mujoco(plant, mj_plant):
    # 1 N from t = 0 on the resting frog: the muscle pulls the heel up against the floor
    # contact, so the shortening over 50 ms depends on how the toe sinks in (contact laws
    # differ). Measured: 2.98 mm (engine) vs 2.78 mm (MuJoCo), 7 %; tolerance 20 %.
    run = _run_both(plant, mj_plant, 1.0)
    se = run["engine"][0][0] - run["engine"][-1][0]
    sm = run["mujoco"][0][0] - run["mujoco"][-1][0]
    assert sm > 2e-3, f"MuJoCo's MTU shortened only {sm} m"
    assert abs(se - sm) < 0.2 * sm, f"MTU shortening {se} m vs MuJoCo {sm} m"


def test_non_finite_state_gives_a_fault_message(plant):
    plant.reset()
    assert plant.fault() is None
    q = plant.qpos
    q[4] = math.nan
    plant.set_state(q, plant.qvel)
    msg = plant.fault()
    assert msg is not None and "non-finite" in msg, msg
    plant.step()                                  # and it stays faulted after a step
    assert "non-finite" in plant.fault()
    plant.reset()
    plant.set_muscle_tension(math.nan)            # NaN arriving through the input
    plant.step()
    assert plant.fault() is not None and "non-finite" in plant.fault()
    plant.set_muscle_tension(0.0)
    plant.reset()
    with pytest.raises(ValueError, match="qvel shape"):
        plant.set_state(plant.qpos, np.zeros(3))


def test_closed_loop_nominal_jump_is_close_to_mujocos(plant, tmp_path):
    # One condition through the real loop (host, wire protocol, in-process emulated muscle):
    # only the plant differs. Measured (docs/invitro/frog.md §16): jump height 81.0 vs 78.0 mm
    # (+4 %), peak force 1.713 vs 1.725 N, takeoff 109 vs 119 ms: the contact laws shape the
    # push-off. Tolerances: height 15 %, peak force 5 %, takeoff 20 ms.
    cfg = load_config(None)
    eng = run_condition("nominal", tmp_path / "engine", cfg, inprocess=True, plant=plant)
    mj = run_condition("nominal", tmp_path / "mujoco", cfg, inprocess=True,
                       plant=MujocoFrogPlant())
    assert eng["ended"] == mj["ended"] == "completed", (eng["message"], mj["message"])
    assert abs(eng["jump_height_m"] / mj["jump_height_m"] - 1) < 0.15, \
        f"jump height {eng['jump_height_m']} vs MuJoCo {mj['jump_height_m']}"
    assert abs(eng["peak_force_N"] / mj["peak_force_N"] - 1) < 0.05, \
        f"peak force {eng['peak_force_N']} vs MuJoCo {mj['peak_force_N']}"
    assert abs(eng["takeoff_time_s"] - mj["takeoff_time_s"]) < 0.020, \
        f"takeoff {eng['takeoff_time_s']} vs MuJoCo {mj['takeoff_time_s']}"
