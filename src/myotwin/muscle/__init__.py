"""Hill-type muscle force models in JAX: Millard 2012, De Groote 2016 and Thelen 2003 as in
OpenSim (issue 4), and MuJoCo's `<muscle>`.

Parts (one module per concept, composed into a `Muscle` pytree):
  bezier         segmented quintic Bezier curves (OpenSim's SmoothSegmentedFunction)
  millard2012    Millard 2012 curves built from their parameters as OpenSim builds them
  degroote2016   De Groote 2016 closed-form curves with OpenSim's constants
  thelen2003     Thelen 2003 closed-form curves as OpenSim's Thelen2003Muscle defines them
  mujoco_muscle  MuJoCo's muscle curves (rigid tendon only)
  activation     first-order activation dynamics (Millard law, OpenSim 4's Thelen law,
                 De Groote tanh law, MuJoCo's law)
  pennation      fixed-width pennation
  model          `Muscle` parameters, `build_muscles` (validated), `TendonModel`
  tendon         fiber state per tendon model (rigid, explicit tendon force, damped) and
                 the equilibrium solve, for one muscle
  musculotendon  vmapped forces, state derivatives, equilibrium, energies and powers
  coupling       generalized forces r @ F (r = -dL/dq)
Everything is float64: enable `jax_enable_x64` in the entry point. See docs/muscle.md.
"""

from myotwin.muscle import bezier, degroote2016, millard2012, mujoco_muscle, thelen2003
from myotwin.muscle.activation import (
    ActivationDynamics,
    ActivationLaw,
    activation_derivative,
    activation_dynamics,
    force_activation,
)
from myotwin.muscle.bezier import BezierCurve
from myotwin.muscle.coupling import generalized_forces
from myotwin.muscle.degroote2016 import DeGrooteCurves
from myotwin.muscle.millard2012 import MillardCurves, millard_curves
from myotwin.muscle.model import CurveFamily, Muscle, TendonModel, build_muscles
from myotwin.muscle.musculotendon import (
    Equilibrium,
    MuscleDynamics,
    MuscleOutputs,
    dynamics,
    equilibrium,
    muscle_outputs,
    state_derivative,
    tendon_force,
    tendon_state_derivative,
)
from myotwin.muscle.mujoco_muscle import MuJoCoCurves
from myotwin.muscle.pennation import Pennation
from myotwin.muscle.thelen2003 import ThelenCurves

__all__ = [
    "ActivationDynamics",
    "ActivationLaw",
    "BezierCurve",
    "CurveFamily",
    "DeGrooteCurves",
    "Equilibrium",
    "MillardCurves",
    "Muscle",
    "MuscleDynamics",
    "MuJoCoCurves",
    "MuscleOutputs",
    "Pennation",
    "TendonModel",
    "ThelenCurves",
    "activation_derivative",
    "activation_dynamics",
    "bezier",
    "build_muscles",
    "degroote2016",
    "dynamics",
    "equilibrium",
    "force_activation",
    "generalized_forces",
    "millard2012",
    "millard_curves",
    "mujoco_muscle",
    "muscle_outputs",
    "state_derivative",
    "tendon_force",
    "tendon_state_derivative",
    "thelen2003",
]
