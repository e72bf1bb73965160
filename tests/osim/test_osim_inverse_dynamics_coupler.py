"""`myotwin osim inverse-dynamics` on a model with a CoordinateCouplerConstraint, against
OpenSim 4.6's InverseDynamicsTool.

leg6dof9musc.osim: pat_angle_r says knee_angle_pat_r = knee_angle_r (LinearFunction 1 0), and
knee_angle_pat_r moves the patella (CustomJoint tib_pat_r, spline axes). The motion is
synthetic and smooth (a sinusoid inside each coordinate's range, `_write_motion`; the file in
degrees, knee_angle_pat_r in radians as OpenSim reads a coordinate that is not rotational) and
there are no external loads. OpenSim's tool reports every coordinate, knee_angle_pat_r
included, each the force on its own mobility with the constraint ignored; so do we
(`engine.coupling.direct_forces`). Tolerance: 1e-9 of each column's largest magnitude, the
roundoff argument of test_osim_inverse_dynamics.py (two float64 recursive Newton-Euler
evaluations on identically prepared splines; measured ~1e-12 relative, printed). The
projection J^T tau_f onto the independent coordinates (inverse_dynamics_reduced.sto) is
checked as knee_OS + g' pat_OS (g' = 1 here), same tolerance.
"""

import json

import jax.numpy as jnp
import numpy as np
import pytest

import myotwin
from myotwin.cli.main import main
from myotwin.engine.coupling import (coordinate_coupling, direct_forces, identity_polynomial,
                                     reduce_forces)
from myotwin.engine.piecewise import PiecewisePolynomial
from myotwin.osim.storage import read_storage
from opensim_live import opensim_package, run_inverse_dynamics_tool
from shared_reference import SHARED, needs

opensim_package()   # skips this module when OpenSim is absent

MODEL = SHARED / "reference/opensim/models/leg6dof9musc.osim"
RANGES = {"pelvis_tilt": (-1.57079633, 1.57079633), "pelvis_tx": (-1.0, 1.0),
          "pelvis_ty": (-1.0, 3.0), "hip_flexion_r": (-2.0943951, 2.0943951),
          "knee_angle_r": (-2.0943951, 0.17453293), "ankle_angle_r": (-1.57079633, 1.57079633)}
ROTATIONAL = ("pelvis_tilt", "hip_flexion_r", "knee_angle_r", "ankle_angle_r")
DEPENDENT = "knee_angle_pat_r"


def _write_motion(path, *, dependent="radians", with_dependent=True):
    """101 rows over 1 s: each coordinate mid + 0.3 span sin(2 pi f_k t + k) within its range
    (f_k = 0.7 + 0.3 k Hz); knee_angle_pat_r = knee_angle_r, in radians ("radians", as OpenSim
    reads it) or, wrongly, in degrees ("degrees")."""
    t = np.linspace(0.0, 1.0, 101)
    columns = {}
    for k, (name, (lo, hi)) in enumerate(RANGES.items()):
        value = 0.5 * (lo + hi) + 0.3 * (hi - lo) * np.sin(2 * np.pi * (0.7 + 0.3 * k) * t + k)
        columns[name] = np.degrees(value) if name in ROTATIONAL else value
    if with_dependent:
        knee = np.radians(columns["knee_angle_r"])
        columns[DEPENDENT] = np.degrees(knee) if dependent == "degrees" else knee
    labels = ["time", *columns]
    rows = np.column_stack([t, *columns.values()])
    path.write_text(f"ik\nversion=1\nnRows={len(t)}\nnColumns={len(labels)}\ninDegrees=yes\n"
                    "endheader\n" + "\t".join(labels) + "\n"
                    + "\n".join("\t".join(repr(float(x)) for x in row) for row in rows) + "\n")
    return path


def _opensim_tool(out_dir, coordinates, cutoff_hz):
    """OpenSim's InverseDynamicsTool, muscles excluded, no external loads, 16 digits."""
    return run_inverse_dynamics_tool(out_dir, MODEL, coordinates, None, cutoff_hz, 0.0, 1.0)


def _ours(out_dir, coordinates, cutoff_hz, capsys):
    args = ["osim", "inverse-dynamics", str(MODEL), "--coordinates", str(coordinates),
            "--start-s", "0", "--end-s", "1", "--out", str(out_dir)]
    if cutoff_hz > 0:
        args += ["--lowpass-hz", str(cutoff_hz)]
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    return (summary, read_storage(out_dir / "inverse_dynamics.sto"),
            read_storage(out_dir / "inverse_dynamics_reduced.sto"))


@pytest.mark.parametrize("cutoff_hz", [-1.0, 6.0])
def test_coupler_inverse_dynamics_matches_opensims_tool(tmp_path, capsys, cutoff_hz):
    needs(MODEL)
    motion = _write_motion(tmp_path / "ik.mot")
    theirs = _opensim_tool(tmp_path, motion, cutoff_hz)
    summary, ours, reduced = _ours(tmp_path / "ours", motion, cutoff_hz, capsys)
    assert ours.labels == theirs.labels   # knee_angle_pat_r_force after the knee, as OpenSim
    assert DEPENDENT + "_force" in ours.labels
    assert summary["coordinates"] == [label.rsplit("_", 1)[0] for label in ours.labels[1:]]
    assert summary["dependent_coordinates"] == {DEPENDENT: {
        "independent": "knee_angle_r", "constraint": "pat_angle_r", "column_in_file": True}}
    assert reduced.labels == tuple(k for k in ours.labels if not k.startswith(DEPENDENT))
    np.testing.assert_allclose(ours.time_s, theirs.time_s, rtol=0, atol=1e-12)
    worst = 0.0
    for label in theirs.labels[1:]:
        scale = np.abs(theirs.column(label)).max()
        np.testing.assert_allclose(ours.column(label), theirs.column(label), rtol=0,
                                   atol=1e-9 * scale, err_msg=f"{label} (N m or N)")
        worst = max(worst, np.abs(ours.column(label) - theirs.column(label)).max() / scale)
    # The constrained projection: J^T tau_f = knee_OS + g'(knee) pat_OS, g' = 1.
    knee, pat = theirs.column("knee_angle_r_moment"), theirs.column(DEPENDENT + "_force")
    assert np.abs(pat).max() > 1e-2   # the patella's share is not negligible
    scale = np.abs(knee).max()
    np.testing.assert_allclose(reduced.column("knee_angle_r_moment"), knee + pat, rtol=0,
                               atol=1e-9 * scale)
    for label in reduced.labels[1:]:
        if label != "knee_angle_r_moment":
            np.testing.assert_array_equal(reduced.column(label), ours.column(label))
    print(f"largest difference to OpenSim's tool: {worst:.1e} of the column's largest; "
          f"J^T tau_f - (knee + pat): "
          f"{np.abs(reduced.column('knee_angle_r_moment') - knee - pat).max():.1e} N m")


def test_the_dependent_column_is_optional_and_unused(tmp_path, capsys):
    """Without the knee_angle_pat_r column the constraint gives its value: the same table, bit
    for bit (OpenSim instead holds it at its default value then, docs/osim.md)."""
    needs(MODEL)
    with_column = _write_motion(tmp_path / "ik.mot")
    without = _write_motion(tmp_path / "ik_without_pat.mot", with_dependent=False)
    summary_a, ours_a, reduced_a = _ours(tmp_path / "a", with_column, -1.0, capsys)
    summary_b, ours_b, reduced_b = _ours(tmp_path / "b", without, -1.0, capsys)
    assert summary_b["dependent_coordinates"][DEPENDENT]["column_in_file"] is False
    assert summary_b["coordinates_missing"] == []
    np.testing.assert_array_equal(ours_a.data, ours_b.data)
    np.testing.assert_array_equal(reduced_a.data, reduced_b.data)


def test_a_dependent_column_off_the_constraint_is_one_line(tmp_path, capsys):
    """knee_angle_pat_r in degrees in an inDegrees=yes file: OpenSim reads it as radians (it
    is not rotational), so it contradicts the constraint; refused, naming file, column, time
    and both values."""
    bad = _write_motion(tmp_path / "ik_pat_degrees.mot", dependent="degrees")
    code = main(["osim", "inverse-dynamics", str(needs(MODEL)), "--coordinates", str(bad),
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err, err
    for part in ("ik_pat_degrees.mot", f"column '{DEPENDENT}' at time 0.0 s", "pat_angle_r",
                 "not rotational"):
        assert part in err, err


def test_direct_forces_without_inner_functions_are_the_projection():
    """engine.coupling.direct_forces: with direct = source and no inner function it is
    reduce_forces; a dof through an inner function g counts f'(g(x)) tau, without g'."""
    myotwin.configure_jax()
    square = PiecewisePolynomial(np.zeros(0), np.zeros(1), np.array([[0.0, 0.0, 1.0]]))
    c = coordinate_coupling(2, (0, 1, 1), [identity_polynomial(), square, square])
    q, tau = jnp.array([0.3, -0.7]), jnp.array([1.5, -2.0, 4.0])
    np.testing.assert_array_equal(direct_forces(c, q, tau, c.source, 2),
                                  reduce_forces(c, q, tau))
    inner = coordinate_coupling(2, (0, 1, 1), [identity_polynomial(), square, square],
                                inner=[None, None, square])   # dof 2 = (x^2)^2 of q_dep = x^2
    x = float(q[1])
    np.testing.assert_allclose(direct_forces(inner, q, tau, (0, 1, 2), 3),
                               [1.5, 2 * x * -2.0, 2 * x**2 * 4.0], rtol=1e-15)
    with pytest.raises(ValueError, match="one coordinate in"):
        direct_forces(inner, q, tau, (0, 1), 3)
