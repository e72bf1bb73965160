"""`build_muscles`: a loaded model's muscles as `myotwin.muscle` musculotendons of their own type.

Each OpenSim muscle type has its curve family here (docs/muscle.md):

| OpenSim | `myotwin.muscle.build_muscles(curves=...)` |
|---|---|
| Thelen2003Muscle | "thelen2003" (Thelen's curves and OpenSim 4's activation law) |
| Millard2012EquilibriumMuscle | "millard2012" (its curve objects: `millard_curve_parameters`) |
| DeGrooteFregly2016Muscle | "degroote2016" |

and every parameter the file gives is passed under its `build_muscles` name (`PARAMETERS`);
one the file leaves out takes `build_muscles`' default, which is OpenSim's. What the loader
records but a `Muscle` has no place for is refused if it would change the physics
(`appliesForce` false, `ignore_tendon_compliance` true with a compliant tendon model,
`ignore_activation_dynamics` true, De Groote's `ignore_passive_fiber_force` true) and otherwise
left to the caller: initial states (`default_activation`, `default_fiber_length_m`,
`default_normalized_tendon_force`), the maximum pennation angle (not clamped,
docs/muscle.md), controls' bounds and De Groote's `tendon_compliance_dynamics_mode`.

The tendon model is the caller's `tendon=`; `tendon="opensim"` picks the state OpenSim
integrates for the type (`OPENSIM_TENDON`): the fiber length of Thelen2003Muscle (an
ActivationFiberLengthMuscle, undamped), the damped fiber length of
Millard2012EquilibriumMuscle (its default fiber_damping 0.1), the normalized tendon force of
DeGrooteFregly2016Muscle (its explicit tendon compliance mode), and a rigid tendon for muscles
whose file sets `ignore_tendon_compliance`. Which state is integrated matters where the
paths' lengthening speed is not dL/dt (OpenSim's wraps, `musculoskeletal/paths.py`).

Millard2012EquilibriumMuscle: OpenSim 4.6 overrides three curve parameters of a damped or
rigid-tendon muscle (its "singularity-free model"): the active force-length minimum_value and
the force-velocity slopes at v_max become 0 whatever the file says; so do ours. With
fiber_damping below 1e-3 OpenSim runs its undamped classic Hill model instead, which myotwin
does not have: refused with `damped_fiber_length`.
"""

from __future__ import annotations

from collections.abc import Sequence

from myotwin.muscle import Muscle
from myotwin.muscle import build_muscles as _build
from myotwin.muscle.model import MuscleParameterError
from myotwin.osim.force_reading import muscle_property
from myotwin.osim.loader import OsimModel

#: OpenSim muscle type -> curve family of `myotwin.muscle.build_muscles`.
FAMILY = {"Thelen2003Muscle": "thelen2003", "Millard2012EquilibriumMuscle": "millard2012",
          "DeGrooteFregly2016Muscle": "degroote2016"}
#: OpenSim muscle type -> the tendon model whose state OpenSim integrates (compliant tendon).
OPENSIM_TENDON = {"Thelen2003Muscle": "fiber_length",
                  "Millard2012EquilibriumMuscle": "damped_fiber_length",
                  "DeGrooteFregly2016Muscle": "explicit_force"}
#: OpenSim muscle type -> the name of its tendon-compliance state in OpenSim's states tables
#: (`/forceset/<muscle>/<name>`, next to `/activation`): the state `OPENSIM_TENDON` integrates.
OPENSIM_STATE = {"Thelen2003Muscle": "fiber_length",
                 "Millard2012EquilibriumMuscle": "fiber_length",
                 "DeGrooteFregly2016Muscle": "normalized_tendon_force"}
_COMMON = {"max_isometric_force_N": "max_isometric_force_N",
           "optimal_fiber_length_m": "optimal_fiber_length_m",
           "tendon_slack_length_m": "tendon_slack_length_m",
           "pennation_angle_at_optimal_rad": "pennation_at_optimal_rad",
           "max_contraction_velocity_Lopt_per_s": "max_contraction_velocity_Lopt_per_s",
           "activation_time_constant_s": "tau_act_s",
           "deactivation_time_constant_s": "tau_deact_s"}
#: Recorded parameter (`OsimModel.muscles[name]`) -> `build_muscles` keyword, per type.
PARAMETERS = {
    "Thelen2003Muscle": {**_COMMON,
                         "fmax_tendon_strain": "tendon_strain_at_one_norm_force",
                         "fmax_muscle_strain": "passive_strain_at_one_norm_force",
                         "kshape_active": "active_force_length_shape",
                         "kshape_passive": "passive_force_length_shape",
                         "af": "force_velocity_shape",
                         "flen": "max_lengthening_force_multiplier",
                         "fv_linear_extrap_threshold": "force_velocity_extrapolation_threshold",
                         "minimum_activation": "min_activation"},
    "Millard2012EquilibriumMuscle": {**_COMMON, "fiber_damping": "fiber_damping",
                                     "minimum_activation": "min_activation"},
    "DeGrooteFregly2016Muscle": {
        **_COMMON, "fiber_damping": "fiber_damping",
        "active_force_width_scale": "active_force_width_scale",
        "passive_fiber_strain_at_one_norm_force": "passive_strain_at_one_norm_force",
        "tendon_strain_at_one_norm_force": "tendon_strain_at_one_norm_force"},
}


def _refuse(name: str, params, tendon: str) -> None:
    if not params.get("applies_force", True):
        raise ValueError(f"muscle '{name}': appliesForce is false in the file, so OpenSim applies "
                         "no force; leave it out with names=")
    if params.get("ignore_activation_dynamics", False):
        raise ValueError(f"muscle '{name}': ignore_activation_dynamics is true in the file; "
                         "myotwin's muscles always integrate activation (drive it with "
                         "excitation = activation at a fast time constant instead)")
    if params.get("ignore_tendon_compliance", False) and tendon != "rigid":
        raise ValueError(f"muscle '{name}': ignore_tendon_compliance is true in the file, so "
                         f"OpenSim uses a rigid tendon; pass tendon='rigid' (got {tendon!r})")
    if params.get("ignore_passive_fiber_force", False):
        raise ValueError(f"muscle '{name}': ignore_passive_fiber_force is true in the file; "
                         "myotwin's De Groote muscles always have the passive fiber force")


def _opensim_tendon(loaded, names: tuple, kind: str) -> str:
    rigid = [bool(loaded.muscles[n].get("ignore_tendon_compliance", False)) for n in names]
    if any(rigid) and not all(rigid):
        raise ValueError(f"{loaded.source}: ignore_tendon_compliance is true for "
                         f"{[n for n, r in zip(names, rigid) if r]} but not for the other "
                         f"muscles of {list(names)}; build them as separate groups with names=")
    return "rigid" if all(rigid) else OPENSIM_TENDON[kind]


def _singularity_free(loaded, names: tuple, tendon: str, curves: dict) -> dict:
    """The Millard curve parameters OpenSim 4.6 uses for a damped or rigid-tendon
    Millard2012EquilibriumMuscle (extendFinalizeFromProperties, "singularity-free model"):
    the active force-length curve's minimum_value and the force-velocity curve's slopes at
    v_max set to 0, whatever the file says. A compliant muscle whose fiber_damping is below
    MIN_NONZERO_DAMPING_COEFFICIENT (1e-3) is OpenSim's undamped classic Hill model instead,
    which myotwin does not have: refused."""
    if tendon == "damped_fiber_length":
        low = {n: v for n in names
               if (v := loaded.muscles[n]["fiber_damping"]) < 1e-3}
        if low:
            raise ValueError(f"{loaded.source}: fiber_damping {low} is below 1e-3, where OpenSim "
                             "switches Millard2012EquilibriumMuscle to its undamped (classic "
                             "Hill) model, which myotwin does not have; set fiber_damping >= "
                             "1e-3 or ignore_tendon_compliance (tendon='rigid')")
    out = {k: dict(v) for k, v in curves.items()}
    out.setdefault("active_force_length", {})["minimum_value"] = 0.0
    out.setdefault("force_velocity", {}).update(concentric_slope_at_vmax=0.0,
                                                eccentric_slope_at_vmax=0.0)
    return out


def build_muscles(loaded, *, tendon: str, names: Sequence[str] | None = None) -> Muscle:
    """The muscles `names` (default: all, in `loaded.muscle_names` order) of an `OsimModel` as
    one `myotwin.muscle.Muscle` group with the tendon model `tendon` ("rigid",
    "explicit_force", "fiber_length", "damped_fiber_length", or "opensim": the one OpenSim
    integrates, module docstring), for `myotwin.musculoskeletal.
    musculoskeletal_model(loaded.model, muscles)`. The muscles must share one OpenSim type
    (one curve family per group), and Millard muscles one set of curve objects; a ValueError
    names the muscle and the reason otherwise (module docstring). No names (a model without
    muscles, or names=()) give the group of no muscles (`muscle.build_muscles`; "opensim"
    then means "rigid"): the skeleton moves by its CoordinateActuators alone."""
    if not isinstance(loaded, OsimModel):
        raise TypeError(f"build_muscles: loaded must be an OsimModel (osim.load(path)), got "
                        f"{type(loaded).__name__}")
    if isinstance(names, str):
        raise TypeError(f"{loaded.source}: names must be a collection of muscle names, e.g. "
                        f"names=({names!r},), got {names!r}")
    names = tuple(loaded.muscle_names if names is None else names)
    if not names:   # a model without muscles: its skeleton moves by its actuators alone
        return _build((), curves="degroote2016", tendon="rigid" if tendon == "opensim"
                      else tendon, max_isometric_force_N=(), optimal_fiber_length_m=(),
                      tendon_slack_length_m=())
    unknown = [n for n in names if n not in loaded.muscles]
    if unknown:
        raise ValueError(f"{loaded.source}: no muscles named {unknown}; the model's muscles are "
                         f"{list(loaded.muscle_names)}")
    types = {loaded.muscles[n]["type"] for n in names}
    if len(types) > 1:
        raise ValueError(f"{loaded.source}: muscles {list(names)} mix the types {sorted(types)}; "
                         "build one group per type with names=")
    (kind,) = types
    if tendon == "opensim":
        tendon = _opensim_tendon(loaded, names, kind)
    table = PARAMETERS[kind]
    keywords: dict[str, list] = {}
    for name in names:
        params = loaded.muscles[name]
        _refuse(name, params, str(tendon))
        for key, keyword in table.items():
            if key in params:
                keywords.setdefault(keyword, []).append(params[key])
    for keyword, values in keywords.items():
        if len(values) != len(names):
            given = [n for n in names if keyword in
                     {table[k] for k in loaded.muscles[n] if k in table}]
            raise ValueError(f"{loaded.source}: {keyword} is given for {given} but not for the "
                             f"other muscles of {list(names)}; build them as separate groups")
    extra = {}
    if kind == "Millard2012EquilibriumMuscle":
        curves = [loaded.muscles[n].get("millard_curve_parameters", {}) for n in names]
        plain = [{k: dict(v) for k, v in c.items()} for c in curves]
        if any(p != plain[0] for p in plain[1:]):
            raise ValueError(f"{loaded.source}: muscles {list(names)} have different Millard "
                             "curve objects; build them as separate groups with names=")
        extra["millard_curve_parameters"] = _singularity_free(loaded, names, tendon, plain[0])
    try:
        return _build(names, curves=FAMILY[kind], tendon=tendon, **keywords, **extra)
    except MuscleParameterError as err:   # name the file and the file's property
        keys = [key for key, keyword in table.items() if keyword == err.field]
        tag = muscle_property(kind, keys[0]) if keys else None
        where = f" (the file's <{tag}>)" if tag else ""
        raise ValueError(f"{loaded.source}: {err}{where}") from None
    except ValueError as err:             # another refusal of the group: name the file
        raise ValueError(f"{loaded.source}: {err}") from None
