"""`myotwin osim run-tool SETUP.xml [--out DIR]`: run an OpenSim ForwardTool setup file as
`opensim-cmd run-tool` runs it (`myotwin.osim.forward_setup`, docs/osim.md "Forward
simulation").

Writes states.sto, muscle_forces.sto and summary.json into DIR (default: the setup's
results_directory), rows as they are produced; prints the summary. Bad input: one line naming
the file, property and value (exit status 2); a simulation that diverges stops with the rows
before the divergence written (exit status 3).
"""

from __future__ import annotations

import argparse

from myotwin.cli.arguments import output_directory, positive_seconds


def cmd_run_tool(args: argparse.Namespace) -> int:
    from myotwin.jax_setup import configure_jax

    configure_jax()   # entry point: float64
    from myotwin.cli.main import print_summary_of
    from myotwin.osim.forward_setup import run_forward_setup

    interval = {} if args.record_every_s is None else {"record_every_s": args.record_every_s}
    return print_summary_of(lambda: run_forward_setup(args.setup, args.out, **interval))


def add_parser(cmds) -> None:
    # (no myotwin.osim import here: building the command line must not import JAX before
    # configure_jax runs)
    p = cmds.add_parser("run-tool", help="run an OpenSim ForwardTool setup file (model, "
                        "controls, states, force set and external loads files, times, "
                        "tolerance) as opensim-cmd run-tool does; writes states.sto, "
                        "muscle_forces.sto and summary.json")
    p.add_argument("setup", help="an OpenSim ForwardTool setup file (.xml)")
    p.add_argument("--out", default=None, type=output_directory,
                   help="output directory (default: the setup's results_directory)")
    p.add_argument("--record-every-s", type=positive_seconds, default=None,
                   help="interval of the written rows (s; default 0.001, osim.forward_setup."
                   "ROW_INTERVAL_S; adjusted so that the last row is at the final time)")
