"""myotwin: musculoskeletal simulation in which muscles have mass and shape, or are real tissue.

Subpackages
-----------
invitro
    In vitro virtual reality: a real (or emulated) muscle on an ergometer drives a
    simulated frog jump in a closed loop (Richards & Eberhard 2020).
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
