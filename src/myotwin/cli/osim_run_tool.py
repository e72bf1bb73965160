"""`myotwin osim run-tool SETUP.xml [--out DIR]`: run an OpenSim tool setup file as
`opensim-cmd run-tool` runs it (`myotwin.osim.tool_setups`: the setup's tool picks the
runner; docs/osim.md).

* ForwardTool (`osim.forward_setup`): writes states.sto, muscle_forces.sto, controls.sto and
  summary.json, rows as they are produced; a simulation that diverges stops with the rows
  before the divergence written (exit status 3). Its Kinematics, BodyKinematics, PointKinematics,
  Actuation, ForceReporter, StatesReporter and MuscleAnalysis analyses run on the written
  rows, each into DIR/<its name>, as an AnalyzeTool's.
* InverseKinematicsTool (`osim.ik_setup.run_ik_setup`): inverse_kinematics.mot,
  marker_errors.sto and summary.json.
* InverseDynamicsTool (`osim.id_setup.run_id_setup`): inverse_dynamics.sto and summary.json.
* AnalyzeTool with StaticOptimization, MuscleAnalysis, Kinematics, BodyKinematics,
  PointKinematics, Actuation, ForceReporter and StatesReporter analyses (`osim.analyze_setup.
  run_analyze_setup`): each analysis into DIR/<its name>, the files of `osim
  static-optimization` / `osim muscle-analysis`, or kinematics_q.sto, ... /
  body_kinematics_pos_global.sto, ... / point_kinematics_<point>_pos.sto, ...
  (`osim.kinematics_analysis`) / actuation_force.sto, ... / force_reporter_forces.sto
  (`osim.force_analyses`) / states_reporter_states.sto.

Into DIR (default: the setup's results_directory); prints the summary. Bad input: one line
naming the file, property and value (exit status 2).
"""

from __future__ import annotations

import argparse

from myotwin.cli.arguments import output_directory, positive_seconds


def cmd_run_tool(args: argparse.Namespace) -> int:
    from myotwin.jax_setup import configure_jax

    configure_jax()   # entry point: float64
    from myotwin.cli.main import print_summary_of
    from myotwin.osim.tool_setups import run_tool_setup, tool_of

    options = {}
    if args.record_every_s is not None:
        tool = tool_of(args.setup)
        if tool != "ForwardTool":
            raise ValueError(f"--record-every-s is for ForwardTool setups; {args.setup} holds "
                             f"an {tool}")
        options["record_every_s"] = args.record_every_s
    return print_summary_of(lambda: run_tool_setup(args.setup, args.out, **options))


def add_parser(cmds) -> None:
    # (no myotwin.osim import here: building the command line must not import JAX before
    # configure_jax runs)
    p = cmds.add_parser("run-tool", help="run an OpenSim tool setup file as opensim-cmd "
                        "run-tool does: a ForwardTool (states.sto, muscle_forces.sto, "
                        "controls.sto; its "
                        "kinematics, force and muscle analyses in a folder each), an "
                        "InverseKinematicsTool (inverse_kinematics.mot, marker_errors.sto), an "
                        "InverseDynamicsTool (inverse_dynamics.sto) or an AnalyzeTool with "
                        "StaticOptimization / MuscleAnalysis / Kinematics / BodyKinematics / "
                        "PointKinematics / Actuation / ForceReporter / StatesReporter (a "
                        "folder per analysis); also "
                        "summary.json")
    p.add_argument("setup", help="an OpenSim tool setup file (.xml): ForwardTool, "
                   "InverseKinematicsTool, InverseDynamicsTool or AnalyzeTool")
    p.add_argument("--out", default=None, type=output_directory,
                   help="output directory (default: the setup's results_directory)")
    p.add_argument("--record-every-s", type=positive_seconds, default=None,
                   help="interval of the written rows (s; default 0.001, osim.forward_setup."
                   "ROW_INTERVAL_S; adjusted so that the last row is at the final time)")
