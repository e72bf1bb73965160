"""Seeded random MJCF models with spatial tendons of every kind the paths support.

A chain of bodies (free or hinge root; hinge, slide and ball joints further down) with a wrap
geom on each joint anchor (sphere or cylinder, cylinder axis along the hinge axis or random),
sites scattered around each joint so that paths wrap on and off as the joints move, and
tendons of each type: straight (Type I), via points across several bodies (Type II), sphere and
cylinder wraps without a side site, with a side site outside (which can force the far side) and
with a side site inside (MuJoCo's inside wrap), a cylinder side site offset along the axis,
several wraps in one tendon, and pulleys with divisors.
"""

from __future__ import annotations

import numpy as np

_JOINTS = ["hinge", "hinge", "hinge", "slide", "ball"]


def _vec(x) -> str:
    return " ".join(f"{v:.17g}" for v in x)


def _unit(rng, n: int) -> np.ndarray:
    v = rng.normal(size=n)
    return v / np.linalg.norm(v)


def _quat_z_to(axis: np.ndarray) -> np.ndarray:
    """Unit quaternion (w, x, y, z) rotating +z onto the unit vector `axis`."""
    z = np.array([0.0, 0.0, 1.0])
    c = float(np.dot(z, axis))
    if c < -1.0 + 1e-12:
        return np.array([0.0, 1.0, 0.0, 0.0])
    v = np.cross(z, axis)
    q = np.array([1.0 + c, *v])
    return q / np.linalg.norm(q)


def random_path_mjcf(seed: int, n_bodies: int = 5, free_root: bool = False,
                     wraps: bool = True) -> str:
    """MJCF of a random chain with wrap geoms at the joints and tendons of every kind (with
    `wraps=False`, site-only tendons: Types I, II and the pulley without its wrap)."""
    rng = np.random.default_rng(seed)
    sites: list[tuple[str, int]] = []  # (name, body index)
    lines: list[str] = []

    def add_site(body: int, name: str, pos: np.ndarray) -> None:
        sites.append((name, body))
        lines.append(f'{"  " * (body + 3)}<site name="{name}" pos="{_vec(pos)}"/>')

    def site(body: int, centre: np.ndarray, spread: float) -> None:
        add_site(body, f"s{len(sites)}", centre + rng.uniform(-spread, spread, 3))

    def open_body(i: int) -> None:
        pad = "  " * (i + 2)
        offset = np.array([0.3, 0.0, 0.0]) + rng.uniform(-0.08, 0.08, 3)
        if i == 0:
            offset = rng.uniform(-0.2, 0.2, 3)
        quat = _unit(rng, 4) * 0.3 + np.array([1.0, 0, 0, 0])
        lines.append(f'{pad}<body name="b{i}" pos="{_vec(offset)}" quat="{_vec(quat)}">')
        lines.append(f'{pad}  <inertial pos="0.1 0 0" mass="1" diaginertia="0.01 0.02 0.03"/>')
        if i == 0:
            jtype = "free" if free_root else "hinge"
        else:
            jtype = str(rng.choice(_JOINTS))
        axis = _unit(rng, 3) * 0.3 + np.array([0.0, 0.0, 1.0])
        axis /= np.linalg.norm(axis)
        if jtype == "free":
            lines.append(f'{pad}  <freejoint name="j{i}"/>')
        else:
            extra = f' axis="{_vec(axis)}"' if jtype in ("hinge", "slide") else ""
            lines.append(f'{pad}  <joint name="j{i}" type="{jtype}" pos="0 0 0"{extra}/>')
        # the wrap obstacle g<i> on this body's joint: a sphere, or a cylinder (axis along the
        # hinge axis or random)
        radius = rng.uniform(0.04, 0.09)
        if rng.random() < 0.5:
            pos = rng.uniform(-0.01, 0.01, 3)
            lines.append(f'{pad}  <geom name="g{i}" type="sphere" pos="{_vec(pos)}" '
                         f'size="{radius:.17g}"/>')
        else:
            cyl_axis = axis if (jtype == "hinge" and rng.random() < 0.7) else _unit(rng, 3)
            pos = rng.uniform(-0.01, 0.01, 3)
            lines.append(f'{pad}  <geom name="g{i}" type="cylinder" pos="{_vec(pos)}" '
                         f'quat="{_vec(_quat_z_to(cyl_axis))}" size="{radius:.17g} 0.05"/>')
        # path sites around the joint and along the body; side sites out<i> (outside the
        # obstacle) and in<i> (inside it)
        for _ in range(3):
            site(i, np.zeros(3), 0.2)
        site(i, np.array([0.15, 0.0, 0.0]), 0.1)
        direction = _unit(rng, 3)
        add_site(i, f"out{i}", direction * radius * rng.uniform(1.5, 3.0))
        direction = _unit(rng, 3)
        add_site(i, f"in{i}", direction * radius * rng.uniform(0.0, 0.8))

    for i in range(n_bodies):
        open_body(i)
    for i in reversed(range(n_bodies)):
        lines.append(f'{"  " * (i + 2)}</body>')

    def sites_on(b: int) -> list[str]:
        return [n for n, bb in sites if bb == b and n.startswith("s")]

    def pick(b: int) -> str:
        return str(rng.choice(sites_on(b)))

    def wrap_el(b: int, side: str | None) -> str:
        return f'<geom geom="g{b}"' + (f' sidesite="{side}"' if side else "") + "/>"

    def el(site_name: str) -> str:
        return f'<site site="{site_name}"/>'

    tendons = []
    # Type I: straight, across one and two joints; a world site to a body site
    tendons.append([el(pick(0)), el(pick(1))])
    tendons.append([el("world0"), el(pick(2))])
    # Type II: via points across the chain, two sites on one body in a row included
    two = [str(x) for x in rng.choice(sites_on(1), size=2, replace=False)]
    via = [pick(0), *two, pick(2), pick(3)]
    tendons.append([el(s) for s in via])
    # Type III: each joint's obstacle, with no side site, an outside and an inside side site
    for b in range(1, n_bodies if wraps else 1):
        for side in (None, f"out{b}", f"in{b}"):
            tendons.append([el(pick(b - 1)), wrap_el(b, side), el(pick(b))])
    # several wraps in one tendon, with via points between
    chain = [el(pick(0))]
    for b in range(1, n_bodies):
        side = [None, f"out{b}", f"in{b}"][int(rng.integers(3))]
        chain += [wrap_el(b, side), el(pick(b))]
    if wraps:
        tendons.append(chain)
    # pulleys: a block and tackle with divisors 2 and 3, one branch wrapping (if wraps)
    tendons.append([el(pick(0)), el(pick(1)), '<pulley divisor="2"/>',
                    el(pick(1)), *([wrap_el(2, "out2")] if wraps else []), el(pick(2)),
                    '<pulley divisor="3"/>', el(pick(2)), el(pick(3))])
    spatial = "\n".join(
        f'    <spatial name="t{k}">\n      ' + "\n      ".join(t) + "\n    </spatial>"
        for k, t in enumerate(tendons))
    return "\n".join([
        f'<mujoco model="random_paths_{seed}">',
        '  <compiler angle="radian" autolimits="true"/>',
        '  <option gravity="0 0 -9.81"/>',
        '  <default><geom contype="0" conaffinity="0" density="0"/></default>',
        "  <worldbody>",
        f'    <site name="world0" pos="{_vec(rng.uniform(-0.3, 0.3, 3))}"/>',
        *lines,
        "  </worldbody>",
        "  <tendon>",
        spatial,
        "  </tendon>",
        "</mujoco>",
    ])


def random_configuration(mj_model, rng, scale: float = 1.2) -> np.ndarray:
    """Random qpos (n_q,): hinge/slide at qpos0 + U(-scale, scale) (slides scaled by 0.1 m),
    unit quaternions for ball/free joints, free-joint positions N(0, 0.3)."""
    q = np.array(mj_model.qpos0, dtype=np.float64)
    for j in range(mj_model.njnt):
        adr, jtype = mj_model.jnt_qposadr[j], mj_model.jnt_type[j]
        if jtype == 0:
            q[adr:adr + 3] = rng.normal(size=3) * 0.3
            q[adr + 3:adr + 7] = _unit(rng, 4)
        elif jtype == 1:
            q[adr:adr + 4] = _unit(rng, 4) * 0.4 + np.array([1.0, 0, 0, 0])
            q[adr:adr + 4] /= np.linalg.norm(q[adr:adr + 4])
        elif jtype == 2:
            q[adr] += rng.uniform(-scale, scale) * 0.1
        else:
            q[adr] += rng.uniform(-scale, scale)
    return q
