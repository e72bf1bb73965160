"""Muscle paths declared in Python on a skeleton built with `engine.ModelBuilder`.

    b = engine.ModelBuilder("arm", contact=False)          # bodies and joints ...
    pb = PathBuilder(b)
    pb.add_path("m1", [Point("upper", (0.02, 0, -0.05)),
                       SphereWrap("upper", (0, 0, -0.3), radius=0.02, side=(0.05, 0, -0.3)),
                       Point("fore", (0.02, 0, -0.05))])                       # MJCF tendon
    pb.add_opensim_cylinder("elbow_cyl", "upper", pos=(0, 0, -0.3), radius=0.015,
                            length=0.05, quadrant="-x")
    pb.add_opensim_ellipsoid("head", "upper", pos=(0, 0, 0), dimensions=(0.03, 0.02, 0.02),
                             quadrant="z")
    pb.add_path("m2", [Point("upper", (-0.02, 0, -0.1)),
                       ConditionalPoint("upper", (-0.03, 0, -0.28), "elbow", (0.5, 2.5)),
                       Point("fore", (-0.02, 0, 0.02))], wraps=["elbow_cyl"])  # OpenSim path
    model = pb.build()                     # engine.Model; myotwin.muscle_lengths(model, q) ...

Two semantics, chosen per path by what it uses:
* **MJCF paths** (fixed points, MuJoCo sphere/cylinder wraps between two points, with an
  optional side site): written as sites, wrap geoms (contype = conaffinity = 0, so they never
  collide) and a `<spatial>` tendon into the skeleton's MJCF and compiled by MuJoCo, so
  MuJoCo's compiler and MuJoCo 4.0's wrapping rules define them (docs/paths.md).
* **OpenSim paths** (any `ConditionalPoint` or `MovingPoint`, or `wraps=` naming OpenSim wrap
  objects: cylinders, obstacle cylinders, spheres, ellipsoids): evaluated with OpenSim 4.6's
  GeometryPath rules (`opensim_path.py`, `conditional.py`, `opensim_cylinder.py`,
  `opensim_obstacle.py`, `opensim_sphere.py`, `opensim_ellipsoid.py`). A path cannot mix
  MuJoCo wraps with OpenSim features.
Paths are numbered in declaration order; `build()` returns the engine `Model` whose `paths`
is the MJCF `PathSet` (all paths MJCF) or a `CompositePaths` (`opensim_composite.py`).

Positions are in the named body's frame (m), quaternions w-first, angles rad; `xyz_body_rotation`
is OpenSim's body-fixed X-Y-Z Euler sequence (R = Rx(a) Ry(b) Rz(c)). Checked, with a ValueError
naming the path, the element and the value: unknown bodies and joints, a conditional point
without a coordinate or on a ball/free joint, ranges with lo > hi, a moving point without three
valid functions (`engine.piecewise.check_polynomial`), joints (a name or None) and clamp
ranges, fewer than two points (two always-active points, fixed or moving, for OpenSim paths),
a MuJoCo wrap not between two fixed points, non-positive radii,
lengths and ellipsoid semi-axes, unknown quadrants, unknown or duplicate wrap names, wrap point
ranges outside the path, duplicate path names, non-finite numbers.
"""

from __future__ import annotations

import copy
import dataclasses
import xml.etree.ElementTree as ET
from collections.abc import Sequence

import jax.numpy as jnp
import numpy as np

from myotwin.engine.builder import ModelBuilder, scalar_field, vector_field
from myotwin.engine.model import JointType, compile_model
from myotwin.engine.piecewise import check_polynomial, pad_polynomials
from myotwin.scalars import as_real_pair, is_integer, require_flag
from myotwin.paths.conditional import validate_range
from myotwin.paths.opensim_composite import CompositePaths
from myotwin.paths.opensim_path import (WRAP_CYLINDER, WRAP_ELLIPSOID, WRAP_OBSTACLE,
                                        WRAP_SPHERE,
                                        OpenSimPathSet)

_HANDS = {"righthand": 1, "right": 1, "righthanded": 1, "lefthand": -1, "left": -1,
          "lefthanded": -1}
_KIND_LABEL = {WRAP_CYLINDER: "OpenSim cylinder", WRAP_OBSTACLE: "OpenSim obstacle cylinder",
               WRAP_ELLIPSOID: "OpenSim ellipsoid", WRAP_SPHERE: "OpenSim sphere"}
_QUADRANTS = {"all": (0, 0), "x": (0, 1), "+x": (0, 1), "-x": (0, -1), "y": (1, 1),
              "+y": (1, 1), "-y": (1, -1), "z": (2, 1), "+z": (2, 1), "-z": (2, -1)}


@dataclasses.dataclass(frozen=True)
class Point:
    """A path point fixed on `body` at `pos` (3,) m in the body frame."""

    body: str
    pos: Sequence[float]


@dataclasses.dataclass(frozen=True)
class ConditionalPoint:
    """A via point active only while joint `joint` (hinge/slide) is in `range` (lo, hi), rad or
    m, inclusive with OpenSim's 1e-5 slack (OpenSim ConditionalPathPoint)."""

    body: str
    pos: Sequence[float]
    joint: str | None
    range: Sequence[float]


@dataclasses.dataclass(frozen=True)
class MovingPoint:
    """A path point on `body` whose location in the body frame is (f_x(q_x), f_y(q_y),
    f_z(q_z)) m (OpenSim MovingPathPoint); always part of its path (an OpenSim path).

    functions: three `engine.piecewise.PiecewisePolynomial` (m of rad or m), x, y, z.
    joints: three hinge/slide joint names, the q each function reads; None for a component
      evaluated at 0 (OpenSim's unconnected coordinate socket: a constant).
    clamp: None, or per component None or (lo, hi): q is clamped to [lo, hi] before the
      function is evaluated (OpenSim clamps to the coordinate's range; the length is then
      constant in q outside it, and -dL/dq there is 0).
    """

    body: str
    functions: Sequence
    joints: Sequence[str | None]
    clamp: Sequence | None = None


def _moving_point(what: str, el: MovingPoint):
    """(functions, joints, clamp rows) of a moving point, checked: ValueError naming it."""
    what = f"{what} (moving point)"
    try:
        functions = tuple(el.functions)
        joints = tuple(el.joints)
        clamp = (None,) * 3 if el.clamp is None else tuple(el.clamp)
    except TypeError:
        raise ValueError(f"{what}: functions, joints and clamp must be sequences of three, got "
                         f"{el.functions!r}, {el.joints!r}, {el.clamp!r}") from None
    for field, value in (("functions", functions), ("joints", joints), ("clamp", clamp)):
        if len(value) != 3:
            raise ValueError(f"{what}: {field} must hold three entries (x, y, z), got "
                             f"{value!r}")
    functions = tuple(check_polynomial(f, f"{what}, {axis} function")
                      for f, axis in zip(functions, "xyz"))
    for joint, axis in zip(joints, "xyz"):
        if joint is not None and (not isinstance(joint, str) or not joint):
            raise ValueError(f"{what}: the {axis} joint must be a joint name or None, got "
                             f"{joint!r}")
    rows = []
    for rng, axis in zip(clamp, "xyz"):
        if rng is None:
            rows.append((-np.inf, np.inf))
            continue
        bounds = as_real_pair(rng)                  # not bools or strings
        if bounds is None:
            raise ValueError(f"{what}: the {axis} clamp must be None or (lo, hi), got "
                             f"{rng!r}")
        lo, hi = bounds
        if not (np.isfinite(lo) and np.isfinite(hi)) or lo > hi:
            raise ValueError(f"{what}: the {axis} clamp must be finite with lo <= hi, got "
                             f"{rng!r}")
        rows.append((lo, hi))
    return functions, joints, tuple(rows)


@dataclasses.dataclass(frozen=True)
class SphereWrap:
    """MuJoCo sphere wrap between the neighbouring points: centre `pos` on `body`, `radius`
    (m), optional side-site position `side` (3,) in the same body frame."""

    body: str
    pos: Sequence[float]
    radius: float
    side: Sequence[float] | None = None


@dataclasses.dataclass(frozen=True)
class CylinderWrap:
    """MuJoCo cylinder wrap (infinite for wrapping, axis = the frame's z): frame (pos, quat) on
    `body`, `radius` m, `half_length` m (drawn only), optional side site `side`."""

    body: str
    pos: Sequence[float]
    radius: float
    quat: Sequence[float] = (1.0, 0.0, 0.0, 0.0)
    half_length: float = 0.02
    side: Sequence[float] | None = None


_POINTS = (Point, ConditionalPoint, MovingPoint)


@dataclasses.dataclass
class _WrapObject:
    """An OpenSim wrap object; dims as `OpenSimPathSet.cyl_dims` (an obstacle's unused length
    is 1)."""

    name: str
    body: str
    pos: np.ndarray
    quat: np.ndarray
    dims: tuple[float, float, float]
    axis: int
    sign: int
    kind: int = WRAP_CYLINDER
    hand: int = 0
    active: bool = True


@dataclasses.dataclass
class _Path:
    name: str
    elements: list
    wraps: list[tuple[str, int, int]]  # (cylinder name, 1-based start, end; < 1 = default)
    opensim: bool


def quat_from_body_xyz(angles) -> np.ndarray:
    """Unit quaternion (w, x, y, z) of OpenSim's body-fixed X-Y-Z rotation (a, b, c) rad:
    R = Rx(a) Ry(b) Rz(c) (SimTK Rotation::setRotationToBodyFixedXYZ)."""
    a, b, c = (float(x) for x in angles)

    def axis_quat(k, t):
        q = np.zeros(4)
        q[0], q[1 + k] = np.cos(t / 2), np.sin(t / 2)
        return q

    def mul(p, r):
        w1, v1, w2, v2 = p[0], p[1:], r[0], r[1:]
        return np.concatenate([[w1 * w2 - v1 @ v2], w1 * v2 + w2 * v1 + np.cross(v1, v2)])

    return mul(mul(axis_quat(0, a), axis_quat(1, b)), axis_quat(2, c))


def _vec(what, field, value, n=3):
    """A vector of n finite numbers (engine.builder's rule)."""
    return vector_field(what, field, value, n)


def _positive(what, field, value):
    """A length or radius: one finite number > 0, not a bool (engine.builder's rule)."""
    return scalar_field(what, field, value, lower=0.0, strict=True)


def _items(what: str, field: str, value) -> list:
    """A list argument (elements, wraps), checked: a string is not a list of its characters;
    ValueError naming it."""
    try:
        if isinstance(value, (str, bytes)):
            raise TypeError
        return list(value)
    except TypeError:
        raise ValueError(f"{what}: {field} must be a list, got {value!r}") from None


def _body_id(mj, what: str, name) -> int:
    """The id of body `name` in the MjModel mj, or ValueError naming `what`."""
    import mujoco

    if not isinstance(name, str):   # mj_name2id: None crashes the process
        raise ValueError(f"{what}: body must be a body name, got {name!r}")
    bid = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_BODY, name)
    if bid < 0:
        raise ValueError(f"{what}: unknown body {name!r}")
    return int(bid)


class PathBuilder:
    """Declares muscle paths on a skeleton `engine.ModelBuilder` (not modified: `build()`
    works on a copy). See the module docstring."""

    def __init__(self, skeleton: ModelBuilder):
        if not isinstance(skeleton, ModelBuilder):
            raise ValueError(f"PathBuilder needs an engine.ModelBuilder, got {skeleton!r}")
        self.skeleton = skeleton
        self._paths: list[_Path] = []
        self._cylinders: dict[str, _WrapObject] = {}

    # ------------------------------------------------------------------ declarations
    def _frame(self, what, name, pos, quat, xyz_body_rotation):
        if not isinstance(name, str) or not name or name in self._cylinders:
            raise ValueError(f"{what}: name must be a new non-empty string")
        if quat is not None and xyz_body_rotation is not None:
            raise ValueError(f"{what}: give quat or xyz_body_rotation, not both")
        if xyz_body_rotation is not None:
            q = quat_from_body_xyz(_vec(what, "xyz_body_rotation", xyz_body_rotation))
        else:
            q = _vec(what, "quat", (1.0, 0.0, 0.0, 0.0) if quat is None else quat, 4)
            if abs(np.linalg.norm(q) - 1.0) > 1e-6:
                raise ValueError(f"{what}: quat must be a unit quaternion, got {quat!r}")
        return _vec(what, "pos", pos), q

    @staticmethod
    def _quadrant(what, quadrant):
        key = str(quadrant).strip().lower() if isinstance(quadrant, str) else None
        if key not in _QUADRANTS:
            raise ValueError(f"{what}: unknown quadrant {quadrant!r}; expected one of "
                             f"{sorted(_QUADRANTS)}")
        return _QUADRANTS[key]

    def add_opensim_cylinder(self, name: str, body: str, *, radius: float, length: float,
                             pos=(0.0, 0.0, 0.0), quat=None, xyz_body_rotation=None,
                             quadrant: str = "all", active: bool = True) -> str:
        """An OpenSim WrapCylinder on `body` (frame pos m and quat w-first, or OpenSim's
        xyz_body_rotation rad; axis = the frame's z), radius and length m, quadrant "all",
        "x", "-x", "y", "-y", "z", "-z" (OpenSim's spelling). Paths use it by name.
        active: False as OpenSim's <active>false</active>: the paths that list it keep it in
        their wrap sets (it still counts as a wrap object for OpenSim's repetition and
        single-wrap rules) but it never wraps; the same for every kind of wrap object."""
        what = f"OpenSim cylinder {name!r}"
        pos, q = self._frame(what, name, pos, quat, xyz_body_rotation)
        axis, sign = self._quadrant(what, quadrant)
        dims = (_positive(what, "radius", radius), _positive(what, "length", length), 0.0)
        self._cylinders[name] = _WrapObject(name, body, pos, q, dims, axis, sign,
                                            active=require_flag(what, "active", active))
        return name

    def add_opensim_ellipsoid(self, name: str, body: str, *, dimensions,
                              pos=(0.0, 0.0, 0.0), quat=None, xyz_body_rotation=None,
                              quadrant: str = "all", active: bool = True) -> str:
        """An OpenSim WrapEllipsoid on `body` (frame as for a cylinder), semi-axes
        `dimensions` (a, b, c) m along the frame's x, y, z (OpenSim's `dimensions`, all > 0),
        quadrant as for a cylinder. Wrapped by OpenSim's "hybrid" method
        (`opensim_ellipsoid.py`). Paths use it by name in `wraps=`. active: as for a
        cylinder."""
        what = f"OpenSim ellipsoid {name!r}"
        pos, q = self._frame(what, name, pos, quat, xyz_body_rotation)
        axis, sign = self._quadrant(what, quadrant)
        dims = _vec(what, "dimensions", dimensions)
        if np.any(dims <= 0.0):
            raise ValueError(f"{what}: dimensions must be 3 semi-axes > 0 m, got "
                             f"{dimensions!r}")
        self._cylinders[name] = _WrapObject(name, body, pos, q, tuple(float(d) for d in dims),
                                            axis, sign, WRAP_ELLIPSOID,
                                            active=require_flag(what, "active", active))
        return name

    def add_opensim_sphere(self, name: str, body: str, *, radius: float,
                           pos=(0.0, 0.0, 0.0), quat=None, xyz_body_rotation=None,
                           quadrant: str = "all", active: bool = True) -> str:
        """An OpenSim WrapSphere on `body` (frame as for a cylinder: its centre at pos),
        radius m, quadrant as for a cylinder. Wrapped by OpenSim's WrapSphere::wrapLine
        (`opensim_sphere.py`). Paths use it by name in `wraps=`. active: as for a
        cylinder."""
        what = f"OpenSim sphere {name!r}"
        pos, q = self._frame(what, name, pos, quat, xyz_body_rotation)
        axis, sign = self._quadrant(what, quadrant)
        dims = (_positive(what, "radius", radius), 0.0, 0.0)
        self._cylinders[name] = _WrapObject(name, body, pos, q, dims, axis, sign, WRAP_SPHERE,
                                            active=require_flag(what, "active", active))
        return name

    def add_opensim_obstacle(self, name: str, body: str, *, radius: float,
                             pos=(0.0, 0.0, 0.0), quat=None, xyz_body_rotation=None,
                             wrap_direction: str = "righthand", active: bool = True) -> str:
        """An OpenSim WrapCylinderObst (Garner & Pandy obstacle-set cylinder, infinite, axis =
        the frame's z) on `body`; wrap_direction "righthand" or "lefthand" about +z. OpenSim
        wraps at 0.8 radius (`opensim_obstacle.py`). Paths use it by name in `wraps=`.
        active: as for a cylinder."""
        what = f"OpenSim obstacle cylinder {name!r}"
        pos, q = self._frame(what, name, pos, quat, xyz_body_rotation)
        key = str(wrap_direction).strip().lower() if isinstance(wrap_direction, str) else None
        if key not in _HANDS:
            raise ValueError(f"{what}: unknown wrap_direction {wrap_direction!r}; expected "
                             "'righthand' or 'lefthand'")
        dims = (_positive(what, "radius", radius), 1.0, 0.0)
        self._cylinders[name] = _WrapObject(name, body, pos, q, dims, 0, 0, WRAP_OBSTACLE,
                                            _HANDS[key], require_flag(what, "active", active))
        return name

    def add_path(self, name: str, elements: Sequence, wraps: Sequence = ()) -> str:
        """A path through `elements` (Point / ConditionalPoint / MovingPoint / SphereWrap /
        CylinderWrap, in order). wraps: OpenSim wrap object names (cylinders, obstacles,
        spheres, ellipsoids) or (name, (start, end)) with 1-based point indices (OpenSim
        PathWrap range; -1 = first/last point), applied in that order."""
        what = f"path {name!r}"
        if not isinstance(name, str) or not name or any(p.name == name for p in self._paths):
            raise ValueError(f"{what}: name must be a new non-empty string")
        elements = _items(what, "elements", elements)
        wraps = _items(what, "wraps", wraps)
        kinds = (Point, ConditionalPoint, MovingPoint, SphereWrap, CylinderWrap)
        for k, el in enumerate(elements):
            if not isinstance(el, kinds):
                raise ValueError(f"{what}, element {k}: expected Point, ConditionalPoint, "
                                 f"MovingPoint, SphereWrap or CylinderWrap, got {el!r}")
            if isinstance(el, MovingPoint):
                _moving_point(f"{what}, element {k}", el)
                continue
            _vec(f"{what}, element {k}", "pos", el.pos)
            if isinstance(el, ConditionalPoint):
                validate_range(f"{what}, element {k} (conditional point)", el.joint, el.range)
            if isinstance(el, (SphereWrap, CylinderWrap)):
                _positive(f"{what}, element {k}", "radius", el.radius)
                if el.side is not None:
                    _vec(f"{what}, element {k}", "side", el.side)
        points = [el for el in elements if isinstance(el, _POINTS)]
        mj_wraps = [k for k, el in enumerate(elements) if isinstance(el, (SphereWrap,
                                                                          CylinderWrap))]
        opensim = bool(wraps) or any(isinstance(el, (ConditionalPoint, MovingPoint))
                                     for el in elements)
        if len(points) < 2:
            raise ValueError(f"{what}: a path needs at least two points, got {len(points)}")
        if opensim and mj_wraps:
            raise ValueError(f"{what}: MuJoCo wraps (element {mj_wraps[0]}) cannot be mixed "
                             "with OpenSim features (conditional or moving points, OpenSim "
                             "wrap objects)")
        if opensim and sum(isinstance(el, (Point, MovingPoint)) for el in elements) < 2:
            raise ValueError(f"{what}: an OpenSim path needs at least two fixed points (fixed "
                             "or moving: always active)")
        for k in mj_wraps:
            ok = (0 < k < len(elements) - 1 and isinstance(elements[k - 1], Point)
                  and isinstance(elements[k + 1], Point))
            if not ok:
                raise ValueError(f"{what}, element {k}: a MuJoCo wrap must sit between two "
                                 "fixed points")
        parsed = []
        for w in wraps:
            try:
                cname, rng = (w, (-1, -1)) if isinstance(w, str) else w
                start, end = rng
            except (TypeError, ValueError):
                cname = start = end = None
            if not (is_integer(start) and is_integer(end)):
                raise ValueError(f"{what}: wrap {w!r} must be a wrap object name or (name, "
                                 "(start, end)) with integer point indices")
            if not isinstance(cname, str) or cname not in self._cylinders:
                raise ValueError(f"{what}: unknown OpenSim wrap object {cname!r} (known: "
                                 f"{sorted(self._cylinders)})")
            for v in (start, end):
                if v > len(points) or v == 0 or v < -1:
                    raise ValueError(f"{what}: wrap {cname!r} range {tuple(rng)!r} must hold "
                                     f"1-based point indices in [1, {len(points)}] or -1")
            if start >= 1 and end >= 1 and start > end:
                raise ValueError(f"{what}: wrap {cname!r} range {tuple(rng)!r} has start > end")
            parsed.append((cname, int(start), int(end)))
        self._paths.append(_Path(name, elements, parsed, opensim))
        return name

    # ------------------------------------------------------------------ compilation
    def _with_tendons(self) -> ModelBuilder:
        """A copy of the skeleton with the sites and wrap geoms of the MJCF paths."""
        b = copy.deepcopy(self.skeleton)
        for path in self._paths:
            if path.opensim:
                continue
            for k, el in enumerate(path.elements):
                try:
                    self._add_element(b, f"{path.name}_{k}", el)
                except ValueError as err:
                    raise ValueError(f"path {path.name!r}, element {k}: {err}") from err
        return b

    @staticmethod
    def _add_element(b: ModelBuilder, tag: str, el) -> None:
        if isinstance(el, Point):
            b.add_site(el.body, tag, pos=el.pos)
            return
        if isinstance(el, SphereWrap):
            b.add_geom(el.body, "sphere", size=(el.radius,), name=tag, pos=el.pos, contype=0,
                       conaffinity=0)
        else:
            b.add_geom(el.body, "cylinder", size=(el.radius, el.half_length), name=tag,
                       pos=el.pos, quat=el.quat, contype=0, conaffinity=0)
        if el.side is not None:
            b.add_site(el.body, f"{tag}_side", pos=el.side)

    def to_mjcf(self) -> str:
        """The skeleton plus the MJCF paths as spatial tendons (OpenSim paths are not MJCF and
        are left out)."""
        root = ET.fromstring(self._with_tendons().to_mjcf())
        tendon = ET.SubElement(root, "tendon")
        for path in self._paths:
            if path.opensim:
                continue
            spatial = ET.SubElement(tendon, "spatial", {"name": path.name})
            for k, el in enumerate(path.elements):
                tag = f"{path.name}_{k}"
                if isinstance(el, Point):
                    ET.SubElement(spatial, "site", {"site": tag})
                else:
                    attrs = {"geom": tag}
                    if el.side is not None:
                        attrs["sidesite"] = f"{tag}_side"
                    ET.SubElement(spatial, "geom", attrs)
        if not len(tendon):
            root.remove(tendon)
        ET.indent(root)
        return ET.tostring(root, encoding="unicode") + "\n"

    def mj_model(self):
        """The skeleton with the MJCF paths compiled by MuJoCo (`mujoco.MjModel`)."""
        import mujoco

        xml = self.to_mjcf()
        try:
            return mujoco.MjSpec.from_string(xml).compile()
        except ValueError as err:
            raise ValueError(f"MuJoCo's compiler rejected the paths of model "
                             f"{self.skeleton.name!r}: {err}") from err

    def build(self):
        """The engine `Model` with every declared path (`Model.paths`, declaration order).
        Every declared OpenSim wrap object's body is checked, used by a path or not."""
        mj = self.mj_model()
        for c in self._cylinders.values():
            _body_id(mj, f"{_KIND_LABEL[c.kind]} {c.name!r}", c.body)
        model = compile_model(mj)
        if not any(p.opensim for p in self._paths):
            return model
        opensim = self._compile_opensim(mj)
        kinds, index, n_mj, n_os = [], [], 0, 0
        for p in self._paths:
            kinds.append(1 if p.opensim else 0)
            index.append(n_os if p.opensim else n_mj)
            n_os, n_mj = n_os + p.opensim, n_mj + (not p.opensim)
        composite = CompositePaths(model.paths, opensim,
                                   tuple(p.name for p in self._paths), tuple(kinds), tuple(index))
        return dataclasses.replace(model, paths=composite)

    def _compile_opensim(self, mj) -> OpenSimPathSet:
        import mujoco

        def body_id(what, name):
            return _body_id(mj, what, name)

        def joint_qpos(what, name):
            if name is None:
                return -1
            if not isinstance(name, str):
                raise ValueError(f"{what}: coordinate must be a joint name, got {name!r}")
            jid = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_JOINT, name)
            if jid < 0:
                raise ValueError(f"{what}: unknown coordinate (joint) {name!r}")
            if JointType(int(mj.jnt_type[jid])) not in (JointType.HINGE, JointType.SLIDE):
                raise ValueError(f"{what}: coordinate {name!r} is not a hinge or slide joint")
            return int(mj.jnt_qposadr[jid])

        used = sorted({c for p in self._paths for c, _, _ in p.wraps})
        cyl_id = {c: k for k, c in enumerate(used)}
        cyls = [self._cylinders[c] for c in used]
        pos, rng, body, qadr = [], [], [], []
        wraps, p_adr, p_num, w_adr, w_num, names = [], [], [], [], [], []
        move_point, move_qpos, move_fns, move_clamp = [], [], [], []
        for path in (p for p in self._paths if p.opensim):
            pts = [el for el in path.elements if isinstance(el, _POINTS)]
            p_adr.append(len(pos))
            p_num.append(len(pts))
            w_adr.append(len(wraps))
            w_num.append(len(path.wraps))
            names.append(path.name)
            for k, el in enumerate(pts):
                what = f"path {path.name!r}, point {k + 1}"
                body.append(body_id(what, el.body))
                if isinstance(el, MovingPoint):
                    fns, joints, clamp = _moving_point(what, el)
                    move_point.append(len(pos))
                    move_qpos.append(tuple(
                        joint_qpos(f"{what} (moving point, {axis})", j)
                        for j, axis in zip(joints, "xyz")))
                    move_fns.extend(fns)
                    move_clamp.append(clamp)
                    pos.append(np.zeros(3))  # the location is the functions'
                    qadr.append(-1)          # always active
                    rng.append((0.0, 0.0))
                    continue
                pos.append(np.asarray(el.pos, dtype=np.float64))
                cond = isinstance(el, ConditionalPoint)
                qadr.append(joint_qpos(what, el.joint) if cond else -1)
                rng.append(validate_range(what, el.joint, el.range) if cond else (0.0, 0.0))
            for cname, start, end in path.wraps:
                wraps.append((cyl_id[cname], start - 1 if start >= 1 else 0,
                              end - 1 if end >= 1 else len(pts) - 1))
        f64 = lambda rows, shape: jnp.asarray(np.asarray(rows, np.float64).reshape(shape))  # noqa
        m_breaks, m_origins, m_coeffs = pad_polynomials(move_fns)
        n_move = len(move_point)
        return OpenSimPathSet(
            point_pos=f64(pos, (-1, 3)), point_range=f64(rng, (-1, 2)),
            cyl_pos=f64([c.pos for c in cyls], (-1, 3)),
            cyl_quat=f64([c.quat / np.linalg.norm(c.quat) for c in cyls], (-1, 4)),
            cyl_dims=f64([c.dims for c in cyls], (-1, 3)),
            n_paths=len(names), path_names=tuple(names), path_point_adr=tuple(p_adr),
            path_point_num=tuple(p_num), path_wrap_adr=tuple(w_adr), path_wrap_num=tuple(w_num),
            point_body=tuple(body), point_qpos=tuple(qadr),
            wrap_cyl=tuple(w[0] for w in wraps), wrap_start=tuple(w[1] for w in wraps),
            wrap_end=tuple(w[2] for w in wraps),
            cyl_body=tuple(body_id(f"{_KIND_LABEL[c.kind]} {c.name!r}", c.body) for c in cyls),
            cyl_axis=tuple(c.axis for c in cyls), cyl_sign=tuple(c.sign for c in cyls),
            cyl_kind=tuple(c.kind for c in cyls), cyl_hand=tuple(c.hand for c in cyls),
            cyl_names=tuple(c.name for c in cyls), n_body=int(mj.nbody), n_q=int(mj.nq),
            move_breaks=jnp.asarray(m_breaks.reshape(n_move, 3, m_breaks.shape[1])),
            move_origins=jnp.asarray(m_origins.reshape(n_move, 3, m_origins.shape[1])),
            move_coefficients=jnp.asarray(m_coeffs.reshape((n_move, 3) + m_coeffs.shape[1:])),
            move_clamp=f64(move_clamp, (n_move, 3, 2)), move_point=tuple(move_point),
            move_qpos=tuple(move_qpos), cyl_active=tuple(c.active for c in cyls))
