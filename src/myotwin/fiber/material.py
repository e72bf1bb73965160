"""1-D constitutive law of the fiber (cable) muscle: the contravariant stress S^11.

Gfrerer & Simeon 2021, Sec. 2.2. The second Piola-Kirchhoff stress of the cable is
S = S^11 A_1 (x) A_1 (Eq. 35) with A_1 = dX/dtheta the reference tangent, a_1 = dx/dtheta the
current one, and

  S^11 = sigma_0 / |a_1|^2                                                  prestress (Eq. 34)
       + gamma_M alpha S_max f(lambda) / |a_1|^2                     active (Eqs. 31-32, recon.)
       + sum_{i=M,T} f^i(gamma_M) [ mu^i (1/|A_1|^2 - |A_1| / |a_1|^3)
                                   + 3 eta^i (a_1 . da_1/dt) / |a_1|^4 ]    passive (Eq. 30)

with f^M = gamma_M, f^T = 1 - gamma_M (Eq. 5), the centreline stretch lambda = |a_1| / |A_1|
(Eq. 33) and the force-stretch bell f(lambda) = exp(-|(lambda/lambda_opt - 1)/Delta_W|^nu).
Notes:
  * Eq. (36) of our copy drops the weights f^i(gamma_M) in the passive sum; Eq. (30), from which
    it is assembled, has them. We follow Eq. (30) (erratum).
  * Eq. (32) is missing from our copy. Reconstruction (../shared/notes/fiber-muscles.md Sec. 3,
    from gsElasticity's implementation of this paper): the 3-D active stress is
    gamma_M alpha S_max lambda^-2 f(lambda) a_0 (x) a_0 with a_0 = A_1/|A_1|, i.e. the active
    *Cauchy* stress along the fiber is gamma_M alpha S_max f(lambda). In the convected
    components of Eq. (31) this is S^a = alpha S_max f(lambda) / |a_1|^2.
  * a^1 . da_1/dt in Eq. (30) is (a_1 . da_1/dt)/|a_1|^2 (dual vector a^1 = a_1/|a_1|^2, Eq. 26).
  * The axial force (Cauchy stress times current area, N) is N = A_0 S^11 |a_1| |A_1|; for
    |A_1| = 1 the passive part is A_0 mu (lambda - lambda^-2), the uniaxial incompressible
    neo-Hooke law, whose small-strain modulus is E = 3 mu.
The current radius follows from incompressibility of the cross-section (Eq. 21):
r = r_0 sqrt(|A_1| / |a_1|) = r_0 / sqrt(lambda).

Parameter values of `table1_material` are the proxies of Table 1 (not in our copy) listed in
../shared/notes/fiber-muscles.md Sec. 2 (gsElasticity's implementation of this paper, [gsE]);
viscosities are an ad hoc choice, as the paper itself states for its own eta (Sec. 5.4).
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp

from myotwin.scalars import as_real


@dataclasses.dataclass(frozen=True)
class CableMaterial:
    """Material of one fiber (a JAX pytree; every field a float64 leaf).

    mu_muscle_Pa, mu_tendon_Pa: shear moduli mu^M, mu^T (Eq. 5).
    eta_muscle_Pa_s, eta_tendon_Pa_s: Kelvin-Voigt viscosities eta^M, eta^T (Eq. 5).
    s_max_Pa: maximal active (Cauchy) stress at the optimal stretch (Eq. 6/32).
    lambda_opt: optimal centreline stretch; delta_w, nu: width and exponent of the bell.
    sigma0_Pa: prestress sigma_0 (Eq. 34; a Cauchy stress along the fiber).
    """

    mu_muscle_Pa: jax.Array
    mu_tendon_Pa: jax.Array
    eta_muscle_Pa_s: jax.Array
    eta_tendon_Pa_s: jax.Array
    s_max_Pa: jax.Array
    lambda_opt: jax.Array
    delta_w: jax.Array
    nu: jax.Array
    sigma0_Pa: jax.Array


jax.tree_util.register_dataclass(
    CableMaterial, data_fields=[f.name for f in dataclasses.fields(CableMaterial)],
    meta_fields=[])

#: Bounds checked by `make_material`: (field, lower bound, strict?).
_BOUNDS = (
    ("mu_muscle_Pa", 0.0, False), ("mu_tendon_Pa", 0.0, False),
    ("eta_muscle_Pa_s", 0.0, False), ("eta_tendon_Pa_s", 0.0, False),
    ("s_max_Pa", 0.0, False), ("lambda_opt", 0.0, True), ("delta_w", 0.0, True),
    ("nu", 1.0, False), ("sigma0_Pa", -math.inf, False),
)


def make_material(**values: float) -> CableMaterial:
    """Validated `CableMaterial` from floats (every field required; see the class).

    Raises ValueError naming the field for a missing, unknown, non-finite or out-of-range
    value, or one that is not a number (a bool is not: True would be 1.0). nu >= 1 keeps the
    bell C1 at lambda_opt (Newton needs the tangent).
    """
    names = [f.name for f in dataclasses.fields(CableMaterial)]
    unknown = sorted(set(values) - set(names))
    missing = [n for n in names if n not in values]
    if unknown or missing:
        raise ValueError(f"cable material: unknown fields {unknown}, missing fields {missing}")
    for name, lower, strict in _BOUNDS:
        v = as_real(values[name])
        if v is None or not math.isfinite(v) or (v <= lower if strict else v < lower):
            rel = ">" if strict else ">="
            rule = "" if lower == -math.inf else f" {rel} {lower}"
            raise ValueError(f"cable material: {name} = {values[name]!r} must be a finite "
                             f"number{rule}")
    return CableMaterial(**{n: jnp.asarray(float(values[n]), dtype=jnp.float64) for n in names})


def table1_material(**overrides: float) -> CableMaterial:
    """The Table-1 proxy parameters (notes Sec. 2, [gsE] = gsElasticity muscle examples).

    mu^M = 1e5 Pa, mu^T = 1e6 Pa  (gsE: E = 3e5 / 3e6 Pa with Poisson 0.5)
    S_max = 3e5 Pa, lambda_opt = 1.3, Delta_W = 0.3, nu = 4        (gsE muscle law)
    sigma_0 = 30 Pa                                                (gsE prestress)
    eta^M = 1e3 Pa s, eta^T = 1e4 Pa s: ad hoc (Table 1 unknown; the paper calls its own
        viscosities ad hoc, Sec. 5.4); retardation time eta/mu = 10 ms for both.
    Keyword overrides replace single values (validated).
    """
    values = dict(mu_muscle_Pa=1.0e5, mu_tendon_Pa=1.0e6, eta_muscle_Pa_s=1.0e3,
                  eta_tendon_Pa_s=1.0e4, s_max_Pa=3.0e5, lambda_opt=1.3, delta_w=0.3, nu=4.0,
                  sigma0_Pa=30.0)
    values.update(overrides)
    return make_material(**values)


def _norm(v):
    return jnp.sqrt(jnp.sum(v * v, axis=-1))


def stretch(a1, ref_tangent_norm):
    """Centreline stretch lambda = |a_1| / |A_1| (Eq. 33). a1 (..., 3) -> (...)."""
    return _norm(a1) / ref_tangent_norm


def radius(r0, a1, ref_tangent_norm):
    """Current cross-section radius r = r_0 sqrt(|A_1| / |a_1|) (Eq. 21), in m."""
    return r0 * jnp.sqrt(ref_tangent_norm / _norm(a1))


def force_stretch(material: CableMaterial, lam):
    """Bell f(lambda) = exp(-|(lambda/lambda_opt - 1) / Delta_W|^nu) in [0, 1], f(opt) = 1."""
    z = (lam / material.lambda_opt - 1.0) / material.delta_w
    return jnp.exp(-(jnp.abs(z) ** material.nu))


def passive_s11(material: CableMaterial, gamma_m, a1, a1_dot, ref_tangent_norm):
    """Passive Kelvin-Voigt S^11 of Eq. (30), in Pa per (unit theta)^2.

    gamma_m (...) muscle fraction in [0, 1]; a1, a1_dot (..., 3) current tangent and its rate;
    ref_tangent_norm (...) = |A_1|.
    """
    n = _norm(a1)
    elastic = 1.0 / ref_tangent_norm**2 - ref_tangent_norm / n**3
    viscous = 3.0 * jnp.sum(a1 * a1_dot, axis=-1) / n**4
    mu = gamma_m * material.mu_muscle_Pa + (1.0 - gamma_m) * material.mu_tendon_Pa
    eta = gamma_m * material.eta_muscle_Pa_s + (1.0 - gamma_m) * material.eta_tendon_Pa_s
    return mu * elastic + eta * viscous


def active_s11(material: CableMaterial, gamma_m, alpha, a1, ref_tangent_norm):
    """Active gamma_M S^a of Eqs. (31)-(32) (reconstructed): gamma_M alpha S_max f / |a_1|^2."""
    n2 = jnp.sum(a1 * a1, axis=-1)
    lam = jnp.sqrt(n2) / ref_tangent_norm
    return gamma_m * alpha * material.s_max_Pa * force_stretch(material, lam) / n2


def prestress_s11(material: CableMaterial, a1):
    """Prestress S^11 = sigma_0 / |a_1|^2 (Eq. 34)."""
    return material.sigma0_Pa / jnp.sum(a1 * a1, axis=-1)


def stress_s11(material: CableMaterial, gamma_m, alpha, a1, a1_dot, ref_tangent_norm):
    """Total S^11 (Eq. 36 with the f^i weights of Eq. 30): prestress + active + passive."""
    return (prestress_s11(material, a1)
            + active_s11(material, gamma_m, alpha, a1, ref_tangent_norm)
            + passive_s11(material, gamma_m, a1, a1_dot, ref_tangent_norm))


def axial_force(s11, r0, a1, ref_tangent_norm):
    """Axial force N = A_0 S^11 |a_1| |A_1| (Cauchy stress times current area), in N."""
    return math.pi * r0**2 * s11 * _norm(a1) * ref_tangent_norm
