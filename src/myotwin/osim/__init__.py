"""OpenSim 4 `.osim` models -> the engine, for a well-defined subset (docs/osim.md).

    import myotwin; myotwin.configure_jax()
    from myotwin import osim
    arm = osim.load("arm26.osim")               # its ellipsoids included
    myotwin.moment_arms(arm.model, q)          # (n_v, n_muscles), arm.coordinates order
    osim.load("arm26.osim", omit=("TRIlonghh", "BIClonghh"))   # without them

Data flow: `xml_reading` (with `skeleton_reading`, `force_reading`, `xml_values`) checks the
file against the subset and turns it into the plain data of `description`; `to_builders`
(with `frames`) makes the same `engine.ModelBuilder` / `paths.PathBuilder` calls a
hand-written model makes (`models/arm26.py`); `loader.load` compiles them into an `OsimModel`;
`muscles.build_muscles` makes its muscles `myotwin.muscle` musculotendons of their own type.
Anything outside the subset is an `OsimError` naming the file, the element and the value;
nothing is dropped or approximated silently (`omit=` leaves named elements out on request).
"""

from myotwin.osim.errors import OsimError
from myotwin.osim.loader import OsimModel, load
from myotwin.osim.muscles import build_muscles

__all__ = ["OsimError", "OsimModel", "build_muscles", "load"]
