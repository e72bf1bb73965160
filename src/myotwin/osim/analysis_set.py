"""The AnalysisSet of an OpenSim tool setup (an AnalyzeTool's, `osim.analyze_setup`, or a
ForwardTool's, `osim.forward_setup`): its analyses read and checked (`read_analysis_set`;
`refuse_added_muscles` for a MuscleAnalysis beside force set files),
and the analyses that report rows of states (Kinematics, BodyKinematics, PointKinematics,
Actuation, ForceReporter, StatesReporter: `ROW_TYPES`) checked against the model
(`row_selections`) and written from those rows (`write_row_analysis`; what they write:
`kinematics_analysis` and `force_analyses`).

What each analysis' properties become (OpenSim 4.6's analyses, whose property lists are
these; "checked" means run through OpenSim 4.6's AnalyzeTool or ForwardTool, scratch runs
and the tests of tests/osim/test_osim_analyze_setup.py and test_osim_forward_analyses.py):

* StaticOptimization: `on`; `activation_exponent` (>= 1), `use_muscle_physiology`;
  `use_model_force_set` must be true (false asks OpenSim for inverse dynamics instead);
  `optimizer_convergence_criterion` and `optimizer_max_iterations` are recorded, not used
  (`setup_values_not_used` in its summary): they bound OpenSim's own optimizer, whose stopping
  point ours does not imitate; ours solves to `static_optimization.DEFAULT_ACCURACY`, which
  is where OpenSim's activations go as its criterion shrinks (docs/osim.md "Static
  optimization").
* MuscleAnalysis: `on`; `muscle_list` and `moment_arm_coordinate_list` must be `all`, and
  `compute_moments` true (ours writes every muscle, every coordinate's moment arms and
  moments).
* Kinematics: `on`, `coordinates` (all or a list); BodyKinematics: `on`, `bodies` (all or a
  list, `center_of_mass` among them), `express_results_in_body_local_frame`. Their names, and
  PointKinematics' bodies, are checked against the model before any analysis writes a file
  (`row_selections`).
* PointKinematics: `on`, `body_name` (a body or ground), `point` (m, in its frame),
  `point_name` (its files' and columns' name), `relative_to_body_name` (none, ground or a
  body); an unknown body is refused (OpenSim stops without a word on one, and takes an
  unknown relative_to_body_name as ground).
* Actuation, StatesReporter: `on`. ForceReporter: `on`, `include_constraint_forces` must be
  false.
* All: `step_interval` must be 1 (every row is analysed); `in_degrees` is read past
  (checked: OpenSim's StaticOptimization and MuscleAnalysis write the same radians,
  inDegrees=no, either way; its Kinematics and BodyKinematics write degrees with it true,
  ours radians, inDegrees=no); `start_time` and `end_time` are read past: neither tool uses
  them (checked: an AnalyzeTool's StaticOptimization with 0.1-0.2 s and MuscleAnalysis with
  0.05-0.15 s in a 0-0.3 s tool each report all 37 rows; a ForwardTool's Kinematics with
  0.1-0.2 s reports every step from 0 to 0.5 s).
* Analyses that are off are read past whatever their type (one of `ANALYSIS_TYPES` is still
  checked); another analysis that is on, or one the tool does not run, is refused. Any
  property an analysis does not have is refused.

Each row analysis writes into its own folder `<out>/<analysis name>` (the type's name for an
unnamed one) kinematics_q.sto, body_kinematics_pos_global.sto,
point_kinematics_<point>_pos.sto, actuation_force.sto, force_reporter_forces.sto,
states_reporter_states.sto, ... and summary.json (`write_row_analysis`), not OpenSim's
`<tool>_<analysis>_q.sto` names.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

from myotwin.osim.errors import OsimError
from myotwin.osim.xml_values import Node

_COMMON = ("on", "start_time", "end_time", "step_interval", "in_degrees")
SO = "StaticOptimization"
MA = "MuscleAnalysis"
KIN = "Kinematics"
BODY_KIN = "BodyKinematics"
POINT_KIN = "PointKinematics"
ACTUATION = "Actuation"
FORCES = "ForceReporter"
STATES = "StatesReporter"
#: Every analysis type read here, in the order the messages list them.
ANALYSIS_TYPES = (SO, MA, KIN, BODY_KIN, POINT_KIN, ACTUATION, FORCES, STATES)
_ANALYSIS_PROPERTIES = {
    SO: _COMMON + ("use_model_force_set", "activation_exponent", "use_muscle_physiology",
                   "optimizer_convergence_criterion", "optimizer_max_iterations"),
    MA: _COMMON + ("muscle_list", "moment_arm_coordinate_list", "compute_moments"),
    KIN: _COMMON + ("coordinates",),
    BODY_KIN: _COMMON + ("bodies", "express_results_in_body_local_frame"),
    POINT_KIN: _COMMON + ("body_name", "relative_to_body_name", "point_name", "point"),
    ACTUATION: _COMMON,
    FORCES: _COMMON + ("include_constraint_forces",),
    STATES: _COMMON,
}


@dataclasses.dataclass(frozen=True)
class StaticOptimizationSettings:
    """A StaticOptimization that is on: its folder name, activation exponent, whether the
    muscles' force-length-velocity is used, and OpenSim's optimizer settings (recorded)."""

    name: str
    activation_exponent: float
    use_muscle_physiology: bool
    optimizer_convergence_criterion: float
    optimizer_max_iterations: int


@dataclasses.dataclass(frozen=True)
class MuscleAnalysisSettings:
    """A MuscleAnalysis that is on: its folder name (every muscle, coordinate and moment)."""

    name: str


@dataclasses.dataclass(frozen=True)
class KinematicsSettings:
    """A Kinematics that is on: its folder name, its coordinates (None: all)."""

    name: str
    coordinates: tuple[str, ...] | None


@dataclasses.dataclass(frozen=True)
class BodyKinematicsSettings:
    """A BodyKinematics that is on: its folder name, its bodies (None: all, and the mass
    center), whether velocities and accelerations are in the bodies' frames."""

    name: str
    bodies: tuple[str, ...] | None
    local: bool


@dataclasses.dataclass(frozen=True)
class PointKinematicsSettings:
    """A PointKinematics that is on: its folder name, the point's name, its body (or ground),
    its location in the body's frame (m), the body whose frame reports it (none: ground)."""

    name: str
    point_name: str
    body: str
    point_m: tuple[float, float, float]
    relative_to: str


@dataclasses.dataclass(frozen=True)
class ForceAnalysisSettings:
    """An Actuation, ForceReporter or StatesReporter (`kind`) that is on: its folder
    name."""

    name: str
    kind: str


Settings = (StaticOptimizationSettings | MuscleAnalysisSettings | KinematicsSettings
            | BodyKinematicsSettings | PointKinematicsSettings | ForceAnalysisSettings)
_TYPES = {StaticOptimizationSettings: SO, MuscleAnalysisSettings: MA, KinematicsSettings: KIN,
          BodyKinematicsSettings: BODY_KIN, PointKinematicsSettings: POINT_KIN}
#: The settings of the analyses whose rows come from `kinematics_analysis.analysis_rows`.
ROW_SETTINGS = (KinematicsSettings, BodyKinematicsSettings, PointKinematicsSettings,
                ForceAnalysisSettings)
#: Their types.
ROW_TYPES = (KIN, BODY_KIN, POINT_KIN, ACTUATION, FORCES, STATES)


def analysis_type(settings: Settings) -> str:
    """The OpenSim analysis type of `settings`."""
    return settings.kind if isinstance(settings, ForceAnalysisSettings) else _TYPES[
        type(settings)]


def _only(node: Node, tag: str, wanted: bool, why: str) -> None:
    """Refuse the flag `tag` of `node` unless it is absent or `wanted`."""
    if node.flag(tag, wanted) != wanted:
        raise node.error(f"<{tag}> must be {str(wanted).lower()}: {why}, got "
                         f"{node.text(tag)!r}")


def _all(node: Node, tag: str, what: str) -> None:
    """Refuse a list property `tag` other than `all` (its default)."""
    words = node.text(tag, "all").split()
    if words != ["all"]:
        raise node.error(f"<{tag}> must be all (every {what} is analysed), got "
                         f"{node.text(tag)!r}")


def _names(node: Node, tag: str) -> tuple[str, ...] | None:
    """A list property `tag` (default all): None for `all`, else its names."""
    words = tuple(node.text(tag, "all").split())
    if "all" in words and words != ("all",) or not words:
        raise node.error(f"<{tag}> must be all or a list of names, got {node.text(tag)!r}")
    return None if words == ("all",) else words


def _analysis(node: Node) -> Settings | None:
    """An analysis element of `_ANALYSIS_PROPERTIES` read and checked; None if it is off."""
    node.check_children(_ANALYSIS_PROPERTIES[node.tag])
    on = node.flag("on", True)
    node.number("start_time", -math.inf, finite=False)   # read past (module docstring)
    node.number("end_time", math.inf, finite=False)
    node.flag("in_degrees", True)
    if node.number("step_interval", 1.0) != 1:
        raise node.error(f"<step_interval> must be 1 (every row is analysed), got "
                         f"{node.text('step_interval')!r}")
    name = node.name or node.tag
    if node.tag == SO:
        _only(node, "use_model_force_set", True, "the model's actuators are optimised "
              "(false: OpenSim's inverse dynamics instead)")
        exponent = node.number("activation_exponent", 2.0)
        if exponent < 1.0:
            raise node.error(f"<activation_exponent> must be >= 1, got "
                             f"{node.text('activation_exponent')!r}")
        criterion = node.number("optimizer_convergence_criterion", 1e-4)
        if not criterion > 0:
            raise node.error(f"<optimizer_convergence_criterion> must be positive, got "
                             f"{node.text('optimizer_convergence_criterion')!r}")
        iterations = node.number("optimizer_max_iterations", 100.0)
        if not (iterations >= 1 and iterations.is_integer()):
            raise node.error(f"<optimizer_max_iterations> must be a positive integer, got "
                             f"{node.text('optimizer_max_iterations')!r}")
        settings = StaticOptimizationSettings(name, exponent,
                                              node.flag("use_muscle_physiology", True),
                                              criterion, int(iterations))
    elif node.tag == KIN:
        settings = KinematicsSettings(name, _names(node, "coordinates"))
    elif node.tag == BODY_KIN:
        settings = BodyKinematicsSettings(name, _names(node, "bodies"), node.flag(
            "express_results_in_body_local_frame", False))
    elif node.tag in (ACTUATION, FORCES, STATES):
        if node.tag == FORCES:
            _only(node, "include_constraint_forces", False, "constraint forces are not "
                  "computed")
        settings = ForceAnalysisSettings(name, node.tag)
    elif node.tag == POINT_KIN:
        settings = PointKinematicsSettings(
            name, node.text("point_name", "NONAME"), node.text("body_name", "ground"),
            node.numbers("point", 3, (0.0, 0.0, 0.0)),
            node.text("relative_to_body_name", "none"))
    else:
        _all(node, "muscle_list", "muscle")
        _all(node, "moment_arm_coordinate_list", "coordinate")
        _only(node, "compute_moments", True, "moment arms and moments are always "
              "written")
        settings = MuscleAnalysisSettings(name)
    return settings if on else None


def read_analysis_set(tool: Node, offered: tuple[str, ...] = ANALYSIS_TYPES,
                      required: bool = True) -> tuple[tuple, tuple[str, ...]]:
    """(the analyses that are on, in the set's order, the names of those that are off) of the
    AnalysisSet of `tool` (module docstring); offered: the types the tool runs; required: an
    AnalysisSet with one analysis on is needed (an AnalyzeTool's), else none is fine. OsimError
    naming the file, element and value otherwise."""
    found = tool.find("AnalysisSet")
    if found is None:
        if required:
            raise tool.error("<AnalysisSet> is missing: nothing to run")
        return (), ()
    where = Node(found, tool.where.inside("AnalysisSet", found.get("name", "")))
    on, off = [], []
    for elem in tool.objects("AnalysisSet"):
        node = Node.of(elem, where.where)
        known = node.tag in _ANALYSIS_PROPERTIES
        settings = _analysis(node) if known else None       # None: off
        on_here = settings is not None or not known and node.flag("on", True)
        if on_here and node.tag not in offered:
            raise node.error(f"only {', '.join(offered)} are run (this analysis is on)")
        if settings is None:
            off.append(node.name or node.tag)
            continue
        if settings.name in (".", "..") or "/" in settings.name or "\\" in settings.name:
            raise node.error(f"the analysis' name is its output folder's: a plain name is "
                             f"needed, got {settings.name!r}")
        if any(s.name == settings.name for s in on):
            raise node.error(f"two analyses that are on are named {settings.name!r}; each "
                             "writes into a folder of its name")
        on.append(settings)
    if not on and required:
        raise where.error(f"no {', '.join(offered)} is on: nothing to run")
    return tuple(on), tuple(off)


def refuse_added_muscles(force_set_files, where: str) -> None:
    """OsimError naming `where` if the force set files add muscles: a MuscleAnalysis (which
    reads the model file's muscles) would report them; reserve actuators are fine."""
    from myotwin.osim.force_reading import MUSCLE_TAGS     # every OpenSim muscle class
    from myotwin.osim.xml_reading import force_set_file_nodes

    added = [node.name for node in force_set_file_nodes(force_set_files)
             if node.tag in MUSCLE_TAGS]
    if added:
        raise OsimError(f"{where}: <force_set_files> add muscles {added} with a {MA}, which "
                        "is not offered (reserve actuators are)")


def row_selections(loaded, analyses, where: str) -> dict:
    """{analysis name: its coordinates, `BodySelection` or `PointSelection`} of the
    Kinematics, BodyKinematics and PointKinematics among `analyses` for the loaded model
    (`kinematics_analysis.coordinate_selection`, `body_selection`, `point_selection`): their
    names checked (ValueError naming `where`, the analysis and the name) before a file is
    written."""
    from myotwin.osim import kinematics_analysis as ka
    from myotwin.osim.xml_reading import read_document

    chosen = {}
    bodies = None        # the model file's bodies, BodySet order: read if a list needs them
    for a in analyses:
        node = f"{where}: {analysis_type(a)} '{a.name}'"
        if isinstance(a, (BodyKinematicsSettings, PointKinematicsSettings)) and bodies is None:
            bodies = read_document(loaded.source, forces=False).bodies
        if isinstance(a, KinematicsSettings):
            chosen[a.name] = ka.coordinate_selection(loaded, a.coordinates, node)
        elif isinstance(a, BodyKinematicsSettings):
            chosen[a.name] = ka.body_selection(loaded, bodies, a.bodies, node)
        elif isinstance(a, PointKinematicsSettings):
            chosen[a.name] = ka.point_selection(loaded, bodies, a.point_name, a.body,
                                                a.point_m, a.relative_to, node)
    return chosen


def write_row_analysis(analysis, loaded, rows, chosen: dict, folder, loads,
                       computed: dict) -> dict:
    """Write the row analysis `analysis` (one of `ROW_SETTINGS`) into `folder` from `rows`
    (`kinematics_analysis.AnalysisRows`), `chosen` (`row_selections`) and `loads` (the
    tool's `ExternalLoads` or None, for a ForceReporter); its summary, also written to
    folder/summary.json: {"model", how the rows' states were found, what its writer returns,
    "n_rows", "first_time_s", "last_time_s"}. computed: what the analyses share (the
    actuators' forces), filled by the first that needs it."""
    from myotwin.osim import force_analyses
    from myotwin.osim import kinematics_analysis as ka

    kind = analysis_type(analysis)
    if isinstance(analysis, KinematicsSettings):
        written = ka.write_kinematics(loaded, rows, folder, chosen[analysis.name])
    elif isinstance(analysis, BodyKinematicsSettings):
        written = ka.write_body_kinematics(loaded, rows, folder, chosen[analysis.name],
                                           analysis.local)
    elif isinstance(analysis, PointKinematicsSettings):
        written = ka.write_point_kinematics(loaded, rows, folder, chosen[analysis.name])
    elif kind == STATES:
        written = ka.write_states(loaded, rows, folder)
    else:
        if "forces" not in computed:
            computed["forces"] = force_analyses.actuation(loaded, rows)
        if kind == ACTUATION:
            written = force_analyses.write_actuation(loaded, rows, folder, computed["forces"])
        else:
            written = force_analyses.write_force_reporter(loaded, rows, folder, loads,
                                                          computed["forces"])
    summary = {"model": str(loaded.source), **rows.summary, **written,
               "n_rows": int(rows.times_s.size), "first_time_s": float(rows.times_s[0]),
               "last_time_s": float(rows.times_s[-1])}
    (Path(folder) / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary
