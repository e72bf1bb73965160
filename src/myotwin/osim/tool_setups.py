"""OpenSim tool setup files, run as `opensim-cmd run-tool SETUP.xml` runs them
(`myotwin osim run-tool SETUP.xml`): the setup's tool element picks the runner.

Each runner is `run(path, out_dir=None) -> summary` in its own module, reading the setup's
properties as that OpenSim tool does (paths relative to the setup file's folder) and writing
into `out_dir`, by default the setup's results_directory:

* ForwardTool: `forward_setup.run_forward_setup` (a forward simulation).
* InverseKinematicsTool: `ik_setup.run_ik_setup` (inverse kinematics).
* InverseDynamicsTool: `id_setup.run_id_setup` (inverse dynamics on the skeleton: a setup
  whose forces_to_exclude leaves a force of the model acting is refused).
* AnalyzeTool: `analyze_setup.run_analyze_setup` (its StaticOptimization, MuscleAnalysis,
  Kinematics, BodyKinematics, PointKinematics, Actuation, ForceReporter and StatesReporter,
  each into a folder of its name).

Other tools are refused naming the tool and the ones that run.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

from myotwin.osim.errors import OsimError
from myotwin.osim.xml_values import parse_xml

#: The properties of OpenSim's AbstractTool, which ForwardTool and AnalyzeTool extend.
ABSTRACT_TOOL_PROPERTIES = (
    "model_file", "replace_force_set", "force_set_files", "results_directory",
    "output_precision", "initial_time", "final_time", "solve_for_equilibrium_for_auxiliary_states",
    "maximum_number_of_integrator_steps", "maximum_integrator_step_size",
    "minimum_integrator_step_size", "integrator_error_tolerance", "AnalysisSet", "ControllerSet",
    "external_loads_file")
#: Those that change nothing without an integration (read past, but numbers).
INTEGRATION_PROPERTIES = ("output_precision", "maximum_number_of_integrator_steps",
                          "maximum_integrator_step_size", "minimum_integrator_step_size",
                          "integrator_error_tolerance")

#: tool element -> "module:function" of its runner (imported when used: they import JAX).
RUNNERS = {
    "ForwardTool": "myotwin.osim.forward_setup:run_forward_setup",
    "InverseKinematicsTool": "myotwin.osim.ik_setup:run_ik_setup",
    "InverseDynamicsTool": "myotwin.osim.id_setup:run_id_setup",
    "AnalyzeTool": "myotwin.osim.analyze_setup:run_analyze_setup",
}


def tool_of(path) -> str:
    """The tool element's tag of the setup file `path`: the one element inside its
    OpenSimDocument; OsimError naming the file otherwise, or for a tool that does not run."""
    name = Path(path).name
    root = parse_xml(path)
    if root.tag != "OpenSimDocument":
        raise OsimError(f"{name}: the root element must be OpenSimDocument, got <{root.tag}>")
    tools = [child.tag for child in root]
    if len(tools) != 1:
        raise OsimError(f"{name}: an OpenSimDocument holding one tool is expected, got "
                        f"{tools or 'nothing'}")
    if tools[0] not in RUNNERS:
        raise OsimError(f"{name}: {tools[0]} setups are not run (these are: "
                        f"{', '.join(RUNNERS)})")
    return tools[0]


def write_setup_summary(out_dir, tool_type: str, summary: dict) -> dict:
    """{"tool_type": tool_type, **summary}, written to out_dir/summary.json (in place of the
    command's own, which lacks the setup) and returned: a runner's last step."""
    summary = {"tool_type": tool_type, **summary}
    (Path(out_dir) / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def run_tool_setup(path, out_dir=None, **options) -> dict:
    """Run the setup file `path` with its tool's runner (`RUNNERS`), writing into `out_dir`
    (default: the setup's results_directory); `options` go to the runner (the ForwardTool's
    record_every_s). Returns the runner's summary, with "tool_type" the tool element."""
    tool = tool_of(path)
    module, function = RUNNERS[tool].split(":")
    runner = getattr(importlib.import_module(module), function)
    return {"tool_type": tool, **runner(path, out_dir, **options)}
