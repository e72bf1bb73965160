"""IK task sets (`myotwin.osim.ik_tasks`): standalone task sets and IK tool setup files.

Reference: OpenSim 4.6 reading the same synthetic files (`IKTaskSet(path)`,
`InverseKinematicsTool(path).getIKTaskSet()`): names, kinds, apply, weights, value types and
values must agree, defaults included (OpenSim's weight default is 0). Every refusal names the
file, the element, the task and the value.
"""

from __future__ import annotations

import pytest

from myotwin.osim.ik_tasks import (CoordinateTask, IKTaskError, IKTasks, MarkerTask,
                                   read_ik_tasks)

TASKS = """
      <IKMarkerTask name="r_acromion"><apply>true</apply><weight>1</weight></IKMarkerTask>
      <!-- a comment between tasks -->
      <IKMarkerTask name="r_radius_styloid">
        <apply>false</apply>
        <weight>12.5</weight>
      </IKMarkerTask>
      <IKMarkerTask name="bare" />
      <IKCoordinateTask name="r_elbow_flex"><apply>true</apply><weight>0.5</weight>
        <value_type>manual_value</value_type><value>-0.25</value></IKCoordinateTask>
      <IKCoordinateTask name="r_shoulder_elev"><weight>2</weight>
        <value_type>Default_Value</value_type></IKCoordinateTask>
      <IKCoordinateTask name="pelvis_tx"><apply> FALSE </apply></IKCoordinateTask>
"""

EXPECTED = IKTasks(
    markers=(MarkerTask("r_acromion", 1.0, True), MarkerTask("r_radius_styloid", 12.5, False),
             MarkerTask("bare", 0.0, True)),
    coordinates=(CoordinateTask("r_elbow_flex", 0.5, True, "manual_value", -0.25),
                 CoordinateTask("r_shoulder_elev", 2.0, True, "default_value", 0.0),
                 CoordinateTask("pelvis_tx", 0.0, False, "default_value", 0.0)))


def _task_set(objects, version="30000", extra=""):
    return (f'<?xml version="1.0" encoding="UTF-8" ?>\n<OpenSimDocument Version="{version}">\n'
            f'  <IKTaskSet name="gait_IK">\n    <objects>{objects}</objects>\n'
            f'    <groups />{extra}\n  </IKTaskSet>\n</OpenSimDocument>\n')


def _setup(objects, version="40000"):
    return (f'<?xml version="1.0" encoding="UTF-8" ?>\n<OpenSimDocument Version="{version}">\n'
            '  <InverseKinematicsTool name="subject01">\n'
            '    <results_directory>./</results_directory>\n'
            '    <model_file>subject01.osim</model_file>\n'
            '    <constraint_weight>Inf</constraint_weight>\n    <accuracy>1e-05</accuracy>\n'
            f'    <IKTaskSet>\n      <objects>{objects}</objects>\n      <groups />\n'
            '    </IKTaskSet>\n    <marker_file>subject01_walk.trc</marker_file>\n'
            '    <coordinate_file>Unassigned</coordinate_file>\n'
            '    <time_range> 0.4 1.6</time_range>\n'
            '    <output_motion_file>subject01_walk_ik.mot</output_motion_file>\n'
            '  </InverseKinematicsTool>\n</OpenSimDocument>\n')


def _write(tmp_path, text, name="tasks.xml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_reads_a_standalone_task_set_with_opensims_defaults(tmp_path):
    assert read_ik_tasks(_write(tmp_path, _task_set(TASKS))) == EXPECTED


@pytest.mark.parametrize("version", ["30000", "40000", "40600"])
def test_reads_the_task_set_of_an_ik_tool_setup(tmp_path, version):
    assert read_ik_tasks(_write(tmp_path, _setup(TASKS, version), "setup.xml")) == EXPECTED


def test_empty_task_sets(tmp_path):
    assert read_ik_tasks(_write(tmp_path, _task_set(""))) == IKTasks((), ())
    no_objects = _task_set("").replace("<objects></objects>", "")
    assert read_ik_tasks(_write(tmp_path, no_objects)) == IKTasks((), ())


def _opensim_tasks(osim, task_set) -> IKTasks:
    """OpenSim's reading of a task set, as our dataclasses."""
    markers, coordinates = [], []
    value_types = ("default_value", "manual_value", "from_file")
    for i in range(task_set.getSize()):
        task = task_set.get(i)
        coordinate = osim.IKCoordinateTask.safeDownCast(task)
        if coordinate is not None:
            coordinates.append(CoordinateTask(
                task.getName(), task.getWeight(), task.getApply(),
                value_types[coordinate.getValueType()], coordinate.getValue()))
        else:
            assert task.getConcreteClassName() == "IKMarkerTask"
            markers.append(MarkerTask(task.getName(), task.getWeight(), task.getApply()))
    return IKTasks(tuple(markers), tuple(coordinates))


def test_matches_opensims_reading(tmp_path):
    from opensim_live import opensim_package

    osim = opensim_package()
    standalone = _write(tmp_path, _task_set(TASKS))
    assert _opensim_tasks(osim, osim.IKTaskSet(str(standalone))) == read_ik_tasks(standalone)
    setup = _write(tmp_path, _setup(TASKS), "setup.xml")
    tool = osim.InverseKinematicsTool(str(setup))
    assert _opensim_tasks(osim, tool.getIKTaskSet()) == read_ik_tasks(setup)


def _marker(children, name="m"):
    return f'<IKMarkerTask name="{name}">{children}</IKMarkerTask>'


def _coordinate(children, name="q"):
    return f'<IKCoordinateTask name="{name}">{children}</IKCoordinateTask>'


@pytest.mark.parametrize("objects, where, problem, value", [
    (_coordinate("<value_type>from_file</value_type>"), "IKCoordinateTask 'q'",
     "from_file needs a coordinate file", "from_file"),
    (_coordinate("<value_type>fixed</value_type>"), "IKCoordinateTask 'q'",
     "<value_type> must be one of default_value, manual_value, from_file", "fixed"),
    (_marker("<weight>-1</weight>"), "IKMarkerTask 'm'", "<weight> must be >= 0", "-1"),
    (_marker("<weight>inf</weight>"), "IKMarkerTask 'm'", "<weight> must be finite", "inf"),
    (_marker("<weight>NaN</weight>"), "IKMarkerTask 'm'", "<weight> must be finite", "NaN"),
    (_marker("<weight>heavy</weight>"), "IKMarkerTask 'm'", "<weight> is not a number",
     "heavy"),
    (_marker("<weight></weight>"), "IKMarkerTask 'm'", "<weight> is empty", ""),
    (_marker("<weight>1</weight><weight>2</weight>"), "IKMarkerTask 'm'",
     "<weight> is given twice", "weight"),
    (_marker("<apply>yes</apply>"), "IKMarkerTask 'm'", "<apply> must be true or false", "yes"),
    (_coordinate("<value>nan</value>"), "IKCoordinateTask 'q'", "<value> must be finite",
     "nan"),
    (_marker("<value>1</value>"), "IKMarkerTask 'm'", "unknown property", "value"),
    (_coordinate("<offset>1</offset>"), "IKCoordinateTask 'q'", "unknown property", "offset"),
    (_marker("", "m") + _marker("", "m"), "IKMarkerTask 'm'", "a second task of this name",
     "m"),
    (_coordinate("", "q") + _coordinate("", "q"), "IKCoordinateTask 'q'",
     "a second task of this name", "q"),
    (_marker("", ""), "IKMarkerTask", "a task needs a name attribute", ""),
    ('<IKMarkerWeight name="w"><weight>1</weight></IKMarkerWeight>', "IKMarkerWeight 'w'",
     "not an IK task", "IKMarkerWeight"),
])
def test_bad_tasks_are_named_with_task_and_value(tmp_path, objects, where, problem, value):
    for text in (_task_set(objects), _setup(objects)):
        with pytest.raises(IKTaskError) as err:
            read_ik_tasks(_write(tmp_path, text, "bad.xml"))
        message = str(err.value)
        assert message.startswith(f"bad.xml: {where}: "), message
        assert problem in message and message.endswith(f", got {value!r}"), message


def test_a_marker_and_a_coordinate_task_may_share_a_name(tmp_path):
    tasks = read_ik_tasks(_write(tmp_path, _task_set(_marker("", "x") + _coordinate("", "x"))))
    assert [t.name for t in tasks.markers] == ["x"] and [t.name for t in tasks.coordinates] == [
        "x"]


@pytest.mark.parametrize("text, message", [
    ("<IKTaskSet><objects/></IKTaskSet>", "bad.xml: IKTaskSet: the root element must be "
     "<OpenSimDocument>, got 'IKTaskSet'"),
    ('<OpenSimDocument Version="40000"><Model name="m"/></OpenSimDocument>',
     "bad.xml: OpenSimDocument: expected one <IKTaskSet> or one <InverseKinematicsTool>, "
     "got ['Model']"),
    ('<OpenSimDocument Version="40000"><InverseKinematicsTool name="ik"><model_file>a'
     '</model_file></InverseKinematicsTool></OpenSimDocument>',
     "bad.xml: InverseKinematicsTool 'ik': expected one <IKTaskSet>, got 0"),
    ('<OpenSimDocument Version="40000"><InverseKinematicsTool name="ik"><IKTaskSet '
     'file="tasks.xml"/></InverseKinematicsTool></OpenSimDocument>',
     "bad.xml: IKTaskSet '': a task set in another file (file=) is not supported, "
     "got 'tasks.xml'"),
    (_task_set("", extra="<objects/>"), "bad.xml: IKTaskSet 'gait_IK': <objects> is given "
     "more than once, got 2"),
    (_task_set("", extra="<weights/>"), "bad.xml: IKTaskSet 'gait_IK': unknown property "
     "(expected <objects>, <groups>), got 'weights'"),
    ("<OpenSimDocument><IKTaskSet>", "bad.xml: unreadable XML"),
])
def test_bad_documents_are_named(tmp_path, text, message):
    with pytest.raises(IKTaskError) as err:
        read_ik_tasks(_write(tmp_path, text, "bad.xml"))
    assert str(err.value).startswith(message), str(err.value)


def test_missing_file_is_named(tmp_path):
    with pytest.raises(IKTaskError, match="absent.xml: cannot read the file"):
        read_ik_tasks(tmp_path / "absent.xml")
