"""`myotwin osim inverse-kinematics MODEL --markers FILE.trc --out DIR ...` (or `--setup
IK_SETUP.xml --out DIR`): the coordinates that best fit measured markers, frame by frame, as
OpenSim's InverseKinematicsTool computes them (`myotwin.osim.inverse_kinematics`,
docs/osim.md "Inverse kinematics").

Writes DIR/inverse_kinematics.mot (every coordinate, SI units), DIR/marker_errors.sto and
DIR/summary.json, rows as frames are solved; prints the summary. Bad input: one line naming
the file, field and value (exit status 2); a solution that stops being finite stops the run
with the frames before it written (exit status 3).
"""

from __future__ import annotations

import argparse
import math

from myotwin.cli.arguments import number, output_directory


def cmd_inverse_kinematics(args: argparse.Namespace) -> int:
    from myotwin.jax_setup import configure_jax

    configure_jax()   # entry point: float64
    from myotwin.cli.main import print_summary_of
    from myotwin.osim.ik_setup import read_ik_setup
    from myotwin.osim.inverse_kinematics import DEFAULT_ACCURACY, run

    accuracy = DEFAULT_ACCURACY if args.accuracy is None else args.accuracy
    model, markers, tasks = args.file, args.markers, args.tasks
    start, end, setup = args.start_s, args.end_s, None
    if args.setup:   # the command line's own arguments take precedence
        setup = read_ik_setup(args.setup)
        model = model or setup.model_file
        markers = markers or setup.marker_file
        tasks = tasks or args.setup
        if setup.time_range_s is not None:
            start = setup.time_range_s[0] if start is None else start
            end = setup.time_range_s[1] if end is None else end
    if model is None or markers is None:
        raise ValueError("give FILE and --markers, or a --setup whose <model_file> and "
                         "<marker_file> name them")
    return print_summary_of(lambda: run(
        model, markers, args.out, tasks_path=tasks,
        start_time_s=-math.inf if start is None else start,
        end_time_s=math.inf if end is None else end, accuracy=accuracy, setup=setup))


def add_parser(cmds) -> None:
    p = cmds.add_parser("inverse-kinematics", help="coordinates of FILE that best fit the "
                        "markers of --markers, frame by frame (OpenSim's "
                        "InverseKinematicsTool); writes inverse_kinematics.mot, "
                        "marker_errors.sto and summary.json into --out")
    p.add_argument("file", nargs="?", help="an OpenSim 4 .osim file with a MarkerSet (its "
                   "skeleton is used: forces are not read); or the --setup's model_file")
    p.add_argument("--markers", help="marker trajectories (.trc; mm, cm or m); or the "
                   "--setup's marker_file")
    p.add_argument("--setup", help="an OpenSim InverseKinematicsTool setup file: its "
                   "model_file, marker_file, time_range and IKTaskSet fill what the command "
                   "line leaves out (osim/ik_setup.py)")
    p.add_argument("--tasks", help="OpenSim IKTaskSet file, or an InverseKinematicsTool setup "
                   "file holding one (marker weights, coordinate tasks; default: every model "
                   "marker the .trc has, weight 1)")
    p.add_argument("--start-s", type=number, default=None, help="first time (s; default: the "
                   "--setup's time_range, else the file's first)")
    p.add_argument("--end-s", type=number, default=None, help="last time (s; default: the "
                   "--setup's time_range, else the file's last)")
    p.add_argument("--accuracy", type=number, default=None, help="convergence tolerance of "
                   "each frame's least squares (relative change of cost and q; default "
                   "osim.inverse_kinematics.DEFAULT_ACCURACY, 1e-12)")
    p.add_argument("--out", required=True, type=output_directory,
                   help="output directory")
