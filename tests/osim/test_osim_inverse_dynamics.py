"""`myotwin osim inverse-dynamics` against OpenSim 4.6's InverseDynamicsTool and solver.

Walking (gait10dof18musc_subject01.osim: planar pelvis, spline-coupled knees; the IK result
and ground reaction forces of subject01_walk) is run through our command and through the
`opensim` package's tool in the same test. The inputs are prepared identically
(osim/signals.py, osim/external_loads.py, each checked stage by stage in their own tests), so
what is left is the dynamics: tolerance 1e-7 N m / N on generalized forces of up to ~1.2e3
(the quintic splines' second derivatives agree to ~2e-12 relative, times inertias of O(10)
kg m^2; measured 4.2e-10, printed by this test and by
benchmarks/inverse_dynamics_vs_opensim.py).
"""

import json

import jax.numpy as jnp
import numpy as np
import pytest

from myotwin import osim
from myotwin.cli.main import main
from myotwin.engine import coupled_inverse_dynamics
from myotwin.osim.storage import read_storage
from opensim_live import opensim_package, run_inverse_dynamics_tool
from osim_synthetic import locked_copy
from shared_reference import SHARED, needs

opensim = opensim_package()

REF = SHARED / "reference/opensim"
MODEL = REF / "models/gait10dof18musc_subject01.osim"
DATA = REF / "data/gait10dof18musc"
IK, GRF_XML, ID_REF = (DATA / "subject01_walk_IK.mot", DATA / "subject01_walk_grf.xml",
                       DATA / "subject01_walk_ID.sto")


def _opensim_tool(out_dir, cutoff_hz, start_s, end_s):
    return run_inverse_dynamics_tool(out_dir, needs(MODEL), needs(IK), needs(GRF_XML),
                                     cutoff_hz, start_s, end_s)


def _ours(out_dir, cutoff_hz, start_s, end_s, capsys):
    args = ["osim", "inverse-dynamics", str(needs(MODEL)), "--coordinates", str(IK),
            "--external-loads", str(GRF_XML), "--start-s", str(start_s), "--end-s", str(end_s),
            "--out", str(out_dir)]
    if cutoff_hz > 0:
        args += ["--lowpass-hz", str(cutoff_hz)]
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary == json.loads((out_dir / "summary.json").read_text())
    return summary, read_storage(out_dir / "inverse_dynamics.sto")


@pytest.mark.parametrize("cutoff_hz, start_s, end_s", [(6.0, 0.0, 2.5), (-1.0, 0.5, 1.0)])
def test_walking_inverse_dynamics_matches_opensims_tool(tmp_path, capsys, cutoff_hz, start_s,
                                                       end_s):
    theirs = _opensim_tool(tmp_path, cutoff_hz, start_s, end_s)
    summary, ours = _ours(tmp_path / "ours", cutoff_hz, start_s, end_s, capsys)
    assert sorted(ours.labels) == sorted(theirs.labels)   # OpenSim lists them in tree order
    assert summary["n_rows"] == ours.data.shape[0] == theirs.data.shape[0]
    assert summary["external_forces"] == ["right", "left"]
    np.testing.assert_allclose(ours.time_s, theirs.time_s, rtol=0, atol=1e-12,
                               err_msg="output times (s)")
    for label in theirs.labels[1:]:
        np.testing.assert_allclose(ours.column(label), theirs.column(label), rtol=0, atol=1e-7,
                                   err_msg=f"{label} (N m or N)")
    worst = max(np.abs(ours.column(k) - theirs.column(k)).max() for k in theirs.labels[1:])
    print(f"largest difference to OpenSim's tool: {worst:.2e} N m or N")


def test_locks_are_ignored_as_in_opensims_tool(tmp_path, capsys):
    """OpenSim's InverseDynamicsSolver ignores constraints, locks included: with ankle_angle_r
    locked at 0.1 rad its tool takes the file's ankle angles and reports the ankle's moment
    like any other (its output equals the unlocked model's). Ours reads the model with locks
    off (`locks=False`): the same columns within the walking tolerance, 1e-7 N m / N."""
    model = locked_copy(needs(MODEL), tmp_path, "ankle_angle_r", 0.1)
    theirs = run_inverse_dynamics_tool(tmp_path, model, needs(IK), needs(GRF_XML), 6.0, 0.5,
                                       0.8)
    out = tmp_path / "ours"
    assert main(["osim", "inverse-dynamics", str(model), "--coordinates", str(IK),
                 "--external-loads", str(GRF_XML), "--start-s", "0.5", "--end-s", "0.8",
                 "--lowpass-hz", "6", "--out", str(out)]) == 0
    capsys.readouterr()
    ours = read_storage(out / "inverse_dynamics.sto")
    assert sorted(ours.labels) == sorted(theirs.labels) and "ankle_angle_r_moment" in ours.labels
    worst = max(np.abs(ours.column(k) - theirs.column(k)).max() for k in theirs.labels[1:])
    print(f"ankle_angle_r locked: largest difference to OpenSim's tool {worst:.2e} N m or N")
    assert worst <= 1e-7
    assert np.ptp(ours.column("ankle_angle_r_moment")) > 10.0   # a moment along the motion


def test_walking_inverse_dynamics_matches_the_published_result(tmp_path, capsys):
    """The ID result distributed with the model (OpenSim's own output of an earlier version,
    8 decimals): agreement to 1e-3 N m / N (OpenSim 4.6 itself differs from it by up to
    ~1e-4; SOURCE.md)."""
    reference = read_storage(needs(ID_REF))
    _, ours = _ours(tmp_path, 6.0, 0.0, 2.5, capsys)
    np.testing.assert_allclose(ours.time_s, reference.time_s, rtol=0, atol=1e-8)
    for label in reference.labels[1:]:
        np.testing.assert_allclose(ours.column(label), reference.column(label), rtol=0,
                                   atol=1e-3, err_msg=f"{label} (N m or N)")
    worst = max(np.abs(ours.column(k) - reference.column(k)).max()
                for k in reference.labels[1:])
    print(f"largest difference to the published result: {worst:.2e} N m or N")


def test_coupled_inverse_dynamics_matches_opensims_solver_at_random_states():
    """Random q, qd, qdd -- knee angles across and beyond the splines' knots (-2.09 to 0.17
    rad), where OpenSim extrapolates them linearly -- against OpenSim's InverseDynamicsSolver
    with the muscles off. Tolerance 1e-9 relative to the largest force: roundoff of two
    float64 recursive Newton-Euler evaluations (measured ~1e-13)."""
    loaded = osim.load(needs(MODEL), forces=False)
    model = opensim.Model(str(MODEL))
    state = model.initSystem()
    muscles = model.getMuscles()
    for i in range(muscles.getSize()):
        muscles.get(i).setAppliesForce(state, False)
    coords = model.getCoordinateSet()
    names = loaded.coordinates
    for k, name in enumerate(names):   # distinct speeds reveal each coordinate's u index
        coords.get(name).setSpeedValue(state, k + 1.0)
    u = state.getU()
    index = {name: next(i for i in range(u.size()) if u.get(i) == k + 1.0)
             for k, name in enumerate(names)}
    solver = opensim.InverseDynamicsSolver(model)
    rng = np.random.default_rng(3)
    knees = [names.index("knee_angle_r"), names.index("knee_angle_l")]
    for knee in (-2.6, -1.0, 0.0, 0.4):
        q = rng.uniform(-0.8, 0.8, len(names))
        q[knees] = knee
        qd, qdd = rng.uniform(-3, 3, len(names)), rng.uniform(-20, 20, len(names))
        for name, value, rate in zip(names, q, qd):
            coords.get(name).setValue(state, float(value), False)
            coords.get(name).setSpeedValue(state, float(rate))
        model.realizeVelocity(state)
        udot = opensim.Vector(state.getNU(), 0.0)
        for name in names:
            udot.set(index[name], float(qdd[names.index(name)]))
        tau = solver.solve(state, udot)
        theirs = np.array([tau.get(index[name]) for name in names])
        ours = np.asarray(coupled_inverse_dynamics(loaded.model, loaded.coupling,
                                                     *(jnp.asarray(a) for a in (q, qd, qdd))))
        scale = np.abs(theirs).max()
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-9 * scale,
                                   err_msg=f"knee angles {knee} rad")


@pytest.mark.parametrize("edit, message", [
    (lambda text: text.replace("pelvis_tilt\tpelvis_tx", "tilt\ttx").replace(
        "\tpelvis_ty", "\tty").replace("hip_flexion_r\t", "hip_r\t").replace(
        "knee_angle_r\t", "knee_r\t").replace("ankle_angle_r\t", "ankle_r\t").replace(
        "hip_flexion_l\t", "hip_l\t").replace("knee_angle_l\t", "knee_l\t").replace(
        "ankle_angle_l\t", "ankle_l\t").replace("lumbar_extension", "lumbar"),
     "no column names a coordinate of the model"),
    (lambda text: text.replace("10.32995988", "nan", 1),
     "line 12: non-finite value"),
    (lambda text: "\n".join(text.replace("nRows=151", "nRows=3").splitlines()[:14]) + "\n",
     "3 time rows; OpenSim's tools fit each coordinate with a quintic spline"),
])
def test_bad_coordinates_file_is_one_line(tmp_path, capsys, edit, message):
    bad = tmp_path / "bad.mot"
    bad.write_text(edit(needs(IK).read_text()))
    code = main(["osim", "inverse-dynamics", str(needs(MODEL)), "--coordinates", str(bad),
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "bad.mot" in err and "Traceback" not in err, err


def test_a_misspelt_column_is_listed_and_its_coordinate_missing(tmp_path, capsys):
    """arm26's IK table with r_elbow_flex misspelt: the column names no coordinate, so the
    elbow is held at its default (as OpenSim would hold it) and both show in summary.json."""
    ik = REF / "data/arm26/arm26_InverseKinematics.mot"
    bad = tmp_path / "typo.mot"
    bad.write_text(needs(ik).read_text().replace("\tr_elbow_flex", "\tr_elbow_flexx", 1))
    assert main(["osim", "inverse-dynamics", str(needs(REF / "models/arm26.osim")),
                 "--coordinates", str(bad),
                 "--out", str(tmp_path / "out")]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["coordinates_missing"] == ["r_elbow_flex"]
    assert summary["columns_not_coordinates"] == ["r_elbow_flexx"]


def test_default_time_range_reports_the_padded_rows_as_opensims_tool(tmp_path, capsys):
    """No --start-s/--end-s with a lowpass cutoff: OpenSim's tool (its default range is
    -inf..inf) reports every row of the padded table, 241 rows from -0.5 to 1.5 s for arm26's
    0-1 s IK result, and so does ours. Tolerance 1e-9 N m on moments of up to ~6 N m (both
    print 16 digits; the inputs are prepared identically: measured ~1e-14)."""
    model, ik = needs(REF / "models/arm26.osim"), needs(REF / "data/arm26/"
                                                        "arm26_InverseKinematics.mot")
    theirs = run_inverse_dynamics_tool(tmp_path, model, ik, None, 6.0, -np.inf, np.inf)
    assert main(["osim", "inverse-dynamics", str(model), "--coordinates", str(ik),
                 "--lowpass-hz", "6", "--out", str(tmp_path / "ours")]) == 0
    assert json.loads(capsys.readouterr().out)["n_rows"] == 241
    ours = read_storage(tmp_path / "ours" / "inverse_dynamics.sto")
    assert theirs.data.shape[0] == 241 and theirs.time_s[0] == pytest.approx(-0.5)
    np.testing.assert_allclose(ours.time_s, theirs.time_s, rtol=0, atol=1e-12)
    for label in theirs.labels[1:]:
        np.testing.assert_allclose(ours.column(label), theirs.column(label), rtol=0, atol=1e-9,
                                   err_msg=f"{label} (N m)")


def test_bad_external_loads_and_cutoff_are_one_line(tmp_path, capsys):
    xml = tmp_path / "grf.xml"
    xml.write_text(needs(GRF_XML).read_text().replace("<applied_to_body>calcn_r",
                                                      "<applied_to_body>heel_r"))
    (tmp_path / "subject01_walk_grf.mot").write_text((DATA / "subject01_walk_grf.mot")
                                                      .read_text())
    base = ["osim", "inverse-dynamics", str(needs(MODEL)), "--coordinates", str(IK),
            "--out", str(tmp_path / "out")]
    assert main(base + ["--external-loads", str(xml)]) == 2
    err = capsys.readouterr().err
    assert "ExternalForce 'right'" in err and "'heel_r' is not a body" in err, err
    assert main(base + ["--lowpass-hz", "0"]) == 2
    assert "--lowpass-hz must be positive" in capsys.readouterr().err
    # subject01_walk_IK.mot's smallest step is 0.01666666 s: half its rate is 30.0000012 Hz
    assert main(base + ["--lowpass-hz", "31"]) == 2
    err = capsys.readouterr().err
    assert ("subject01_walk_IK.mot: the lowpass cutoff 31.0 Hz is not below half the sampling "
            "rate (30 Hz" in err and "OpenSim lowers such a cutoff to 29.4 Hz" in err), err
    for args, message in ((["--start-s", "nan"], "the start time must be a number, got nan"),
                          (["--start-s", "3"], "the time range [3.0, inf] s lies outside the "
                                               "file's times (0.0 to 2.5 s)"),
                          (["--end-s", "-1"], "the time range [-inf, -1.0] s lies outside")):
        assert main(base + args) == 2
        err = capsys.readouterr().err
        assert "subject01_walk_IK.mot: " + message in err and err.count("\n") == 1, err


@pytest.mark.parametrize("kwargs, message", [
    ({"cutoff_hz": True}, "--lowpass-hz must be positive (omit it for no filtering), got True"),
    ({"cutoff_hz": -1.0}, "--lowpass-hz must be positive (omit it for no filtering), got -1.0"),
    ({"start_time_s": True}, "walk: the start time must be a number, got True"),
    ({"end_time_s": "2"}, "walk: the end time must be a number, got '2'"),
    ({"start_time_s": 2.0, "end_time_s": 1.0}, "walk: the time range [2.0, 1.0] s ends before"),
])
def test_prepared_motion_refuses_what_the_command_refuses(kwargs, message):
    """(prepared_motion did not check the cutoff: True was 1 Hz, -1 no filtering; True was a
    start time of 1 s, a string a TypeError of np.isnan; a reversed range named no file.)"""
    loaded = osim.load(needs(MODEL), forces=False, locks=False)
    with pytest.raises(ValueError) as err:
        osim.prepared_motion(loaded, read_storage(needs(IK)), source="walk", **kwargs)
    assert message in str(err.value)


def test_a_coordinate_missing_from_the_file_stays_at_its_default_as_in_opensim(tmp_path,
                                                                                capsys):
    """The IK table without its lumbar_extension column: both tools hold that coordinate at
    its default value (1e-7 N m / N, as above)."""
    lines = needs(IK).read_text().splitlines()
    head = lines.index("endheader") + 1
    drop = lines[head].split("\t").index("lumbar_extension")
    rows = ["\t".join(c for k, c in enumerate(line.split("\t")) if k != drop)
            for line in lines[head:]]
    table = tmp_path / "ik_without_lumbar.mot"
    table.write_text("\n".join(lines[:head]).replace("nColumns=11", "nColumns=10") + "\n"
                     + "\n".join(rows) + "\n")
    theirs = run_inverse_dynamics_tool(tmp_path, needs(MODEL), table, needs(GRF_XML), 6.0,
                                       0.0, 2.5)
    assert main(["osim", "inverse-dynamics", str(MODEL), "--coordinates", str(table),
                 "--external-loads", str(GRF_XML), "--lowpass-hz", "6", "--start-s", "0",
                 "--end-s", "2.5", "--out", str(tmp_path / "ours")]) == 0
    assert json.loads(capsys.readouterr().out)["coordinates_missing"] == ["lumbar_extension"]
    ours = read_storage(tmp_path / "ours" / "inverse_dynamics.sto")
    for label in theirs.labels[1:]:
        np.testing.assert_allclose(ours.column(label), theirs.column(label), rtol=0, atol=1e-7,
                                   err_msg=f"{label} (N m or N)")


def test_state_path_column_labels_read_as_the_coordinates(tmp_path):
    """A coordinates file whose columns carry OpenSim 4's state paths (what OpenSim's states
    tables write, e.g. `/jointset/knee_r/knee_angle_r/value`; the labels are taken from
    OpenSim's own getStateVariableNames, not from our loader) prepares the same motion, bit
    for bit, as the file with bare coordinate names."""
    from myotwin.osim.inverse_dynamics import prepared_motion

    model = opensim.Model(str(needs(MODEL)))
    model.initSystem()
    names = model.getStateVariableNames()
    paths = {p.split("/")[-2]: p for p in (names.get(i) for i in range(names.getSize()))
             if p.endswith("/value")}
    lines = needs(IK).read_text().splitlines()
    head = lines.index("endheader") + 1
    labels = lines[head].split("\t")
    renamed = [paths.get(label.strip(), label) for label in labels]
    assert sum(a != b for a, b in zip(labels, renamed)) == len(labels) - 1   # all but time
    table = tmp_path / "ik_state_paths.mot"
    table.write_text("\n".join(lines[:head] + ["\t".join(renamed)] + lines[head + 1:]) + "\n")
    loaded = osim.load(MODEL, forces=False)
    plain = prepared_motion(loaded, read_storage(IK), cutoff_hz=6.0)
    paths_motion = prepared_motion(loaded, read_storage(table), cutoff_hz=6.0)
    assert paths_motion.missing == () == plain.missing
    for field in ("times_s", "q", "qd", "qdd"):
        np.testing.assert_array_equal(getattr(paths_motion, field), getattr(plain, field))
