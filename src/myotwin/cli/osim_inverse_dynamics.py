"""`myotwin osim inverse-dynamics MODEL --coordinates FILE --out DIR ...`: the generalized
forces along measured motion, as OpenSim's InverseDynamicsTool computes them
(`myotwin.osim.inverse_dynamics`, docs/osim.md "Inverse dynamics").

Writes DIR/inverse_dynamics.sto (every coordinate, the dependent one of a
CoordinateCouplerConstraint included, as OpenSim's tool), for a model with such a constraint
DIR/inverse_dynamics_reduced.sto (J^T tau_f on the independent coordinates, the constraint
workless), and DIR/summary.json; prints the summary. Bad input: one line naming the file,
field and value (exit status 2).
"""

from __future__ import annotations

import argparse

from myotwin.cli.arguments import number, output_directory


def cmd_inverse_dynamics(args: argparse.Namespace) -> int:
    from myotwin.jax_setup import configure_jax

    configure_jax()   # entry point: float64
    from myotwin.cli.main import print_json
    from myotwin.osim.inverse_dynamics import run

    summary = run(args.file, args.coordinates, args.out,
                  external_loads_path=args.external_loads, cutoff_hz=args.lowpass_hz,
                  start_time_s=args.start_s, end_time_s=args.end_s)
    print_json(summary)
    return 0


def add_parser(cmds) -> None:
    p = cmds.add_parser("inverse-dynamics", help="generalized forces of FILE along the motion "
                        "of --coordinates (OpenSim's InverseDynamicsTool); writes "
                        "inverse_dynamics.sto (and, with a coordinate coupler constraint, "
                        "inverse_dynamics_reduced.sto) and summary.json into --out")
    p.add_argument("file", help="an OpenSim 4 .osim file (its skeleton is used: muscles and "
                   "actuators are excluded, as OpenSim's tool with them excluded)")
    add_motion_arguments(p)
    p.add_argument("--out", required=True, type=output_directory,
                   help="output directory")


def add_motion_arguments(p, external_loads: bool = True, states: bool = False) -> None:
    """The arguments of a tool that runs along measured motion (inverse dynamics, static
    optimization, muscle analysis): --coordinates (or, if `states`, --states instead),
    --external-loads (if `external_loads`), --lowpass-hz, --start-s, --end-s."""
    motion = p.add_mutually_exclusive_group(required=True) if states else p
    motion.add_argument("--coordinates", required=not states, help="coordinates over time "
                        "(.mot/.sto, e.g. an IK result; degrees when its header says "
                        "inDegrees=yes)")
    if states:
        motion.add_argument("--states", help="states over time (.sto with OpenSim 4's state "
                            "names, e.g. `myotwin osim forward`'s states.sto or OpenSim's): "
                            "coordinates, speeds and muscle states as written")
    if external_loads:
        p.add_argument("--external-loads", help="OpenSim ExternalLoads file (.xml) naming its "
                       "data file (e.g. ground reaction forces)")
    p.add_argument("--lowpass-hz", type=number, default=None, help="lowpass cutoff for the "
                   "coordinates (OpenSim's lowpass_cutoff_frequency_for_coordinates; default: "
                   "no filtering)")
    p.add_argument("--start-s", type=number, default=float("-inf"), help="first time (s)")
    p.add_argument("--end-s", type=number, default=float("inf"), help="last time (s)")
