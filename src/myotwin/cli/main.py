"""The `myotwin` command line.

    myotwin invitro conditions --out DIR      the seed's five conditions + report
    myotwin invitro run --condition NAME --out DIR
    myotwin invitro loopback --rate-hz R --ticks N --out DIR
    myotwin invitro emulate --pty             an emulated muscle on a pseudo-terminal
    myotwin invitro replay-legacy DIR --out OUT
    myotwin invitro show-config               every setting with its default
    myotwin repro NAME --out DIR [--quick]    reproduce a seed's figure/table (`--list`)
    myotwin train-wrap --out PATH [--quick]   train the wrapping-surface network (.npz)
    myotwin osim check FILE [--omit NAME ...] [--lengths]
                                              does an OpenSim .osim model load; what it becomes
    myotwin osim forward FILE --out DIR (--excitation X | --controls FILE.sto|.xml) [...]
                                              simulate it driven by its muscles and
                                              CoordinateActuators (states.sto)
    myotwin osim inverse-kinematics FILE --markers TRIAL.trc --out DIR [...]
    myotwin osim inverse-dynamics FILE --coordinates IK.mot --out DIR [...]
    myotwin osim static-optimization FILE --coordinates IK.mot --out DIR [...]
    myotwin osim muscle-analysis FILE (--coordinates IK.mot | --states STATES.sto) --out DIR
                                              OpenSim's tools of the same names
    myotwin osim run-tool SETUP.xml [--out DIR]
                                              run an OpenSim tool setup file
    myotwin mjcf forward FILE --out DIR --excitation X|NAME=X [--muscle-mass-kg KG] [...]
                                              an MJCF model with MuJoCo muscles (MyoSuite's)

Errors in the input (files, fields, values) are reported in one line and exit with status 2;
a trial that ends in a safety trip exits with status 3 after writing its data.
"""

from __future__ import annotations

import argparse
import json
import sys

from myotwin.cli.arguments import (integer, number, output_directory, output_directory_or_json,
                                   output_file, positive_integer, positive_seconds, seed)


def _add_link_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="experiment config (TOML); see `myotwin invitro show-config`")
    p.add_argument("--port", help="serial port of a real rig (default: emulated muscle on a pty)")
    p.add_argument("--protocol", choices=("framed", "legacy"), help="wire protocol")
    p.add_argument("--inprocess", action="store_true",
                   help="run the emulated device in this process on a virtual clock "
                        "(fast, deterministic; not real time)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="myotwin", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="group", required=True)
    inv = sub.add_parser("invitro", help="in vitro virtual reality (Richards & Eberhard 2020)")
    cmds = inv.add_subparsers(dest="command", required=True)

    p = cmds.add_parser("conditions", help="run the five conditions of the seed and a report")
    p.add_argument("--out", required=True, type=output_directory,
                   help="output directory")
    p.add_argument("--only", nargs="+", help="run only these conditions")
    p.add_argument("--no-video", action="store_true", help="skip rendering the videos")
    _add_link_args(p)

    p = cmds.add_parser("run", help="run one condition")
    p.add_argument("--condition", required=True, help="nominal, control1, control2, delayed, "
                   "origin_shifted")
    p.add_argument("--out", required=True, type=output_directory,
                   help="output directory")
    _add_link_args(p)

    p = cmds.add_parser("loopback", help="loopback validation: the host echoes the force code")
    p.add_argument("--rate-hz", type=number, default=1000.0, help="loop rate (Hz)")
    p.add_argument("--ticks", type=integer, default=2000, help="number of ticks")
    p.add_argument("--out", required=True, type=output_directory,
                   help="output directory")
    _add_link_args(p)

    p = cmds.add_parser("emulate", help="emulated muscle + ergometer + microcontroller")
    p.add_argument("--pty", action="store_true", required=True,
                   help="serve on a new pseudo-terminal and print its path")
    p.add_argument("--protocol", choices=("framed", "legacy"), default="framed")
    p.add_argument("--rate-hz", type=number, default=1000.0)
    p.add_argument("--seed", type=seed, default=0)
    p.add_argument("--stim-onset-s", type=number, default=None,
                   help="legacy protocol only: the device's own stimulation schedule")
    p.add_argument("--stim-duration-s", type=number, default=0.080)
    p.add_argument("--loopback", action="store_true", help="legacy loopback check mode")
    p.add_argument("--max-ticks", type=integer, default=None, help="stop after this many ticks")
    p.add_argument("--log", type=output_file, default=None, help="per-tick device log (CSV)")
    p.add_argument("--stats", type=output_file, default=None,
                   help="device statistics written at exit (JSON)")
    p.add_argument("--config", help="experiment config (TOML) for the calibration")
    p.add_argument("--spin-s", type=number, default=200e-6,
                   help="busy-wait this long before each tick instead of sleeping (s)")
    p.add_argument("--cpu", type=integer, default=None,
                   help="pin the emulator to this CPU while ticking")
    p.add_argument("--realtime-priority", action="store_true",
                   help="ask for SCHED_FIFO while ticking (needs root or CAP_SYS_NICE)")

    p = cmds.add_parser("replay-legacy", help="replay the authors' recorded trial open loop")
    p.add_argument("directory", help="folder with 5SegRM.xml, qposInit.dat, savedData*.txt, ...")
    p.add_argument("--out", required=True, type=output_directory_or_json,
                   help="output directory (or a .json file)")

    p = cmds.add_parser("show-config", help="print every setting with its default (TOML)")
    p.add_argument("--config", help="a config file to validate and print merged")

    rep = sub.add_parser("repro", help="reproduce a figure or table of the seeds "
                         "(figures + summary.json)")
    rep.add_argument("name", nargs="?", help="reproduction name (see --list)")
    rep.add_argument("--out", type=output_directory, help="output directory")
    rep.add_argument("--quick", action="store_true",
                     help="the reduced size CI runs (the default is the full size)")
    rep.add_argument("--list", action="store_true", help="list the reproductions and exit")
    rep.set_defaults(command="repro")

    tw = sub.add_parser("train-wrap", help="train the seed's wrapping-surface network (Wang "
                        "et al. 2022 §3.3) and write its weights")
    tw.add_argument("--out", required=True, type=output_file, help="output .npz file")
    tw.add_argument("--quick", action="store_true", help="a tiny run that checks the pipeline")
    tw.add_argument("--seed", type=seed, default=None, help="seed (default: the shipped one, 0)")
    tw.set_defaults(command="train-wrap")

    os_ = sub.add_parser("osim", help="OpenSim .osim models (the supported subset: docs/osim.md)")
    cmds = os_.add_subparsers(dest="command", required=True)
    p = cmds.add_parser("check", help="load FILE and print what it becomes (JSON), or the first "
                        "element outside the subset (exit status 2)")
    p.add_argument("file", help="an OpenSim 4 .osim file")
    p.add_argument("--omit", nargs="+", default=[], metavar="NAME",
                   help="wrap objects, constraints, forces or components to leave out")
    p.add_argument("--lengths", action="store_true", help="also each muscle's length and "
                   "moment arms at the coordinates' default values (compiles the paths)")
    p.add_argument("--skeleton", action="store_true", help="read the skeleton only (no "
                   "ForceSet: no muscles, no actuators)")
    _add_forward_parser(cmds)
    from myotwin.cli.osim_inverse_dynamics import add_parser as add_inverse_dynamics_parser

    add_inverse_dynamics_parser(cmds)
    from myotwin.cli.osim_inverse_kinematics import add_parser as add_inverse_kinematics_parser

    add_inverse_kinematics_parser(cmds)
    from myotwin.cli.osim_static_optimization import add_parser as add_static_optimization_parser

    add_static_optimization_parser(cmds)
    from myotwin.cli.osim_muscle_analysis import add_parser as add_muscle_analysis_parser

    add_muscle_analysis_parser(cmds)
    from myotwin.cli.osim_run_tool import add_parser as add_run_tool_parser

    add_run_tool_parser(cmds)
    from myotwin.cli.mjcf import add_parser as add_mjcf_parser

    add_mjcf_parser(sub)
    return parser


def _add_forward_parser(cmds) -> None:
    p = cmds.add_parser("forward", help="simulate FILE driven by its muscles and "
                        "CoordinateActuators (a model without muscles by its actuators "
                        "alone); writes "
                        "states.sto, muscle_forces.sto, controls.sto, summary.json into "
                        "--out")
    p.add_argument("file", help="an OpenSim 4 .osim file")
    p.add_argument("--out", required=True, type=output_directory,
                   help="output directory")
    p.add_argument("--omit", nargs="+", default=[], metavar="NAME",
                   help="wrap objects, constraints, forces or components to leave out")
    p.add_argument("--excitation", nargs="+", default=[], metavar="X|NAME=X",
                   help="constant excitation in [0, 1]: one value for every muscle, or by "
                   "muscle name (these override --controls)")
    p.add_argument("--controls", metavar="FILE.sto|FILE.xml",
                   help="OpenSim controls file, as OpenSim's forward tool reads it: a .sto "
                   "with columns named after muscles and CoordinateActuators (linear in time, "
                   "extrapolated linearly past its rows), or a ControlSet .xml such as CMC's "
                   "(its ControlLinear controls, steps or linear)")
    p.add_argument("--force-set", nargs="+", default=[], metavar="FORCES.xml",
                   help="OpenSim ForceSet files whose forces join the model's (e.g. CMC's "
                   "reserve actuators), as the forward tool's force_set_files")
    p.add_argument("--replace-force-set", action="store_true",
                   help="the --force-set files' forces replace the model's own (its muscles "
                   "too), as the forward tool's replace_force_set true")
    p.add_argument("--external-loads", metavar="LOADS.xml",
                   help="an OpenSim ExternalLoads file (e.g. ground reaction forces) whose "
                   "forces act during the run, as the forward tool's external_loads_file")
    p.add_argument("--initial-q", nargs="+", default=[], metavar="NAME=VALUE",
                   help="initial coordinate values (rad or m; default: the file's "
                   "default_value, or the --initial-states row's)")
    p.add_argument("--initial-qd", nargs="+", default=[], metavar="NAME=VALUE",
                   help="initial coordinate speeds (rad/s or m/s; default: the file's "
                   "default_speed_value, or the --initial-states row's)")
    p.add_argument("--initial-states", metavar="STATES.sto",
                   help="start from a row of an OpenSim states file (OpenSim 4 or 3 names, "
                   "e.g. CMC's states), as OpenSim's forward tool does: the last row at or "
                   "before --start-s, at its time; coordinates, speeds and muscle states from "
                   "the file (a muscle state it lacks: the model's default)")
    p.add_argument("--solve-for-equilibrium", action="store_true",
                   help="with --initial-states: compliant tendons in equilibrium at the file's "
                   "coordinates, speeds and activations (OpenSim's "
                   "solve_for_equilibrium_for_auxiliary_states), not the file's fiber states")
    p.add_argument("--start-s", type=number, default=None,
                   help="time (s) the run starts at (default 0, or the states file's first "
                   "row); the controls file is read at the run's times")
    p.add_argument("--duration-s", type=positive_seconds, default=1.0, help="simulated time (s)")
    p.add_argument("--dt-s", type=positive_seconds, default=1e-4,
                   help="fixed step (s) of rk4 and semi_implicit_euler; with rk45 (the "
                   "default) only the grid of the written rows")
    p.add_argument("--record-every-s", type=positive_seconds, default=1e-3,
                   help="interval of the written rows (s), a whole number of steps")
    p.add_argument("--tendon", choices=("opensim", "fiber_length", "explicit_force",
                                        "damped_fiber_length", "rigid"),
                   default="opensim",
                   help="the state OpenSim integrates for the file's muscle type (default: "
                   "Thelen fiber_length, Millard damped_fiber_length, De Groote "
                   "explicit_force, rigid where ignore_tendon_compliance), or one for all: "
                   "compliant tendons with fiber length as the state (Thelen, De Groote), "
                   "with tendon force as the state (Thelen, De Groote), with fiber length as "
                   "the state and fiber damping (Millard, De Groote), or rigid tendons")
    p.add_argument("--integrator", choices=("rk4", "semi_implicit_euler", "rk45"),
                   default="rk45", help="error-controlled Dormand-Prince 5(4) at --accuracy "
                   "(default; OpenSim's forward tool is error-controlled too), or fixed-step "
                   "RK4 or semi-implicit Euler at --dt-s")
    p.add_argument("--accuracy", type=number, default=1e-7,
                   help="rk45: relative and absolute (SI) tolerance on every state")
    p.add_argument("--max-steps", type=positive_integer, default=1_000_000,
                   help="rk45: most attempted steps per 500 written rows before stopping")
    p.add_argument("--coupling", choices=("opensim", "length_gradient"), default="opensim",
                   help="muscle forces through OpenSim's point-force moment arms, as OpenSim "
                   "applies them (default), or through -dL/dq (power-consistent)")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.group == "repro":
            from myotwin.cli import repro as commands
        elif args.group == "train-wrap":
            from myotwin.cli import train_wrap as commands
        elif args.group == "osim":
            from myotwin.cli import osim as commands
        elif args.group == "mjcf":
            from myotwin.cli import mjcf as commands
        else:
            from myotwin.cli import invitro as commands
        handler = getattr(commands, "cmd_" + args.command.replace("-", "_"))
        return int(handler(args) or 0)
    except (ValueError, OSError) as e:     # bad input: one clear line, no traceback
        print(f"myotwin: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("myotwin: interrupted", file=sys.stderr)
        return 130


def print_json(data: dict) -> None:
    print(json.dumps(data, indent=2))


def print_summary_of(run) -> int:
    """Exit status of a command whose `run()` returns its summary: 0 with the summary
    printed, or 3 with the message when it raises FloatingPointError (a diverged simulation,
    a solution that stopped being finite; what was computed before is written)."""
    try:
        summary = run()
    except FloatingPointError as err:
        print(f"myotwin: {err}", file=sys.stderr)
        return 3
    print_json(summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
