"""Musculoskeletal models shipped with myotwin, written in Python (see docs/models.md).

arm26
    OpenSim's arm26 (2 dof, 6 muscles), geometry from opensim-models' arm26.osim (CC BY 3.0,
    The OpenSim Development Team, adapted from Holzbaur et al. 2005): `arm26.build()`.
"""

from myotwin.models import arm26

__all__ = ["arm26"]
