"""`myotwin mjcf forward FILE --out DIR --excitation X|NAME=X ... | --controls FILE.csv`:
simulate an MJCF model with MuJoCo `<muscle>` actuators (MyoSuite's), optionally with mass on
its muscles (`myotwin.musculoskeletal.mjcf_forward`, docs/muscle.md "MuJoCo's muscle").

Writes DIR/states.csv, DIR/muscle_forces.csv and DIR/summary.json, rows as they are
produced; prints the summary. Bad input: one line naming the file, field and value (exit
status 2); a simulation that diverges stops with the rows before it written (exit status 3).
"""

from __future__ import annotations

import argparse

from myotwin.cli.arguments import output_directory, positive_integer, positive_seconds
from myotwin.cli.osim_forward import excitation_argument, name_value_pairs, number_or_pairs


def add_parser(sub) -> None:
    group = sub.add_parser("mjcf", help="MJCF models with MuJoCo muscles (MyoSuite's), with "
                           "or without muscle mass")
    cmds = group.add_subparsers(dest="command", required=True)
    p = cmds.add_parser("forward", help="simulate FILE driven by its muscles; writes "
                        "states.csv, muscle_forces.csv, summary.json into --out")
    p.add_argument("file", help="an MJCF file, usually with <muscle> actuators (on spatial "
                   "tendons, fixed tendons or joints); without them its skeleton runs, moved "
                   "by its other actuators (--ctrl, --controls)")
    p.add_argument("--out", required=True, type=output_directory,
                   help="output directory")
    p.add_argument("--excitation", nargs="+", default=[], metavar="X|NAME=X",
                   help="constant excitation in [0, 1] (the muscle actuator's ctrl): one "
                   "value for every muscle, or by actuator name (the others 0 or from "
                   "--controls); this or --controls is required if the model has muscles")
    p.add_argument("--ctrl", nargs="+", default=[], metavar="NAME=X",
                   help="constant ctrl of the model's other actuators, by name (default 0 or "
                   "from --controls)")
    p.add_argument("--controls", default=None, metavar="FILE.csv",
                   help="time-varying ctrl: a CSV table with a header time_s,<actuator>,... "
                   "(muscles' excitations in [0, 1], other actuators' ctrl), linear in time, "
                   "held outside its range, each step taking its start time's values; "
                   "--excitation and --ctrl by name override its columns")
    p.add_argument("--muscle-mass-kg", nargs="+", default=[], metavar="KG|NAME=KG",
                   help="mass of each muscle (kg), spread along its tendon in --mass-points "
                   "points: one value for every muscle, or by name (default 0: MuJoCo's "
                   "massless muscle)")
    p.add_argument("--mass-points", type=positive_integer, default=10,
                   help="mass points per muscle")
    p.add_argument("--initial-q", nargs="+", default=[], metavar="JOINT=VALUE",
                   help="initial values of hinge and slide joints (rad or m; default qpos0, "
                   "or the --keyframe's qpos)")
    p.add_argument("--initial-qd", nargs="+", default=[], metavar="JOINT=VALUE",
                   help="initial speeds of hinge and slide joints (rad/s or m/s; default 0, "
                   "or the --keyframe's qvel)")
    p.add_argument("--keyframe", default=None, metavar="NAME|INDEX",
                   help="start from this <key> of the file as mj_resetDataKeyframe does: its "
                   "qpos, qvel, act, time, and its ctrl for every actuator given no other "
                   "input")
    p.add_argument("--initial-activation", nargs="+", default=[], metavar="X|NAME=X",
                   help="initial muscle activations in [0, 1] (default 0, MuJoCo's reset, "
                   "or the --keyframe's act)")
    p.add_argument("--disable-contact", action="store_true",
                   help="run without any contact, as MuJoCo with <flag contact=\"disable\"/> "
                   "(the file is not changed)")
    p.add_argument("--duration-s", type=positive_seconds, default=1.0, help="simulated time (s)")
    p.add_argument("--dt-s", type=positive_seconds, default=None,
                   help="fixed step (s); default: the file's <option timestep>")
    p.add_argument("--record-every-s", type=positive_seconds, default=None,
                   help="interval of the written rows (s), a whole number of steps (default: "
                   "every step)")
    p.add_argument("--integrator", choices=("euler", "rk4", "semi_implicit_euler"),
                   default=None,
                   help="default: the file's <option integrator> (Euler: 'euler', MuJoCo's, "
                   "dof damping implicit, or 'semi_implicit_euler' where the file disables "
                   "eulerdamp; RK4: 'rk4')")


def cmd_forward(args: argparse.Namespace) -> int:
    from myotwin.jax_setup import configure_jax

    configure_jax()   # entry point: float64
    from myotwin.cli.main import print_summary_of
    from myotwin.musculoskeletal.mjcf_forward import forward

    mass = number_or_pairs(args.muscle_mass_kg, "--muscle-mass-kg")
    return print_summary_of(lambda: forward(
        args.file, args.out, excitation=excitation_argument(args.excitation),
        ctrl=name_value_pairs(args.ctrl, "--ctrl"), duration_s=args.duration_s, dt_s=args.dt_s,
        record_every_s=args.record_every_s, q0=name_value_pairs(args.initial_q, "--initial-q"),
        qd0=name_value_pairs(args.initial_qd, "--initial-qd"), keyframe=args.keyframe,
        activation0=number_or_pairs(args.initial_activation, "--initial-activation"),
        integrator=args.integrator, muscle_mass_kg=0.0 if mass is None else mass,
        mass_points=args.mass_points, disable_contact=args.disable_contact,
        controls=args.controls))
