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
`functions` evaluates OpenSim's Functions (splines of a CustomJoint axis) in JAX; a joint
axis that is a function of its coordinate becomes an `engine.coupling` of the engine's dofs,
and `constraints` reads CoordinateCouplerConstraints, whose dependent coordinate the loader
eliminates through the same coupling (`OsimModel.coupled_coordinates`), as it does a locked
coordinate (`OsimModel.locked_coordinates`).
Tools: `forward` (`myotwin osim forward`, with `forward_start` giving its initial state),
`inverse_dynamics` (`myotwin osim inverse-dynamics`, with `signals` and `external_loads`
preparing its inputs as OpenSim's InverseDynamicsTool does), `inverse_kinematics` (`myotwin
osim inverse-kinematics`, with `markers`, `trc` and `ik_tasks` reading its inputs),
`static_optimization` (`myotwin osim static-optimization`, with `millard_capacity`),
`muscle_analysis` (`myotwin osim muscle-analysis`); `storage` reads and writes .sto/.mot
tables.
Anything outside the subset is an `OsimError` naming the file, the element and the value;
nothing is dropped or approximated silently (`omit=` leaves named elements out on request).
"""

from myotwin.osim.errors import OsimError
from myotwin.osim.external_loads import (ExternalLoads, evaluate_external_loads,
                                         read_external_loads)
from myotwin.osim.functions import OsimFunction, evaluate, read_function
from myotwin.osim.inverse_dynamics import (generalized_forces, load_plan, prepared_motion,
                                           reduced_generalized_forces)
from myotwin.osim.ik_tasks import IKTasks, read_ik_tasks
from myotwin.osim.loader import CoupledCoordinate, OsimModel, load
from myotwin.osim.markers import Marker, read_markers
from myotwin.osim.muscles import build_muscles
from myotwin.osim.trc import MarkerTrajectories, read_trc, write_trc

__all__ = ["CoupledCoordinate", "ExternalLoads", "IKTasks", "Marker", "MarkerTrajectories",
           "OsimError", "OsimFunction", "OsimModel", "build_muscles", "evaluate",
           "evaluate_external_loads", "generalized_forces", "load", "load_plan",
           "prepared_motion", "read_external_loads", "read_function", "read_ik_tasks",
           "read_markers", "read_trc", "reduced_generalized_forces", "write_trc"]
