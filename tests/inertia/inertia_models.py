"""MJCF test models for the inertia tests (seeded, hand-made geometry).

`CHAIN_XML`: hinge (y) -> ball -> hinge (x) chain with four paths of every type:
  straight  (Type I)   world site -> site on the last body;
  via       (Type II)  world -> b1 -> b2 -> b3 through via points;
  cyl       (Type III) b1 -> cylinder on b2 (side site) -> b3: the seed's Fig. 2 / Eqs. 20-27
                       case (origin on A, surface on B, insertion on C), a helix in 3-D since the
                       ball joint moves the insertion along the cylinder axis; the side site is
                       behind the cylinder, so the path is forced the long way round (> pi);
  sph       (Type III) world -> sphere on b1 (side site) -> b2;
  ins       (Type III) the same ends and sphere with a side site inside it: MuJoCo's inside wrap
                       (one contact point found by Newton).
Both wraps are "hooks": the end points are on the -x side of the obstacle and the side site on
+x, so MuJoCo forces the path around the +x side (the side site is behind the obstacle seen
from the segment) and the arcs stay long (about 1 rad) over the test states.
`chain_states()` are seeded configurations near Q_NOMINAL where both wraps are active.
"""

from __future__ import annotations

import numpy as np

CHAIN_XML = """
<mujoco model="inertia_chain">
  <option gravity="0 0 -9.81"/>
  <worldbody>
    <site name="o" pos="0.1 0 0.05"/>
    <site name="o2" pos="-0.1 0 0"/>
    <body name="b1" pos="0 0 0">
      <joint name="j1" type="hinge" axis="0 1 0"/>
      <inertial pos="0 0 -0.2" mass="1" diaginertia="0.015 0.015 0.001"/>
      <site name="v1" pos="0.05 0 -0.15"/>
      <site name="c1" pos="-0.1 0 -0.25"/>
      <geom name="sph" type="sphere" pos="0 0 -0.2" size="0.06" contype="0" conaffinity="0"/>
      <site name="sph_side" pos="0.15 0 -0.2"/>
      <site name="sph_in" pos="0.01 0 -0.2"/>
      <body name="b2" pos="0 0 -0.4">
        <joint name="j2" type="ball"/>
        <inertial pos="0 0 -0.15" mass="0.8" diaginertia="0.008 0.0075 0.0009"/>
        <site name="v2" pos="0.04 0.01 -0.1"/>
        <site name="s2" pos="-0.1 0.01 -0.1"/>
        <geom name="cyl" type="cylinder" pos="0 0 0" quat="0.70710678118654757 -0.70710678118654757 0 0"
              size="0.06 0.05" contype="0" conaffinity="0"/>
        <site name="cyl_side" pos="0.08 0 0"/>
        <body name="b3" pos="0 0 -0.3">
          <joint name="j3" type="hinge" axis="1 0 0"/>
          <inertial pos="0 0 -0.1" mass="0.5" diaginertia="0.002 0.002 0.0003"/>
          <site name="i3" pos="0.02 0 -0.15"/>
          <site name="i3c" pos="-0.1 0 -0.12"/>
        </body>
      </body>
    </body>
  </worldbody>
  <tendon>
    <spatial name="straight"><site site="o"/><site site="i3"/></spatial>
    <spatial name="via"><site site="o"/><site site="v1"/><site site="v2"/><site site="i3"/></spatial>
    <spatial name="cyl"><site site="c1"/><geom geom="cyl" sidesite="cyl_side"/><site site="i3c"/></spatial>
    <spatial name="sph"><site site="o2"/><geom geom="sph" sidesite="sph_side"/><site site="s2"/></spatial>
    <spatial name="ins"><site site="o2"/><geom geom="sph" sidesite="sph_in"/><site site="s2"/></spatial>
  </tendon>
</mujoco>
"""

#: j1, ball quaternion (w-first), j3.
Q_NOMINAL = np.array([0.2, 1.0, 0.0, 0.0, 0.0, -0.3])


def quat_from_rotvec(v: np.ndarray) -> np.ndarray:
    angle = float(np.linalg.norm(v))
    if angle < 1e-12:
        return np.array([1.0, 0.0, 0.0, 0.0])
    return np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * v / angle])


def chain_states(n: int, seed: int = 0, spread: float = 0.2) -> list[np.ndarray]:
    """n seeded configurations (n_q = 6) around Q_NOMINAL."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        q = Q_NOMINAL.copy()
        q[0] += spread * rng.uniform(-1, 1)
        q[1:5] = quat_from_rotvec(spread * rng.uniform(-1, 1, 3))
        q[5] += spread * rng.uniform(-1, 1)
        out.append(q)
    return out


PENDULUM_XML = """
<mujoco model="inertia_pendulum">
  <option gravity="0 0 -9.81"/>
  <worldbody>
    <site name="p_o" pos="0.05 0 0.05"/>
    <body name="upper" pos="0 0 0">
      <joint name="shoulder" type="hinge" axis="0 1 0"/>
      <inertial pos="0 0 -0.2" mass="1.2" diaginertia="0.016 0.016 0.001"/>
      <site name="p_via" pos="0.04 0 -0.3"/>
      <body name="lower" pos="0 0 -0.4">
        <joint name="elbow" type="hinge" axis="0 1 0"/>
        <inertial pos="0 0 -0.15" mass="0.8" diaginertia="0.006 0.006 0.0005"/>
        <site name="p_ins" pos="0.03 0 -0.2"/>
      </body>
    </body>
  </worldbody>
  <tendon>
    <spatial name="muscle"><site site="p_o"/><site site="p_via"/><site site="p_ins"/></spatial>
  </tendon>
  <actuator>
    <motor name="m_shoulder" joint="shoulder"/>
    <motor name="m_elbow" joint="elbow"/>
  </actuator>
</mujoco>
"""
"""Planar double pendulum with a Type II (via-point) muscle and two joint motors."""


WRAPPED_PENDULUM_XML = """
<mujoco model="inertia_wrapped_pendulum">
  <option gravity="0 0 -9.81"/>
  <worldbody>
    <body name="upper" pos="0 0 0">
      <joint name="shoulder" type="hinge" axis="0 1 0"/>
      <inertial pos="0 0 -0.2" mass="1.2" diaginertia="0.016 0.016 0.001"/>
      <site name="w_o" pos="-0.03 0 -0.2"/>
      <site name="w_side" pos="-0.1 0 -0.4"/>
      <geom name="elbow_cyl" type="cylinder" pos="0 0 -0.4" size="0.04 0.03"
            quat="0.70710678118654757 -0.70710678118654757 0 0" contype="0" conaffinity="0"/>
      <body name="lower" pos="0 0 -0.4">
        <joint name="elbow" type="hinge" axis="0 1 0"/>
        <inertial pos="0 0 -0.15" mass="0.8" diaginertia="0.006 0.006 0.0005"/>
        <site name="w_ins" pos="-0.03 0 -0.2"/>
      </body>
    </body>
  </worldbody>
  <tendon>
    <spatial name="wrapped">
      <site site="w_o"/><geom geom="elbow_cyl" sidesite="w_side"/><site site="w_ins"/>
    </spatial>
  </tendon>
</mujoco>
"""
"""Planar double pendulum whose one muscle wraps the back (-x side) of a cylinder at the
elbow (radius 0.04 m, axis along y, the hinge axis). Origin and insertion are 0.03 m behind the
bones, inside the radius, so the wrap is active for elbow angles from -1 to 0 rad at least
(MuJoCo: ten_wrapnum 4); there the length changes by -0.04 m per radian of elbow angle."""
