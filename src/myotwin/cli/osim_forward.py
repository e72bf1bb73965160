"""`myotwin osim forward FILE --out DIR ...`: simulate an .osim model driven by its muscles
and CoordinateActuators (`myotwin.osim.forward`, docs/osim.md "Forward simulation"); a model
without muscles moves by gravity and its actuators alone, as in OpenSim's forward tool.

Writes DIR/states.sto (OpenSim 4 state names; OpenSim reads it back), DIR/muscle_forces.sto,
DIR/controls.sto and DIR/summary.json, rows as they are produced; prints the summary. Bad input:
one line naming the file, field and value (exit status 2); a simulation that diverges stops with
the rows before the divergence written (exit status 3).
"""

from __future__ import annotations

import argparse

from myotwin.scalars import number_from_text


def name_value_pairs(items, what: str) -> dict[str, float]:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ValueError(f"{what}: expected NAME=VALUE, got {item!r}")
        if name in out:
            raise ValueError(f"{what}: {name} is given twice ({name}={out[name]:g} and {item})")
        try:
            out[name] = number_from_text(value)   # float() reads "0_5" as 5
        except ValueError:
            raise ValueError(f"{what}: {value!r} (for {name}) is not a number") from None
    return out


def number_or_pairs(items, what: str) -> float | dict[str, float] | None:
    """An option such as --excitation: None, one number for every name, or NAME=VALUE pairs."""
    if not items:
        return None
    if len(items) == 1 and "=" not in items[0]:
        try:
            return number_from_text(items[0])
        except ValueError:
            raise ValueError(f"{what}: {items[0]!r} is not a number") from None
    return name_value_pairs(items, what)


def excitation_argument(items) -> float | dict[str, float] | None:
    """--excitation: None, one number for every muscle, or NAME=VALUE pairs."""
    return number_or_pairs(items, "--excitation")


def cmd_forward(args: argparse.Namespace) -> int:
    from myotwin.jax_setup import configure_jax

    configure_jax()   # entry point: float64
    from myotwin import musculoskeletal as ms
    from myotwin import osim
    from myotwin.cli.main import print_summary_of
    from myotwin.osim.controls import read_controls
    from myotwin.osim.external_loads import read_external_loads
    from myotwin.osim.forward import Inputs, forward
    from myotwin.osim.forward_start import read_initial_states
    from myotwin.osim.storage import read_storage

    excitation = excitation_argument(args.excitation)
    initial = name_value_pairs(args.initial_q, "--initial-q")
    speeds = name_value_pairs(args.initial_qd, "--initial-qd")
    controls = read_controls(args.controls) if args.controls else None
    loaded = osim.load(args.file, omit=tuple(args.omit), force_set_files=args.force_set,
                       replace_force_set=args.replace_force_set)
    inputs = Inputs(loaded, excitation, controls)
    external_loads = (None if args.external_loads is None
                      else read_external_loads(args.external_loads))
    initial_states = None if args.initial_states is None else read_initial_states(
        loaded, read_storage(args.initial_states), str(args.initial_states), args.start_s)
    msm = ms.musculoskeletal_model(loaded.model, osim.build_muscles(loaded, tendon=args.tendon),
                                   coupling=args.coupling, coordinates=loaded.coupling)
    return print_summary_of(lambda: forward(
        loaded, msm, args.out, inputs=inputs, duration_s=args.duration_s, dt_s=args.dt_s,
        record_every_s=args.record_every_s, q0=initial, integrator=args.integrator,
        accuracy=args.accuracy, max_steps=args.max_steps, initial=initial_states,
        start_s=None if initial_states is not None else args.start_s,
        solve_for_equilibrium=args.solve_for_equilibrium, external_loads=external_loads,
        qd0=speeds))
