"""The JAX settings myotwin's entry points make (never on import: a library does not change a
process's global JAX configuration behind its user's back).

`configure_jax()` sets
  * `jax_enable_x64`: the physics runs in float64 (the engine refuses float32 models);
  * `jax_use_simplified_jaxpr_constants`: small constants (the static index arrays of the
    tree traversal's gathers, masks, the derivative rules' tables) are embedded in the
    compiled code where they are used. Under JAX's default they become operands of every
    `lax.scan`/`while_loop` that closes over them, so inside a rollout XLA sees a gather's
    indices as loop-carried data and cannot fuse the gather with its producers: the step of
    `benchmarks/inertial.py`'s models kept ~300 index arrays in its loop state and ran ~25 %
    slower (benchmarks/RESULTS.md, session 8). Results are unchanged up to roundoff. The flag
    is JAX's transitional switch to its new handling of constants (docs.jax.dev, "internals/
    constants"); a JAX without it keeps its default, correct and slower;
  * XLA's CPU option `xla_cpu_small_while_loop_byte_threshold` (through `XLA_FLAGS`, before
    JAX creates its CPU backend) raised from XLA's 1 KiB to `SMALL_LOOP_BYTES`: a `while`
    loop (a `lax.scan` rollout) that touches fewer bytes per iteration is compiled into one
    function and run without the thunk executor's per-kernel dispatch (XLA's
    SmallWhileLoopHoistingPass). The engine's steps are hundreds of tiny kernels, so this is
    most of their cost: the benchmark chain's RK4 step 11 -> 3.7 us, the tendon-driven
    chain's 23-44 -> 6.7 us (benchmarks/RESULTS.md, session 9). A loop with a custom call
    (LAPACK) or a scatter is never hoisted, which is why engine/cholesky.py factors small
    systems without LAPACK. The price is compile time: the hoisted loop is one large LLVM
    function (the inertial benchmark's rollout 7 -> ~30 s). Results are unchanged up to
    roundoff. `MYOTWIN_SMALL_LOOP_BYTES` in the environment overrides the value (0: leave
    XLA's default); an `XLA_FLAGS` that already sets `xla_backend_extra_options` is left alone.

Call it first in a script, before anything is traced: `import myotwin; myotwin.configure_jax()`.
"""

from __future__ import annotations

import os
import warnings


#: Set in the environment (to 0 or 1), JAX's own variable for the constants flag wins over
#: `configure_jax` (to compare both, e.g. `JAX_USE_SIMPLIFIED_JAXPR_CONSTANTS=0 python ...`).
CONSTANTS_ENV = "JAX_USE_SIMPLIFIED_JAXPR_CONSTANTS"

#: Loops touching fewer bytes per iteration are compiled whole (module docstring).
SMALL_LOOP_BYTES = 1 << 24
#: Environment override of SMALL_LOOP_BYTES (an integer; 0 keeps XLA's default).
SMALL_LOOP_ENV = "MYOTWIN_SMALL_LOOP_BYTES"
_XLA_OPTION = "xla_cpu_small_while_loop_byte_threshold"


def _backend_started() -> bool:
    """Whether JAX has already created its backends (XLA_FLAGS is read then, once)."""
    try:
        from jax._src import xla_bridge
        return bool(xla_bridge.backends_are_initialized())
    except (ImportError, AttributeError):  # a JAX without this helper: assume not yet
        return False


def _small_loop_flag() -> None:
    """Append the small-loop option to XLA_FLAGS (module docstring), unless overridden."""
    raw = os.environ.get(SMALL_LOOP_ENV, str(SMALL_LOOP_BYTES))
    try:
        size = int(raw)
    except ValueError:
        raise ValueError(f"environment variable {SMALL_LOOP_ENV}={raw!r}: expected an integer "
                         "number of bytes (0: XLA's default)") from None
    flags = os.environ.get("XLA_FLAGS", "")
    if size <= 0 or "xla_backend_extra_options" in flags:
        return
    if _backend_started():
        warnings.warn("myotwin.configure_jax() was called after JAX created its backend: the "
                      "small-loop compilation option cannot take effect (call it first)",
                      RuntimeWarning, stacklevel=3)
        return
    os.environ["XLA_FLAGS"] = f"{flags} --xla_backend_extra_options={_XLA_OPTION}={size}".strip()


def small_loop_option_set() -> bool:
    """Whether XLA_FLAGS carries the small-loop option (what `configure_jax` sets unless
    MYOTWIN_SMALL_LOOP_BYTES=0 or the caller's own XLA_FLAGS set backend extra options)."""
    return f"{_XLA_OPTION}=" in os.environ.get("XLA_FLAGS", "")


def configure_jax() -> None:
    """Enable float64, embedded small constants and whole-loop compilation of small loops in
    JAX (module docstring). Idempotent."""
    import jax

    _small_loop_flag()
    jax.config.update("jax_enable_x64", True)
    if CONSTANTS_ENV in os.environ:
        return
    try:
        jax.config.update("jax_use_simplified_jaxpr_constants", True)
    except AttributeError:  # a JAX release without the transitional flag: keep its default
        pass
