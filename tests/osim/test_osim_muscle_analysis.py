"""`myotwin osim muscle-analysis` (osim/muscle_analysis.py) against OpenSim 4.6's MuscleAnalysis,
run here by its AnalyzeTool on the same files.

OpenSim prints its analyses with 8 decimals (+-5e-9 m), which is the tolerance's floor:
1e-8 m for lengths and moment arms (observed ~5e-9: the rounding alone; the quantities
themselves agree to ~1e-15 in the path tests).
* arm26.osim along the tutorial's IK result (6 Hz lowpass, 0-0.3 s): the wrap objects
  (cylinders, ellipsoids) and OpenSim's computeMomentArm, where it is not -dL/dq;
* leg6dof9musc.osim along a synthetic swing (the patella's CoordinateCouplerConstraint and
  the knee's spline translations: moment arms reduced by the coupling's J^T), every
  coordinate's file, the pelvis' all zero; the same leg with a nonlinear coupler (the
  dependent coordinate's moment arms) and arm26 with a locked shoulder;
* gait10dof18musc along subject01's walk: the knees' MovingPathPoints;
* the command's files, summary and one-line error.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from myotwin.cli.main import main
from myotwin.osim.inverse_dynamics import prepared_motion
from myotwin.osim.loader import load
from myotwin.osim.muscle_analysis import run
from myotwin.osim.muscle_states import OUTPUTS, STATE_DEFAULTS
from myotwin.osim.storage import StorageWriter, read_storage
from opensim_live import opensim_package, run_muscle_analysis
from osim_synthetic import write_leg_swing
from shared_reference import SHARED, needs

opensim_package()

REF = SHARED / "reference" / "opensim"
TOL_M = 1e-8
#: Relative part of the muscle-state outputs' tolerance: the default states are far from
#: equilibrium (arm26's TRIlong at 0.1 m of fiber: fiber velocities ~1e3 m/s, powers ~1e7 W),
#: where the force-velocity inverse amplifies roundoff (observed 1.4e-14 of 1.75e7 W). De
#: Groote's inverse is an exponential of the force demand: at a states file's tendon forces
#: far from equilibrium TRImed's fiber velocity is 3.8e17 m/s, and the roundoff of the
#: exponent (~40) left 1.1e-12 of it in session 62's environment (5e-13 before).
REL_TOL = 1e-11
#: OpenSim solves a damped Millard fiber's velocity by Newton until the force residual is
#: below 1e-10 F_iso (Millard2012EquilibriumMuscle::calcDampedNormFiberVelocity), ours to
#: roundoff: the fiber's forces may differ by that much (observed 2.7e-8 N on
#: gait10dof18musc), its active power (which holds the damping power) by that times |v_M|,
#: and its velocity by up to that / beta (normalized; beta: the damping, f_V' >= 0), which
#: the powers multiply by the forces (seen on the passive power of fibers at 1.2 l_opt).
SOLVE_TOL = 1e-10
#: With the muscles equilibrated at each time, OpenSim's equilibrium is defined only to its
#: solver's tolerance: Thelen's and Millard's stop once |F_M cos(phi) - F_T| < 1e-8 F_iso
#: (De Groote's bisection is tighter, 1e-10 F_iso), so forces may differ by that much (our
#: Thelen iteration is OpenSim's, our Millard and De Groote solves go to roundoff), powers by
#: that times the speeds, moments by that times the moment arm. A damped Millard fiber turns
#: that residual force (f~ < 1e-8 in OpenSim's, roundoff in ours) into a fiber velocity too,
#: as SOLVE_TOL's: the velocity outputs may differ by f~ / beta (times v_max l_opt, times
#: tan(phi) / l_M for the pennation's), the powers by that times the forces.
EQUILIBRIUM_TOL = 1e-8
# COUPLED_LEG: leg6dof9musc's muscle-state outputs are not compared. OpenSim projects the
# motion onto the patella coupler (the file's dependent column, rounded, or lowpassed through
# a nonlinear coupler, is not exactly g(knee)), which moves its coordinates by ~1e-9 rad: path
# lengths stay within TOL_M, but their ~5e-11 m difference (inferred: 3e-6 to 9e-5 N of
# tendon force over tendon stiffnesses of 6e4 to 2e6 N/m at the default fiber length 0.1 m)
# exceeds the tolerance above once it goes through a stiff tendon. Thelen's outputs are
# checked on arm26, Millard's on gait10dof18musc, De Groote's on the locked arm.


def _compare(tmp_path, model, motion, end_s, start_s=0.0, states=True, states_file=False,
             equilibrium=False):
    """Our files against OpenSim's: lengths and moment arms within TOL_M; if `states`, every
    muscle-state output (and each Moment_<coordinate>) within TOL_M + REL_TOL x its
    magnitude (plus OpenSim's solver tolerance, SOLVE_TOL). `motion`: a coordinates file
    (lowpassed at 6 Hz), or with `states_file` a states file (as written)."""
    kind = "equilibrium" if equilibrium else "default"
    if states_file:
        summary = run(model, None, tmp_path / "ours", states_path=motion,
                      start_time_s=start_s, end_time_s=end_s, muscle_states=kind)
    else:
        summary = run(model, motion, tmp_path / "ours", cutoff_hz=6.0, start_time_s=start_s,
                      end_time_s=end_s, muscle_states=kind)
    outputs = (*OUTPUTS, *(f"Moment_{c}" for c in summary["coordinates"])) if states else ()
    length, arms, *tables = run_muscle_analysis(
        tmp_path, model, motion, -1.0 if states_file else 6.0, start_s, end_s,
        summary["coordinates"], outputs, states=states_file, equilibrium=equilibrium)
    ours = read_storage(tmp_path / "ours" / "muscle_analysis_Length.sto")
    assert ours.labels == length.labels and ours.data.shape == length.data.shape
    np.testing.assert_allclose(ours.time_s, length.time_s, rtol=0, atol=1e-9)
    worst = {"Length": np.abs(ours.data[:, 1:] - length.data[:, 1:]).max()}
    for coordinate, theirs in arms.items():
        mine = read_storage(tmp_path / "ours" / f"muscle_analysis_MomentArm_{coordinate}.sto")
        assert mine.labels == theirs.labels
        worst[coordinate] = np.abs(mine.data[:, 1:] - theirs.data[:, 1:]).max()
    print(f"{model.name}: {ours.time_s.size} times, within "
          + ", ".join(f"{k} {v:.1e}" for k, v in worst.items()))
    assert max(worst.values()) <= TOL_M
    if not states:
        return summary, arms
    (states,) = tables
    loaded = load(model)
    f_iso = np.array([loaded.muscles[n]["max_isometric_force_N"] for n in summary["muscles"]])
    solve, balance = SOLVE_TOL * f_iso, (EQUILIBRIUM_TOL if equilibrium else 0.0) * f_iso
    speed = np.abs(states["FiberVelocity"].data[:, 1:])
    speeds = speed + np.abs(np.gradient(length.data[:, 1:], length.time_s, axis=0))
    params = [loaded.muscles[n] for n in summary["muscles"]]
    damping = np.array([p.get("fiber_damping", 0.0) for p in params])
    unit = np.array([p["optimal_fiber_length_m"] * p["max_contraction_velocity_Lopt_per_s"]
                     for p in params])
    slip = np.divide(balance / f_iso + SOLVE_TOL, damping, out=np.zeros_like(damping),
                     where=damping > 0)
    slip_tols = {"NormFiberVelocity": slip, "FiberVelocity": slip * unit,
                 "PennationAngularVelocity": slip * unit
                 * np.abs(np.tan(states["PennationAngle"].data[:, 1:]))
                 / states["FiberLength"].data[:, 1:]}
    forces = (np.abs(states["FiberForce"].data[:, 1:]) + np.abs(states["TendonForce"].data[:, 1:])
              ) / np.cos(states["PennationAngle"].data[:, 1:])
    excess = {}
    for name, theirs in states.items():
        mine = read_storage(tmp_path / "ours" / f"muscle_analysis_{name}.sto")
        assert mine.labels == theirs.labels and mine.data.shape == theirs.data.shape, name
        error = np.abs(mine.data[:, 1:] - theirs.data[:, 1:])
        tol = TOL_M + REL_TOL * np.abs(theirs.data[:, 1:])
        if "FiberForce" in name:
            tol = tol + solve
        elif name == "FiberActivePower":
            tol = tol + solve * speed
        if "Force" in name:
            tol = tol + balance
        elif "Power" in name:
            tol = tol + balance * speeds + slip * unit * forces
        elif name.startswith("Moment_"):
            tol = tol + balance * np.abs(arms[name.removeprefix("Moment_")].data[:, 1:])
        tol = tol + slip_tols.get(name, 0.0)
        excess[name] = (error / tol).max()
    print("muscle-state outputs, worst error / tolerance: "
          + ", ".join(f"{k} {v:.2f}" for k, v in excess.items()))
    assert max(excess.values()) <= 1.0, excess
    return summary, arms


def test_arm26_matches_opensims_muscle_analysis(tmp_path):
    summary, arms = _compare(tmp_path, needs(REF / "models" / "arm26.osim"),
                             needs(REF / "data" / "arm26" / "arm26_InverseKinematics.mot"),
                             0.3)
    assert summary["coordinates"] == ["r_shoulder_elev", "r_elbow_flex"]
    assert np.abs(arms["r_elbow_flex"].data[:, 1:]).max() > 0.01   # moment arms, not zeros


def _states_file(path, model, ik, end_s, left_out) -> None:
    """A states file of `model` (OpenSim 4 state names) over `ik`'s rows up to `end_s`: its
    coordinates and their speeds (`prepared_motion`, no filter), and muscle states that vary
    in time (activations 0.1-0.9, fiber lengths 0.8-1.2 l_opt or, for De Groote muscles,
    normalized tendon forces 0.1-0.5); the tendon state of the muscle `left_out` left out."""
    loaded = load(model)
    motion = prepared_motion(loaded, read_storage(ik), end_time_s=end_s)
    t = motion.times_s
    labels, columns = ["time"], [t]
    for k, c in enumerate(loaded.coordinates):
        base = f"/jointset/{loaded.coordinate_joints[c]}/{c}"
        labels += [f"{base}/value", f"{base}/speed"]
        columns += [motion.q[:, k], motion.qd[:, k]]
    for k, m in enumerate(loaded.muscle_names):
        phase = 2 * np.pi * (5.0 * t + k / 6)
        labels.append(f"/forceset/{m}/activation")
        columns.append(0.5 + 0.4 * np.sin(phase))
        if m == left_out:
            continue
        if loaded.muscles[m]["type"] == "DeGrooteFregly2016Muscle":
            labels.append(f"/forceset/{m}/normalized_tendon_force")
            columns.append(0.3 + 0.2 * np.cos(phase))
        else:
            labels.append(f"/forceset/{m}/fiber_length")
            columns.append(loaded.muscles[m]["optimal_fiber_length_m"]
                           * (1.0 + 0.2 * np.cos(phase)))
    with StorageWriter(path, "states", labels) as writer:
        writer.write_rows(np.column_stack(columns))


def _arm26_states(path, model) -> None:
    """`_states_file` of arm26 (or a variant) over the tutorial's first 0.2 s, BRA's tendon
    state left out."""
    _states_file(path, model, needs(REF / "data" / "arm26" / "arm26_InverseKinematics.mot"),
                 0.2, "BRA")


def test_a_states_file_matches_opensims_muscle_analysis(tmp_path):
    """AnalyzeTool with a states file (`_arm26_states`): coordinates, speeds and muscle states
    as written (no filter), the missing BRA fiber length at its default (0.1 m) in both; the
    same with arm26's muscles made De Groote's (`osim_synthetic.to_degroote`), whose state
    is the normalized tendon force (BRA's at its default, 0.5); CMC's states of arm26, whose
    names are OpenSim 3's (r_elbow_flex, r_elbow_flex_u, BIClong.activation, ...); and
    gait10dof18musc's Millard muscles along the walk (soleus_r's fiber length left out)."""
    import xml.etree.ElementTree as ET

    from osim_synthetic import to_degroote

    thelen = needs(REF / "models" / "arm26.osim")
    root = ET.parse(thelen).getroot()
    to_degroote(root)
    degroote = tmp_path / "arm26_degroote.osim"
    ET.ElementTree(root).write(degroote, encoding="unicode")
    for name, model, state in (("thelen", thelen, "fiber_length"),
                               ("degroote", degroote, "normalized_tendon_force")):
        states = tmp_path / f"{name}_states.sto"
        _arm26_states(states, model)
        (tmp_path / name).mkdir()
        summary, _ = _compare(tmp_path / name, model, states, 0.15, start_s=0.05,
                              states_file=True)
        assert summary["muscle_states_defaulted"] == [f"/forceset/BRA/{state}"]
        assert summary["states_file"] == str(states) and summary["coordinates_file"] is None
    cmc = needs(REF / "data" / "arm26" / "arm26_CMC_states.sto")   # OpenSim 3's names
    (tmp_path / "cmc").mkdir()
    summary, _ = _compare(tmp_path / "cmc", thelen, cmc, 0.1, start_s=0.03, states_file=True)
    assert summary["muscle_states_defaulted"] == []
    gait = needs(REF / "models" / "gait10dof18musc.osim")      # Millard's damped fibers
    states = tmp_path / "millard_states.sto"
    _states_file(states, gait, needs(REF / "data" / "gait10dof18musc" / "subject01_walk_IK.mot"),
                 0.65, "soleus_r")
    (tmp_path / "millard").mkdir()
    summary, _ = _compare(tmp_path / "millard", gait, states, 0.6, start_s=0.5,
                          states_file=True)
    assert summary["muscle_states_defaulted"] == ["/forceset/soleus_r/fiber_length"]


def test_equilibrated_muscles_match_opensims_muscle_analysis(tmp_path):
    """`--muscle-states equilibrium` against AnalyzeTool with
    solve_for_equilibrium_for_auxiliary_states (`osim.muscle_equilibrium`), each type's own
    equilibrium: arm26's Thelen muscles along the tutorial's motion (the stiffness-shared
    speed; the equilibrium alone against equilibrateMuscles:
    test_osim_muscle_equilibrium_vs_opensim.py), gait10dof18musc's Millard muscles along the
    walk (static; glut_max_l held at its minimum fiber length, as OpenSim holds it), and
    arm26 made De Groote's along `_arm26_states` (the file's activations, its tendon states
    replaced)."""
    import xml.etree.ElementTree as ET

    from osim_synthetic import to_degroote

    arm26 = needs(REF / "models" / "arm26.osim")
    (tmp_path / "thelen").mkdir()
    summary, _ = _compare(tmp_path / "thelen", arm26,
                          needs(REF / "data" / "arm26" / "arm26_InverseKinematics.mot"), 0.2,
                          equilibrium=True)
    assert summary["muscle_states"] == "equilibrium"
    assert summary["muscle_equilibrium_failed"] == {}
    assert summary["muscle_equilibrium_at_min_fiber_length"] == {}

    (tmp_path / "millard").mkdir()
    data = REF / "data" / "gait10dof18musc"
    summary, _ = _compare(tmp_path / "millard", needs(REF / "models" / "gait10dof18musc.osim"),
                          needs(data / "subject01_walk_IK.mot"), 0.6, start_s=0.5,
                          equilibrium=True)
    assert list(summary["muscle_equilibrium_at_min_fiber_length"]) == ["glut_max_l"]

    root = ET.parse(arm26).getroot()
    to_degroote(root)
    degroote = tmp_path / "arm26_degroote.osim"
    ET.ElementTree(root).write(degroote, encoding="unicode")
    states = tmp_path / "degroote_states.sto"
    _arm26_states(states, degroote)
    (tmp_path / "degroote").mkdir()
    summary, _ = _compare(tmp_path / "degroote", degroote, states, 0.15, start_s=0.05,
                          states_file=True, equilibrium=True)
    assert summary["muscle_equilibrium_failed"] == {}


def test_coupled_leg_matches_opensims_muscle_analysis(tmp_path):
    motion = write_leg_swing(tmp_path / "leg_swing.mot")
    summary, arms = _compare(tmp_path, needs(REF / "models" / "leg6dof9musc.osim"), motion,
                             0.3, states=False)   # COUPLED_LEG
    assert "knee_angle_pat_r" in summary["coordinates"]     # eliminated, its file written
    assert np.abs(arms["knee_angle_r"].data[:, 1:]).max() > 0.01
    assert np.abs(arms["pelvis_tx"].data[:, 1:]).max() == 0.0


def test_nonlinear_coupler_and_locked_coordinate_match_opensims_muscle_analysis(tmp_path):
    """About a coupler's dependent coordinate OpenSim's moment arm is the independent one's
    divided by the coupler's slope (leg6dof9musc with its patella coupler made a nonlinear
    spline, `test_osim_coupler_constraint._variant`, the motion's patella column as the
    coupler gives it); about a locked coordinate it is the unlocked model's (arm26 with its
    shoulder locked at 0.3 rad, a motion of the elbow alone; its ellipsoids inactive in the
    file both read, `osim_synthetic.ARM26_ELLIPSOIDS`, as the arm26 test keeps them). The
    locked arm's muscles are made DeGrooteFregly2016Muscle (`osim_synthetic.to_degroote`),
    so that the muscle-state outputs are checked for the third muscle type at its default
    states (normalized tendon force 0.5, activation 0.5) as well."""
    import xml.etree.ElementTree as ET

    import jax.numpy as jnp

    from myotwin.engine.piecewise import evaluate_padded, pad_polynomials
    from myotwin.jax_setup import configure_jax
    from osim_synthetic import ARM26_ELLIPSOIDS, locked_copy, to_degroote
    from test_osim_coupler_constraint import _variant

    configure_jax()
    root = ET.parse(needs(REF / "models" / "leg6dof9musc.osim")).getroot()
    _variant(root)
    variant = tmp_path / "leg6dof9musc_variant.osim"
    ET.ElementTree(root).write(variant, encoding="unicode")
    coupler = load(variant).coupled_coordinates["knee_angle_pat_r"]
    swing = read_storage(write_leg_swing(tmp_path / "swing.mot"))
    knee = swing.column("knee_angle_r")
    patella = np.asarray(evaluate_padded(*[jnp.asarray(t) for t in pad_polynomials(
        [coupler.function])], jnp.asarray(knee))[0])
    motion = tmp_path / "swing_variant.mot"
    labels = swing.labels
    data = swing.data.copy()
    data[:, labels.index("knee_angle_pat_r")] = patella
    with StorageWriter(motion, "Coordinates", labels) as writer:
        writer.write_rows(data)
    (tmp_path / "leg").mkdir()
    _, arms = _compare(tmp_path / "leg", variant, motion, 0.3, states=False)  # COUPLED_LEG
    ratio = arms["knee_angle_pat_r"].data[:, 5] / arms["knee_angle_r"].data[:, 5]
    assert np.ptp(ratio) > 0.05          # 1 / g' varies along the swing: not a copy

    arm = locked_copy(needs(REF / "models" / "arm26.osim"), tmp_path, "r_shoulder_elev", 0.3,
                      inactive=ARM26_ELLIPSOIDS)
    root = ET.parse(arm).getroot()
    to_degroote(root)
    ET.ElementTree(root).write(arm, encoding="unicode")
    tutorial = read_storage(needs(REF / "data" / "arm26" / "arm26_InverseKinematics.mot"))
    elbow = tmp_path / "elbow_only.mot"
    with StorageWriter(elbow, "Coordinates", ("time", "r_elbow_flex")) as writer:
        writer.write_rows(np.column_stack([tutorial.time_s,
                                           np.radians(tutorial.column("r_elbow_flex"))]))
    (tmp_path / "arm").mkdir()
    summary, arms = _compare(tmp_path / "arm", arm, elbow, 0.3)
    assert summary["coordinates"] == ["r_shoulder_elev", "r_elbow_flex"]
    assert np.abs(arms["r_shoulder_elev"].data[:, 1:]).max() > 0.01


def test_walking_with_moving_points_matches_opensims_muscle_analysis(tmp_path):
    """gait10dof18musc along subject01's walk (0.5-0.7 s): the knees' MovingPathPoints,
    whose motion adds OpenSim's mobility force to computeMomentArm."""
    data = REF / "data" / "gait10dof18musc"
    summary, arms = _compare(tmp_path, needs(REF / "models" / "gait10dof18musc.osim"),
                             needs(data / "subject01_walk_IK.mot"), 0.7, start_s=0.5)
    assert len(summary["coordinates"]) == 10
    assert np.abs(arms["knee_angle_r"].data[:, 1:]).max() > 0.01


def _held_block(tmp_path, model_name, edits):
    """Tug_of_War model `model_name` with `edits` ((muscle, property, value) each) written to
    tmp_path, and a coordinates file holding its block at 0 for 0.1 s (11 rows)."""
    text = needs(REF / "models" / model_name).read_text()
    for muscle, tag, value in edits:
        start = text.index(f'Muscle name="{muscle}"')
        at = text.index(f"<{tag}>", start) + len(tag) + 2
        text = text[:at] + value + text[text.index("<", at):]
    model = tmp_path / model_name
    model.write_text(text)
    motion = tmp_path / "held.mot"
    motion.write_text("held\nversion=1\nnRows=11\nnColumns=2\ninDegrees=no\nendheader\n"
                      "time\tblock_tz\n" + "".join(f"{k / 100}\t0\n" for k in range(11)))
    return model, motion


def test_default_states_out_of_range_are_taken_as_opensim_takes_them(tmp_path):
    """Millard muscles with a default_activation of 2 and a default_fiber_length of -0.1 m:
    OpenSim runs such a file, clamping the activation to 1 and the fiber to its minimum length
    (0.0444 m, where the tendon pulls 7.4e3 N). Ours gives OpenSim's outputs (`_compare`'s
    tolerances). Thelen's activation of 2 is clamped the same way; its fiber of -0.1 m is
    refused (OpenSim evaluates it at zero length, where the pennation speed is 0/0), naming
    the file, muscle and property, unless the states are equilibrated."""
    model, motion = _held_block(tmp_path, "Tug_of_War_Millard.osim",
                                (("RightMuscle", "default_activation", "2"),
                                 ("LeftMuscle", "default_fiber_length", "-0.1")))
    _compare(tmp_path, model, motion, 0.1)
    tendon = read_storage(tmp_path / "ours" / "muscle_analysis_TendonForce.sto")
    assert np.abs(tendon.column("LeftMuscle")).max() > 100.0   # the clamped fiber pulls
    thelen = tmp_path / "thelen"
    thelen.mkdir()
    model, motion = _held_block(thelen, "Tug_of_War.osim",
                                (("muscle2", "default_activation", "2"),))
    _compare(thelen, model, motion, 0.1)
    model, motion = _held_block(thelen, "Tug_of_War.osim",
                                (("muscle2", "default_fiber_length", "-0.1"),))
    with pytest.raises(ValueError) as refused:
        run(model, motion, thelen / "refused", muscle_states="default")
    assert str(refused.value) == (
        f"{model}: Thelen2003Muscle 'muscle2': default_fiber_length -0.1 m is not positive; "
        "the default muscle states need a fiber length (or put the fibers in equilibrium: "
        "--muscle-states equilibrium, or a setup's solve_for_equilibrium_for_auxiliary_states "
        "true)")
    assert not (thelen / "refused" / "muscle_analysis_Length.sto").exists()
    run(model, motion, thelen / "equilibrium", muscle_states="equilibrium")


def test_the_command_writes_its_files_and_refuses_bad_input(tmp_path, capsys):
    model = needs(REF / "models" / "arm26.osim")
    motion = needs(REF / "data" / "arm26" / "arm26_InverseKinematics.mot")
    out = tmp_path / "out"
    assert main(["osim", "muscle-analysis", str(model), "--coordinates", str(motion),
                 "--end-s", "0.05", "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary == json.loads((out / "summary.json").read_text())
    coordinates = ("r_elbow_flex", "r_shoulder_elev")
    geometry = ["muscle_analysis_Length.sto",
                *(f"muscle_analysis_MomentArm_{c}.sto" for c in coordinates), "summary.json"]
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [*geometry, *(f"muscle_analysis_{o}.sto" for o in OUTPUTS),
         *(f"muscle_analysis_Moment_{c}.sto" for c in coordinates)])
    assert summary["n_rows"] == read_storage(out / "muscle_analysis_Length.sto").time_s.size
    # arm26.osim gives no initial states: OpenSim's Thelen2003Muscle defaults
    assert summary["muscle_default_states"]["BIClong"] == {
        "activation": 0.05, "tendon_state": 0.1, "tendon_model": "fiber_length"}
    lean = tmp_path / "lean"
    assert main(["osim", "muscle-analysis", str(model), "--coordinates", str(motion),
                 "--end-s", "0.05", "--muscle-states", "none", "--out", str(lean)]) == 0
    assert json.loads(capsys.readouterr().out)["muscle_default_states"] == {}
    assert sorted(p.name for p in lean.iterdir()) == sorted(geometry)
    states = tmp_path / "arm26_states.sto"
    _arm26_states(states, model)
    simulated = tmp_path / "simulated"
    assert main(["osim", "muscle-analysis", str(model), "--states", str(states),
                 "--end-s", "0.05", "--out", str(simulated)]) == 0
    assert json.loads(capsys.readouterr().out)["states_file"] == str(states)
    fiber = read_storage(simulated / "muscle_analysis_FiberLength.sto")
    np.testing.assert_array_equal(fiber.column("TRIlong"), read_storage(states).column(
        "/forceset/TRIlong/fiber_length")[:fiber.time_s.size])    # the file's state, as is
    balanced = tmp_path / "balanced"
    assert main(["osim", "muscle-analysis", str(model), "--states", str(states),
                 "--end-s", "0.05", "--muscle-states", "equilibrium", "--out",
                 str(balanced)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["muscle_states"] == "equilibrium"
    assert summary["muscle_equilibrium_failed"] == {}
    in_equilibrium = read_storage(balanced / "muscle_analysis_FiberLength.sto")
    assert np.abs(in_equilibrium.column("TRIlong") - fiber.column("TRIlong")).min() > 1e-4
    with pytest.raises(SystemExit):   # argparse: one motion only
        main(["osim", "muscle-analysis", str(model), "--states", str(states),
              "--coordinates", str(motion), "--out", str(simulated)])
    assert main(["osim", "muscle-analysis", str(model), "--coordinates", str(motion),
                 "--lowpass-hz", "-1", "--out", str(out)]) == 2
    assert "--lowpass-hz must be positive" in capsys.readouterr().err


def test_state_defaults_are_opensims():
    """`STATE_DEFAULTS`: the initial states of OpenSim 4.6's default-constructed muscles."""
    osim = opensim_package()
    thelen, millard = osim.Thelen2003Muscle(), osim.Millard2012EquilibriumMuscle()
    degroote = osim.DeGrooteFregly2016Muscle()
    assert STATE_DEFAULTS == {
        "Thelen2003Muscle": (thelen.getDefaultActivation(), "default_fiber_length_m",
                             thelen.getDefaultFiberLength()),
        "Millard2012EquilibriumMuscle": (millard.getDefaultActivation(),
                                         "default_fiber_length_m",
                                         millard.getDefaultFiberLength()),
        "DeGrooteFregly2016Muscle": (degroote.get_default_activation(),
                                     "default_normalized_tendon_force",
                                     degroote.get_default_normalized_tendon_force())}


def test_a_muscle_without_a_model_is_refused_before_any_work(tmp_path):
    """A De Groote muscle with fiber damping (no explicit tendon-force model here): the
    muscle-state outputs are refused naming the muscle, with the way to geometry only."""
    import xml.etree.ElementTree as ET

    from osim_synthetic import to_degroote

    root = ET.parse(needs(REF / "models" / "arm26.osim")).getroot()
    to_degroote(root)
    for muscle in root.iter("DeGrooteFregly2016Muscle"):
        ET.SubElement(muscle, "fiber_damping").text = "0.05"
    model = tmp_path / "damped.osim"
    ET.ElementTree(root).write(model, encoding="unicode")
    motion = needs(REF / "data" / "arm26" / "arm26_InverseKinematics.mot")
    with pytest.raises(ValueError, match=r"muscle 'TRIlong': fiber_damping must be 0 .* "
                                         r"--muscle-states none writes lengths and moment arms"):
        run(model, motion, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_bad_motion_arguments_and_states_files_are_refused(tmp_path):
    """Neither or both motions, a lowpass with a states file, a states file without a
    coordinate's speed, or with a non-finite state: ValueError naming the file and column
    (or line)."""
    model = needs(REF / "models" / "arm26.osim")
    states = tmp_path / "arm26_states.sto"
    _arm26_states(states, model)
    with pytest.raises(ValueError, match="either --coordinates FILE or --states FILE"):
        run(model, None, tmp_path / "out")
    with pytest.raises(ValueError, match="either --coordinates FILE or --states FILE"):
        run(model, states, tmp_path / "out", states_path=states)
    with pytest.raises(ValueError, match="--lowpass-hz 6.0 with --states"):
        run(model, None, tmp_path / "out", states_path=states, cutoff_hz=6.0)
    table = read_storage(states)
    speed = "/jointset/r_elbow/r_elbow_flex/speed"
    keep = [k for k, label in enumerate(table.labels) if label != speed]
    lacking = tmp_path / "lacking.sto"
    with StorageWriter(lacking, "states", [table.labels[k] for k in keep]) as writer:
        writer.write_rows(table.data[:, keep])
    with pytest.raises(ValueError, match=f"lacking.sto: no column '{speed}'"):
        run(model, None, tmp_path / "out", states_path=lacking)
    data = table.data.copy()
    label = "/forceset/TRIlong/activation"
    data[3, table.labels.index(label)] = np.nan
    broken = tmp_path / "broken.sto"
    with StorageWriter(broken, "states", table.labels) as writer:
        writer.write_rows(data)
    with pytest.raises(ValueError, match="broken.sto, line 11: non-finite value"):
        run(model, None, tmp_path / "out", states_path=broken)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("window, message", [
    ({"start_time_s": True}, "states.sto: the start time must be a number, got True"),
    ({"end_time_s": "0.5"}, "states.sto: the end time must be a number, got '0.5'"),
    ({"start_time_s": 0.5, "end_time_s": 0.2}, "states.sto: the time range [0.5, 0.2] s ends "
                                               "before it starts"),
])
def test_the_time_range_of_a_states_file_is_two_numbers_in_order(tmp_path, window, message):
    """(With --states, True was a start time of 1 s, a string a TypeError of a comparison and
    a reversed range 'no row between'.)"""
    states = tmp_path / "states.sto"
    with StorageWriter(states, "states", ("time", "a")) as w:
        w.write_rows([[0.0, 1.0]])
    with pytest.raises(ValueError) as err:
        run(needs(REF / "models" / "arm26.osim"), None, tmp_path / "out", states_path=states,
            **window)
    assert message in str(err.value)
    assert not (tmp_path / "out").exists()
