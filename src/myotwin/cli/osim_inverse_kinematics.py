"""`myotwin osim inverse-kinematics MODEL --markers FILE.trc --out DIR ...`: the coordinates
that best fit measured markers, frame by frame, as OpenSim's InverseKinematicsTool computes
them (`myotwin.osim.inverse_kinematics`, docs/osim.md "Inverse kinematics").

Writes DIR/inverse_kinematics.mot (every coordinate, SI units), DIR/marker_errors.sto and
DIR/summary.json, rows as frames are solved; prints the summary. Bad input: one line naming
the file, field and value (exit status 2); a solution that stops being finite stops the run
with the frames before it written (exit status 3).
"""

from __future__ import annotations

import argparse


def cmd_inverse_kinematics(args: argparse.Namespace) -> int:
    from myotwin.jax_setup import configure_jax

    configure_jax()   # entry point: float64
    from myotwin.cli.main import print_summary_of
    from myotwin.osim.inverse_kinematics import DEFAULT_ACCURACY, run

    accuracy = DEFAULT_ACCURACY if args.accuracy is None else args.accuracy
    return print_summary_of(lambda: run(
        args.file, args.markers, args.out, tasks_path=args.tasks, start_time_s=args.start_s,
        end_time_s=args.end_s, accuracy=accuracy))


def add_parser(cmds) -> None:
    p = cmds.add_parser("inverse-kinematics", help="coordinates of FILE that best fit the "
                        "markers of --markers, frame by frame (OpenSim's "
                        "InverseKinematicsTool); writes inverse_kinematics.mot, "
                        "marker_errors.sto and summary.json into --out")
    p.add_argument("file", help="an OpenSim 4 .osim file with a MarkerSet (its skeleton is "
                   "used: forces are not read)")
    p.add_argument("--markers", required=True, help="marker trajectories (.trc; mm, cm or m)")
    p.add_argument("--tasks", help="OpenSim IKTaskSet file, or an InverseKinematicsTool setup "
                   "file holding one (marker weights, coordinate tasks; default: every model "
                   "marker the .trc has, weight 1)")
    p.add_argument("--start-s", type=float, default=float("-inf"), help="first time (s)")
    p.add_argument("--end-s", type=float, default=float("inf"), help="last time (s)")
    p.add_argument("--accuracy", type=float, default=None, help="convergence tolerance of "
                   "each frame's least squares (relative change of cost and q; default "
                   "osim.inverse_kinematics.DEFAULT_ACCURACY, 1e-12)")
    p.add_argument("--out", required=True, help="output directory")
