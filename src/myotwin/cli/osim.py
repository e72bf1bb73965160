"""`myotwin osim check FILE [--omit NAME ...] [--lengths]`: does an .osim file load, and what
becomes of it (`myotwin.osim.load`, docs/osim.md).

Prints JSON: the coordinates in the engine's q order with their ranges and default values,
the muscles (type, path kind: a MuJoCo tendon for fixed points only, an OpenSim path with
conditional or moving points or wraps), the CoordinateActuators, the omitted elements, the
enabled PrescribedControllers' controls (controller, actuator, function type), the inactive
wrap objects (`<active>false</active>`), the markers (body and location, for
`myotwin osim inverse-kinematics`), and `muscles_refused` (when there are any: the messages
of the muscles `osim.build_muscles` refuses, which `forward` would refuse); with --lengths
also each muscle's length (m) and moment arms (m, r = -dL/dq, per coordinate) at the
coordinates' default values, to compare with OpenSim's plots. An element outside the
supported subset is reported in one line naming the file, the element and the value (exit
status 2).
"""

from __future__ import annotations

import argparse

from myotwin.cli.osim_forward import cmd_forward  # noqa: F401  (`myotwin osim forward`)
from myotwin.cli.osim_inverse_dynamics import cmd_inverse_dynamics  # noqa: F401
from myotwin.cli.osim_inverse_kinematics import cmd_inverse_kinematics  # noqa: F401
from myotwin.cli.osim_muscle_analysis import cmd_muscle_analysis  # noqa: F401
from myotwin.cli.osim_static_optimization import cmd_static_optimization  # noqa: F401
from myotwin.cli.osim_run_tool import cmd_run_tool  # noqa: F401  (`myotwin osim run-tool`)


def inactive_wrap_objects(paths) -> list[str]:
    """Names of the OpenSim wrap objects loaded inactive (`<active>false</active>`: kept in
    their paths' wrap sets, never wrapping; docs/osim.md)."""
    ps = getattr(paths, "opensim", None)
    if ps is None:
        return []
    return [name for name, active in zip(ps.cyl_names, ps.cyl_active) if not active]


def muscles_refused(loaded) -> list[str]:
    """The messages of the muscle groups (one per OpenSim type) that `osim.build_muscles`
    refuses with the tendon OpenSim integrates (a parameter out of range, a flag myotwin
    does not model): the forward simulation would refuse them."""
    from myotwin import osim

    messages = []
    for kind in dict.fromkeys(loaded.muscles[n]["type"] for n in loaded.muscle_names):
        names = [n for n in loaded.muscle_names if loaded.muscles[n]["type"] == kind]
        try:
            osim.build_muscles(loaded, tendon="opensim", names=names)
        except ValueError as err:
            messages.append(str(err))
    return messages


def cmd_check(args: argparse.Namespace) -> int:
    from myotwin.jax_setup import configure_jax

    configure_jax()   # entry point: float64
    import jax.numpy as jnp

    import myotwin
    from myotwin import osim
    from myotwin.cli.main import print_json
    from myotwin.engine.coupling import full_jacobian, full_positions
    from myotwin.paths.opensim_composite import CompositePaths

    loaded = osim.load(args.file, omit=tuple(args.omit), forces=not args.skeleton)
    paths = loaded.model.paths
    kinds = (paths.path_kind if isinstance(paths, CompositePaths)
             else (0,) * len(loaded.muscle_names))   # all MJCF tendons
    report = {
        "source": loaded.source,
        "coordinates": {name: {"range": list(loaded.coordinate_ranges[name]),
                               "default_value": loaded.coordinate_default_values[name],
                               "default_speed_value": loaded.coordinate_default_speeds[name]}
                        for name in loaded.coordinates},
        "muscles": {name: {"type": loaded.muscles[name]["type"],
                           "path": "opensim" if kinds[k] == 1 else "mujoco_tendon"}
                    for k, name in enumerate(loaded.muscle_names)},
        "actuators": {name: {"coordinate": a["coordinate"], "gear": a["gear"]}
                      for name, a in loaded.actuators.items()},
        "engine_joints": list(loaded.engine_joints),
        "coupled": loaded.coupling is not None,
        "coupled_coordinates": {name: {"independent": c.independent,
                                       "constraint": c.constraint,
                                       "description": c.description}
                                for name, c in loaded.coupled_coordinates.items()},
        "locked_coordinates": {name: {"value": c.value, "joint": c.joint}
                               for name, c in loaded.locked_coordinates.items()},
        "unenforced_constraints": list(loaded.unenforced_constraints),
        "merged_bodies": dict(loaded.merged_bodies),
        "omitted": list(loaded.omitted),
        "inactive_wrap_objects": inactive_wrap_objects(paths),
        "prescribed_controls": [{"controller": c.controller, "actuator": c.actuator,
                                 "function": c.function.tag}
                                for c in loaded.prescribed_controls],
    }
    refused = muscles_refused(loaded)
    if refused:   # muscles are built only by forward, static optimization, muscle analysis
        report["muscles_refused"] = refused
    try:   # markers are read only by inverse kinematics: one outside its subset is reported
        report["markers"] = {m.name: {"body": m.body, "location_m": list(m.location_m)}
                             for m in osim.read_markers(args.file)}
    except osim.OsimError as err:
        report["markers_refused"] = str(err)
    if args.lengths and loaded.muscle_names:
        q = jnp.asarray([loaded.coordinate_default_values[n] for n in loaded.coordinates],
                        dtype=jnp.float64)
        q_engine = q if loaded.coupling is None else full_positions(loaded.coupling, q)
        lengths = myotwin.muscle_lengths(loaded.model, q_engine)
        arms = myotwin.moment_arms(loaded.model, q_engine)   # (n_engine, n_muscles)
        if loaded.coupling is not None:   # -dL/dq = J^T (-dL/dq_f)
            arms = full_jacobian(loaded.coupling, q).T @ arms
        report["at_default_pose"] = {
            name: {"length_m": float(lengths[k]),
                   "moment_arm_m": {c: float(arms[i, k])
                                    for i, c in enumerate(loaded.coordinates)}}
            for k, name in enumerate(loaded.muscle_names)}
    print_json(report)
    return 0
