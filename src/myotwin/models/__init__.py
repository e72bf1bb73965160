"""Musculoskeletal models shipped with myotwin, written in Python (see docs/models.md).

arm26
    OpenSim's arm26 (2 dof, 6 muscles), geometry from opensim-models' arm26.osim (CC BY 3.0,
    The OpenSim Development Team, adapted from Holzbaur et al. 2005): `arm26.build()`.
finger
    Index finger (MCP, PIP, DIP hinges) with FDS and FDP as inertial Type II paths, after the
    seed's §4.4 (dimensions from Buryanov & Kotiuk 2010, de Leva 1996): `finger.build()`.
chain
    A three-hinge chain with one straight and three via-point paths (the inertial benchmark's
    and the musculoskeletal tests' test bed): `chain.mjcf()`.
arm_reaching
    Right arm (3 shoulder hinges + elbow, de Leva 1996 segments) with three deltoid and three
    triceps heads as inertial Type III paths, after the seed's §4.7: `arm_reaching.build()`.
"""

from myotwin.models import arm26, arm_reaching, chain, finger

__all__ = ["arm26", "arm_reaching", "chain", "finger"]
