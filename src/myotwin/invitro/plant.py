"""The plant interface: what the closed loop needs from a simulation.

The loop talks to the simulated body only through this small interface, so the MuJoCo frog
(`myotwin.invitro.frog.plant.MujocoFrogPlant`), the differentiable engine of a later issue,
or a test plant with a closed-form solution can stand in for one another. Several muscles can
later run in parallel loops, each with its own plant handle onto one shared model.

Sign convention: `tension_N` >= 0 pulls the two ends of the muscle-tendon unit together.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class Plant(Protocol):
    """A simulation advanced exactly one fixed step per loop tick."""

    dt_s: float
    """Step of the simulation; must equal the loop period (t_sim = t_real)."""
    channel_names: tuple[str, ...]
    """Names (with units) of the state channels returned by `channels()`."""

    def reset(self) -> None:
        """Return to the start state of a trial (t = 0)."""

    def set_muscle_tension(self, tension_N: float) -> None:
        """Muscle tension applied along the muscle path during the next step."""

    def step(self) -> None:
        """Advance the simulation by exactly one step of `dt_s`."""

    def time_s(self) -> float:
        """Simulation time."""

    def mtu_length_m(self) -> float:
        """Current muscle-tendon length (path length of the simulated muscle)."""

    def channels(self) -> tuple[float, ...]:
        """Current values of the state channels, in the order of `channel_names`."""

    def fault(self) -> str | None:
        """A message if the simulation has diverged or left its valid range, else None."""
