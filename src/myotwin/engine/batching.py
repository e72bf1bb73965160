"""`jax.vmap` over model parameters: the `in_axes` pytree for a batch of models.

Every physics function is `f(model, state, inputs)` with the `Model` a pytree whose float64
leaves are the physical parameters, so a batch of models is one `Model` whose batched leaves
carry a leading axis. `jax.vmap` then needs an `in_axes` of the same pytree structure, with
`None` for the shared leaves and an axis for the batched ones; `model_axes` builds it:

    masses = model.body_mass * jnp.array([[1.0], [1.1], [1.2]])      # (3, n_body)
    batch = dataclasses.replace(model, body_mass=masses)
    run = lambda m: simulate(m, q0, qd0, ctrl, duration_s, dt_s, "rk4")[0]   # q (n+1, n_q)
    q = jax.jit(jax.vmap(run, in_axes=(model_axes(model, body_mass=0),)))(batch)  # (3, n+1, n_q)

Vmapping over states needs no helper: `jax.vmap(mass_matrix, in_axes=(None, 0))(model, qs)`.
Only the float64 leaves can be batched; the integer topology is static (one compiled program
per topology), so models with different trees cannot share a batch.
"""

from __future__ import annotations

import dataclasses

import jax

from myotwin.engine.arguments import model_of
from myotwin.engine.model import Model
from myotwin.scalars import is_integer

_LEAF_FIELDS = tuple(f.name for f in dataclasses.fields(Model) if not f.metadata.get("static"))


def model_axes(model: Model, **axes: int) -> Model:
    """`in_axes` for `jax.vmap` over a batch of models: a `Model`-shaped pytree with `None`
    for every parameter leaf except those named in `axes` (field name -> batch axis).

    model: any `Model` of the batch's topology (its static fields are copied, so the pytree
    structures match). Raises ValueError for an unknown or static (topology) field name or a
    non-integer axis.
    """
    for name, axis in axes.items():
        if name not in _LEAF_FIELDS:
            static = any(f.name == name for f in dataclasses.fields(Model))
            raise ValueError(
                f"model_axes: {name!r} is " + ("static topology and cannot be batched"
                                                if static else "not a Model field")
                + f"; batchable fields: {', '.join(_LEAF_FIELDS)}")
        if not is_integer(axis):
            raise ValueError(f"model_axes: axis for {name!r} must be an int, got {axis!r}")
    shared = jax.tree_util.tree_map(lambda _: None, model_of("model_axes", model))
    return dataclasses.replace(shared, **axes)
