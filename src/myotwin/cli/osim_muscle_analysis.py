"""`myotwin osim muscle-analysis MODEL (--coordinates FILE | --states FILE) --out DIR ...`: each
muscle's length, moment arms and fiber and tendon quantities along measured or simulated
motion, as OpenSim's MuscleAnalysis writes them (`myotwin.osim.muscle_analysis`, docs/osim.md
"Muscle analysis").

Writes DIR/muscle_analysis_Length.sto, DIR/muscle_analysis_MomentArm_<coordinate>.sto, with
`--muscle-states default` (the default) or `equilibrium` DIR/muscle_analysis_<output>.sto for
each of OpenSim's muscle-state outputs and DIR/muscle_analysis_Moment_<coordinate>.sto, and
DIR/summary.json; prints the summary. Bad input: one line naming the file, field and value
(exit status 2); outputs that are not finite: exit status 3.
"""

from __future__ import annotations

import argparse

from myotwin.cli.arguments import output_directory


def cmd_muscle_analysis(args: argparse.Namespace) -> int:
    from myotwin.jax_setup import configure_jax

    configure_jax()   # entry point: float64
    from myotwin.cli.main import print_summary_of
    from myotwin.osim.muscle_analysis import run

    return print_summary_of(lambda: run(
        args.file, args.coordinates, args.out, cutoff_hz=args.lowpass_hz,
        start_time_s=args.start_s, end_time_s=args.end_s, muscle_states=args.muscle_states,
        states_path=args.states))


def add_parser(cmds) -> None:
    p = cmds.add_parser("muscle-analysis", help="each muscle's length, moment arms about "
                        "every coordinate of FILE and fiber and tendon quantities along the "
                        "motion of --coordinates (OpenSim's MuscleAnalysis); writes "
                        "muscle_analysis_Length.sto, muscle_analysis_MomentArm_<coordinate>.sto, "
                        "the muscle-state outputs and summary.json into --out")
    from myotwin.cli.osim_inverse_dynamics import add_motion_arguments

    p.add_argument("file", help="an OpenSim 4 .osim file")
    add_motion_arguments(p, external_loads=False, states=True)
    p.add_argument("--muscle-states", choices=("default", "equilibrium", "none"),
                   default="default",
                   help="default: also the fiber and tendon outputs (FiberLength, TendonForce, "
                        "..., Moment_<coordinate>), at the muscle states of --states, or at "
                        "each muscle's default activation and fiber state (as OpenSim's "
                        "AnalyzeTool without equilibrium) for --coordinates and for states "
                        "the file lacks; equilibrium: the same activations, each compliant "
                        "tendon's state solved for its type's equilibrium at each time (as "
                        "AnalyzeTool with solve_for_equilibrium_for_auxiliary_states); none: "
                        "lengths and moment arms only")
    p.add_argument("--out", required=True, type=output_directory,
                   help="output directory")
