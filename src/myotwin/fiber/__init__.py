"""Fiber-based (cable) muscles of Gfrerer & Simeon 2021 (issue 5): fibers, contact, skeleton.

Modules, in the order data flows (part 1: one fiber):
  `hermite`           cubic Hermite elements on theta in [0, 1] (Eqs. 52-53), Gauss quadrature
  `material`          S^11: passive Kelvin-Voigt (Eq. 30), active (Eq. 32, reconstructed),
                      prestress (Eq. 34); radius from incompressibility (Eq. 21)
  `cable`             `FiberModel` pytree (compile once), element inertia/internal/external
                      forces (Eqs. 38, 55-57), banded assembly
  `contact_cylinder`  fiber-rigid-cylinder contact, rational penalty (Eqs. 44, 51, 65) and the
                      step safeguard (Eqs. 69-73)
  `assembly`          residual and exact banded tangent of a backward-Euler step (Eq. 64)
  `time_stepping`     safeguarded Newton, `step`, `solve_static`, `simulate`
Part 2: several fibers, fiber-fiber contact, coupling to the engine's skeleton:
  `closest_point`     quintic closest points (Eq. 67), AABB broad phase
  `contact_fibers`    two-half-pass curve-curve contact, rational penalty (Eqs. 39-44, 65)
  `contact_bones`     bone cylinders carried by skeleton bodies, reactions on the skeleton
  `system`            `FiberSystem` pytree: fibers, contacts, attachments (Eq. 49)
  `coupling`          c(q), C(q), skeleton residual; the elimination of Eqs. 58-64
  `system_assembly`   residual and exact sparse tangent of a backward-Euler step (Eq. 64)
  `system_stepping`   safeguarded Newton (Eqs. 69-73) for systems, `simulate` with step halving
  `peer_exudyn`       the Exudyn ANCF-cable peer model (optional dependency)
Everything is float64: enable `jax_enable_x64` in the entry point before compiling a fiber.
See docs/fiber.md.
"""

from myotwin.fiber.assembly import StepSystem, step_system
from myotwin.fiber.cable import (
    EndCondition,
    FiberModel,
    axial_force_at_quadrature,
    banded_to_dense,
    compile_fiber,
    gravity_line_force,
    line_force_at_quadrature,
    mass_matrix_banded,
    straight_reference,
)
from myotwin.fiber.contact_cylinder import (
    CylinderContact,
    contact_state,
    make_cylinder_contact,
    rational_penalty,
    safeguard_fraction,
)
from myotwin.fiber.hermite import evaluate, gauss_legendre
from myotwin.fiber.material import (
    CableMaterial,
    make_material,
    radius,
    stress_s11,
    stretch,
    table1_material,
)
from myotwin.fiber.contact_bones import BoneCylinder, make_bone_cylinder
from myotwin.fiber.contact_fibers import FiberContactLaw, make_fiber_contact_law
from myotwin.fiber.system import Attachment, FiberSystem, compile_system, initial_state
from myotwin.fiber.system_assembly import axial_forces
from myotwin.fiber.system_stepping import (
    SystemInfo,
    SystemLoads,
    SystemState,
    SystemTrajectory,
    find_contacts,
)
from myotwin.fiber.system_stepping import simulate as simulate_system
from myotwin.fiber.system_stepping import solve_static as solve_system_static
from myotwin.fiber.system_stepping import step as step_system_once
from myotwin.fiber.time_stepping import (
    FiberDivergenceError,
    FiberLoads,
    FiberNewtonError,
    FiberState,
    InadmissibleContactError,
    NewtonInfo,
    NewtonOptions,
    Trajectory,
    simulate,
    solve_static,
    step,
)

__all__ = [
    "Attachment",
    "BoneCylinder",
    "FiberContactLaw",
    "FiberSystem",
    "SystemInfo",
    "SystemLoads",
    "SystemState",
    "SystemTrajectory",
    "axial_forces",
    "compile_system",
    "find_contacts",
    "initial_state",
    "make_bone_cylinder",
    "make_fiber_contact_law",
    "simulate_system",
    "solve_system_static",
    "step_system_once",
    "CableMaterial",
    "CylinderContact",
    "EndCondition",
    "FiberDivergenceError",
    "FiberLoads",
    "FiberModel",
    "FiberNewtonError",
    "FiberState",
    "InadmissibleContactError",
    "NewtonInfo",
    "NewtonOptions",
    "StepSystem",
    "Trajectory",
    "axial_force_at_quadrature",
    "banded_to_dense",
    "compile_fiber",
    "contact_state",
    "evaluate",
    "gauss_legendre",
    "gravity_line_force",
    "line_force_at_quadrature",
    "make_cylinder_contact",
    "make_material",
    "mass_matrix_banded",
    "radius",
    "rational_penalty",
    "safeguard_fraction",
    "simulate",
    "solve_static",
    "step",
    "step_system",
    "straight_reference",
    "stress_s11",
    "stretch",
    "table1_material",
]
