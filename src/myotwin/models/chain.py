"""A three-hinge chain with four musculotendon paths: the test bed of issue 4's benchmark
(`benchmarks/inertial.py`) and of `tests/musculoskeletal`.

Links of 0.3 m (0.5 / 0.4 / 0.3 kg, COM at mid-length), hinges about y, y and x, hanging from
the world; paths `MUSCLES`: one straight (Type I, world -> link 3) and three through via
points on links 1 and 2 (Type II). Options: a tendon motor per path, a fifth path wrapping a
cylinder on link 1, the first hinge's damping.
"""

from __future__ import annotations

import numpy as np

from myotwin.scalars import as_real, require_flag

#: The four paths, in MJCF order.
MUSCLES = ("straight", "via1", "via2", "via3")


def mjcf(wrap: bool = False, actuated: bool = True, damping: float = 0.01) -> str:
    """The chain's MJCF (module docstring): with a fifth, cylinder-wrapped path if `wrap`; with
    `actuated`, a tendon motor (gear -1: ctrl = tension N) on every path; `damping` on the
    first hinge (N m s/rad), a finite number >= 0."""
    for name, flag in (("wrap", wrap), ("actuated", actuated)):
        require_flag("chain.mjcf", name, flag)    # a string such as "no" would be true
    value = as_real(damping)      # True or "0.5" are not numbers; np.float64 is one
    if value is None or not (np.isfinite(value) and value >= 0.0):
        raise ValueError(f"chain.mjcf: damping must be a finite number >= 0 (N m s/rad), got "
                         f"{damping!r}")
    damping = value
    names = MUSCLES + (("wrapped",) if wrap else ())
    actuators = ("<actuator>" + "".join(f'<motor tendon="{n}" gear="-1"/>' for n in names)
                 + "</actuator>") if actuated else ""
    extra_geom = ('<geom name="cyl" type="cylinder" pos="0 0 -0.3" size="0.03 0.03" '
                  'quat="0.70710678118654757 -0.70710678118654757 0 0" contype="0" '
                  'conaffinity="0"/><site name="cyl_side" pos="0.1 0 -0.3"/>'
                  '<site name="cyl_o" pos="-0.05 0 -0.1"/>') if wrap else ""
    extra_site = '<site name="cyl_i" pos="-0.12 0 -0.15"/>' if wrap else ""
    extra_tendon = ('<spatial name="wrapped"><site site="cyl_o"/><geom geom="cyl" '
                    'sidesite="cyl_side"/><site site="cyl_i"/></spatial>') if wrap else ""
    return f"""
<mujoco model="inertial_chain"><option timestep="0.001"><flag contact="disable"/></option>
<worldbody>
  <site name="o1" pos="0.03 0 0.05"/><site name="o2" pos="-0.03 0 0.05"/>
  <body name="b1" pos="0 0 0"><joint type="hinge" axis="0 1 0" damping="{damping!r}"/>
    <inertial pos="0 0 -0.15" mass="0.5" diaginertia="0.004 0.004 0.0002"/>
    <site name="v1" pos="0.03 0 -0.2"/><site name="v1b" pos="-0.03 0 -0.2"/>{extra_geom}
    <body name="b2" pos="0 0 -0.3"><joint type="hinge" axis="0 1 0"/>
      <inertial pos="0 0 -0.15" mass="0.4" diaginertia="0.003 0.003 0.0002"/>
      <site name="v2" pos="0.03 0 -0.15"/><site name="v2b" pos="-0.03 0 -0.15"/>{extra_site}
      <body name="b3" pos="0 0 -0.3"><joint type="hinge" axis="1 0 0"/>
        <inertial pos="0 0 -0.15" mass="0.3" diaginertia="0.002 0.002 0.0001"/>
        <site name="i3" pos="0.02 0 -0.1"/><site name="i3b" pos="-0.02 0.01 -0.1"/>
      </body></body></body>
</worldbody>
<tendon>
  <spatial name="straight"><site site="o1"/><site site="i3"/></spatial>
  <spatial name="via1"><site site="o1"/><site site="v1"/><site site="v2"/><site site="i3"/>
  </spatial>
  <spatial name="via2"><site site="o2"/><site site="v1b"/><site site="v2b"/><site site="i3b"/>
  </spatial>
  <spatial name="via3"><site site="o2"/><site site="v1"/><site site="v2b"/><site site="i3"/>
  </spatial>
  {extra_tendon}
</tendon>
{actuators}
</mujoco>"""
