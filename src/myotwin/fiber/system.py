"""Several fibers, their contacts and their ties to a rigid skeleton, compiled into one pytree.

Gfrerer & Simeon 2021, Secs. 2.4, 3 and 4: "to consider multiple fibers, the weak forms of all
individual fibers have to be summed up". A `FiberSystem` holds
  * the fibers (`FiberModel`s, part 1) and their element tables stacked along one element axis
    (n_E = sum of n_el), so one vmapped kernel evaluates every element of every fiber;
  * fiber-fiber contact pairs (two half-passes each, `contact_fibers`) with one penalty law;
  * bone cylinders carried by skeleton bodies (`contact_bones`);
  * the skeleton (`myotwin.engine.Model`, hinge/slide joints) and the attachments of fiber ends
    to body-fixed points (Eq. 49), or None for fibers alone.

Global fiber dofs u_h (n_h,): the fibers' dofs one after the other (fiber f starts at
`layout.fiber_offset[f]`; inside a fiber the layout of `hermite`). Dependent dofs (the seed's
u_D, Eq. 54c): the position dofs of ends PINNED in their `FiberModel` -- tied to a body point
when an attachment names that end (u_D = c(q), Eq. 59), else held where they are -- and the
tangent dofs of CLAMPED ends (held; a CLAMPED end cannot be tied to a moving body). The
unknowns of a step are z = (q (n_v), u_I (n_I)): skeleton coordinates and independent fiber
dofs (Eq. 58).

The static topology (index arrays) lives in `FiberSystem.layout`, a NumPy holder that jit
hashes by a digest of its contents: it is built once here and never changed.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.engine import JointType, Model
from myotwin.engine.kinematics import kinematics
from myotwin.fiber import hermite
from myotwin.fiber.cable import EndCondition, FiberModel, element_h
from myotwin.fiber.contact_bones import BoneCylinder
from myotwin.fiber.contact_fibers import FiberContactLaw
from myotwin.fiber.material import CableMaterial
from myotwin.fiber.time_stepping import check_finite
from myotwin.scalars import is_integer


@dataclasses.dataclass(frozen=True)
class Attachment:
    """Fiber `fiber` (index or name), end 0 (theta = 0) or 1 (theta = 1), tied to the body-fixed
    point `point_local_m` (3,) of skeleton body `body` (index or name). point_local_m None: the
    fiber's reference end position expressed in the body frame at the skeleton's q0."""

    fiber: int | str
    end: int
    body: int | str
    point_local_m: Sequence[float] | None = None


class Layout:
    """Static topology of a `FiberSystem` (NumPy arrays; hashed and compared by a digest of
    their contents, so that identical topologies share compiled code).

    fiber_offset (n_fiber + 1,): first global dof of each fiber (last entry n_h);
    el_first (n_fiber + 1,): first global element of each fiber; el_fiber (n_E,);
    el_dofs (n_E, 12): global dofs of each element;
    dep_dofs (n_D,): dependent dofs, sorted; dep_att (n_D,): attachment index (-1: held) and
    dep_comp (n_D,): its coordinate 0..2; free_dofs (n_I,): the others (u_I);
    att_fiber, att_end, att_body (n_att,): attachments;
    pairs: directed half-passes (fiber A, fiber B); cyl_fiber_mask (n_cyl, n_E) bool;
    cyl_moving (n_cyl,) bool: the cylinder's body is moved by some dof;
    fiber_names; n_h, n_v.
    """

    def __init__(self, **arrays):
        self.__dict__.update(arrays)
        digest = hashlib.sha256()
        for key in sorted(arrays):
            digest.update(key.encode())
            digest.update(repr(np.asarray(arrays[key], dtype=object).shape).encode())
            value = arrays[key]
            if isinstance(value, np.ndarray):
                digest.update(value.tobytes())
            else:
                digest.update(repr(value).encode())
        self._digest = digest.hexdigest()

    def __hash__(self):
        return hash(self._digest)

    def __eq__(self, other):
        return isinstance(other, Layout) and self._digest == other._digest


@dataclasses.dataclass(frozen=True)
class FiberSystem:
    """Immutable multi-fiber system (a JAX pytree). Shapes in model terms (n_E elements in
    total, n_qp / n_qc bulk / contact points per element, shared by all fibers):

    fibers: tuple of `FiberModel` (part 1; their own leaves); el_h (n_E,); el_ref_q (n_E, 12)
    reference dofs; el_qp_ref_norm, el_qp_r0_m, el_qp_gamma_m (n_E, n_qp); el_qc_ref_norm,
    el_qc_r0_m (n_E, n_qc); el_rho_kg_m3 (n_E,); el_material: `CableMaterial` with (n_E,)
    leaves; qp_phi, qp_dphi (n_qp, 4), qp_w (n_qp,); qc_xi, qc_w (n_qc,), qc_phi, qc_dphi
    (n_qc, 4); fiber_law: `FiberContactLaw` or None; cylinders: tuple of `BoneCylinder`;
    skeleton: engine `Model` or None; att_point_local_m (n_att, 3).
    Static: layout (`Layout`).
    """

    fibers: tuple[FiberModel, ...]
    el_h: jax.Array
    el_ref_q: jax.Array
    el_qp_ref_norm: jax.Array
    el_qp_r0_m: jax.Array
    el_qp_gamma_m: jax.Array
    el_qc_ref_norm: jax.Array
    el_qc_r0_m: jax.Array
    el_rho_kg_m3: jax.Array
    el_material: CableMaterial
    qp_phi: jax.Array
    qp_dphi: jax.Array
    qp_w: jax.Array
    qc_xi: jax.Array
    qc_w: jax.Array
    qc_phi: jax.Array
    qc_dphi: jax.Array
    fiber_law: FiberContactLaw | None
    cylinders: tuple[BoneCylinder, ...]
    skeleton: Model | None
    att_point_local_m: jax.Array
    layout: Layout = dataclasses.field(metadata={"static": True})

    @property
    def n_fiber(self) -> int:
        return len(self.fibers)

    @property
    def n_h(self) -> int:
        return int(self.layout.n_h)

    @property
    def n_v(self) -> int:
        return int(self.layout.n_v)

    def fiber_dofs(self, u_h, fiber: int) -> np.ndarray:
        """The dofs (n_dof of that fiber,) of one fiber in a global vector (NumPy)."""
        off = self.layout.fiber_offset
        return np.asarray(u_h)[..., off[fiber]:off[fiber + 1]]


jax.tree_util.register_dataclass(
    FiberSystem,
    data_fields=[f.name for f in dataclasses.fields(FiberSystem) if f.name != "layout"],
    meta_fields=["layout"])


def _index(name_or_index, names: Sequence[str], kind: str) -> int:
    if isinstance(name_or_index, (bool, np.bool_)):
        raise ValueError(f"fiber system: {kind} {name_or_index!r}: expected a name or an "
                         "integer index")
    if is_integer(name_or_index):
        if not 0 <= int(name_or_index) < len(names):
            raise ValueError(f"fiber system: {kind} index {name_or_index} out of range "
                             f"[0, {len(names)})")
        return int(name_or_index)
    if name_or_index not in names:
        raise ValueError(f"fiber system: unknown {kind} {name_or_index!r}; known: {list(names)}")
    return list(names).index(name_or_index)


def _check_skeleton(skeleton: Model) -> None:
    bad = [j for j, t in enumerate(skeleton.joint_type)
           if t not in (JointType.HINGE, JointType.SLIDE)]
    if bad:
        raise ValueError(f"fiber system: skeleton joints {bad} are not hinge/slide; the "
                         f"coupling needs q and qd of equal size (n_q == n_v)")
    limited = [j for j, lim in enumerate(skeleton.joint_limited) if lim]
    if limited and skeleton.limits_enabled:
        raise ValueError(f"fiber system: skeleton joints {limited} are limited; joint limits "
                         f"are not part of the coupled backward-Euler system")
    if skeleton.contact is not None:
        raise ValueError("fiber system: skeleton geom contacts are not part of the coupled "
                         "system; disable them (contact=False in ModelBuilder)")


def _stack(fibers, field):
    return np.concatenate([np.asarray(getattr(f, field)) for f in fibers], axis=0)


def compile_system(fibers: Sequence[FiberModel], *, skeleton: Model | None = None,
                   q0=None, attachments: Sequence[Attachment] = (),
                   cylinders: Sequence[tuple[BoneCylinder, Sequence[int | str] | None]] = (),
                   fiber_pairs: Sequence[tuple[int | str, int | str]] = (),
                   fiber_law: FiberContactLaw | None = None) -> FiberSystem:
    """Compile fibers, contacts and skeleton ties into a `FiberSystem` (validated in NumPy).

    fibers: compiled with the same n_qp and n_qp_contact; names must be unique.
    skeleton, q0: engine model (hinge/slide joints, no limits, no geom contacts) and the
      configuration (n_q,) at which default attachment points are computed (default qpos0;
      n_q finite numbers, a list is fine).
    attachments: `Attachment`s; the tied end must be PINNED in its FiberModel.
    cylinders: (BoneCylinder, fibers it touches or None for all) pairs; the fibers are names
      or indices, one name or index alone is that fiber.
    fiber_pairs: unordered pairs (fiber, fiber) of names or indices in contact (both
      half-passes); needs fiber_law. One pair goes in a list: [("a", "b")].
    Raises ValueError naming the offending fiber, end, body, pair or cylinder, and saying what
    an entry of cylinders or fiber_pairs must be when it is not such a pair.
    """
    fibers = tuple(fibers)
    if not fibers:
        raise ValueError("fiber system: at least one fiber is needed")
    names = [f.name for f in fibers]
    if len(set(names)) != len(names):
        raise ValueError(f"fiber system: fiber names must be unique, got {names}")
    for f in fibers[1:]:
        if (f.n_qp, f.n_qp_contact) != (fibers[0].n_qp, fibers[0].n_qp_contact):
            raise ValueError(f"fiber system: fiber '{f.name}' has (n_qp, n_qp_contact) = "
                             f"({f.n_qp}, {f.n_qp_contact}), fiber '{fibers[0].name}' has "
                             f"({fibers[0].n_qp}, {fibers[0].n_qp_contact}); they must agree")
    if skeleton is not None:
        _check_skeleton(skeleton)
    n_v = 0 if skeleton is None else skeleton.n_v
    body_names = ["world"] if skeleton is None else _body_names(skeleton)
    offsets = np.concatenate([[0], np.cumsum([f.n_dof for f in fibers])]).astype(int)
    el_first = np.concatenate([[0], np.cumsum([f.n_el for f in fibers])]).astype(int)
    el_fiber = np.repeat(np.arange(len(fibers)), [f.n_el for f in fibers])
    el_dofs = np.concatenate([offsets[i] + hermite.element_dof_index(f.n_el)
                              for i, f in enumerate(fibers)])

    att_fiber, att_end, att_body, att_points = [], [], [], []
    q0 = _skeleton_q("fiber system", skeleton, q0)
    kin = None if skeleton is None else kinematics(skeleton, jnp.asarray(q0))
    for a in attachments:
        fi = _index(a.fiber, names, "fiber")
        if a.end not in (0, 1):
            raise ValueError(f"fiber system: attachment of fiber '{names[fi]}': end must be 0 "
                             f"or 1, got {a.end!r}")
        b = _index(a.body, body_names, "body")
        cond = fibers[fi].ends[a.end]
        if cond != EndCondition.PINNED:
            raise ValueError(f"fiber system: fiber '{names[fi]}' end {a.end} is "
                             f"{EndCondition(cond).name}; an end tied to a body must be PINNED")
        if (fi, a.end) in zip(att_fiber, att_end):
            raise ValueError(f"fiber system: fiber '{names[fi]}' end {a.end} is attached twice")
        node = 0 if a.end == 0 else fibers[fi].n_el
        ref_end = np.asarray(fibers[fi].ref_q)[6 * node:6 * node + 3]
        if a.point_local_m is None:
            if kin is None:
                point = ref_end
            else:
                rot = np.asarray(kin.body_rot_world[b])
                point = rot.T @ (ref_end - np.asarray(kin.body_pos_world[b]))
        else:
            point = np.asarray(a.point_local_m, dtype=np.float64)
            if point.shape != (3,) or not np.all(np.isfinite(point)):
                raise ValueError(f"fiber system: attachment of fiber '{names[fi]}' end "
                                 f"{a.end}: point_local_m must be 3 finite numbers")
        att_fiber.append(fi)
        att_end.append(a.end)
        att_body.append(b)
        att_points.append(point)

    dep_dofs, dep_att, dep_comp = [], [], []
    for fi, f in enumerate(fibers):
        for d in f.fixed_dofs:
            node, comp = divmod(d, hermite.DOF_PER_NODE)
            end = 0 if node == 0 else 1
            a = next((i for i, (af, ae) in enumerate(zip(att_fiber, att_end))
                      if af == fi and ae == end), -1)
            dep_dofs.append(offsets[fi] + d)
            dep_att.append(a if comp < 3 else -1)
            dep_comp.append(comp if comp < 3 else -1)
    order = np.argsort(dep_dofs)
    dep_dofs = np.asarray(dep_dofs, int)[order]
    dep_att = np.asarray(dep_att, int)[order]
    dep_comp = np.asarray(dep_comp, int)[order]
    free = np.ones(offsets[-1], bool)
    free[dep_dofs] = False

    pairs = []
    for pair in fiber_pairs:
        if not _is_pair(pair):
            hint = (" (one pair goes in a list: [('a', 'b')])"
                    if isinstance(pair, str) or is_integer(pair) else "")
            raise ValueError(f"fiber system: each entry of fiber_pairs must be a pair (fiber, "
                             f"fiber) of names or indices, got {_short(pair)}{hint}")
        i, j = (_index(p, names, "fiber") for p in pair)
        if i == j:
            raise ValueError(f"fiber system: contact pair ({names[i]!r}, {names[j]!r}) needs "
                             f"two different fibers (no self-contact)")
        for directed in ((i, j), (j, i)):
            if directed not in pairs:
                pairs.append(directed)
    if pairs and fiber_law is None:
        raise ValueError("fiber system: fiber_pairs given without a fiber_law "
                         "(make_fiber_contact_law)")

    cyls, cyl_mask, cyl_moving = [], [], []
    mask_anc = None if skeleton is None else skeleton.dof_ancestor_mask()
    for entry in cylinders:
        if not (_is_pair(entry) and isinstance(entry[0], BoneCylinder)):
            raise ValueError(f"fiber system: each entry of cylinders must be a pair "
                             f"(BoneCylinder, fibers it touches or None for all), got "
                             f"{_short(entry)}")
        cyl, touched = entry
        if skeleton is None and cyl.body != 0:
            raise ValueError(f"fiber system: bone cylinder '{cyl.name}' is on body {cyl.body} "
                             f"but there is no skeleton (use body 0, the world)")
        if not 0 <= cyl.body < len(body_names):
            raise ValueError(f"fiber system: bone cylinder '{cyl.name}': body {cyl.body} out of "
                             f"range")
        idx = tuple(range(len(fibers))) if touched is None else tuple(
            _index(t, names, "fiber") for t in _touched(cyl, touched))
        cyls.append(dataclasses.replace(cyl, fibers=idx))
        cyl_mask.append(np.isin(el_fiber, idx))
        cyl_moving.append(bool(mask_anc is not None and mask_anc[cyl.body].any()))

    f64 = lambda a: jnp.asarray(a, dtype=jnp.float64)  # noqa: E731
    mats = [f.material for f in fibers]
    el_material = CableMaterial(**{
        fld.name: f64(np.concatenate([np.full(f.n_el, float(getattr(m, fld.name)))
                                      for f, m in zip(fibers, mats)]))
        for fld in dataclasses.fields(CableMaterial)})
    ref_q = np.concatenate([np.asarray(f.ref_q) for f in fibers])
    f0 = fibers[0]
    layout = Layout(
        fiber_offset=offsets, el_first=el_first, el_fiber=el_fiber, el_dofs=el_dofs,
        dep_dofs=dep_dofs, dep_att=dep_att, dep_comp=dep_comp, free_dofs=np.flatnonzero(free),
        att_fiber=np.asarray(att_fiber, int), att_end=np.asarray(att_end, int),
        att_body=np.asarray(att_body, int), pairs=tuple(pairs),
        cyl_fiber_mask=np.asarray(cyl_mask, bool).reshape(len(cyls), int(el_first[-1])),
        cyl_moving=np.asarray(cyl_moving, bool), fiber_names=tuple(names),
        n_h=int(offsets[-1]), n_v=int(n_v))
    return FiberSystem(
        fibers=fibers,
        el_h=f64(np.concatenate([np.asarray(element_h(f)) for f in fibers])),
        el_ref_q=f64(ref_q[el_dofs]),
        el_qp_ref_norm=f64(_stack(fibers, "qp_ref_norm")),
        el_qp_r0_m=f64(_stack(fibers, "qp_r0_m")),
        el_qp_gamma_m=f64(_stack(fibers, "qp_gamma_m")),
        el_qc_ref_norm=f64(_stack(fibers, "qc_ref_norm")),
        el_qc_r0_m=f64(_stack(fibers, "qc_r0_m")),
        el_rho_kg_m3=f64(np.repeat([float(f.rho_kg_m3) for f in fibers],
                                   [f.n_el for f in fibers])),
        el_material=el_material,
        qp_phi=f0.qp_phi, qp_dphi=f0.qp_dphi, qp_w=f0.qp_w,
        qc_xi=f0.qc_xi, qc_w=f0.qc_w, qc_phi=f0.qc_phi, qc_dphi=f0.qc_dphi,
        fiber_law=fiber_law, cylinders=tuple(cyls), skeleton=skeleton,
        att_point_local_m=f64(np.asarray(att_points, float).reshape(-1, 3)),
        layout=layout)


def _skeleton_q(where: str, skeleton: Model | None, q0) -> np.ndarray:
    """q0 as a float array, the skeleton's qpos0 if None; ValueError naming `where` unless it
    is n_q finite numbers (a wrong length used q0[0], a scalar was a ZeroDivisionError in the
    engine and a NaN gave NaN attachment points). Without a skeleton n_q = 0."""
    n_q = 0 if skeleton is None else int(skeleton.n_q)
    if q0 is None:
        return np.zeros(0) if skeleton is None else np.asarray(skeleton.qpos0, np.float64)
    try:
        q = np.asarray(q0, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: q0 must be real numbers, got {q0!r}") from None
    if q.shape != (n_q,):
        what = "no skeleton" if skeleton is None else f"the skeleton's n_q = {n_q}"
        raise ValueError(f"{where}: q0 has shape {q.shape}, expected ({n_q},) ({what})")
    check_finite(where, "q0", q)
    return q


def _is_pair(entry) -> bool:
    """Whether entry is a sequence of two items (not a string, whose characters are no pair)."""
    if isinstance(entry, (str, bytes)):
        return False
    try:
        return len(entry) == 2
    except TypeError:
        return False


def _short(value) -> str:
    """A short repr for messages: a BoneCylinder by its name, not its arrays."""
    if isinstance(value, BoneCylinder):
        return f"BoneCylinder {value.name!r}"
    if isinstance(value, (tuple, list)):
        inner = ", ".join(_short(v) for v in value)
        return f"({inner},)" if isinstance(value, tuple) and len(value) == 1 else (
            f"({inner})" if isinstance(value, tuple) else f"[{inner}]")
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _touched(cyl: BoneCylinder, touched) -> tuple:
    """The fibers a cylinder touches as a tuple: one name or index alone is that fiber."""
    if isinstance(touched, (str, bool, np.bool_)) or is_integer(touched):
        return (touched,)
    try:
        return tuple(touched)
    except TypeError:
        raise ValueError(f"fiber system: bone cylinder '{cyl.name}': the fibers it touches "
                         f"must be None, a fiber name or index, or a sequence of them, got "
                         f"{_short(touched)}") from None


def _body_names(skeleton: Model) -> list[str]:
    """Body names are not stored in the engine Model; bodies are addressed by index here
    (names "body<i>", "world" for 0)."""
    return ["world"] + [f"body{i}" for i in range(1, skeleton.n_body)]


def initial_state(system: FiberSystem, q0=None):
    """Rest state at the reference: (q (n_v,), qd (n_v,), u (n_h,), v (n_h,)) as NumPy arrays.

    q0 defaults to the skeleton's qpos0; given, it must be n_q finite numbers (ValueError).
    The fiber dofs are the reference centrelines (their tied ends coincide with the body
    points when the attachments used default points at q0).
    """
    n_v = system.n_v
    q = _skeleton_q("fiber initial_state", system.skeleton, q0)
    u = np.concatenate([np.asarray(f.ref_q) for f in system.fibers])
    return q, np.zeros(n_v), u, np.zeros(system.n_h)
