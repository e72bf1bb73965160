"""`myotwin osim static-optimization MODEL --coordinates FILE --out DIR ...`: muscle
activations along measured motion, as OpenSim's StaticOptimization analysis computes them
(`myotwin.osim.static_optimization`, docs/osim.md "Static optimization").

Writes DIR/static_optimization_activation.sto, DIR/static_optimization_force.sto and
DIR/summary.json, rows as times are solved; prints the summary. Bad input: one line naming
the file, field and value (exit status 2); controls that stop being finite stop the run with
the times before written (exit status 3).
"""

from __future__ import annotations

import argparse

from myotwin.cli.arguments import number, output_directory


def cmd_static_optimization(args: argparse.Namespace) -> int:
    from myotwin.jax_setup import configure_jax

    configure_jax()   # entry point: float64
    from myotwin.cli.main import print_summary_of
    from myotwin.osim.static_optimization import DEFAULT_ACCURACY, run

    return print_summary_of(lambda: run(
        args.file, args.coordinates, args.out, external_loads_path=args.external_loads,
        cutoff_hz=args.lowpass_hz, start_time_s=args.start_s, end_time_s=args.end_s,
        activation_exponent=args.activation_exponent,
        use_muscle_physiology=not args.no_muscle_physiology,
        accuracy=DEFAULT_ACCURACY if args.accuracy is None else args.accuracy,
        force_set_files=args.force_set, replace_force_set=args.replace_force_set))


def add_parser(cmds) -> None:
    from myotwin.cli.osim_inverse_dynamics import add_motion_arguments

    p = cmds.add_parser("static-optimization", help="muscle activations of FILE along the "
                        "motion of --coordinates that minimise the sum of activations^p "
                        "(OpenSim's StaticOptimization); writes "
                        "static_optimization_activation.sto, static_optimization_force.sto "
                        "and summary.json into --out")
    p.add_argument("file", help="an OpenSim 4 .osim file (Thelen2003, Millard2012Equilibrium "
                   "or DeGrooteFregly2016 muscles, CoordinateActuators)")
    add_motion_arguments(p)
    p.add_argument("--force-set", nargs="+", default=[], metavar="FORCES.xml",
                   help="OpenSim ForceSet files whose actuators join the model's (e.g. reserve "
                   "actuators), as the analyze tool's force_set_files")
    p.add_argument("--replace-force-set", action="store_true",
                   help="the --force-set files' forces replace the model's own (its muscles "
                   "too), as the analyze tool's replace_force_set true")
    p.add_argument("--activation-exponent", type=number, default=2.0, help="p in sum x^p "
                   "(OpenSim's activation_exponent, default 2)")
    p.add_argument("--no-muscle-physiology", action="store_true", help="a muscle's force per "
                   "unit activation is its max isometric force (OpenSim's "
                   "use_muscle_physiology false); default: its active force-length-velocity")
    p.add_argument("--accuracy", type=number, default=None, help="SLSQP's convergence "
                   "tolerance (default osim.static_optimization.DEFAULT_ACCURACY, 1e-12)")
    p.add_argument("--out", required=True, type=output_directory,
                   help="output directory")
