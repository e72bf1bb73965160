"""PrescribedControllers: an actuator's control as a function of time, as OpenSim 4.6 runs them.

A model's `ControllerSet` (and a ForwardTool setup's) may hold `PrescribedController`s:

    <PrescribedController name="pc">
      <socket_actuators>/forceset/BIClong /forceset/TRIlong</socket_actuators>
      <FunctionSet name="ControlFunctions"><objects>
        <StepFunction>...</StepFunction> <Sine>...</Sine>
      </objects></FunctionSet>
    </PrescribedController>

What OpenSim 4.6 does with one, found by running it (`Model.computeControls` on arm26 with
controllers written into its file; scratch, pinned by tests/osim/test_osim_controllers.py
where a test can show it):

* The i-th function of the FunctionSet is the control of the i-th actuator, whatever the
  functions' names; a count that differs is an error. The FunctionSet must be named
  ControlFunctions (its property's name) or unnamed: under another name OpenSim finds no
  functions in it. The functions are any of
  `osim.functions` (StepFunction and Sine included), of time in seconds.
* `socket_actuators`: component paths, absolute (`/forceset/BIClong`) or relative to the
  controller (`../../forceset/BIClong` from `/controllerset/pc`); a bare name fails to connect,
  so it is refused here. OpenSim 3's `actuator_list` (names) is still read by 4.6, and here.
  An actuator listed twice, or one the ForceSet lacks, is an error.
* Controllers add: two of them driving one actuator give the sum of their functions (0.3 +
  0.4 gave 0.7), and a ForwardTool's ControlSetController adds its controls file to them
  (`Controller::computeControls` adds into the model's controls).
* `enabled` false: the controller adds nothing.
* A muscle's control is its excitation; a CoordinateActuator's is multiplied by its
  optimal_force.

Refused, one OsimError naming the file, the controller and the value: other controller types
(a model's ControlSetController: give its file to `--controls`; `omit` leaves a controller
out; `osim.load(..., controllers=False)`, as static optimization and muscle analysis load a
model, reads the whole ControllerSet past), a `controls_file` (the
controller's own table of controls), non-empty `components`, a path that leads outside the
ForceSet, an actuator that `omit` left out (omit the controller too: `omit` takes controller
names).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.osim.functions import Kind, OsimFunction, evaluate, read_function
from myotwin.osim.xml_values import Node, Omissions

_PROPERTIES = ("components", "socket_actuators", "actuator_list", "enabled", "FunctionSet",
               "controls_file", "interpolation_method")


@dataclasses.dataclass(frozen=True)
class PrescribedControl:
    """One actuator's control from a PrescribedController: `controller` (its name), `actuator`
    (a muscle's or CoordinateActuator's name), `function` (of time, s) and `description`
    (e.g. "StepFunction of PrescribedController 'pc' (arm26.osim)") for messages."""

    controller: str
    actuator: str
    function: OsimFunction
    description: str

    def at(self, t) -> np.ndarray:
        """The control at times t (s), as OpenSim evaluates the function."""
        return np.asarray(_evaluate_many(self.function, jnp.atleast_1d(jnp.asarray(
            t, dtype=jnp.float64))))


@jax.jit
def _evaluate_many(fn: OsimFunction, t):
    return evaluate(fn, t)


def read_controllers(set_node: Node, force_names, omissions: Omissions | None = None,
                     omitted=()) -> tuple[PrescribedControl, ...]:
    """The controls of the PrescribedControllers in the ControllerSet element `set_node`
    (its `objects`), enabled ones only, in file order; force_names: the model's muscles and
    CoordinateActuators; omissions: the loader's `omit` (a controller named there is left
    out); omitted: the forces it left out (for the message when a controller drives one)."""
    set_node.check_children(("objects", "groups"))
    found = set_node.find("objects")
    controls: list[PrescribedControl] = []
    for elem in [] if found is None else list(found):
        node = Node.of(elem, set_node.where, "")
        if omissions is not None and omissions.take(node):
            continue
        controls += read_controller(node, force_names, omitted)
    return tuple(controls)


def read_controller(node: Node, force_names, omitted=()) -> tuple[PrescribedControl, ...]:
    """The controls of one controller element `node` (a PrescribedController; none when it
    is disabled) of a model whose muscles and CoordinateActuators are `force_names`; omitted:
    forces `omit` left out. OsimError for anything refused (module docstring)."""
    forces, omitted = set(force_names), set(omitted)
    leave_out = f"; pass omit=({node.name!r},) to load the model without it"
    if node.tag == "ControlSetController":
        raise node.error("a ControlSetController in the model is not run: give its controls "
                         f"file to --controls (or to a ForwardTool setup's controller)"
                         f"{leave_out}")
    if node.tag != "PrescribedController":
        raise node.error(f"{node.tag} is not a supported controller (supported: "
                         f"PrescribedController; a ForwardTool's ControlSetController)"
                         f"{leave_out}")
    node.check_children(_PROPERTIES)
    if node.has_value("controls_file"):
        raise node.error(f"<controls_file> {node.text('controls_file')!r} is not offered: "
                         "give the functions in its FunctionSet, or the table as the "
                         "ForwardTool's controls file")
    components = node.find("components")
    if components is not None and len(components):
        raise node.error("<components> must be empty")
    names = _actuators(node, forces, omitted)
    function_set = node.find("FunctionSet")
    if function_set is not None and function_set.get("name", "ControlFunctions") != \
            "ControlFunctions":
        raise node.error(f"<FunctionSet name={function_set.get('name')!r}>: OpenSim 4.6 reads "
                         "the controls from the FunctionSet named ControlFunctions (or "
                         "unnamed), and finds none in this one")
    functions = node.objects("FunctionSet")
    if len(functions) != len(names):
        raise node.error(f"its FunctionSet has {len(functions)} functions for {len(names)} "
                         f"actuators {names}: OpenSim needs one per actuator, in order")
    if not node.flag("enabled", True):
        return ()
    out = []
    for name, elem in zip(names, functions):
        fn = read_function(elem, node.where, sine=True)
        out.append(PrescribedControl(node.name, name, fn,
                                     f"{_kind(fn)} of PrescribedController {node.name!r} "
                                     f"({node.where.file})"))
    return tuple(out)


def _kind(fn: OsimFunction) -> str:
    return fn.tag if fn.kind is not Kind.MULTIPLIER else f"{fn.tag} of {_kind(fn.inner)}"


def _actuators(node: Node, forces: set[str], omitted: set[str]) -> list[str]:
    """The actuator names of `socket_actuators` (paths) or `actuator_list` (names)."""
    paths, listed = node.text("socket_actuators", "").split(), node.text("actuator_list",
                                                                           "").split()
    if paths and listed:
        raise node.error("give <socket_actuators> or <actuator_list>, not both")
    names = listed or [_force_of(node, p) for p in paths]
    for name in names:
        if name in omitted:
            raise node.error(f"drives {name!r}, which omit leaves out: omit the controller "
                             f"({node.name!r}) too")
        if name not in forces:
            raise node.error(f"drives {name!r}, which is not a muscle or CoordinateActuator "
                             f"of the model's forces {sorted(forces)}")
        if names.count(name) > 1:
            raise node.error(f"lists actuator {name!r} twice")
    return names


def _force_of(node: Node, path: str) -> str:
    """The force name a socket path leads to from /controllerset/<controller>."""
    parts = [] if path.startswith("/") else ["controllerset", node.name]
    for part in path.split("/"):
        if part == "..":
            if not parts:
                raise node.error(f"<socket_actuators> path {path!r} leads above the model")
            parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    if len(parts) != 2 or parts[0] != "forceset":
        raise node.error(f"<socket_actuators> path {path!r} leads to {'/' + '/'.join(parts)!r},"
                         f" not to a force of the ForceSet (/forceset/<name>)")
    return parts[1]


@dataclasses.dataclass(frozen=True, eq=False)
class PrescribedInputs:
    """Prescribed controls as one pytree for the right-hand side (`musculoskeletal.adaptive.
    InputTable.functions`): functions (k,) of time; to_excitation (n_muscles, k) and to_ctrl
    (n_u, k) 0/1 matrices summing them into each muscle's excitation and each actuator's
    control."""

    functions: tuple[OsimFunction, ...]
    to_excitation: np.ndarray
    to_ctrl: np.ndarray

    def at(self, t) -> tuple[jax.Array, jax.Array]:
        """(excitation (n_muscles,), ctrl (n_u,)) added at time t (s)."""
        values = jnp.stack([evaluate(fn, t) for fn in self.functions])
        return jnp.asarray(self.to_excitation) @ values, jnp.asarray(self.to_ctrl) @ values


jax.tree_util.register_dataclass(PrescribedInputs, data_fields=["functions", "to_excitation",
                                                                "to_ctrl"], meta_fields=[])


def prescribed_inputs(controls, muscles, actuators) -> PrescribedInputs | None:
    """The `PrescribedInputs` of `controls` (PrescribedControl) for the muscles and actuators
    named (in the model's orders); None when there are none."""
    if not controls:
        return None
    to_excitation = np.array([[c.actuator == m for c in controls] for m in muscles],
                             dtype=float).reshape(len(muscles), len(controls))
    to_ctrl = np.array([[c.actuator == a for c in controls] for a in actuators],
                       dtype=float).reshape(len(actuators), len(controls))
    return PrescribedInputs(tuple(c.function for c in controls), to_excitation, to_ctrl)


def function_knots(fn: OsimFunction) -> np.ndarray:
    """The times where `fn` may be less smooth than elsewhere (its knots; a multiplier's
    inner function's): breakpoints for an error-controlled integrator."""
    return function_knots(fn.inner) if fn.kind is Kind.MULTIPLIER else np.asarray(fn.knots)
