"""A small Python builder for skeleton models written in code, compiled by MuJoCo's compiler.

`ModelBuilder` records bodies, joints, geoms, sites and actuators, validates each one in NumPy
when it is added (ValueError naming the element, the field and the value), and writes them as
an MJCF document. MuJoCo then parses that document into an `MjSpec` and compiles it, and
`compile_model` freezes the result: the model has exactly MJCF's semantics because it *is*
MJCF, compiled by MuJoCo.

    b = ModelBuilder(gravity=(0, 0, -9.81))
    b.add_body("arm", pos=(0, 0, 1), mass=1.0, com=(0, 0, -0.25), inertia=(0.02, 0.02, 1e-3))
    b.add_joint("arm", "hinge", name="shoulder", axis=(0, 1, 0))
    b.add_motor("shoulder", gear=1.0, ctrl_range=(-5, 5))
    model = b.build()          # myotwin.engine.Model;  b.mj_model() -> mujoco.MjModel
    xml = b.to_mjcf()          # the same model as MJCF (open it in MuJoCo's viewer)

Why MJCF text rather than the MjSpec `add_body`/`add_joint` calls: MuJoCo's XML writer
(`MjSpec.to_xml`) prints numbers with "%g" (6 significant digits; MuJoCo 4.0
src/xml/xml_numeric_format.h), so a model built through MjSpec calls could not be saved
exactly. Writing the MJCF ourselves with `repr` floats (shortest round-trip form) makes
`to_mjcf()` exact and gives one source of truth for `mj_model()`, `build()` and the file.

Conventions: SI units (m, kg, kg m^2, s, N, N m), angles in radians (the MJCF says
`angle="radian"`), quaternions w-first (unit norm to 1e-6; MuJoCo normalises), positions and
orientations in the parent body's frame. Inertia is explicit: every body gives its mass, COM
(`com`, body frame) and inertia about the COM, either principal moments (3,) in the frame
`inertia_quat`, or the full matrix (6,) = (Ixx, Iyy, Izz, Ixy, Ixz, Iyz) (MJCF
`fullinertia`). Geoms never add mass to such a body (MJCF `<inertial>` present). Inference
from geoms (MuJoCo's geom density/mass) happens only for bodies added with
`inertia_from_geoms=True`. Joint limits are explicit: a joint is limited iff `range` is given
(`autolimits` off). Body ids follow MJCF order (depth-first over the tree, children in the
order added), not the order of `add_body` calls; look ids up by name in `mj_model()`.
"""

from __future__ import annotations

import dataclasses
import enum
import xml.etree.ElementTree as ET
from collections.abc import Sequence

import numpy as np

from myotwin.engine.model import JointType, Model, compile_model
from myotwin.engine.point_mass import NUMERIC_PREFIX as POINT_MASS_PREFIX
from myotwin.engine.point_mass import STAND_IN_INERTIA_KGM2 as POINT_MASS_INERTIA
from myotwin.scalars import as_real, is_integer, require_flag

WORLD = "world"
_QUAT_NORM_TOL = 1e-6  # |‖q‖ - 1| accepted; MuJoCo normalises quaternions when compiling


class GeomType(str, enum.Enum):
    """Primitive geom shapes (MJCF `geom type`). Size entries, all in m:
    sphere (radius,); capsule, cylinder (radius, half-length) or (radius,) with `fromto`;
    box (3 half-sizes); ellipsoid (3 semi-axes); plane (x half-size, y half-size, grid
    spacing), 0 half-size = infinite when rendered."""

    SPHERE = "sphere"
    CAPSULE = "capsule"
    CYLINDER = "cylinder"
    BOX = "box"
    ELLIPSOID = "ellipsoid"
    PLANE = "plane"


_GEOM_SIZE = {GeomType.SPHERE: 1, GeomType.CAPSULE: 2, GeomType.CYLINDER: 2,
              GeomType.BOX: 3, GeomType.ELLIPSOID: 3, GeomType.PLANE: 3}
_INTEGRATORS = ("Euler", "RK4", "implicit", "implicitfast")


# ---------------------------------------------------------------- NumPy validation helpers

def vector_field(what: str, field: str, value, n: int) -> np.ndarray:
    """value as a float array of n finite entries, or ValueError naming `what` and `field`:
    numbers only, as `myotwin.scalars.as_real` (a string "0.1" or a bool is not a number);
    shared with `paths.builder`."""
    entries = value if isinstance(value, (list, tuple)) else ()
    try:
        if isinstance(value, (str, bytes)) or any(as_real(v) is None for v in entries):
            raise TypeError
        arr = np.asarray(value)
        if arr.dtype.kind not in "iuf":
            raise TypeError
    except (TypeError, ValueError):
        raise ValueError(f"{what}: {field} must be {n} numbers, got {value!r}") from None
    arr = arr.astype(np.float64)
    if arr.shape != (n,):
        raise ValueError(f"{what}: {field} must have {n} entries, got {value!r}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{what}: {field} must be finite, got {value!r}")
    return arr


def scalar_field(what: str, field: str, value, *, lower: float | None = None,
                 strict: bool = False) -> float:
    """value as a float, or ValueError naming `what` and `field` unless it is one finite
    number (`myotwin.scalars.as_real`: not a bool, a string or an array), > lower
    (`strict`) or >= lower; shared with `paths.builder`."""
    x = as_real(value)      # not a bool (True is an int in Python), a string or an array
    if x is None:
        raise ValueError(f"{what}: {field} must be a number, got {value!r}")
    if not np.isfinite(x):
        raise ValueError(f"{what}: {field} must be finite, got {value!r}")
    if lower is not None and (x <= lower if strict else x < lower):
        raise ValueError(f"{what}: {field} must be {'>' if strict else '>='} {lower:g}, "
                         f"got {value!r}")
    return x


def _quat(what: str, field: str, value) -> np.ndarray:
    q = vector_field(what, field, value, 4)
    if abs(np.linalg.norm(q) - 1.0) > _QUAT_NORM_TOL:
        raise ValueError(f"{what}: {field} must be a unit quaternion (w, x, y, z), got {value!r} "
                         f"with norm {np.linalg.norm(q):.9g}")
    return q


def _interval(what: str, field: str, value) -> np.ndarray:
    lohi = vector_field(what, field, value, 2)
    if not lohi[0] < lohi[1]:
        raise ValueError(f"{what}: {field} must be (lower, upper) with lower < upper, "
                         f"got {value!r}")
    return lohi


def _principal_moments(what: str, mass: float, inertia) -> np.ndarray:
    """Validate inertia (3,) principal or (6,) full about the COM; return principal moments."""
    arr = np.asarray(inertia, dtype=np.float64)
    if arr.shape not in ((3,), (6,)) or not np.all(np.isfinite(arr)):
        raise ValueError(f"{what}: inertia must be 3 finite principal moments or 6 finite "
                         f"entries (Ixx, Iyy, Izz, Ixy, Ixz, Iyz), got {inertia!r}")
    if arr.shape == (3,):
        moments, slack = arr, 0.0  # MuJoCo checks A + B >= C exactly on these numbers
    else:
        xx, yy, zz, xy, xz, yz = arr
        moments = np.linalg.eigvalsh(np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]))
        slack = 1e-12 * np.abs(moments).max()  # eigvalsh roundoff
    if mass == 0.0:
        if np.any(arr != 0.0):
            raise ValueError(f"{what}: a massless body (mass=0) must have zero inertia, got "
                             f"{inertia!r}")
        return moments
    if not np.any(arr):
        return moments  # a point mass
    if np.min(moments) <= 0.0:
        raise ValueError(f"{what}: inertia {inertia!r} is not positive definite (principal "
                         f"moments {moments.tolist()} kg m^2)")
    for k in range(3):
        a, b, c = moments[k], moments[(k + 1) % 3], moments[(k + 2) % 3]
        if a + b < c - slack:
            raise ValueError(f"{what}: inertia {inertia!r} violates the triangle inequality "
                             f"(principal moments {moments.tolist()}: {a:g} + {b:g} < {c:g}); "
                             "no rigid body has it")
    return moments


def _fmt(value) -> str:
    """MJCF attribute text, each float in its shortest round-trip form (exact after parsing)."""
    return " ".join(repr(float(v)) for v in np.atleast_1d(np.asarray(value, dtype=np.float64)))


def _nonzero(x: float) -> float | None:
    """None (attribute omitted: MJCF default 0) for zero, else x."""
    return None if x == 0.0 else x


def _attrs(**kw) -> dict[str, str]:
    return {k: (v if isinstance(v, str) else _fmt(v)) for k, v in kw.items() if v is not None}


def _as_joint_type(what: str, kind) -> JointType:
    if isinstance(kind, JointType):
        return kind
    try:
        return JointType[str(kind).upper()]
    except KeyError:
        raise ValueError(f"{what}: unknown joint kind {kind!r}; expected one of "
                         "'hinge', 'slide', 'ball', 'free'") from None


def _as_geom_type(what: str, kind) -> GeomType:
    try:
        return GeomType(kind.value if isinstance(kind, GeomType) else str(kind).lower())
    except ValueError:
        raise ValueError(f"{what}: unknown geom kind {kind!r}; expected one of "
                         f"{[g.value for g in GeomType]}") from None


def _sub_elements(parent: ET.Element, items: list[tuple[str, dict[str, str]]]) -> None:
    for tag, attrs in items:
        ET.SubElement(parent, tag, attrs)


@dataclasses.dataclass
class _Body:
    name: str
    parent: str
    xml: dict[str, str]
    inertial: dict[str, str] | None  # None: inertia from geoms
    joints: list[tuple[str, JointType]] = dataclasses.field(default_factory=list)
    # joints, geoms and sites in the order added, as (MJCF tag, attributes)
    elements: list[tuple[str, dict[str, str]]] = dataclasses.field(default_factory=list)
    children: list[str] = dataclasses.field(default_factory=list)


class ModelBuilder:
    """Builds a skeleton model in code; see the module docstring for conventions.

    gravity: (3,) m/s^2 in the world frame. timestep_s: MuJoCo's `opt.timestep` (used by
    MuJoCo and its viewer; the engine's `simulate` takes its own dt_s). integrator: MuJoCo's
    integrator for the same reason ("Euler", "RK4", "implicit", "implicitfast").
    contact: False writes `<flag contact="disable"/>`.
    """

    def __init__(self, name: str = "model", *, gravity=(0.0, 0.0, -9.81),
                 timestep_s: float = 0.002, integrator: str = "RK4", contact: bool = True):
        what = f"model {name!r}"
        if not isinstance(name, str) or not name:
            raise ValueError(f"model name must be a non-empty string, got {name!r}")
        if integrator not in _INTEGRATORS:
            raise ValueError(f"{what}: integrator must be one of {_INTEGRATORS}, got "
                             f"{integrator!r}")
        self.name = name
        self._option = _attrs(timestep=scalar_field(what, "timestep_s", timestep_s, lower=0.0,
                                                    strict=True),
                              gravity=vector_field(what, "gravity", gravity, 3),
                              integrator=integrator)
        self._contact = require_flag(what, "contact", contact)
        self._bodies: dict[str, _Body] = {WORLD: _Body(WORLD, "", {}, None)}
        self._names: dict[str, set[str]] = {k: set() for k in
                                            ("joint", "geom", "site", "actuator", "numeric")}
        self._joint_types: dict[str, JointType] = {}
        self._actuators: list[tuple[str, dict[str, str]]] = []  # (MJCF tag, attributes)
        self._numerics: list[tuple[str, dict[str, str]]] = []

    # ------------------------------------------------------------------ elements
    def _new_name(self, kind: str, name: str) -> str:
        taken = self._bodies if kind == "body" else self._names[kind]
        if not isinstance(name, str) or not name:
            raise ValueError(f"{kind} name must be a non-empty string, got {name!r}")
        if name in taken:
            raise ValueError(f"duplicate {kind} name {name!r}")
        return name

    def _body(self, what: str, body: str, *, allow_world: bool = False) -> _Body:
        if body not in self._bodies:
            raise ValueError(f"{what}: unknown body {body!r} (known: {sorted(self._bodies)})")
        if body == WORLD and not allow_world:
            raise ValueError(f"{what}: cannot be attached to the world body")
        return self._bodies[body]

    def add_body(self, name: str, parent: str = WORLD, *, pos=(0.0, 0.0, 0.0),
                 quat=(1.0, 0.0, 0.0, 0.0), mass: float | None = None, com=(0.0, 0.0, 0.0),
                 inertia: Sequence[float] | None = None, inertia_quat=None,
                 inertia_from_geoms: bool = False) -> str:
        """Add a body with frame (pos m, quat) in `parent`'s frame; returns its name.

        mass (kg), com (3,) m in the body frame, inertia about the COM: (3,) principal moments
        in the frame `inertia_quat` (default identity) or (6,) full (Ixx, Iyy, Izz, Ixy, Ixz,
        Iyz) in the body frame, kg m^2. mass=0 with inertia None is a massless body; mass > 0
        with an all-zero inertia is a point mass (point_mass.py: MuJoCo's compiler sees a
        stand-in inertia, the engine's Model zero).
        inertia_from_geoms=True: leave mass/com/inertia unset and let MuJoCo compute them from
        this body's geoms (their `density` or `mass`).
        """
        what = f"body {name!r}"
        self._new_name("body", name)
        parent_body = self._body(what, parent, allow_world=True)
        attrs = _attrs(name=name, pos=vector_field(what, "pos", pos, 3),
                       quat=_quat(what, "quat", quat))
        if inertia_from_geoms:
            if mass is not None or inertia is not None or inertia_quat is not None:
                raise ValueError(f"{what}: inertia_from_geoms=True excludes mass/inertia/"
                                 "inertia_quat")
            inertial = None
        else:
            if mass is None:
                raise ValueError(f"{what}: mass is required (inertia is explicit; or pass "
                                 "inertia_from_geoms=True)")
            mass = scalar_field(what, "mass", mass, lower=0.0)
            if inertia is None and mass > 0.0:
                raise ValueError(f"{what}: inertia is required for mass={mass:g} kg")
            inertia = np.zeros(3) if inertia is None else inertia
            _principal_moments(what, mass, inertia)
            full = np.asarray(inertia).shape == (6,)
            if full and inertia_quat is not None:
                raise ValueError(f"{what}: inertia_quat is only for principal moments (3,); a "
                                 "full inertia (6,) already carries its orientation")
            point_mass = mass > 0.0 and not np.any(inertia)  # point_mass.py
            if point_mass:
                marker = self._new_name("numeric", f"{POINT_MASS_PREFIX}{name}")
                inertia, full, inertia_quat = np.full(3, POINT_MASS_INERTIA), False, None
            inertial = _attrs(
                pos=vector_field(what, "com", com, 3),
                quat=None if inertia_quat is None else _quat(what, "inertia_quat", inertia_quat),
                mass=mass, **{"fullinertia" if full else "diaginertia": np.asarray(inertia)})
            if point_mass:
                self._names["numeric"].add(marker)
                self._numerics.append(("numeric", _attrs(name=marker, data=POINT_MASS_INERTIA)))
        self._bodies[name] = _Body(name, parent, attrs, inertial)
        parent_body.children.append(name)
        return name

    def add_joint(self, body: str, kind: JointType | str, *, name: str | None = None,
                  axis=None, anchor=None, stiffness: float = 0.0, spring_ref: float = 0.0,
                  damping: float = 0.0, armature: float = 0.0, range=None,
                  ref: float = 0.0) -> str:
        """Add a joint to `body` (after its earlier joints); returns the joint name.

        kind: "hinge" | "slide" | "ball" | "free". axis (3,) hinge/slide only (normalised by
        MuJoCo, default z); anchor (3,) m in the body frame (not for free joints). stiffness
        N/m or N m/rad with rest position spring_ref; damping N s/m or N m s/rad per dof;
        armature kg or kg m^2 per dof. range (lower, upper) m or rad makes the joint limited
        (ball: (0, max angle)). ref: hinge/slide position (m or rad) in the body's frame as
        written (MuJoCo `ref`, i.e. qpos0). Default name: "<body>_<kind>[index]".
        """
        what = f"joint {name!r} of body {body!r}" if name else f"joint of body {body!r}"
        b = self._body(what, body)
        jtype = _as_joint_type(what, kind)
        if name is None:
            k = sum(t == jtype for _, t in b.joints)
            name = f"{body}_{jtype.name.lower()}" + (str(k) if k else "")
        what = f"joint {name!r}"
        self._new_name("joint", name)
        hinge_like = jtype in (JointType.HINGE, JointType.SLIDE)
        if jtype == JointType.FREE:
            if b.joints:
                raise ValueError(f"{what}: a free joint must be its body's only joint; body "
                                 f"{body!r} already has {[n for n, _ in b.joints]}")
            if b.parent != WORLD:
                raise ValueError(f"{what}: a free joint's body must be a child of the world "
                                 f"(body {body!r} has parent {b.parent!r})")
        elif any(t == JointType.FREE for _, t in b.joints):
            raise ValueError(f"{what}: body {body!r} already has a free joint")
        for field, value, ok in (("axis", axis, hinge_like),
                                 ("anchor", anchor, jtype != JointType.FREE),
                                 ("range", range, jtype != JointType.FREE)):
            if value is not None and not ok:
                raise ValueError(f"{what}: {field} does not apply to a {jtype.name.lower()} joint")
        for field, value in (("ref", ref), ("spring_ref", spring_ref)):
            if not hinge_like and value != 0.0:
                raise ValueError(f"{what}: {field} applies to hinge/slide joints only")
        if axis is not None:
            axis = vector_field(what, "axis", axis, 3)
            if np.linalg.norm(axis) < 1e-9:
                raise ValueError(f"{what}: axis {axis.tolist()} has (near) zero length")
        if range is not None:
            range = _interval(what, "range", range)
            if jtype == JointType.BALL and range[0] != 0.0:
                raise ValueError(f"{what}: a ball joint's range is (0, max angle rad), got "
                                 f"{range.tolist()}")
        attrs = _attrs(
            name=name, type=jtype.name.lower(),
            pos=None if anchor is None else vector_field(what, "anchor", anchor, 3),
            axis=axis, limited="true" if range is not None else "false", range=range,
            stiffness=_nonzero(scalar_field(what, "stiffness", stiffness, lower=0.0)),
            damping=_nonzero(scalar_field(what, "damping", damping, lower=0.0)),
            armature=_nonzero(scalar_field(what, "armature", armature, lower=0.0)),
            ref=_nonzero(scalar_field(what, "ref", ref)),
            springref=_nonzero(scalar_field(what, "spring_ref", spring_ref)))
        self._names["joint"].add(name)
        b.joints.append((name, jtype))
        b.elements.append(("joint", attrs))
        self._joint_types[name] = jtype
        return name

    def add_geom(self, body: str, kind: GeomType | str, *, size, name: str | None = None,
                 pos=None, quat=None, fromto=None, contype: int = 1, conaffinity: int = 1,
                 condim: int = 3, friction=(1.0, 0.005, 0.0001), density: float | None = None,
                 mass: float | None = None, rgba=None) -> str | None:
        """Add a collision/visual geom to `body` ("world" allowed); returns its name (or None).

        size: see `GeomType` (m). Placement: pos (3,) m and quat (4,) in the body frame, or
        fromto (6,) m = two end points of the axis (capsule/cylinder; then size = (radius,)).
        contype/conaffinity bitmasks, condim (1, 3, 4, 6) and friction (sliding, torsional,
        rolling) as MuJoCo. density (kg/m^3) or mass (kg) only for a body with
        inertia_from_geoms=True.
        """
        what = f"geom {name!r} of body {body!r}" if name else f"geom of body {body!r}"
        b = self._body(what, body, allow_world=True)
        gtype = _as_geom_type(what, kind)
        if name is not None:
            self._new_name("geom", name)
        if fromto is not None:
            if gtype not in (GeomType.CAPSULE, GeomType.CYLINDER):
                raise ValueError(f"{what}: fromto is only for capsule/cylinder geoms")
            if pos is not None or quat is not None:
                raise ValueError(f"{what}: give either fromto or pos/quat, not both")
            fromto = vector_field(what, "fromto", fromto, 6)
            if np.linalg.norm(fromto[3:] - fromto[:3]) < 1e-9:
                raise ValueError(f"{what}: fromto end points coincide: {fromto.tolist()}")
        n_size = 1 if fromto is not None else _GEOM_SIZE[gtype]
        size = vector_field(what, "size", size, n_size)
        if np.any(size < 0) or (gtype != GeomType.PLANE and np.any(size <= 0)):
            raise ValueError(f"{what}: size must be {'>= 0' if gtype == GeomType.PLANE else '> 0'}"
                             f", got {size.tolist()}")
        if not is_integer(condim) or condim not in (1, 3, 4, 6):
            raise ValueError(f"{what}: condim must be 1, 3, 4 or 6, got {condim!r}")
        for field, value in (("contype", contype), ("conaffinity", conaffinity)):
            if not is_integer(value) or not 0 <= value < 2**31:
                raise ValueError(f"{what}: {field} must be a non-negative int bitmask, got "
                                 f"{value!r}")
        friction = vector_field(what, "friction", friction, 3)
        if np.any(friction < 0):
            raise ValueError(f"{what}: friction must be >= 0, got {friction.tolist()}")
        if (density is not None or mass is not None) and b.inertial is not None:
            raise ValueError(f"{what}: density/mass only apply to a body added with "
                             "inertia_from_geoms=True (this body's inertia is explicit)")
        if rgba is not None:
            rgba = vector_field(what, "rgba", rgba, 4)
        attrs = _attrs(
            name=name, type=gtype.value, size=size,
            pos=None if pos is None else vector_field(what, "pos", pos, 3),
            quat=None if quat is None else _quat(what, "quat", quat), fromto=fromto,
            contype=str(int(contype)), conaffinity=str(int(conaffinity)), condim=str(condim),
            friction=friction, rgba=rgba,
            density=None if density is None else scalar_field(what, "density", density, lower=0.0),
            mass=None if mass is None else scalar_field(what, "mass", mass, lower=0.0))
        if name is not None:
            self._names["geom"].add(name)
        b.elements.append(("geom", attrs))
        return name

    def add_site(self, body: str, name: str, *, pos=(0.0, 0.0, 0.0),
                 quat=(1.0, 0.0, 0.0, 0.0), size: float = 0.005) -> str:
        """Add a site (a named frame: pos m, quat in the body frame; size m, visual only,
        default MuJoCo's 0.005)."""
        what = f"site {name!r}"
        b = self._body(what, body, allow_world=True)
        self._new_name("site", name)
        attrs = _attrs(name=name, pos=vector_field(what, "pos", pos, 3),
                       quat=_quat(what, "quat", quat),
                       size=scalar_field(what, "size", size, lower=0.0, strict=True))
        self._names["site"].add(name)
        b.elements.append(("site", attrs))
        return name

    def _actuator(self, tag: str, joint: str, name: str | None, gear: float, ctrl_range,
                  force_range, **extra) -> str:
        name = f"{joint}_{tag}" if name is None else name
        what = f"actuator {name!r}"
        if joint not in self._joint_types:
            raise ValueError(f"{what}: unknown joint {joint!r} (known: "
                             f"{sorted(self._joint_types)})")
        if self._joint_types[joint] not in (JointType.HINGE, JointType.SLIDE):
            raise ValueError(f"{what}: joint {joint!r} is a "
                             f"{self._joint_types[joint].name.lower()} joint; joint actuators "
                             "drive hinge/slide joints only")
        self._new_name("actuator", name)
        gear = scalar_field(what, "gear", gear)
        if gear == 0.0:
            raise ValueError(f"{what}: gear must be nonzero")
        attrs = _attrs(
            name=name, joint=joint, gear=gear, **extra,
            ctrllimited="true" if ctrl_range is not None else "false",
            ctrlrange=None if ctrl_range is None else _interval(what, "ctrl_range", ctrl_range),
            forcelimited="true" if force_range is not None else "false",
            forcerange=(None if force_range is None
                        else _interval(what, "force_range", force_range)))
        self._names["actuator"].add(name)
        self._actuators.append((tag, attrs))
        return name

    def add_motor(self, joint: str, *, name: str | None = None, gear: float = 1.0,
                  ctrl_range=None, force_range=None) -> str:
        """Joint motor: force = ctrl (N or N m before gear); generalized force gear * force.
        ctrl_range / force_range (lower, upper) clamp when given. Default name "<joint>_motor"."""
        return self._actuator("motor", joint, name, gear, ctrl_range, force_range)

    def add_position_servo(self, joint: str, *, kp: float, kv: float = 0.0,
                           name: str | None = None, gear: float = 1.0, ctrl_range=None,
                           force_range=None) -> str:
        """Position servo (MJCF `<position>`): force = kp (ctrl - gear q) - kv gear qd, ctrl is
        the target of gear * q. kp > 0 (N/m or N m/rad), kv >= 0. Default name
        "<joint>_position"."""
        what = f"position servo on joint {joint!r}"
        return self._actuator("position", joint, name, gear, ctrl_range, force_range,
                              kp=scalar_field(what, "kp", kp, lower=0.0, strict=True),
                              kv=scalar_field(what, "kv", kv, lower=0.0))

    def add_numeric(self, name: str, data) -> str:
        """MJCF `<custom><numeric name data>`: named numbers read by later stages (e.g. the
        contact parameters `contact:<param>[:<geom>]` of contact.py, validated there)."""
        what = f"numeric {name!r}"
        self._new_name("numeric", name)
        shape = np.shape(np.atleast_1d(data))
        if len(shape) != 1 or shape[0] == 0:
            raise ValueError(f"{what}: data must be a number or a non-empty 1-D sequence, got "
                             f"{data!r}")
        values = vector_field(what, "data", np.atleast_1d(data), shape[0])
        self._names["numeric"].add(name)
        self._numerics.append(("numeric", _attrs(name=name, data=values)))
        return name

    # ------------------------------------------------------------------ outputs
    def to_mjcf(self) -> str:
        """The model as an MJCF document (exact: floats in shortest round-trip form)."""
        root = ET.Element("mujoco", {"model": self.name})
        ET.SubElement(root, "compiler", {"angle": "radian", "autolimits": "false",
                                         "inertiafromgeom": "auto"})
        option = ET.SubElement(root, "option", self._option)
        if not self._contact:
            ET.SubElement(option, "flag", {"contact": "disable"})
        world = ET.SubElement(root, "worldbody")
        _sub_elements(world, self._bodies[WORLD].elements)
        for child in self._bodies[WORLD].children:
            world.append(self._body_element(child))
        for tag, items in (("actuator", self._actuators), ("custom", self._numerics)):
            if items:
                _sub_elements(ET.SubElement(root, tag), items)
        ET.indent(root)
        return ET.tostring(root, encoding="unicode") + "\n"

    def _body_element(self, name: str) -> ET.Element:
        b = self._bodies[name]
        elem = ET.Element("body", b.xml)
        if b.inertial is not None:
            ET.SubElement(elem, "inertial", b.inertial)
        _sub_elements(elem, b.elements)
        for child in b.children:
            elem.append(self._body_element(child))
        return elem

    def spec(self):
        """A fresh `mujoco.MjSpec` of the model (parsed from `to_mjcf()`; edit it freely)."""
        import mujoco

        return mujoco.MjSpec.from_string(self.to_mjcf())

    def mj_model(self):
        """The model compiled by MuJoCo's compiler (`mujoco.MjModel`).

        Raises ValueError with MuJoCo's message (naming the element) if MuJoCo rejects it,
        e.g. a moving body with zero mass or inertia, or a plane geom on a moving body."""
        spec = self.spec()
        try:
            return spec.compile()
        except ValueError as err:
            raise ValueError(f"MuJoCo's compiler rejected model {self.name!r} built by "
                             f"ModelBuilder: {err}") from err

    def build(self) -> Model:
        """The engine's immutable `Model` (`compile_model(self.mj_model())`; needs x64)."""
        return compile_model(self.mj_model())
