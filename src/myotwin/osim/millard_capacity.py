"""A Millard2012EquilibriumMuscle's force per unit activation as OpenSim 4.6's static
optimization takes it (`static_optimization`, docs/osim.md "Static optimization").

OpenSim's StaticOptimizationTarget asks each muscle for
`calcInextensibleTendonActiveFiberForce(s, 1)`. Millard2012EquilibriumMuscle answers with its
own, deprecated, rigid-tendon estimate, whatever its tendon and muscle states: from the
musculotendon length l_MT and lengthening speed v_MT alone,

    l_M = sqrt((l_MT - l_ts)^2 + w^2),   phi = asin(w / l_M),   v_M = v_MT cos(phi),
    F   = F_iso f_L(l_M / l_opt) f_V(v_M / (l_opt v_max)) cos(phi'),
    phi' = asin(w / (l_M / l_opt)),

w = l_opt sin(phi_opt) the fixed fiber width (m). phi' is OpenSim's pennation angle of the
*normalised* fiber length: its calcActiveFiberForceAlongTendon passes l_M / l_opt where the
pennation model expects metres (opensim-core issue #4390, "deprecated" there). The cosine is
therefore ~1 (w / (l_M / l_opt) is a few hundredths) instead of cos(phi). Reproduced as OpenSim
4.6 computes it, since matching its results is the point of the command; the physically
meant factor would be cos(phi). Limits as in that code: F = 0 when l_M is at or below the
pennation model's minimum fiber length w / sin(acos(0.1)); f_L reads l_M clamped to it; phi'
(and phi) are acos(0.1) where the sine would exceed sin(acos(0.1)). The curves are the
muscle's after OpenSim's finalisation (`osim.muscles`: the singularity-free model's for a
damped or rigid tendon). Checked against OpenSim 4.6's own calcInextensibleTendonActiveFiberForce
(below 3e-13 relative at 20 random states of gait10dof18musc in the test; in a scratch probe
it did not change with the muscle states) and
its analysis (tests/osim/test_osim_static_optimization.py).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from myotwin.muscle import pennation
from myotwin.muscle.model import MAX_PENNATION_RAD, Muscle


def _pennation(width, length):
    """OpenSim's MuscleFixedWidthPennationModel::calcPennationAngle for a length (any unit:
    OpenSim's call passes a normalised one) against its minimum fiber length in metres."""
    sine = width / length
    limit = math.sin(MAX_PENNATION_RAD)
    inside = (length > width / limit) & (sine < limit)
    return jnp.where(inside, jnp.arcsin(jnp.minimum(sine, limit)), MAX_PENNATION_RAD)


def _one(m: Muscle, l_mt, v_mt):
    """F per unit activation (N) of one muscle (scalars)."""
    width = pennation.fiber_width(m.optimal_fiber_length_m, m.pennation_at_optimal_rad)
    minimum = width / math.sin(MAX_PENNATION_RAD)
    along = jnp.maximum(l_mt - m.tendon_slack_length_m, 0.0)
    length = jnp.sqrt(along ** 2 + width ** 2)
    v_m = v_mt * jnp.cos(_pennation(width, length))
    norm_length = jnp.maximum(length, minimum) / m.optimal_fiber_length_m
    f_l = m.curves.active_force_length(norm_length)
    f_v = m.curves.force_velocity(
        v_m / (m.optimal_fiber_length_m * m.max_contraction_velocity_Lopt_per_s), 1.0)
    force = (m.max_isometric_force_N * f_l * f_v
             * jnp.cos(_pennation(width, length / m.optimal_fiber_length_m)))
    return jnp.where(length > minimum, force, 0.0)


def capacity(muscles: Muscle, mt_length_m, mt_speed_m_per_s) -> jax.Array:
    """(n_muscles,) OpenSim 4.6's calcInextensibleTendonActiveFiberForce(s, 1) (N) of
    Millard muscles (their curves as `osim.build_muscles` builds them) at musculotendon
    lengths and lengthening speeds (module docstring)."""
    return jax.vmap(_one)(muscles, mt_length_m, mt_speed_m_per_s)
