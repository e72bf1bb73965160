"""External loads (`myotwin.osim.external_loads`) against the live OpenSim 4.6 package.

References: OpenSim's `ExternalLoads(file, True)` added to the gait model, whose
`ExternalForce.getForceAtTime / getPointAtTime / getTorqueAtTime` are what the inverse
dynamics tool applies at each time, and `getRecordValues`, which re-expresses them with a state
as `computeForce` does. Tolerances: OpenSim's cubic GCVSpline stops its smoothing at 1e-15/el
instead of interpolating exactly (measured 3e-14 of each column's largest magnitude); constants
and piecewise-linear functions are the same arithmetic (1e-15).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from myotwin.osim import signals
from myotwin.osim.errors import OsimError
from myotwin.osim.external_loads import evaluate_external_loads, read_external_loads
from myotwin.osim.storage import read_storage
from opensim_live import opensim_package
from shared_reference import SHARED, needs
from storage_files import write_mot

opensim = opensim_package()

DATA = SHARED / "reference/opensim/data/gait10dof18musc"
MODEL = SHARED / "reference/opensim/models/gait10dof18musc_subject01.osim"
GRF_XML = DATA / "subject01_walk_grf.xml"
GRF_MOT = DATA / "subject01_walk_grf.mot"
GETTERS = (("force_N", "getForceAtTime"), ("point_m", "getPointAtTime"),
           ("torque_Nm", "getTorqueAtTime"))

LOADS_V4 = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
  <ExternalLoads name="synthetic">
    <objects>
      <ExternalForce name="push">
        <appliesForce>true</appliesForce>
        <applied_to_body>calcn_r</applied_to_body>
        <force_expressed_in_body>ground</force_expressed_in_body>
        <point_expressed_in_body>ground</point_expressed_in_body>
        <force_identifier>f_v</force_identifier>
        <point_identifier>f_p</point_identifier>
        <torque_identifier>m_</torque_identifier>
        <data_source_name>Unassigned</data_source_name>
      </ExternalForce>
    </objects>
    <groups />
    <datafile>loads.mot</datafile>
  </ExternalLoads>
</OpenSimDocument>
"""


def _opensim_loads(xml_path):
    """OpenSim's ExternalLoads from `xml_path`, connected to the gait model (as the ID tool
    does), and the model's default state. Keep the model referenced while the loads are used:
    the model owns them."""
    model = opensim.Model(str(needs(MODEL)))
    loads = opensim.ExternalLoads(str(xml_path), True)
    model.addModelComponent(loads)
    state = model.initSystem()
    return model, loads, state


def _opensim_values(force, getter, times):
    return np.array([[getattr(force, getter)(float(t)).get(k) for k in range(3)]
                     for t in times])


def test_reads_the_gait_loads():
    loads = read_external_loads(needs(GRF_XML))
    assert loads.name == "WalkingGRF" and loads.datafile == GRF_MOT
    assert [f.name for f in loads.forces] == ["right", "left"]
    right = loads.force("right")
    assert right.applies_force and right.applied_to_body == "calcn_r"
    assert right.force_expressed_in_body == right.point_expressed_in_body == "ground"
    assert right.force_columns == ("ground_force_vx", "ground_force_vy", "ground_force_vz")
    assert right.point_columns == ("ground_force_px", "ground_force_py", "ground_force_pz")
    assert right.torque_columns == ("ground_torque_x", "ground_torque_y", "ground_torque_z")
    assert loads.force("left").force_columns[0] == "1_ground_force_vx"
    assert right.data_source_name == "Unassigned"     # overridden by the datafile
    with pytest.raises(KeyError, match="the forces are"):
        loads.force("middle")


def test_gait_loads_equal_opensims_at_the_tool_times_and_beyond():
    loads = read_external_loads(needs(GRF_XML))
    ik = read_storage(needs(DATA / "subject01_walk_IK.mot"))
    # the ID tool's times (the first, -5e-7 s, precedes the GRF data), and some outside
    times = np.concatenate([signals.output_times(ik.time_s, 0.0, 2.5, 6.0),
                            [-0.05, -0.001, 2.5, 2.5 + 1e-4, 2.56]])
    model, os_loads, state = _opensim_loads(GRF_XML)
    evaluated = evaluate_external_loads(loads, times)
    assert [a.name for a in evaluated] == ["right", "left"]
    for load in evaluated:
        force = os_loads.get(load.name)
        for attr, getter in GETTERS:
            theirs = _opensim_values(force, getter, times)
            scale = np.maximum(np.abs(theirs).max(axis=0), 1.0)   # zero columns: absolute
            err = float(np.max(np.abs(getattr(load, attr) - theirs).max(axis=0) / scale))
            # measured 3.1e-14 (GCVSPL's smoothing floor vs exact cubic interpolation)
            assert err < 1e-12, f"{load.name} {attr}: relative error {err:.2e}"
        assert load.force_frame == load.point_frame == load.torque_frame == "ground"


def test_frames_are_those_opensim_applies_with_the_state():
    # getRecordValues re-expresses as computeForce does: force and torque in ground, the
    # point in the applied body with the state's kinematics.
    loads = read_external_loads(needs(GRF_XML))
    model, os_loads, state = _opensim_loads(GRF_XML)
    coords = model.getCoordinateSet()
    for name, value in (("pelvis_tilt", 0.1), ("pelvis_tx", 0.4), ("hip_flexion_r", 0.3),
                        ("knee_angle_r", -0.5), ("ankle_angle_r", 0.2)):
        coords.get(name).setValue(state, value, False)
    t = 0.5321
    state.setTime(t)
    model.realizeVelocity(state)
    load = evaluate_external_loads(loads, [t])[0]
    record = os_loads.get("right").getRecordValues(state)
    record = np.array([record.get(i) for i in range(record.getSize())])
    body = model.getBodySet().get(load.applied_to_body)
    point = model.getGround().findStationLocationInAnotherFrame(
        state, opensim.Vec3(*load.point_m[0]), body)
    np.testing.assert_allclose(record[0:3], load.force_N[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(record[3:6], [point.get(k) for k in range(3)], rtol=0,
                               atol=1e-14)                    # metres, roundoff of a transform
    np.testing.assert_allclose(record[6:9], load.torque_Nm[0], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n_rows", [1, 2, 3, 6])
def test_short_data_are_constant_linear_or_cubic_like_opensim(tmp_path, n_rows):
    times = np.array([0.0, 0.25, 0.5, 0.8, 1.0, 1.4])[:n_rows]
    rng = np.random.default_rng(n_rows)
    columns = {f"{prefix}{axis}": rng.normal(size=n_rows)
               for prefix in ("f_v", "f_p", "m_") for axis in "xyz"}
    write_mot(tmp_path / "loads.mot", times, columns)
    (tmp_path / "loads.xml").write_text(LOADS_V4)
    t = np.array([-0.3, 0.0, 0.1, 0.3, 0.55, 0.9, 1.4, 2.0])
    load = evaluate_external_loads(read_external_loads(tmp_path / "loads.xml"), t)[0]
    model, os_loads, state = _opensim_loads(tmp_path / "loads.xml")
    for attr, getter in GETTERS:
        theirs = _opensim_values(os_loads.get("push"), getter, t)
        # constant/linear: same arithmetic; cubic: GCVSPL's floor (values ~1, incl. 0.6 s of
        # linear extension)
        np.testing.assert_allclose(getattr(load, attr), theirs, rtol=0, atol=1e-12,
                                   err_msg=f"{attr} from {n_rows} rows")


def test_disabled_and_pointless_forces(tmp_path):
    write_mot(tmp_path / "loads.mot", np.arange(5) * 0.1,
               {f"{p}{a}": np.arange(5.0) + k for k, (p, a) in
                enumerate((p, a) for p in ("f_v", "f_p", "m_") for a in "xyz")})
    off = LOADS_V4.replace("<appliesForce>true", "<appliesForce>false")
    (tmp_path / "off.xml").write_text(off)
    loads = read_external_loads(tmp_path / "off.xml")
    assert not loads.forces[0].applies_force
    assert evaluate_external_loads(loads, [0.1]) == ()
    assert len(evaluate_external_loads(loads, [0.1], include_disabled=True)) == 1
    # no point: the force acts at the applied body's origin; no torque: zeros
    bare = (LOADS_V4.replace("<point_identifier>f_p</point_identifier>",
                             "<point_identifier />")
            .replace("<torque_identifier>m_</torque_identifier>",
                     "<torque_identifier>Unassigned</torque_identifier>"))
    (tmp_path / "bare.xml").write_text(bare)
    load = evaluate_external_loads(read_external_loads(tmp_path / "bare.xml"), [0.2])[0]
    assert load.point_frame == "calcn_r" and np.all(load.point_m == 0.0)
    assert np.all(load.torque_Nm == 0.0)
    np.testing.assert_allclose(load.force_N[0], [2.0, 3.0, 4.0], rtol=0, atol=1e-12)


def test_opensim3_is_disabled_is_applies_force_negated(tmp_path):
    path = _gait_copy(tmp_path, "<isDisabled>false</isDisabled>", "<isDisabled>true</isDisabled>")
    loads = read_external_loads(path)
    model, os_loads, state = _opensim_loads(path)
    for force in loads.forces:
        assert force.applies_force == os_loads.get(force.name).get_appliesForce(), force.name
    assert [a.name for a in evaluate_external_loads(loads, [0.5])] == ["left"]


def test_a_force_without_either_flag_applies_force_as_in_opensim(tmp_path):
    # neither appliesForce nor isDisabled: OpenSim's default, appliesForce true
    path = _gait_copy(tmp_path, "<isDisabled>false</isDisabled>", "")
    loads = read_external_loads(path)
    model, os_loads, state = _opensim_loads(path)
    assert loads.forces[0].applies_force and os_loads.get(loads.forces[0].name).get_appliesForce()
    for force in loads.forces:
        assert force.applies_force == os_loads.get(force.name).get_appliesForce(), force.name


def _gait_copy(tmp_path, old: str = "", new: str = "") -> Path:
    """The gait loads in tmp_path with `old` replaced by `new` in the XML: the XML's path."""
    shutil.copy(needs(GRF_MOT), tmp_path / GRF_MOT.name)
    text = needs(GRF_XML).read_text()
    assert old in text
    path = tmp_path / GRF_XML.name
    path.write_text(text.replace(old, new, 1))
    return path


RIGHT = "subject01_walk_grf.xml: ExternalForce 'right' (ExternalLoads WalkingGRF): "


@pytest.mark.parametrize("old, new, message", [
    ("<isDisabled>false</isDisabled>", "<isDisabled>maybe</isDisabled>",
     RIGHT + "<isDisabled> must be true or false, got 'maybe'"),
    ("<force_identifier>ground_force_v</force_identifier>",
     "<force_identifier>ground_force_q</force_identifier>",
     RIGHT + "<force_identifier> 'ground_force_q' matches 0 columns of "
             "'subject01_walk_grf.mot' ([]); exactly 3"),
    ("<force_identifier>ground_force_v</force_identifier>",
     "<force_identifier>ground_force_</force_identifier>",
     RIGHT + "<force_identifier> 'ground_force_' matches 6 columns"),
    ("<applied_to_body>calcn_r</applied_to_body>", "",
     RIGHT + "the required property <applied_to_body> is missing"),
    ("<applied_to_body>calcn_r</applied_to_body>", "<applied_to_body />",
     RIGHT + "<applied_to_body> is empty"),
    ("<point_expressed_in_body>ground</point_expressed_in_body>", "",
     RIGHT + "the required property <point_expressed_in_body> is missing"),
    ("<isDisabled>false</isDisabled>", "<isDisabled>false</isDisabled>"
     "<appliesForce>true</appliesForce>",
     RIGHT + "at most one of <appliesForce> (OpenSim 4) and <isDisabled> (OpenSim 3) may be "
     "given, got ['appliesForce', 'isDisabled']"),
    ("<data_source_name>Unassigned</data_source_name>",
     "<data_source_name>Unassigned</data_source_name><body>calcn_r</body>",
     RIGHT + "<body> is not part of the supported subset"),
    ("<force_identifier>ground_force_v</force_identifier>", "<force_identifier />",
     RIGHT + "<point_identifier> 'ground_force_p' is given for no applied force"),
    ("<datafile>subject01_walk_grf.mot</datafile>", "<datafile>missing.mot</datafile>",
     "subject01_walk_grf.xml: ExternalLoads 'WalkingGRF': <datafile> 'missing.mot': "
     "missing.mot: cannot read the file"),
    ("<datafile>subject01_walk_grf.mot</datafile>", "",
     "subject01_walk_grf.xml: ExternalLoads 'WalkingGRF': the required property <datafile> "
     "is missing"),
    ('<ExternalForce name="left">', '<ExternalForce name="right">',
     "subject01_walk_grf.xml: ExternalForce 'right' (ExternalLoads WalkingGRF): two "
     "ExternalForces have this name"),
    ('Version="30000"', 'Version="20000"',
     "subject01_walk_grf.xml: OpenSimDocument: Version 20000 is the PrescribedForces format"),
    ("</ExternalLoads>", "", "subject01_walk_grf.xml: unreadable XML"),
])
def test_bad_files_are_osim_errors_naming_file_element_and_value(tmp_path, old, new, message):
    path = _gait_copy(tmp_path, old, new)
    with pytest.raises(OsimError) as caught:
        read_external_loads(path)
    assert message in str(caught.value)


def test_missing_xml_and_bad_data_times(tmp_path):
    with pytest.raises(OsimError, match="nowhere.xml: cannot read the file"):
        read_external_loads(tmp_path / "nowhere.xml")
    times = np.array([0.0, 0.1, 0.1, 0.2, 0.3])
    write_mot(tmp_path / "loads.mot", times,
               {f"{p}{a}": np.zeros(5) for p in ("f_v", "f_p", "m_") for a in "xyz"})
    (tmp_path / "loads.xml").write_text(LOADS_V4)
    with pytest.raises(OsimError, match=r"ExternalForce 'push' \(ExternalLoads synthetic\): "
                                        r"the times of 'loads.mot' must increase strictly"):
        read_external_loads(tmp_path / "loads.xml")
