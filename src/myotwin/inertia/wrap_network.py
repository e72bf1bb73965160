"""The seed's wrapping-surface neural network for Type III mass points (Wang et al. 2022
§3.3, Eqs. 19 and 25): a tanh MLP from (origin, insertion in the surface frame S, alpha,
radius) to the mass point x_alpha in S, trained on the wrapping library (`paths.arc`) with
the near-discontinuity samples discarded, so that x_alpha is C-infinity in the end points and
its Jacobians (Eq. 25, here by autodiff) do not jump when the path wraps on or off.

Surface frame S and side convention (a cylinder; the network is trained for the cylinder only):
  * the origin of S is on the cylinder axis and z_S is the axis (the cylinder is infinite, as
    in MuJoCo);
  * the path wraps on the +y_S side: the library samples use a MuJoCo side site on +y_S
    outside the cylinder, i.e. the muscle lies over +y_S and goes around the far side when
    pulled behind the cylinder (`paths.circle`: side sites);
  * x_S = y_S x z_S points to the side of the origin: the training domain (below) has the
    origin at polar angles -30..60 deg and the insertion at 120..240 deg around z_S (polar
    angle measured from +x_S towards +y_S). `surface_rotation` builds S from a cylinder's
    axis, side-site direction and the origin's direction. Swapping origin and insertion is a
    rotation of S by 180 deg about y_S (x, z -> -x, -z) with alpha -> 1 - alpha, so the
    domain's asymmetry loses no generality.

Exact reductions used as input/output normalisation (no approximation; each is a symmetry of
the geodesic wrap, checked against the library in tests/inertia/test_wrap_network.py):
  1. scale: the path scales with (x_ori, x_ins, r), so the network sees u = x / r and
     returns a displacement in units of r;
  2. axial: unrolled, the path on a cylinder is a straight line, so the path length is
     proportional to its cross-section (xy) length and z(x_alpha) = z_ori + alpha (z_ins -
     z_ori) exactly (paths/arc.py); the network predicts only the xy part;
  3. residual: the network predicts the displacement from the straight chord,
     x_alpha = (1 - alpha) x_ori + alpha x_ins + r (dx, dy, 0), which is exactly 0 when the
     path does not touch the cylinder.
Features (7): log rho_o, u_o,xy / rho_o, log rho_i, u_i,xy / rho_i, alpha (rho = |u_xy|: polar
coordinates without a branch cut), standardised by the training set's mean and standard
deviation; outputs standardised by the training targets' standard deviation.

Training (`train`): samples from the library (`library_mass_point`, MuJoCo-exact wrap) over
the domain below; the seed's heuristic (§3.3.1) discards samples with 0 < l / L < 1 % (l the
wrapped length, L the whole path); mean squared error of the standardised output; Adam
(Kingma & Ba 2015) with its default betas and epsilon as in the seed, cosine-decayed learning
rate, minibatches; everything seeded (NumPy default_rng for data and batches,
jax.random.PRNGKey for the initial weights). Size: `FULL` (4 x 128 tanh) instead of the seed's
6 x 256 (12 h on a GPU): see docs/inertia.md, "Wrapping network".
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.resources
import json
import pathlib
import time
import zipfile
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from myotwin.scalars import as_real, is_integer
from myotwin.paths.arc import PathPoint, path_point_local, path_points_local

#: Training domain in units of the radius r and in polar angles (deg) around z_S from +x_S
#: (see the module docstring). rho = distance from the axis, sampled log-uniformly.
RHO_RANGE = (1.25, 12.0)
ORIGIN_ANGLE_DEG = (-30.0, 60.0)
INSERTION_ANGLE_DEG = (120.0, 240.0)
HEIGHT_RANGE = (-5.0, 5.0)          # z / r of the end points (exactly irrelevant, see above)
RADIUS_RANGE_M = (0.005, 0.05)      # sampled log-uniformly (exactly irrelevant, see above)
#: Seed §3.3.1: discard a sample when 0 < l / L < DISCARD_RATIO.
DISCARD_RATIO = 0.01
#: Side site of the library samples, in units of r along +y_S (any distance > r is the same).
SIDE_DISTANCE = 2.0
#: Smooth guard in rho = sqrt(|u_xy|^2 + RHO_EPS^2) (end point on the axis: outside the domain).
RHO_EPS = 1e-12
N_FEATURES = 7
N_OUTPUTS = 2

#: The shipped weights (reproduced by `myotwin train-wrap --out PATH`).
DATA_FILE = "wrap_cylinder.npz"


@dataclasses.dataclass(frozen=True)
class WrapNetwork:
    """Parameters of the wrap network (a pytree; every field is a float64 leaf).

    weights: per layer (n_in, n_out): (7, h1), (h1, h2), ..., (h_last, 2).
    biases: per layer (n_out,).
    feature_mean, feature_std (7,): standardisation of the features.
    output_scale (2,): standard deviation of the training targets (units of r).
    """

    weights: tuple[jax.Array, ...]
    biases: tuple[jax.Array, ...]
    feature_mean: jax.Array
    feature_std: jax.Array
    output_scale: jax.Array


jax.tree_util.register_dataclass(
    WrapNetwork, data_fields=["weights", "biases", "feature_mean", "feature_std",
                              "output_scale"], meta_fields=[])


# ---------------------------------------------------------------------------------------------
# The library side: exact positions and the training set
# ---------------------------------------------------------------------------------------------

def library_mass_point(x_ori_S, x_ins_S, alpha, radius) -> PathPoint:
    """Exact library point at fraction alpha (MuJoCo-semantics cylinder wrap with a side site
    on +y_S, `paths.arc`), in S: x_ori_S, x_ins_S (3,) m, alpha in [0, 1], radius m."""
    side = jnp.array([0.0, SIDE_DISTANCE, 0.0]) * radius
    return path_point_local(x_ori_S, x_ins_S, radius, side, True, True, alpha,
                            side_outside=True)


def library_mass_points(x_ori_S, x_ins_S, alphas, radius) -> PathPoint:
    """`library_mass_point` at several fractions alphas (m,) of one path (the wrap computed
    once): x_alpha (m, 3)."""
    side = jnp.array([0.0, SIDE_DISTANCE, 0.0]) * radius
    return path_points_local(x_ori_S, x_ins_S, radius, side, True, True, alphas,
                             side_outside=True)


_library_batch = jax.jit(jax.vmap(library_mass_point))


def in_training_domain(x_ori_S, x_ins_S, radius) -> np.ndarray:
    """Whether end points (..., 3) in S (m) with radius (...,) (m) lie in the training domain
    (distances from the axis and polar angles; heights are unrestricted, see the module
    docstring)."""
    def polar(x):
        u = np.asarray(x, dtype=np.float64)[..., :2] / np.asarray(radius)[..., None]
        return np.hypot(u[..., 0], u[..., 1]), np.degrees(np.arctan2(u[..., 1], u[..., 0]))

    (r0, a0), (r1, a1) = polar(x_ori_S), polar(x_ins_S)
    a1 = np.where(a1 < 0.0, a1 + 360.0, a1)
    ok = (r0 >= RHO_RANGE[0]) & (r0 <= RHO_RANGE[1]) & (r1 >= RHO_RANGE[0]) & (r1 <= RHO_RANGE[1])
    ok &= (a0 >= ORIGIN_ANGLE_DEG[0]) & (a0 <= ORIGIN_ANGLE_DEG[1])
    return ok & (a1 >= INSERTION_ANGLE_DEG[0]) & (a1 <= INSERTION_ANGLE_DEG[1])


class WrapSamples(NamedTuple):
    """Library samples (NumPy, float64): x_ori, x_ins, x_alpha (n, 3) in S (m); alpha (n,);
    radius (n,) m; wrap_length l, total_length L (n,) m; wrapped (n,) bool."""

    x_ori: np.ndarray
    x_ins: np.ndarray
    alpha: np.ndarray
    radius: np.ndarray
    x_alpha: np.ndarray
    wrap_length: np.ndarray
    total_length: np.ndarray
    wrapped: np.ndarray


def sample_domain(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    """n random (x_ori, x_ins (n, 3) m, alpha (n,), radius (n,) m) over the training domain."""
    radius = np.exp(rng.uniform(*np.log(RADIUS_RANGE_M), n))
    rho = np.exp(rng.uniform(*np.log(RHO_RANGE), (n, 2)))
    angle = np.radians(np.stack([rng.uniform(*ORIGIN_ANGLE_DEG, n),
                                 rng.uniform(*INSERTION_ANGLE_DEG, n)], axis=1))
    height = rng.uniform(*HEIGHT_RANGE, (n, 2))
    pts = np.stack([rho * np.cos(angle), rho * np.sin(angle), height], axis=2) * radius[:, None,
                                                                                         None]
    alpha = rng.uniform(0.0, 1.0, n)
    return pts[:, 0], pts[:, 1], alpha, radius


def library_samples(x_ori, x_ins, alpha, radius) -> WrapSamples:
    """Evaluate the library at arrays of inputs ((n, 3), (n, 3), (n,), (n,))."""
    pp = _library_batch(jnp.asarray(x_ori), jnp.asarray(x_ins), jnp.asarray(alpha),
                        jnp.asarray(radius))
    return WrapSamples(np.asarray(x_ori), np.asarray(x_ins), np.asarray(alpha),
                       np.asarray(radius), *(np.asarray(v) for v in pp))


def near_discontinuity(samples: WrapSamples, ratio: float = DISCARD_RATIO) -> np.ndarray:
    """The seed's heuristic (§3.3.1): a sample is near the wrap on/off discontinuity when
    0 < l / L < ratio (l the wrapped length, L the whole path)."""
    frac = samples.wrap_length / samples.total_length
    return (frac > 0.0) & (frac < ratio)


def training_set(seed: int, n: int) -> WrapSamples:
    """n library samples over the domain, seeded, with the near-discontinuity ones discarded
    (so fewer than n are returned)."""
    rng = np.random.default_rng(seed)
    s = library_samples(*sample_domain(rng, n))
    keep = ~near_discontinuity(s)
    return WrapSamples(*(v[keep] for v in s))


# ---------------------------------------------------------------------------------------------
# The network
# ---------------------------------------------------------------------------------------------

def _broadcast(x_ori_S, x_ins_S, alpha, radius):
    """Inputs as arrays broadcast to one leading shape: (..., 3), (..., 3), (...), (...)."""
    x_ori_S, x_ins_S = jnp.asarray(x_ori_S), jnp.asarray(x_ins_S)
    alpha, radius = jnp.asarray(alpha), jnp.asarray(radius)
    lead = jnp.broadcast_shapes(x_ori_S.shape[:-1], x_ins_S.shape[:-1], alpha.shape,
                                radius.shape)
    return (jnp.broadcast_to(x_ori_S, lead + (3,)), jnp.broadcast_to(x_ins_S, lead + (3,)),
            jnp.broadcast_to(alpha, lead), jnp.broadcast_to(radius, lead))


def features(x_ori_S, x_ins_S, alpha, radius) -> jax.Array:
    """(..., 7) raw features (module docstring) of end points (..., 3) in S (m), alpha (...)
    and radius (...) (m); leading shapes broadcast."""
    x_ori_S, x_ins_S, alpha, radius = _broadcast(x_ori_S, x_ins_S, alpha, radius)
    r = radius[..., None]

    def polar(x):
        u = x[..., :2] / r
        rho = jnp.sqrt(jnp.sum(u * u, axis=-1, keepdims=True) + RHO_EPS ** 2)
        return [jnp.log(rho), u / rho]

    return jnp.concatenate(polar(x_ori_S) + polar(x_ins_S) + [alpha[..., None]], axis=-1)


def mlp(params: WrapNetwork, standardised: jax.Array) -> jax.Array:
    """(..., 2) standardised network output for standardised features (..., 7): tanh hidden
    layers, linear output layer."""
    h = standardised
    for w, b in zip(params.weights[:-1], params.biases[:-1]):
        h = jnp.tanh(h @ w + b)
    return h @ params.weights[-1] + params.biases[-1]


def network_mass_point(params: WrapNetwork, x_ori_S, x_ins_S, alpha, radius) -> jax.Array:
    """Seed Eq. 19: x_alpha_S (3,) (m), the network's mass point at fraction alpha of the path
    from x_ori_S to x_ins_S (3,) (m, surface frame S) around the cylinder of `radius` (m).

    Pure JAX and C-infinity in every input; the seed's network Jacobians (Eq. 25) are
    `jax.jacfwd(network_mass_point, argnums=(1, 2))`. Also works on leading batch dimensions
    (..., 3), (...), (...), broadcast (e.g. one path (3,) at alphas (m,) -> (m, 3)). Meant
    for the training domain (`in_training_domain`); outside it the network extrapolates (not
    checked: this runs under jit).
    """
    x_ori_S, x_ins_S, alpha, radius = _broadcast(x_ori_S, x_ins_S, alpha, radius)
    f = (features(x_ori_S, x_ins_S, alpha, radius) - params.feature_mean) / params.feature_std
    d = mlp(params, f) * params.output_scale
    chord = x_ori_S + alpha[..., None] * (x_ins_S - x_ori_S)
    zero = jnp.zeros_like(d[..., :1])
    return chord + radius[..., None] * jnp.concatenate([d, zero], axis=-1)


def network_jacobians(params: WrapNetwork, x_ori_S, x_ins_S, alpha, radius):
    """Seed Eq. 25: (dx_alpha/dx_ori, dx_alpha/dx_ins), each (3, 3), in S, by forward-mode
    differentiation of the network (the seed uses backward differentiation; same values)."""
    return jax.jacfwd(network_mass_point, argnums=(1, 2))(params, x_ori_S, x_ins_S, alpha,
                                                            radius)


def targets(samples: WrapSamples) -> np.ndarray:
    """(n, 2) training targets: the library's displacement from the chord in xy, units of r."""
    chord = samples.x_ori + samples.alpha[:, None] * (samples.x_ins - samples.x_ori)
    return (samples.x_alpha - chord)[:, :2] / samples.radius[:, None]


# ---------------------------------------------------------------------------------------------
# Surface frame
# ---------------------------------------------------------------------------------------------

def surface_rotation(axis, side_direction, origin_direction) -> np.ndarray:
    """(3, 3) rotation whose columns are x_S, y_S, z_S expressed in the frame of the inputs
    (e.g. the cylinder's body frame at a reference pose): z_S along `axis` (3,), y_S the
    direction of `side_direction` (3,) (side site minus a point on the axis) orthogonal to the
    axis, and z_S's sign chosen so that `origin_direction` (3,) (origin minus a point on the
    axis, at the reference pose) has x_S > 0. Fixed for the life of a model: choose it once.
    """
    vecs = {}
    for name, v in (("axis", axis), ("side_direction", side_direction),
                    ("origin_direction", origin_direction)):
        v = np.asarray(v, dtype=np.float64)
        if v.shape != (3,) or not np.all(np.isfinite(v)):
            raise ValueError(f"surface_rotation: {name} must be a finite 3-vector, got {v!r}")
        vecs[name] = v
    z = vecs["axis"] / max(np.linalg.norm(vecs["axis"]), 1e-300)
    side = vecs["side_direction"] - np.dot(vecs["side_direction"], z) * z
    if np.linalg.norm(vecs["axis"]) < 1e-12 or np.linalg.norm(side) < 1e-12:
        raise ValueError("surface_rotation: axis is zero or side_direction is parallel to "
                         f"the axis (axis {vecs['axis']}, side {vecs['side_direction']})")
    y = side / np.linalg.norm(side)
    x = np.cross(y, z)
    if np.dot(vecs["origin_direction"], x) < 0.0:
        x, z = -x, -z
    return np.stack([x, y, z], axis=1)


# ---------------------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Training settings. n_samples: library samples drawn before the discard; held_out:
    fraction kept for evaluation; hidden: widths of the tanh layers; steps of Adam with
    minibatches of `batch`; learning rate cosine-decayed from lr_max to lr_min; seed."""

    n_samples: int = 60_000
    held_out: float = 0.1
    hidden: tuple[int, ...] = (128, 128, 128, 128)
    steps: int = 30_000
    batch: int = 512
    lr_max: float = 2e-3
    lr_min: float = 1e-5
    seed: int = 0
    chunk: int = 500

    def __post_init__(self):
        ints = {"n_samples": self.n_samples, "steps": self.steps, "batch": self.batch,
                "chunk": self.chunk}
        for name, v in ints.items():
            if not is_integer(v) or v < 1:
                raise ValueError(f"TrainConfig.{name} must be a positive integer, got {v!r}")
        if not is_integer(self.seed) or self.seed < 0:
            raise ValueError(f"TrainConfig.seed must be an integer >= 0, got {self.seed!r}")
        hidden = () if isinstance(self.hidden, (str, bytes)) else self.hidden
        if not isinstance(hidden, (tuple, list)) or not hidden or \
                any(not is_integer(h) or h < 1 for h in hidden):
            raise ValueError(f"TrainConfig.hidden must be positive integer widths, got "
                             f"{self.hidden!r}")
        reals = {"held_out": self.held_out, "lr_min": self.lr_min, "lr_max": self.lr_max}
        for name, v in reals.items():
            if as_real(v) is None or not np.isfinite(as_real(v)):
                raise ValueError(f"TrainConfig.{name} must be a finite number, got {v!r}")
        if not 0.0 < self.held_out < 1.0:
            raise ValueError(f"TrainConfig.held_out must be in (0, 1), got {self.held_out!r}")
        if not 0.0 < self.lr_min <= self.lr_max:
            raise ValueError(f"TrainConfig: need 0 < lr_min <= lr_max, got {self.lr_min!r}, "
                             f"{self.lr_max!r}")


#: The shipped network's settings (`myotwin train-wrap`).
FULL = TrainConfig()
#: A tiny run that checks the pipeline (`myotwin train-wrap --quick`, CI).
QUICK = TrainConfig(n_samples=4_000, hidden=(32, 32), steps=400, batch=256, chunk=100)


def init_params(key: jax.Array, hidden: tuple[int, ...], feature_mean, feature_std,
                output_scale) -> WrapNetwork:
    """Weights N(0, 1/fan_in) (LeCun), zero biases."""
    sizes = (N_FEATURES, *hidden, N_OUTPUTS)
    weights, biases = [], []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        key, sub = jax.random.split(key)
        weights.append(jax.random.normal(sub, (n_in, n_out), jnp.float64) / np.sqrt(n_in))
        biases.append(jnp.zeros(n_out, jnp.float64))
    return WrapNetwork(tuple(weights), tuple(biases), jnp.asarray(feature_mean),
                       jnp.asarray(feature_std), jnp.asarray(output_scale))


def _loss(params: WrapNetwork, x: jax.Array, y: jax.Array) -> jax.Array:
    """Mean squared error of the standardised outputs (x, y already standardised)."""
    return jnp.mean(jnp.sum((mlp(params, x) - y) ** 2, axis=-1))


def _trainable(params: WrapNetwork):
    return params.weights, params.biases


def _make_chunk(config: TrainConfig):
    """A jitted run of `config.chunk` Adam steps over given minibatch indices."""
    b1, b2, eps = 0.9, 0.999, 1e-8          # Adam defaults (Kingma & Ba 2015), as the seed

    def lr_at(t):
        c = 0.5 * (1.0 + jnp.cos(jnp.pi * jnp.minimum(t, config.steps) / config.steps))
        return config.lr_min + (config.lr_max - config.lr_min) * c

    def step(carry, idx, x_all, y_all):
        params, m, v, t = carry
        loss, g = jax.value_and_grad(_loss)(params, x_all[idx], y_all[idx])
        g = _trainable(g)
        m = jax.tree.map(lambda m_, g_: b1 * m_ + (1 - b1) * g_, m, g)
        v = jax.tree.map(lambda v_, g_: b2 * v_ + (1 - b2) * g_ * g_, v, g)
        t1 = t + 1
        lr = lr_at(t)
        new = jax.tree.map(lambda p, m_, v_: p - lr * (m_ / (1 - b1 ** t1))
                           / (jnp.sqrt(v_ / (1 - b2 ** t1)) + eps), _trainable(params), m, v)
        params = dataclasses.replace(params, weights=new[0], biases=new[1])
        return (params, m, v, t1), loss

    @jax.jit
    def run(carry, idx_chunk, x_all, y_all):
        return jax.lax.scan(lambda c, i: step(c, i, x_all, y_all), carry, idx_chunk)

    return run


def evaluate(params: WrapNetwork, samples: WrapSamples) -> dict:
    """Errors |x_net - x_lib| in units of r over samples: rms, 99th percentile, max, over all
    samples and split by wrapped / not wrapped; and the largest z error (m)."""
    x = np.asarray(jax.jit(network_mass_point)(params, samples.x_ori, samples.x_ins,
                                                samples.alpha, samples.radius))
    err = np.linalg.norm(x - samples.x_alpha, axis=1) / samples.radius
    out = {"n": int(err.size)}
    for name, mask in (("all", np.ones_like(err, bool)), ("wrapped", samples.wrapped),
                       ("straight", ~samples.wrapped)):
        e = err[mask]
        if e.size:
            out[name] = {"rms_r": float(np.sqrt(np.mean(e ** 2))),
                         "p99_r": float(np.quantile(e, 0.99)), "max_r": float(e.max())}
    out["max_abs_z_error_m"] = float(np.abs(x[:, 2] - samples.x_alpha[:, 2]).max())
    return out


def train(config: TrainConfig = FULL,
          log: Callable[[str], None] | None = None) -> tuple[WrapNetwork, dict]:
    """Train the network; returns (params, metadata) with the config, the domain, loss history
    and held-out errors (`evaluate`). Deterministic for a given config on one machine."""
    t_start = time.perf_counter()
    data = training_set(config.seed, config.n_samples)
    n = data.alpha.size
    n_test = max(1, int(round(config.held_out * n)))
    test = WrapSamples(*(v[n - n_test:] for v in data))
    tr = WrapSamples(*(v[:n - n_test] for v in data))
    too_few = (f"train: TrainConfig.n_samples = {config.n_samples} left {n - n_test} training "
               "samples after the discard and the held-out part: too few to standardise")
    if n - n_test < 2:
        raise ValueError(too_few)
    feats = np.asarray(features(tr.x_ori, tr.x_ins, tr.alpha, tr.radius))
    y = targets(tr)
    mean, std = feats.mean(axis=0), feats.std(axis=0)
    scale = y.std(axis=0)
    if not (np.all(std > 0.0) and np.all(scale > 0.0)):
        raise ValueError(too_few)
    params = init_params(jax.random.PRNGKey(config.seed), tuple(config.hidden), mean, std, scale)
    x_all = jnp.asarray((feats - mean) / std)
    y_all = jnp.asarray(y / scale)
    zeros = jax.tree.map(jnp.zeros_like, _trainable(params))
    carry = (params, zeros, zeros, jnp.asarray(0, jnp.int64))
    run_chunk = _make_chunk(config)
    rng = np.random.default_rng(config.seed + 1)
    history = []
    done = 0
    while done < config.steps:
        k = min(config.chunk, config.steps - done)
        idx = jnp.asarray(rng.integers(0, x_all.shape[0], (k, config.batch)))
        carry, losses = run_chunk(carry, idx, x_all, y_all)
        done += k
        history.append([done, float(np.mean(np.asarray(losses)))])
        if log is not None:
            log(f"step {done}/{config.steps}: loss {history[-1][1]:.3e} "
                f"({time.perf_counter() - t_start:.0f} s)")
    params = carry[0]
    first = float(_loss(init_params(jax.random.PRNGKey(config.seed), tuple(config.hidden), mean,
                                    std, scale), x_all, y_all))
    metadata = {
        "config": dataclasses.asdict(config),
        "domain": {"rho_over_r": RHO_RANGE, "origin_angle_deg": ORIGIN_ANGLE_DEG,
                   "insertion_angle_deg": INSERTION_ANGLE_DEG,
                   "height_over_r": HEIGHT_RANGE, "radius_m": RADIUS_RANGE_M,
                   "discard_ratio": DISCARD_RATIO, "side": "+y_S"},
        "n_drawn": config.n_samples, "n_kept": int(n), "n_train": int(n - n_test),
        "n_held_out": int(n_test),
        "initial_loss": first,
        "final_loss": float(_loss(params, x_all, y_all)),
        "loss_history": history,
        "held_out": evaluate(params, test),
        "train_time_s": time.perf_counter() - t_start,
        "jax_version": jax.__version__,
    }
    return params, metadata


# ---------------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------------

def save_params(path, params: WrapNetwork, metadata: dict | None = None) -> pathlib.Path:
    """Write params (and metadata as JSON) to a .npz file; returns the path."""
    path = pathlib.Path(path)
    arrays: dict[str, Any] = {"feature_mean": np.asarray(params.feature_mean),
                              "feature_std": np.asarray(params.feature_std),
                              "output_scale": np.asarray(params.output_scale),
                              "n_layers": np.asarray(len(params.weights))}
    for i, (w, b) in enumerate(zip(params.weights, params.biases)):
        arrays[f"weight_{i}"] = np.asarray(w)
        arrays[f"bias_{i}"] = np.asarray(b)
    arrays["metadata"] = np.asarray(json.dumps(metadata or {}))
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)
    return path


def _open(path):
    if path is None:
        return importlib.resources.files("myotwin.inertia").joinpath("data", DATA_FILE).open("rb")
    return open(path, "rb")


@contextlib.contextmanager
def _archive(path):
    """The .npz archive at `path` (None: the shipped one), open; anything that makes it
    unreadable (not a file, not an .npz archive, truncated, a missing entry, an entry that is
    not what is expected) is a ValueError naming the file."""
    where = str(path) if path is not None else f"myotwin/inertia/data/{DATA_FILE}"
    try:
        with _open(path) as fh:
            z = np.load(fh, allow_pickle=False)
            if not isinstance(z, np.lib.npyio.NpzFile):
                raise ValueError("a single .npy array, not an .npz archive")
            with z:
                yield z
    except (OSError, EOFError, KeyError, TypeError, ValueError, zipfile.BadZipFile) as err:
        raise ValueError(f"wrap network file {where}: cannot read it "
                         f"({type(err).__name__}: {err})") from None


def _real(z, key: str) -> jax.Array:
    values = z[key]
    if not np.issubdtype(values.dtype, np.floating):
        raise ValueError(f"entry {key!r} has dtype {values.dtype}, expected real numbers")
    return jnp.asarray(values, jnp.float64)


def load_params(path=None) -> WrapNetwork:
    """The network parameters from a .npz written by `save_params` (default: the shipped
    `myotwin/inertia/data/wrap_cylinder.npz`). ValueError naming the file and the problem if
    it is not a wrap-network file."""
    where = str(path) if path is not None else f"myotwin/inertia/data/{DATA_FILE}"
    with _archive(path) as z:
        n_layers = int(z["n_layers"])
        weights = tuple(_real(z, f"weight_{i}") for i in range(n_layers))
        biases = tuple(_real(z, f"bias_{i}") for i in range(n_layers))
        params = WrapNetwork(weights, biases, _real(z, "feature_mean"),
                             _real(z, "feature_std"), _real(z, "output_scale"))
    return check_params(params, f"wrap network file {where}")


def check_params(params: WrapNetwork, what: str) -> WrapNetwork:
    """params if its layers chain from 7 features to 2 outputs, one bias per unit, and every
    entry is finite with positive scales; else a ValueError starting with `what`."""
    weights, biases = tuple(params.weights), tuple(params.biases)
    sizes = [np.shape(w) for w in weights]
    ok = (sizes and len(biases) == len(weights) and all(len(s) == 2 for s in sizes)
          and sizes[0][0] == N_FEATURES and sizes[-1][1] == N_OUTPUTS
          and all(a[1] == b[0] for a, b in zip(sizes[:-1], sizes[1:]))
          and all(np.shape(b) == (w[1],) for w, b in zip(sizes, biases))
          and np.shape(params.feature_mean) == (N_FEATURES,)
          and np.shape(params.feature_std) == (N_FEATURES,)
          and np.shape(params.output_scale) == (N_OUTPUTS,))
    if not ok:
        raise ValueError(f"{what}: inconsistent layer shapes {sizes}")
    leaves = jax.tree_util.tree_leaves(params)
    if not all(bool(jnp.all(jnp.isfinite(v))) for v in leaves) or \
            bool(jnp.any(params.feature_std <= 0)) or bool(jnp.any(params.output_scale <= 0)):
        raise ValueError(f"{what}: non-finite weights or non-positive scales")
    return params


def load_metadata(path=None) -> dict:
    """The metadata dict stored with the weights (training config, domain, errors);
    ValueError naming the file if it cannot be read."""
    with _archive(path) as z:
        text = z["metadata"]
        if text.dtype.kind != "U" or text.shape != ():
            raise ValueError(f"entry 'metadata' is a {text.dtype} array, expected a JSON text")
        metadata = json.loads(str(text))     # json.JSONDecodeError is a ValueError
        if not isinstance(metadata, dict):
            raise ValueError("entry 'metadata' is not a JSON object")
        return metadata
