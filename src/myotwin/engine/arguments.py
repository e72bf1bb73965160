"""Checks of the public functions' array arguments against the model, at trace time.

The compiled exports (`engine/api.py`, `inertia/api.py`, `musculoskeletal/api.py`,
`paths/on_model.py`) take arrays whose shapes the model fixes:

  q (n_q,); qd, qdd, qacc, qacc_smooth, v, qfrc_applied (n_v,); ctrl (n_u,);
  xfrc_applied (n_body, 6); for the coupled functions (`engine.coupled_*`, a
  `CoordinateCoupling` c) q, qd, qdd, qfrc (c.n_reduced,); for a `MusculoskeletalModel` the
  state's activation and tendon_state and the excitation (n_muscles,); c itself is a
  CoordinateCoupling whose n_full is the model's n_q and n_v.

Unchecked, JAX broadcasts or indexes a wrong shape: a q of 5 numbers for the 3-hinge chain of
`models.chain` gave accelerations (its first 3 used), a q of 2 an IndexError from inside a
gather. `checked(fn)` binds the arguments by name and raises a ValueError naming the function,
the argument, its shape and the expected one before `fn` runs. Shapes are static under `jit`,
so the check runs once per compilation and costs nothing per call; under `vmap` it sees one
element's shape, as `fn` does. A ctrl, an excitation or an activation argument may also be a
scalar (every actuator or muscle the same value, as broadcasting gave before). An array
argument given as a list, a tuple or integers is made a float array first (`_REAL`); one of
bools is refused (True is not 1.0; `scalars.require_real_numbers`, which judges a tracer by
its dtype), as is a musculoskeletal state that is not a `MusculoskeletalState` or holds
bools. A string is refused by `jax.jit` itself, before any trace; `compiled` and
`jit_naming_refusals`, the public functions' and the rollouts' wrappers, name it the same way
("mass_matrix: q must be numbers, got ['0', '1', '2']"). Values
are not checked here (NaN and inf propagate; the simulations stop at a diverged state,
`engine/simulate.py`), except by `real_array`, which `engine.simulate`,
`engine.simulate_implicit` and `musculoskeletal.simulate` apply to a concrete initial state
and inputs (a NaN q0 is refused by name rather than reported as a divergence at step 0; a
bool or a string entry is refused, not converted by np.asarray). The
engine's rollouts (`engine.rollout`, `engine.implicit_rollout`) convert their initial states
and inputs (bools refused) and check their shapes, not their values, and the types of dt_s,
max_iter and tol (`rollout_arguments`);
`musculoskeletal.rollout`, `musculoskeletal.adaptive_rollout` and
`musculoskeletal.equilibrium_state` check the shapes of theirs.
"""

from __future__ import annotations

import functools
import inspect
import math

import numpy as np

from myotwin.scalars import as_real, is_integer, require_real_numbers

#: argument name -> the model's count (a `Model` attribute) that is its length
_ENGINE = {"q": "n_q", "qd": "n_v", "qdd": "n_v", "qacc": "n_v", "qacc_smooth": "n_v",
           "v": "n_v", "qfrc_applied": "n_v", "ctrl": "n_u"}
#: arguments in the reduced coordinates of a CoordinateCoupling `c`
_REDUCED = ("q", "qd", "qdd", "qfrc")
#: arguments that may be one number for every entry
_SCALAR_OK = ("ctrl", "excitation", "activation")


def _shape(value) -> tuple[int, ...]:
    return tuple(int(n) for n in np.shape(value))


def _require(function: str, name: str, value, shape: tuple[int, ...], what: str) -> None:
    if value is None:
        return
    got = _shape(value)
    scalar_ok = name in _SCALAR_OK
    if got == shape or (scalar_ok and got == ()):
        return
    scalar = " or a scalar" if scalar_ok else ""
    raise ValueError(f"{function}: {name} has shape {got}, expected {shape}{scalar} ({what})")


def model_of(function: str, model):
    """`model` if it is an engine Model, else ValueError naming `function` and the type."""
    from myotwin.engine.model import Model

    if not isinstance(model, Model):
        raise ValueError(f"{function}: expected an engine Model (engine.load or "
                         f"engine.compile_model), got {type(model).__name__}")
    return model


def _expected(name: str, model, coupling) -> tuple[tuple[int, ...], str] | None:
    """(shape, what fixes it) of argument `name`, or None if it is not checked."""
    if coupling is not None and name in _REDUCED:
        return (coupling.n_reduced,), f"the coupling's n_reduced = {coupling.n_reduced}"
    if name in _ENGINE:
        n = int(getattr(model, _ENGINE[name]))
        return (n,), f"the model's {_ENGINE[name]} = {n}"
    if name == "xfrc_applied":
        return (model.n_body, 6), f"the model's n_body = {model.n_body}, world body included"
    return None


def check_engine_arguments(function: str, model, arguments: dict) -> None:
    """Raise ValueError unless the named arrays fit `model` (module docstring); `arguments`
    maps argument names to values, names not listed there are not checked."""
    model = model_of(function, model)
    coupling = arguments.get("c")
    if "c" in arguments:            # the coupled functions' coupling, which may not be None
        _check_coupling(function, model, coupling)
    if "mass_factor" in arguments:  # limit_forces, solve_limits: cholesky.factor(M(q))
        _check_mass_factor(function, model, arguments["mass_factor"])
    for name, value in arguments.items():
        expected = _expected(name, model, coupling)
        if expected is not None:
            _require(function, name, value, *expected)


def _check_coupling(function: str, model, coupling) -> None:
    """ValueError unless `coupling` is a CoordinateCoupling moving the model's n_q = n_v dofs
    (its counts are static, so this runs under `jit` too)."""
    from myotwin.engine.coupling import CoordinateCoupling

    if not isinstance(coupling, CoordinateCoupling):
        raise ValueError(f"{function}: c must be a CoordinateCoupling (coordinate_coupling), "
                         f"got {type(coupling).__name__}")
    if model.n_q != coupling.n_full or model.n_v != coupling.n_full:
        raise ValueError(f"{function}: the coupling c moves {coupling.n_full} engine dofs but "
                         f"the model has n_q = {model.n_q}, n_v = {model.n_v}")


def _check_mass_factor(function: str, model, factor) -> None:
    """ValueError unless `factor` is a `cholesky.Factor` of an (n_v, n_v) matrix (a mass
    matrix given as is, or None, failed in an AttributeError inside the trace)."""
    from myotwin.engine.cholesky import Factor

    if not isinstance(factor, Factor):
        got = (f"an array of shape {_shape(factor)}" if hasattr(factor, "shape")
               else type(factor).__name__)      # under jit an array is a tracer
        raise ValueError(f"{function}: mass_factor must be engine.cholesky.factor(M) of the "
                         f"mass matrix M(q), got {got}")
    _require(function, "mass_factor.lower", factor.lower, (model.n_v, model.n_v),
             f"the model's n_v = {model.n_v}")


def check_musculoskeletal_arguments(function: str, msm, arguments: dict) -> None:
    """The same for a `MusculoskeletalModel` msm: its skeleton's arrays, the state's fields
    (q and qd in the reduced coordinates where msm.coordinates is set), the excitation and an
    activation argument."""
    from myotwin.musculoskeletal.model import MusculoskeletalModel

    if not isinstance(msm, MusculoskeletalModel):
        raise ValueError(f"{function}: expected a MusculoskeletalModel (musculoskeletal_model, "
                         f"load_mjcf or osim.build_muscles), got {type(msm).__name__}")
    skeleton = model_of(function, msm.skeleton)
    arguments = dict(arguments)
    if msm.coordinates is not None:
        arguments["c"] = msm.coordinates
    state = arguments.pop("state", None)
    if state is not None:
        from myotwin.musculoskeletal.state import MusculoskeletalState

        if not isinstance(state, MusculoskeletalState):
            raise ValueError(f"{function}: state must be a MusculoskeletalState "
                             f"(equilibrium_state), got {type(state).__name__}")
        for name in MusculoskeletalState._fields:
            require_real_numbers(function, f"state.{name}", getattr(state, name))
        for name in ("q", "qd"):
            _require(function, f"state.{name}", getattr(state, name),
                     *_expected(name, skeleton, arguments.get("c")))
        for name in ("activation", "tendon_state"):
            _require(function, f"state.{name}", getattr(state, name), (msm.n_muscles,),
                     f"n_muscles = {msm.n_muscles}")
    for name in ("excitation", "activation"):
        _require(function, name, arguments.pop(name, None), (msm.n_muscles,),
                 f"n_muscles = {msm.n_muscles}")
    check_engine_arguments(function, skeleton, arguments)


def check_applied_shapes(model, qfrc_applied, xfrc_applied, n_steps: int | None = None,
                         function: str | None = None) -> None:
    """Raise ValueError unless qfrc_applied is None or (n_v,) and xfrc_applied None or
    (n_body, 6); with n_steps given, one row per step ((n_steps, n_v), (n_steps, n_body, 6))
    is accepted too. The message starts with `function` if given."""
    prefix = "" if function is None else f"{function}: "
    for name, value in (("qfrc_applied", qfrc_applied), ("xfrc_applied", xfrc_applied)):
        if value is None:
            continue
        shape, what = _expected(name, model, None)
        allowed = [shape] + ([(n_steps, *shape)] if n_steps is not None else [])
        if _shape(value) not in allowed:
            expected = " or ".join(str(a) for a in allowed)
            raise ValueError(f"{prefix}{name} has shape {_shape(value)}, expected {expected} "
                             f"({what})")


def real_array(function: str, name: str, value):
    """`value` as a float array; ValueError naming `function` and the argument unless it holds
    numbers, or, when it is concrete (not traced), unless every entry is finite: for the entry
    points that run a simulation (values inside the jitted cores are not checked)."""
    import jax
    import jax.numpy as jnp

    require_real_numbers(function, name, value)
    if isinstance(value, jax.core.Tracer):
        return value.astype(jnp.result_type(float))
    array = np.asarray(value, dtype=float)
    bad = np.argwhere(~np.isfinite(array))
    if bad.size:
        where = tuple(int(i) for i in bad[0])
        raise ValueError(f"{function}: {name} is not finite: entry {where} is "
                         f"{float(array[where])!r}" if where else
                         f"{function}: {name} is not finite: {float(array)!r}")
    return jnp.asarray(array, dtype=jnp.result_type(float))


def check_step_count(function: str, n_steps) -> None:
    """ValueError naming `function` unless n_steps is an integer >= 0 (a rollout's length)."""
    if not is_integer(n_steps) or n_steps < 0:
        raise ValueError(f"{function}: n_steps must be an integer >= 0, got {n_steps!r}")


def _check_setting(function: str, name: str, value, integer: bool) -> None:
    """ValueError naming `function` unless value is one integer (`integer`) or one real
    number, not a bool: by its dtype when it is an array or a tracer (a jitted rollout's
    dt_s, max_iter and tol are traced: True arrives as a bool tracer, 2.5 as a float one)."""
    dtype = getattr(value, "dtype", None)
    if dtype is not None:
        ok = np.dtype(dtype).kind in ("iu" if integer else "iuf") and np.shape(value) == ()
        got = np.dtype(dtype).name + ("" if np.shape(value) == () else
                                      f" of shape {_shape(value)}")
    else:
        ok = not isinstance(value, (list, tuple)) and (
            is_integer(value) if integer else as_real(value) is not None)
        got = f"a {type(value).__name__}" if isinstance(value, (list, tuple)) else repr(value)
    if not ok:
        what = "an integer" if integer else "one real number"
        raise ValueError(f"{function}: {name} must be {what}, got {got}")


def rollout_arguments(function: str, model, n_steps: int, q0, qd0, ctrl,
                      qfrc_applied=None, xfrc_applied=None, *, dt_s=None, max_iter=None,
                      tol=None) -> tuple:
    """A rollout's initial state (q0 (n_q,), qd0 (n_v,)), ctrl (a scalar, (n_u,) or one row
    per step (n_steps, n_u)) and applied forces (`check_applied_shapes` with n_steps), made
    real arrays (`_as_real`: a list reaches a jitted rollout as a list of scalars; bools are
    refused) and checked as `check_engine_arguments` checks a state function's; n_steps
    (`check_step_count`); and, where given, the settings dt_s and tol (one real number each)
    and max_iter (an integer), by type, not value (they may be traced).
    Returns (q0, qd0, ctrl, qfrc_applied, xfrc_applied)."""
    check_step_count(function, n_steps)
    model = model_of(function, model)
    for name, value, integer in (("dt_s", dt_s, False), ("max_iter", max_iter, True),
                                 ("tol", tol, False)):
        if value is not None:
            _check_setting(function, name, value, integer)
    for name, value in (("q0", q0), ("qd0", qd0), ("ctrl", ctrl),
                        ("qfrc_applied", qfrc_applied), ("xfrc_applied", xfrc_applied)):
        if value is not None:                   # _as_real would make True 1.0
            require_real_numbers(function, name, value)
    q0, qd0, ctrl, qfrc_applied, xfrc_applied = (
        None if v is None else _as_real(v) for v in (q0, qd0, ctrl, qfrc_applied, xfrc_applied))
    _require(function, "q0", q0, (model.n_q,), f"the model's n_q = {model.n_q}")
    _require(function, "qd0", qd0, (model.n_v,), f"the model's n_v = {model.n_v}")
    if _shape(ctrl) != (n_steps, model.n_u):
        _require(function, "ctrl", ctrl, (model.n_u,),
                 f"the model's n_u = {model.n_u}; or ({n_steps}, {model.n_u}), one per step")
    check_applied_shapes(model, qfrc_applied, xfrc_applied, n_steps, function)
    return q0, qd0, ctrl, qfrc_applied, xfrc_applied


#: Arguments that are arrays of real numbers: given as a list or tuple (which `jax.jit` passes
#: on as a list of scalars) or with an integer dtype (which `jax.jacfwd` refuses), they are
#: made float arrays before the checks, so `muscle_lengths(model, [0.3, 1.2])` works as NumPy
#: users expect.
_REAL = frozenset(_ENGINE) | frozenset(_REDUCED) | {"xfrc_applied", "excitation",
                                                    "activation"}


def _as_real(value):
    import jax.numpy as jnp

    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return jnp.asarray(value, dtype=jnp.result_type(float))
    dtype = getattr(value, "dtype", None)
    if dtype is not None and not np.issubdtype(dtype, np.inexact):
        return jnp.asarray(value, dtype=jnp.result_type(float))
    return value


def checked(fn, check=check_engine_arguments):
    """fn with its array arguments made real arrays (`_REAL`) and checked against its first
    argument (the model) before it runs (module docstring). The result keeps fn's name,
    docstring and signature."""
    signature = inspect.signature(fn)
    first = next(iter(signature.parameters))

    @functools.wraps(fn)
    def with_checks(*args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return fn(*args, **kwargs)     # Python's own message for a wrong call
        for name in _REAL.intersection(bound.arguments):
            if bound.arguments[name] is None and signature.parameters[name].default is not None:
                raise ValueError(f"{fn.__name__}: {name} must be an array, got None")
            if bound.arguments[name] is not None:      # _as_real would make True 1.0
                require_real_numbers(fn.__name__, name, bound.arguments[name])
            bound.arguments[name] = _as_real(bound.arguments[name])
        arguments = dict(bound.arguments)
        check(fn.__name__, arguments.pop(first), arguments)
        return fn(*bound.args, **bound.kwargs)

    return with_checks


def compiled(fn, check=check_engine_arguments):
    """`jax.jit(checked(fn, check))`, the form of the public state functions (engine/api.py),
    whose refusals also name what `jax.jit` itself refuses before `checked` runs
    (`naming_refusals`)."""
    import jax

    return naming_refusals(jax.jit(checked(fn, check)), fn, _REAL)


def jit_naming_refusals(names, **jit_options):
    """A decorator: `jax.jit(fn, **jit_options)` with `naming_refusals` for the arguments
    `names` (the rollouts, whose arguments have their own names)."""
    import jax

    return lambda fn: naming_refusals(jax.jit(fn, **jit_options), fn, frozenset(names))


#: The rollout settings whose values are checked before the trace, with the least value of
#: each and whether it may equal it (inside the trace they are tracers, values unknown).
SETTING_BOUNDS = {"dt_s": (0.0, False), "tol": (0.0, False), "max_iter": (1, True)}


def check_setting_value(function: str, name: str, value) -> None:
    """ValueError naming `function` for a concrete rollout setting out of range: dt_s and tol
    finite and > 0, max_iter >= 1 (a NaN step ran to NaN states, a negative one backwards in
    time, a zero one stood still). A value that is not one real number is left to the type
    checks (`rollout_arguments`); a traced one (a setting jitted over by the caller) cannot be
    checked: a NaN step then shows as a diverged state (`simulate`'s check)."""
    import jax

    if isinstance(value, jax.core.Tracer) or isinstance(value, (bool, np.bool_)):
        return
    dtype = getattr(value, "dtype", None)
    if dtype is not None:
        if np.dtype(dtype).kind not in "iuf" or np.shape(value) != ():
            return
        number = float(value)
    else:
        number = as_real(value)
        if number is None:
            return
    least, inclusive = SETTING_BOUNDS[name]
    if not math.isfinite(number) or number < least or (number == least and not inclusive):
        bound = f">= {least}" if inclusive else f"finite and > {least:g}"
        raise ValueError(f"{function}: {name} must be {bound}, got {value!r}")


def naming_refusals(jitted, fn, names: frozenset):
    """`jitted` (fn compiled by `jax.jit`), with jit's own refusal of a string in an array
    argument ("0.1", ["0", "1"]: a TypeError about abstract arrays and static_argnums, raised
    before any trace) turned into the ValueError the checks give for a bool: "fn: q must be
    numbers, got ['0', '1']", for the arguments `names` and the fields of a state tuple. The
    try around the call costs nothing when no error is raised. The values of the settings
    among `names` (`SETTING_BOUNDS`) are checked before the call (`check_setting_value`).
    The jitted function's `lower`, `trace`, `eval_shape` and its cache's `clear_cache` and
    `_cache_size` are kept."""
    signature = inspect.signature(fn)
    settings = tuple(n for n in SETTING_BOUNDS if n in names)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if settings:
            try:
                bound = signature.bind(*args, **kwargs).arguments
            except TypeError:
                bound = {}          # the call's own TypeError follows
            for name in settings:
                if bound.get(name) is not None:
                    check_setting_value(fn.__name__, name, bound[name])
        try:
            return jitted(*args, **kwargs)
        except TypeError:
            problem = _refused_numbers(fn.__name__, signature, names, args, kwargs)
            if problem is None:
                raise
        raise problem from None

    for name in ("lower", "trace", "eval_shape", "clear_cache", "_cache_size"):
        if hasattr(jitted, name):
            setattr(call, name, getattr(jitted, name))
    return call


def _refused_numbers(function: str, signature, names, args, kwargs) -> ValueError | None:
    """The ValueError `require_real_numbers` gives for the first argument among `names` (or a
    field of a state tuple such as a `MusculoskeletalState`) that does not hold real numbers,
    or None."""
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return None
    for name, value in bound.arguments.items():
        named = ([(f"{name}.{field}", getattr(value, field)) for field in value._fields]
                 if hasattr(value, "_fields") else [(name, value)] if name in names else [])
        for label, entry in named:
            try:
                if entry is not None:
                    require_real_numbers(function, label, entry)
            except ValueError as error:
                return error
    return None
