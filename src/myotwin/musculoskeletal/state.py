"""State of a musculoskeletal model and its equilibrium initialisation.

`MusculoskeletalState`: the skeleton's (q (n_q,), qd (n_v,)) in MuJoCo's qpos/qvel layout,
each muscle's activation (n_muscles,) and tendon state (n_muscles,): the normalized tendon
force for `TendonModel.EXPLICIT_FORCE`, the fiber length (m) for DAMPED_FIBER_LENGTH and
FIBER_LENGTH, unused (zeros) for RIGID.

`equilibrium_state` starts a simulation as OpenSim's `equilibrateMuscles` does: each
compliant musculotendon at the fiber length where fiber and tendon forces balance at the
current path length, with zero tendon velocity (`myotwin.muscle.equilibrium`). At rest this
is every OpenSim type's equilibrium; with the path lengthening, it is De Groote's (the fiber
takes the whole speed), while OpenSim's Millard2012EquilibriumMuscle balances at zero fiber
velocity and its Thelen2003Muscle shares the speed between fiber and tendon by stiffness
(`osim.muscle_equilibrium` reproduces each type's; `myotwin osim forward
--solve-for-equilibrium` uses it). With a fiber
length as the state (FIBER_LENGTH, DAMPED_FIBER_LENGTH) the fiber is no shorter than its
minimum (`Muscle.min_fiber_length_m`), and where the balance would need it shorter, or the
musculotendon is slack (no balance), the fiber starts at that minimum, as OpenSim's
Thelen2003Muscle (Warning_FiberAtLowerBound) and Millard2012EquilibriumMuscle start it; with
the tendon force as the state a slack musculotendon has no equilibrium (ValueError).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine.arguments import check_musculoskeletal_arguments
from myotwin.scalars import require_real_numbers
from myotwin.muscle.model import TendonModel
from myotwin.muscle.musculotendon import equilibrium
from myotwin.musculoskeletal.model import MusculoskeletalModel
from myotwin.musculoskeletal.paths import path_state


class MusculoskeletalState(NamedTuple):
    """q (n_q,), qd (n_v,), activation (n_muscles,), tendon_state (n_muscles,)."""

    q: jax.Array
    qd: jax.Array
    activation: jax.Array
    tendon_state: jax.Array


@jax.jit
def _paths_and_equilibrium(msm: MusculoskeletalModel, q, qd, a):
    """(l_MT, `muscle.Equilibrium`) at (q, qd), compiled: run op by op, the path state and the
    solve took seconds per call (2.2 s of a 1.6 s-integration forward run on leg6dof9musc)."""
    length, speed, _ = path_state(msm, q, qd)
    return length, equilibrium(msm.muscles, a, length, speed)


def equilibrium_state(msm: MusculoskeletalModel, q, qd, activation) -> MusculoskeletalState:
    """The state at (q, qd) with the given activation (scalar or (n_muscles,)) and every
    compliant tendon in equilibrium (module docstring). ValueError naming the muscles whose
    equilibrium has no solution (a slack musculotendon with the tendon force as state), when
    not traced."""
    for name, x in (("q", q), ("qd", qd), ("activation", activation)):
        require_real_numbers("equilibrium_state", name, x)
    check_musculoskeletal_arguments("equilibrium_state", msm,
                                    {"q": q, "qd": qd, "activation": activation})
    q = jnp.asarray(q, dtype=float)
    qd = jnp.asarray(qd, dtype=float)
    a = jnp.broadcast_to(jnp.asarray(activation, dtype=float), (msm.n_muscles,))
    for name, x in (("q", q), ("qd", qd)):
        if not isinstance(x, jax.core.Tracer) and not bool(jnp.all(jnp.isfinite(x))):
            raise ValueError(f"equilibrium_state: {name} must be finite, got "
                             f"{np.asarray(x).tolist()}")
    if not isinstance(a, jax.core.Tracer):
        bad = np.flatnonzero(~((a >= 0.0) & (a <= 1.0)))
        if bad.size:
            raise ValueError(f"equilibrium_state: activation of muscle "
                             f"{msm.muscles.names[bad[0]]!r} is {float(a[bad[0]])!r}, expected "
                             "a value in [0, 1]")
    m = msm.muscles
    if m.tendon is TendonModel.RIGID:
        return MusculoskeletalState(q, qd, a, jnp.zeros(msm.n_muscles))
    length, eq = _paths_and_equilibrium(msm, q, qd, a)
    if m.tendon in (TendonModel.FIBER_LENGTH, TendonModel.DAMPED_FIBER_LENGTH):
        fiber = jnp.where(eq.converged, jnp.maximum(eq.tendon_state, m.min_fiber_length_m),
                          m.min_fiber_length_m)
        return MusculoskeletalState(q, qd, a, fiber)
    if not isinstance(eq.converged, jax.core.Tracer) and not bool(jnp.all(eq.converged)):
        bad = [n for n, ok in zip(m.names, eq.converged.tolist()) if not ok]
        raise ValueError(f"equilibrium_state: no fiber equilibrium for muscles {bad} at path "
                         f"lengths {[round(float(x), 6) for x in length]} m (slack, or "
                         "outside the curves' range)")
    return MusculoskeletalState(q, qd, a, eq.tendon_state)
