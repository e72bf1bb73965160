"""Peer model in Exudyn: a rigid link on a hinge carrying a hanging ANCF cable (acceptance 4).

Exudyn (Gerstmayr et al., `pip install exudyn`, optional test dependency) discretises cables
with the same cubic Hermite (position + slope) elements as Gfrerer & Simeon (ANCF,
`ObjectANCFCable2D` on `NodePoint2DSlope1`), with a linear axial law N = EA (|r'| - 1) and a
bending stiffness EI, and couples rigid bodies by joints (Lagrange multipliers, index 3) with
generalized-alpha time integration. In the small-strain limit with negligible EI it solves the
same problem as our fiber tied to the skeleton (Eqs. 49, 58-64) with EA = 3 mu A_0 (the
small-strain modulus of the incompressible neo-Hooke cable).

The planar setup (Exudyn's x-y plane is our x-z plane): the link rotates about the y axis at
the origin, centre of mass at distance `com_m` along it, mass `mass_kg`, inertia `inertia_com`
about the centre of mass; the cable of length `length_m` is pinned at the link point
(`attach_m`, 0) and hangs along -z; its end is free. Both start at rest with the link
horizontal; gravity -9.81 m/s^2 along z.
"""

from __future__ import annotations

import numpy as np


def simulate_exudyn(*, mass_kg, com_m, inertia_com, attach_m, length_m, n_elements,
                    ea_N, ei_Nm2, mass_per_length, duration_s, dt_s, spectral_radius=0.9):
    """Trajectories of the cable's free end and of its tied end (the link point): t (n,),
    tip (n, 2) and base (n, 2), in our (x, z)."""
    import exudyn as exu
    from exudyn.itemInterface import (
        LoadMassProportional,
        MarkerBodyMass,
        MarkerBodyPosition,
        MarkerNodePosition,
        NodePoint2DSlope1,
        NodeRigidBody2D,
        ObjectANCFCable2D,
        ObjectGround,
        ObjectJointRevolute2D,
        ObjectRigidBody2D,
        SensorNode,
    )

    sc = exu.SystemContainer()
    mbs = sc.AddSystem()
    g = [0.0, -9.81, 0.0]
    ground = mbs.AddObject(ObjectGround(referencePosition=[0, 0, 0]))
    n_link = mbs.AddNode(NodeRigidBody2D(referenceCoordinates=[com_m, 0.0, 0.0]))
    link = mbs.AddObject(ObjectRigidBody2D(mass=mass_kg, inertia=inertia_com,
                                           nodeNumber=n_link))
    m_ground = mbs.AddMarker(MarkerBodyPosition(bodyNumber=ground, localPosition=[0, 0, 0]))
    m_hinge = mbs.AddMarker(MarkerBodyPosition(bodyNumber=link, localPosition=[-com_m, 0, 0]))
    mbs.AddObject(ObjectJointRevolute2D(markerNumbers=[m_ground, m_hinge]))
    mbs.AddLoad(LoadMassProportional(markerNumber=mbs.AddMarker(MarkerBodyMass(bodyNumber=link)),
                                     loadVector=g))
    h = length_m / n_elements
    nodes = [mbs.AddNode(NodePoint2DSlope1(referenceCoordinates=[attach_m, -i * h, 0.0, -1.0]))
             for i in range(n_elements + 1)]
    for i in range(n_elements):
        cable = mbs.AddObject(ObjectANCFCable2D(
            length=h, massPerLength=mass_per_length,
            bendingStiffness=ei_Nm2, axialStiffness=ea_N,
            nodeNumbers=[nodes[i], nodes[i + 1]]))
        mbs.AddLoad(LoadMassProportional(
            markerNumber=mbs.AddMarker(MarkerBodyMass(bodyNumber=cable)), loadVector=g))
    m_tip_link = mbs.AddMarker(MarkerBodyPosition(bodyNumber=link,
                                                  localPosition=[attach_m - com_m, 0, 0]))
    m_cable0 = mbs.AddMarker(MarkerNodePosition(nodeNumber=nodes[0]))
    mbs.AddObject(ObjectJointRevolute2D(markerNumbers=[m_tip_link, m_cable0]))
    sensor = mbs.AddSensor(SensorNode(nodeNumber=nodes[-1], storeInternal=True,
                                      outputVariableType=exu.OutputVariableType.Position))
    sensor0 = mbs.AddSensor(SensorNode(nodeNumber=nodes[0], storeInternal=True,
                                       outputVariableType=exu.OutputVariableType.Position))
    mbs.Assemble()
    settings = exu.SimulationSettings()
    settings.timeIntegration.numberOfSteps = int(round(duration_s / dt_s))
    settings.timeIntegration.endTime = duration_s
    settings.timeIntegration.generalizedAlpha.spectralRadius = spectral_radius
    settings.timeIntegration.newton.relativeTolerance = 1e-10
    settings.timeIntegration.newton.absoluteTolerance = 1e-12
    settings.timeIntegration.verboseMode = 0
    settings.solution.file.write = False
    settings.solution.sensors.writePeriod = dt_s
    exu.SolveDynamic(mbs, settings)
    data = np.asarray(mbs.GetSensorStoredData(sensor))
    data0 = np.asarray(mbs.GetSensorStoredData(sensor0))
    return data[:, 0], data[:, 1:3], data0[:, 1:3]
