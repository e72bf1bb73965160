"""`myotwin osim forward --external-loads` (OpenSim's ForwardTool external_loads_file) against
OpenSim 4.6's ForwardTool itself.

* The loads as functions of time: `forward_loads.curve_polynomials` (the piecewise polynomials
  the integrator evaluates in JAX) equal `external_loads.LoadCurve` (OpenSim's functions of the
  data, checked against OpenSim in test_osim_external_loads.py) for 1, 2, 3 and 11 rows, inside
  and beyond the data: 1e-12 relative (the spline's Taylor coefficients are its derivatives,
  evaluated once; observed ~1e-15).
* A run: double_pendulum.osim swinging from its default pose for 0.5 s under two external
  loads read from one data file: on rod2, a force expressed in rod1's frame at a point moving
  along rod2 in rod2's frame, with a free torque (11 rows: natural cubic splines); on rod1, a
  constant force expressed in ground at a point fixed in ground. rk45 at accuracy 1e-10
  against the ForwardTool at 1e-10: the angles within 1e-8 rad at the end (observed 3e-11
  rad; without the loads the lower rod ends 0.15 rad away). RK4 at 1 ms, the loads' values
  held at each step's midpoint, within 1e-6 rad (observed 1.3e-7 rad: the integrator's error).
* Bad loads: a force on ground, a frame that is not a body: one line naming the file, the
  force and the value (exit status 2).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from myotwin.cli.main import main
from myotwin.engine.piecewise import evaluate_padded, pad_polynomials
from myotwin.osim.external_loads import LoadCurve
from myotwin.osim.forward_loads import curve_polynomials
from myotwin.osim.storage import read_storage
from opensim_live import run_forward_tool
from shared_reference import SHARED
from storage_files import write_mot

PENDULUM = SHARED / "reference" / "opensim" / "models" / "double_pendulum.osim"
COORDS = ("/jointset/pin1/q1/value", "/jointset/pin2/q2/value")


def _force(name, body, force_frame, point_frame, force, point, torque):
    return (f'<ExternalForce name="{name}"><appliesForce>true</appliesForce>'
            f"<applied_to_body>{body}</applied_to_body>"
            f"<force_expressed_in_body>{force_frame}</force_expressed_in_body>"
            f"<point_expressed_in_body>{point_frame}</point_expressed_in_body>"
            f"<force_identifier>{force}</force_identifier>"
            f"<point_identifier>{point}</point_identifier>"
            f"<torque_identifier>{torque}</torque_identifier>"
            "<data_source_name>Unassigned</data_source_name></ExternalForce>")


def _loads(tmp_path, *forces):
    """loads.xml with `forces` over loads.mot (11 rows over 1 s)."""
    t = np.linspace(0.0, 1.0, 11)
    zero = 0.0 * t
    write_mot(tmp_path / "loads.mot", t, {
        "tip_vx": 3 * np.sin(4 * t), "tip_vy": 2 + t, "tip_vz": zero,
        "tip_px": 0.1 + zero, "tip_py": 0.3 * t, "tip_pz": zero,
        "tip_mx": zero, "tip_my": zero, "tip_mz": 0.5 * np.cos(3 * t),
        "g_vx": -1 + zero, "g_vy": zero, "g_vz": zero,
        "g_px": 0.2 + zero, "g_py": 0.5 + zero, "g_pz": zero})
    path = tmp_path / "loads.xml"
    path.write_text('<?xml version="1.0" encoding="UTF-8" ?><OpenSimDocument Version="40000">'
                    '<ExternalLoads name="pushes"><objects>' + "".join(forces)
                    + "</objects><groups /><datafile>loads.mot</datafile></ExternalLoads>"
                    "</OpenSimDocument>")
    return path


PUSHES = (_force("tip", "rod2", "rod1", "rod2", "tip_v", "tip_p", "tip_m"),
          _force("fixed", "rod1", "ground", "ground", "g_v", "g_p", ""))


@pytest.mark.parametrize("n_rows", [1, 2, 3, 11])
def test_load_polynomials_are_opensims_functions_of_the_data(n_rows):
    t = np.linspace(0.2, 0.9, n_rows)
    values = np.column_stack([np.sin(5 * t), t ** 2, np.exp(t)])
    curve = LoadCurve.of(t, values)
    tables = [np.asarray(x) for x in pad_polynomials(curve_polynomials(curve))]
    times = np.concatenate([np.linspace(-0.5, 1.5, 81), t, t + 1e-9])
    ours = np.array([evaluate_padded(*tables, np.full(3, x))[0] for x in times])
    expected = curve(times)
    error = np.abs(ours - expected).max() / np.abs(expected).max()
    print(f"{n_rows} rows: within {error:.1e} of LoadCurve")
    assert error <= 1e-12


def _run(tmp_path, name, loads, *integrator):
    status = main(["osim", "forward", str(PENDULUM), "--out", str(tmp_path / name),
                   "--external-loads", str(loads), "--duration-s", "0.5",
                   "--record-every-s", "0.05", *integrator])
    return status, tmp_path / name


def test_loads_move_the_double_pendulum_as_in_the_forward_tool(tmp_path, capsys):
    if not PENDULUM.exists():
        pytest.skip(f"{PENDULUM} is absent (shared/reference not mounted)")
    loads = _loads(tmp_path, *PUSHES)
    theirs = read_storage(run_forward_tool(tmp_path / "opensim", PENDULUM, None, None, 0.0,
                                           0.5, 1e-10, external_loads=loads))
    status, out = _run(tmp_path, "rk45", loads, "--integrator", "rk45", "--accuracy", "1e-10")
    assert status == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["external_loads"] == {"file": "loads.xml", "forces": ["tip", "fixed"]}
    errors = {}
    for name, tolerance in (("rk45", 1e-8), ("rk4", 1e-6)):
        if name == "rk4":
            assert _run(tmp_path, "rk4", loads, "--integrator", "rk4", "--dt-s", "1e-3")[0] == 0
        ours = read_storage(tmp_path / name / "states.sto")
        assert ours.time_s[-1] == theirs.time_s[-1] == 0.5
        errors[name] = max(abs(ours.column(c)[-1] - theirs.column(c)[-1]) for c in COORDS)
        print(f"{name}: the angles within {errors[name]:.1e} rad of the ForwardTool's")
        assert errors[name] <= tolerance


@pytest.mark.parametrize("force, message", [
    (_force("tip", "ground", "ground", "ground", "tip_v", "tip_p", ""),
     "loads.xml: ExternalForce 'tip': a force applied to ground moves nothing"),
    (_force("tip", "rod2", "rod3", "rod2", "tip_v", "tip_p", ""),
     "loads.xml: ExternalForce 'tip' force_expressed_in_body: 'rod3' is not a body of the "
     "model (rod1, rod2) or ground"),
])
def test_bad_loads_are_one_line(tmp_path, capsys, force, message):
    if not PENDULUM.exists():
        pytest.skip(f"{PENDULUM} is absent (shared/reference not mounted)")
    status, out = _run(tmp_path, "run", _loads(tmp_path, force))
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1, err
    assert message in err, err
    assert not out.exists()
