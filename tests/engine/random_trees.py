"""Seeded random MJCF kinematic trees with every joint type, and random states for any model."""

from __future__ import annotations

import numpy as np

# Joint stacks a body may carry. Free joints only on children of the world, alone; MuJoCo
# rejects a rotation after a ball joint in the same body ("ball followed by rotation").
_TOP_STACKS = [["free"], ["ball"], ["hinge"], ["slide", "hinge"], ["hinge", "ball"], []]
_NESTED_STACKS = [
    ["hinge"], ["slide"], ["ball"], ["hinge", "slide", "hinge"],
    ["ball", "slide"], ["slide", "ball"], [],
]


def _vec(x) -> str:
    return " ".join(f"{v:.17g}" for v in x)


def _unit(rng, n: int) -> np.ndarray:
    v = rng.normal(size=n)
    return v / np.linalg.norm(v)


def _full_inertia(rng, scale: float) -> np.ndarray:
    """(ixx, iyy, izz, ixy, ixz, iyz) of R diag(d) R^T, d in [1, 1.9] scale (triangle-valid)."""
    d = rng.uniform(1.0, 1.9, size=3) * scale
    r, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    i = r @ np.diag(d) @ r.T
    return np.array([i[0, 0], i[1, 1], i[2, 2], i[0, 1], i[0, 2], i[1, 2]])


def random_tree_mjcf(seed: int, n_bodies: int = 8) -> str:
    """MJCF of a random forest under the world: random body frames, full inertias (off-diagonal
    terms), sites, joint stacks drawn from every type (hinge/slide with random axis, anchor,
    `ref` and armature), and a random gravity vector."""
    rng = np.random.default_rng(seed)
    parents = [0]  # parents[i] of body i (body 0 = world)
    for i in range(1, n_bodies + 1):
        parents.append(0 if i == 1 or rng.random() < 0.25 else int(rng.integers(1, i)))
    children = {i: [] for i in range(n_bodies + 1)}
    for c in range(1, n_bodies + 1):
        children[parents[c]].append(c)

    def body_xml(i: int, depth: int) -> list[str]:
        stacks = _TOP_STACKS if parents[i] == 0 else _NESTED_STACKS
        stack = stacks[int(rng.integers(len(stacks)))]
        pad = "  " * depth
        out = [f'{pad}<body name="b{i}" pos="{_vec(rng.uniform(-0.5, 0.5, 3))}" '
               f'quat="{_vec(_unit(rng, 4))}">']
        mass = rng.uniform(0.2, 3.0)
        out.append(f'{pad}  <inertial pos="{_vec(rng.uniform(-0.2, 0.2, 3))}" mass="{mass:.17g}" '
                   f'fullinertia="{_vec(_full_inertia(rng, 0.05 * mass))}"/>')
        for k, jtype in enumerate(stack):
            attrs = f'name="j{i}_{k}" type="{jtype}"'
            if jtype in ("hinge", "slide", "ball"):
                attrs += f' pos="{_vec(rng.uniform(-0.2, 0.2, 3))}"'
                attrs += f' armature="{rng.uniform(0.0, 0.1):.17g}"'
            if jtype in ("hinge", "slide"):
                attrs += f' axis="{_vec(_unit(rng, 3))}" ref="{rng.uniform(-1, 1):.17g}"'
            out.append(f"{pad}  <joint {attrs}/>")
        for k in range(int(rng.integers(0, 3))):
            out.append(f'{pad}  <site name="s{i}_{k}" pos="{_vec(rng.uniform(-0.3, 0.3, 3))}" '
                       f'quat="{_vec(_unit(rng, 4))}"/>')
        for c in children[i]:
            out.extend(body_xml(c, depth + 1))
        out.append(f"{pad}</body>")
        return out

    lines = [
        f'<mujoco model="random_tree_{seed}">',
        '  <compiler angle="radian" autolimits="true"/>',
        f'  <option gravity="{_vec(rng.normal(size=3) * 5.0)}"/>',
        "  <worldbody>",
        f'    <site name="world_site" pos="{_vec(rng.uniform(-1, 1, 3))}"/>',
    ]
    for c in children[0]:
        lines.extend(body_xml(c, 2))
    lines += ["  </worldbody>", "</mujoco>"]
    return "\n".join(lines)


def random_state(mj_model, rng) -> tuple[np.ndarray, np.ndarray]:
    """Random (qpos (nq,), qvel (nv,)): unit quaternions for ball/free, O(1) angles/offsets."""
    q = np.array(mj_model.qpos0, dtype=np.float64)
    for j in range(mj_model.njnt):
        adr, jtype = mj_model.jnt_qposadr[j], mj_model.jnt_type[j]
        if jtype == 0:  # free
            q[adr : adr + 3] = rng.normal(size=3) * 0.5
            q[adr + 3 : adr + 7] = _unit(rng, 4)
        elif jtype == 1:  # ball
            q[adr : adr + 4] = _unit(rng, 4)
        else:
            q[adr] += rng.uniform(-1.5, 1.5)
    return q, rng.normal(size=mj_model.nv) * 2.0
