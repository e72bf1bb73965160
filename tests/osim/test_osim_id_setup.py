"""`myotwin osim run-tool SETUP.xml` on InverseDynamicsTool setup files (`osim.id_setup`),
against OpenSim 4.6's InverseDynamicsTool run on the same file (`osim.InverseDynamicsTool(
setup).run()`, what `opensim-cmd run-tool` does, output printed to 16 digits), column by
column (OpenSim lists the columns in its tree order: compared by label).

OpenSim runs in the setup's folder: it opens a relative model_file from the working
directory (the other paths from the setup's folder), and run-tool is used so.

Tolerances, as in test_osim_inverse_dynamics.py (same computation, same inputs):
* subject01 walking with its GRF, 6 Hz, 0.5-0.7 s: 1e-7 N m / N on forces up to ~1e3 (the
  quintic splines' qdd agree to ~2e-12 relative); observed 3.8e-10 when written;
* arm26 (moments of a few N m): 1e-9 N m; observed 1.1e-12 when written.
The largest difference is printed (`pytest -s`).

forces_to_exclude, as OpenSim 4.6 reads it (found by running it, module docstring of
`osim.id_setup`): All keeps the external loads (subject01's GRF applied: the walking case
uses All); keywords in any case; a ForceSet with groups reads other words as group names
only. Setups whose OpenSim result has a force of the model in it are refused, and the
refusal tests show OpenSim's result there differs from the all-excluded one.
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from myotwin.cli.main import main
from myotwin.osim.storage import read_storage
from opensim_live import opensim_package, run_printing_16_digits
from osim_synthetic import with_coordinate_actuators
from shared_reference import SHARED, needs

REF = SHARED / "reference/opensim"
ARM26 = REF / "models/arm26.osim"
ARM26_IK = REF / "data/arm26/arm26_InverseKinematics.mot"
GAIT = REF / "models/gait10dof18musc_subject01.osim"
GAIT_DATA = REF / "data/gait10dof18musc"
MUSCLES = ("TRIlong", "TRIlat", "TRImed", "BIClong", "BICshort", "BRA")
#: arm26's moments without muscles: the largest difference allowed (N m).
ARM26_TOLERANCE = 1e-9


def _setup_text(name="id", **properties) -> str:
    """An InverseDynamicsTool setup document with `properties` (tag -> text) in that order."""
    body = "".join(f"<{tag}>{text}</{tag}>" for tag, text in properties.items())
    return ('<?xml version="1.0" encoding="UTF-8" ?><OpenSimDocument Version="40600">'
            f'<InverseDynamicsTool name="{name}">{body}</InverseDynamicsTool>'
            "</OpenSimDocument>")


def _opensim(setup, monkeypatch, file_name="opensim_id.sto", results="results"):
    """OpenSim's tool run on the setup file in its folder; the table it wrote."""
    osim = opensim_package()
    with monkeypatch.context() as patch:
        patch.chdir(setup.parent)
        run_printing_16_digits(osim, osim.InverseDynamicsTool(str(setup)))
    return read_storage(setup.parent / results / file_name)


def _ours(setup, capsys, out=None):
    """run-tool on the setup (into `out`, else its results_directory): (summary, table)."""
    args = ["osim", "run-tool", str(setup)] + ([] if out is None else ["--out", str(out)])
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    return summary, read_storage(summary["files"]["generalized_forces"])


def _largest_difference(ours, theirs) -> float:
    """Same columns and times; the largest difference of the generalized forces."""
    assert sorted(ours.labels) == sorted(theirs.labels)
    np.testing.assert_allclose(ours.time_s, theirs.time_s, rtol=0, atol=1e-12)
    return max(float(np.abs(ours.column(k) - theirs.column(k)).max())
               for k in theirs.labels[1:])


def test_a_walking_setup_with_external_loads_and_relative_paths(tmp_path, monkeypatch,
                                                                 capsys):
    """subject01 with its GRF, 0.5-0.7 s at 6 Hz, every path relative, forces_to_exclude All
    (OpenSim 4.6 keeps the loads: without them its result is 924 N off ours); our files go
    to the setup's results_directory, beside OpenSim's."""
    data = tmp_path / "data"
    data.mkdir()
    for name in ("subject01_walk_IK.mot", "subject01_walk_grf.xml", "subject01_walk_grf.mot"):
        shutil.copy(needs(GAIT_DATA / name), data / name)
    shutil.copy(needs(GAIT), data / GAIT.name)
    setups = tmp_path / "setups"
    setups.mkdir()
    setup = setups / "walk_id.xml"
    setup.write_text(_setup_text(
        "walk", results_directory="results", model_file=f"../data/{GAIT.name}",
        time_range="0.5 0.7", forces_to_exclude="All",
        external_loads_file="../data/subject01_walk_grf.xml",
        coordinates_file="../data/subject01_walk_IK.mot",
        lowpass_cutoff_frequency_for_coordinates="6", output_gen_force_file="opensim_id.sto"))
    theirs = _opensim(setup, monkeypatch)
    summary, ours = _ours(setup, capsys)
    assert summary["files"]["generalized_forces"] == str(setups / "results"
                                                         / "inverse_dynamics.sto")
    assert summary["setup"] == "walk_id.xml" and summary["tool_type"] == "InverseDynamicsTool"
    assert summary["forces_to_exclude"] == ["All"]
    assert summary["external_forces"] == ["right", "left"] and summary["lowpass_cutoff_hz"] == 6
    written = json.loads((setups / "results" / "summary.json").read_text())
    assert (written["tool_type"], written["setup"]) == ("InverseDynamicsTool", setup.name)
    worst = _largest_difference(ours, theirs)
    print(f"subject01 walk setup (All, GRF): largest difference to OpenSim {worst:.1e} N m or N")
    assert worst <= 1e-7
    # the loads carry the body: the pelvis's vertical residual stays small (without them it
    # is the weight and more, 924 N off at most)
    assert np.abs(ours.column("pelvis_ty_force")).max() < 100.0


def _arm26_model(folder, edit):
    """arm26.osim copied to `folder` (edited: "actuators" adds two CoordinateActuators,
    "groups" the ForceSet groups flexors and extensors, "disabled" sets every muscle's
    appliesForce false); its file name."""
    text = needs(ARM26).read_text()
    if edit == "actuators":
        text = with_coordinate_actuators(text, {"r_shoulder_elev": 50.0,
                                                "r_elbow_flex": 100.0})
    elif edit == "groups":
        root = ET.fromstring(text)
        groups = root.find(".//ForceSet/groups")
        for name, members in (("flexors", "BIClong BICshort BRA"),
                              ("extensors", "TRIlong TRIlat TRImed")):
            ET.SubElement(ET.SubElement(groups, "ObjectGroup", name=name),
                          "members").text = members
        text = ET.tostring(root, encoding="unicode")
    elif edit == "disabled":
        root = ET.fromstring(text)
        for muscle in root.iter("Thelen2003Muscle"):
            muscle.find("appliesForce").text = "false"
        text = ET.tostring(root, encoding="unicode")
    (folder / "arm26.osim").write_text(text)
    return "arm26.osim"


def _arm26_setup(folder, excluded, model_edit=None, **more):
    """An arm26 setup in `folder` (model and IK table copied there; relative paths), 0.2-0.4
    s at 6 Hz unless `more` says otherwise."""
    shutil.copy(needs(ARM26_IK), folder / ARM26_IK.name)
    properties = {"results_directory": "results",
                  "model_file": _arm26_model(folder, model_edit),
                  "time_range": "0.2 0.4", "forces_to_exclude": excluded,
                  "coordinates_file": ARM26_IK.name,
                  "lowpass_cutoff_frequency_for_coordinates": "6",
                  "output_gen_force_file": "opensim_id.sto"}
    properties.update(more)
    setup = folder / "arm26_id.xml"
    setup.write_text(_setup_text("arm", **properties))
    return setup


@pytest.mark.parametrize("excluded, model_edit, expected", [
    ("muscles", None, {}),
    (" ".join(MUSCLES), None, {}),
    ("Muscles", "actuators",
     {"actuators_at_zero_control": ["res_r_shoulder_elev", "res_r_elbow_flex"]}),
    ("Actuators", "actuators", {"actuators_at_zero_control": []}),
    ("flexors extensors nosuch", "groups", {"forces_to_exclude_not_found": ["nosuch"]}),
    ("", "disabled", {}),
])
def test_arm26_setups_whose_forces_are_all_excluded(tmp_path, monkeypatch, capsys, excluded,
                                                    model_edit, expected):
    """Each way of excluding arm26's six muscles OpenSim 4.6 honours (a keyword in another
    case, their names, groups, Actuators); CoordinateActuators left in without controllers
    apply nothing in OpenSim (control 0); an unknown word is listed, as OpenSim warns;
    muscles the model disables (appliesForce false) need no exclusion."""
    setup = _arm26_setup(tmp_path, excluded, model_edit)
    theirs = _opensim(setup, monkeypatch)
    summary, ours = _ours(setup, capsys, tmp_path / "ours")
    assert summary["forces_to_exclude"] == excluded.split()
    for key, value in expected.items():
        assert summary[key] == value
    worst = _largest_difference(ours, theirs)
    print(f"arm26, forces_to_exclude {excluded!r}: largest difference {worst:.1e} N m")
    assert worst <= ARM26_TOLERANCE


@pytest.mark.parametrize("in_degrees", ["true", "false"])
def test_opensim_2s_coordinates_in_degrees_changes_nothing_as_in_opensim(tmp_path, monkeypatch,
                                                                        capsys, in_degrees):
    """OpenSim's arm26 tutorial setup (OpenSim 2) has <coordinates_in_degrees>; OpenSim 4.6
    ignores it (the .mot's inDegrees header decides), false included, and so does run-tool."""
    setup = _arm26_setup(tmp_path, "Muscles", coordinates_in_degrees=in_degrees)
    theirs = _opensim(setup, monkeypatch)
    _, ours = _ours(setup, capsys, tmp_path / "ours")
    worst = _largest_difference(ours, theirs)
    print(f"arm26, coordinates_in_degrees {in_degrees}: largest difference {worst:.1e} N m")
    assert worst <= ARM26_TOLERANCE


def test_the_setup_opensim_writes_runs_over_the_whole_file(tmp_path, monkeypatch, capsys):
    """A setup printed by OpenSim's own InverseDynamicsTool (its ten properties; time_range
    ` -inf inf` and cutoff -1 by default), Muscles excluded: ours runs it as printed, over
    every row of the file, unfiltered. OpenSim 4.6 cannot read the time_range it printed, so
    it runs the same file without it (its default, the same range)."""
    osim = opensim_package()
    shutil.copy(needs(ARM26), tmp_path / ARM26.name)
    shutil.copy(needs(ARM26_IK), tmp_path / ARM26_IK.name)
    tool = osim.InverseDynamicsTool()
    tool.setName("printed")
    tool.setModelFileName(ARM26.name)
    tool.setCoordinatesFileName(ARM26_IK.name)
    excluded = osim.ArrayStr()
    excluded.append("Muscles")
    tool.setExcludedForces(excluded)
    tool.setResultsDir("results")
    setup = tmp_path / "printed.xml"
    tool.printToXML(str(setup))
    root = ET.parse(setup).getroot()
    element = root.find("InverseDynamicsTool")
    assert len(element) == 10 and element.findtext("time_range").split() == ["-inf", "inf"]
    with pytest.raises(RuntimeError, match="Couldn't interpret string '-inf inf'"):
        osim.InverseDynamicsTool(str(setup))
    element.remove(element.find("time_range"))
    ET.ElementTree(root).write(tmp_path / "without_time_range.xml", encoding="unicode")
    theirs = _opensim(tmp_path / "without_time_range.xml", monkeypatch,
                      file_name="inverse_dynamics.sto")
    summary, ours = _ours(setup, capsys, tmp_path / "ours")
    assert summary["lowpass_cutoff_hz"] is None and summary["tool"] == "printed"
    assert summary["n_rows"] == theirs.data.shape[0] == read_storage(ARM26_IK).data.shape[0]
    worst = _largest_difference(ours, theirs)
    print(f"arm26, OpenSim's printed setup: largest difference {worst:.1e} N m")
    assert worst <= ARM26_TOLERANCE


def _with_controller(folder) -> str:
    """arm26 with its CoordinateActuators (`_arm26_model`) and a PrescribedController holding
    res_r_elbow_flex's control at 1, written by OpenSim; its file name."""
    osim = opensim_package()
    _arm26_model(folder, "actuators")
    model = osim.Model(str(folder / "arm26.osim"))
    controller = osim.PrescribedController()
    controller.setName("drive")
    controller.addActuator(model.getActuators().get("res_r_elbow_flex"))
    controller.prescribeControlForActuator("res_r_elbow_flex", osim.Constant(1.0))
    model.addController(controller)
    model.finalizeConnections()
    model.printToXML(str(folder / "arm26.osim"))
    return "arm26.osim"


@pytest.mark.parametrize("excluded, model_edit, message", [
    ("", None, "<forces_to_exclude> '' leaves Thelen2003Muscle 'TRIlong' of arm26.osim "
     "applying its force"),
    (" ".join(MUSCLES), "groups", "leaves Thelen2003Muscle 'TRIlong' of arm26.osim applying "
     "its force (the generalized forces are computed with every force of the model excluded;"
     " a muscle's force depends on its state, which inverse dynamics does not have); this "
     "ForceSet has groups, so OpenSim 4.6 reads the names as group names only: exclude it"),
    ("Muscles", "controller", "leaves CoordinateActuator 'res_r_shoulder_elev' of arm26.osim "
     "applying its force (the generalized forces are computed with every force of the model "
     "excluded; the 1 controller(s) of the model may drive it)"),
])
def test_a_setup_leaving_a_force_in_is_refused(tmp_path, monkeypatch, capsys, excluded,
                                               model_edit, message):
    """OpenSim's result with the force left in differs from its result with every force
    excluded by more than 50 N m (the refusal is needed), and ours is one line naming it."""
    reference = tmp_path / "reference"
    reference.mkdir()
    expected = _opensim(_arm26_setup(reference, "All"), monkeypatch)
    if model_edit == "controller":
        setup = _arm26_setup(tmp_path, excluded)
        _with_controller(tmp_path)
    else:
        setup = _arm26_setup(tmp_path, excluded, model_edit)
    theirs = _opensim(setup, monkeypatch)
    off = max(float(np.abs(theirs.column(k) - expected.column(k)).max())
              for k in expected.labels[1:])
    status = main(["osim", "run-tool", str(setup), "--out", str(tmp_path / "ours")])
    err = capsys.readouterr().err
    print(f"arm26, forces_to_exclude {excluded!r} ({model_edit}): OpenSim {off:.0f} N m off")
    assert off > 50.0
    assert status == 2 and err.count("\n") == 1, err
    assert "arm26_id.xml: InverseDynamicsTool 'arm': " in err and message in err, err
    assert not (tmp_path / "ours").exists()


@pytest.mark.parametrize("more, message", [
    ({"states_file": "s.sto"}, "<states_file> is not part of the supported subset"),
    ({"joints_to_report_body_forces": "r_elbow"}, "<joints_to_report_body_forces> must be "
     "empty (body forces at joints are not computed), got 'r_elbow'"),
    ({"time_range": "0.5"}, "<time_range> must be 2 numbers, got '0.5'"),
    ({"time_range": "0.4 0.2"}, "<time_range> must be two times, first <= last, got "
     "'0.4 0.2'"),
    ({"time_range": "nan 1"}, "<time_range> must be finite, got 'nan 1'"),
    ({"lowpass_cutoff_frequency_for_coordinates": "0"},
     "<lowpass_cutoff_frequency_for_coordinates> 0 is not offered (OpenSim 4.6 filters at a "
     "0 Hz cutoff)"),
    ({"lowpass_cutoff_frequency_for_coordinates": "six"},
     "<lowpass_cutoff_frequency_for_coordinates> must be a number, got 'six'"),
    ({"coordinates_file": "Unassigned"}, "<coordinates_file> is empty"),
    ({"model_file": ""}, "<model_file> is empty"),
    ({"forces_to_exclude": "TRIlong TRIlat TRImed BIClong BICshort"},
     "<forces_to_exclude> 'TRIlong TRIlat TRImed BIClong BICshort' leaves Thelen2003Muscle "
     "'BRA' of arm26.osim applying its force"),
    ({"model_file": "missing.osim"}, "missing.osim: cannot read the file"),
])
def test_bad_setups_are_one_line(tmp_path, capsys, more, message):
    setup = _arm26_setup(tmp_path, "Muscles", **more)
    status = main(["osim", "run-tool", str(setup), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1, err
    assert message in err, err
    if "missing.osim" not in message:
        assert "arm26_id.xml: InverseDynamicsTool 'arm': " in err, err
    assert not (tmp_path / "out").exists()


def test_the_muscle_and_actuator_classes_are_opensims():
    """`force_reading.MUSCLE_TAGS` and `ACTUATOR_TAGS` are the concrete Muscle and other Actuator
    classes of the opensim package (what its Muscles and Actuators keywords exclude)."""
    from myotwin.osim.force_reading import ACTUATOR_TAGS, MUSCLE_TAGS

    osim = opensim_package()

    def concrete(base, but=None):
        found = set()
        for name in dir(osim):
            cls = getattr(osim, name)
            if not (isinstance(cls, type) and issubclass(cls, base)):
                continue
            if but is not None and issubclass(cls, but):
                continue
            try:
                cls()
            except (TypeError, AttributeError, RuntimeError):
                continue                        # abstract: no constructor
            found.add(name)
        return found

    assert set(MUSCLE_TAGS) == concrete(osim.Muscle)
    assert set(ACTUATOR_TAGS) == concrete(osim.Actuator, but=osim.Muscle)
