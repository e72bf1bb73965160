"""myotwin: musculoskeletal simulation in which muscles have mass and shape, or are real tissue.

Subpackages
-----------
invitro
    In vitro virtual reality: a real (or emulated) muscle on an ergometer drives a
    simulated frog jump in a closed loop (Richards & Eberhard 2020).
engine
    The differentiable skeleton engine in JAX (MJCF in, MuJoCo-exact kinematics and dynamics).
    Its public API is re-exported here lazily (`myotwin.load`, `myotwin.mass_matrix`,
    `myotwin.bias_forces`), so `import myotwin` does not import JAX. Configure JAX in your
    entry point first: `myotwin.configure_jax()` (float64 and embedded small constants, see
    myotwin/jax_setup.py; at least `jax.config.update("jax_enable_x64", True)`).
paths, muscle, inertia
    Musculotendon paths, Hill-type muscle models, and muscles with mass (mass points).
musculoskeletal
    Hill-type muscles driving the skeleton along its paths, simulated as one system.
fiber
    Fiber (cable) muscles coupled to the skeleton.
osim
    OpenSim 4 `.osim` models loaded into the engine, for a stated subset (docs/osim.md).
"""

from importlib import import_module

from myotwin.jax_setup import configure_jax

__version__ = "0.1.0"

_ENGINE_API = ("load", "compile_model", "Model", "mass_matrix", "bias_forces", "kinematics",
               "forward_kinematics", "site_jacobians", "center_of_mass", "passive_forces",
               "actuator_forces", "forward_dynamics", "inverse_dynamics", "simulate",
               "Integrator")
#: Musculotendon paths of a loaded model (issue 4): `muscle_lengths(model, q)` (n_paths,),
#: `moment_arms(model, q)` (n_v, n_paths) with r = -dL/dq, `lengthening_speeds(model, q, qd)`.
_PATHS_API = ("muscle_lengths", "moment_arms", "lengthening_speeds")
__all__ = ["__version__", "configure_jax", *_ENGINE_API, *_PATHS_API]


def __getattr__(name: str):
    if name in _ENGINE_API:
        return getattr(import_module("myotwin.engine"), name)
    if name in _PATHS_API:
        return getattr(import_module("myotwin.paths.on_model"), name)
    raise AttributeError(f"module 'myotwin' has no attribute {name!r}")
