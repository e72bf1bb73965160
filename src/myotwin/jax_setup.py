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
    constants"); a JAX without it keeps its default, correct and slower.

Call it first in a script, before anything is traced: `import myotwin; myotwin.configure_jax()`.
"""

from __future__ import annotations

import os


#: Set in the environment (to 0 or 1), JAX's own variable for the constants flag wins over
#: `configure_jax` (to compare both, e.g. `JAX_USE_SIMPLIFIED_JAXPR_CONSTANTS=0 python ...`).
CONSTANTS_ENV = "JAX_USE_SIMPLIFIED_JAXPR_CONSTANTS"


def configure_jax() -> None:
    """Enable float64 and embedded small constants in JAX (module docstring). Idempotent."""
    import jax

    jax.config.update("jax_enable_x64", True)
    if CONSTANTS_ENV in os.environ:
        return
    try:
        jax.config.update("jax_use_simplified_jaxpr_constants", True)
    except AttributeError:  # a JAX release without the transitional flag: keep its default
        pass
