"""Hill-type muscle: active force-length, force-velocity, passive force, optional SEE.

Force (tension > 0) of the contractile element plus the parallel element, Hill (1938) /
Zajac (1989) form:

    F = F0 [a f_L(l) f_V(v) + f_P(l)]          l = L / L0,  v = (dL/dt) / (Vmax L0)

* f_L: Gaussian exp(-((l - 1)/w)^2), w = 0.45 (notes §5). Gordon, Huxley & Julian (1966)
  frog sarcomere curve normalised at 2.2 um for comparison: plateau 2.0-2.25 um, zero at
  1.27 and 3.65 um; on the plateau and descending limb (1.0-1.6 L0) the Gaussian is within
  0.1 of it (largest at 1.19 L0; tested).
* f_V, shortening (v < 0): Hill's (1938) hyperbola (F + a)(V + b) = (F0 + a) b written
  with s = -v: f_V = (1 - s) / (1 + s / k), k = a/P0 (0.25, Mashima et al. 1972); f_V = 0 for
  s >= 1 (a muscle shortening faster than Vmax goes slack).
  Lengthening (v > 0): the rectangular hyperbola f_V = (f_e v + c) / (v + c), equal to 1 at
  v = 0 (continuous), tending to f_e = 1.5 (notes §5), with c chosen so its slope at v = 0 is
  `ecc_slope_ratio` (2, Katz 1939) times the shortening slope 1 + 1/k.
* f_P: exponential, zero below the slack length l_s = 1.0 and equal to f_ref = 0.1 at
  l_ref = 1.2 (notes §5): f_P = f_ref (e^(k (l - l_s)) - 1) / (e^(k (l_ref - l_s)) - 1).
* Optional series elastic element (SEE, off by default): tendon force F0 (e / e0)^2 at strain
  e of its slack length (e0 = 4 %, notes §5), fibre damping beta F0 v (Millard et al. 2013,
  beta = 0.1) so that the fibre velocity stays defined at zero activation. Fibre length is
  advanced by backward Euler with a Newton solve of the force equilibrium (the passive fibre
  on a stiff SEE has time constants below the 0.1 ms step).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from myotwin.invitro.emulator.params import MuscleParams


def active_force_length(l_rel: float, width: float) -> float:
    """Gaussian active force-length factor f_L at length l_rel = L/L0."""
    z = (l_rel - 1.0) / width
    return math.exp(-z * z)


def force_velocity(v_rel: float, hill_k: float, ecc_max: float, ecc_c: float) -> float:
    """Force-velocity factor f_V at v_rel = (dL/dt)/(Vmax L0); lengthening positive."""
    if v_rel <= 0.0:
        s = -v_rel
        return 0.0 if s >= 1.0 else (1.0 - s) / (1.0 + s / hill_k)
    return (ecc_max * v_rel + ecc_c) / (v_rel + ecc_c)


def eccentric_constant(hill_k: float, ecc_max: float, ecc_slope_ratio: float) -> float:
    """c of the lengthening hyperbola: slope (f_e - 1)/c = ratio * (1 + 1/k) at v = 0."""
    return (ecc_max - 1.0) / (ecc_slope_ratio * (1.0 + 1.0 / hill_k))


def passive_force_length(l_rel: float, slack: float, ref_length: float, ref_force: float,
                         shape: float) -> float:
    """Exponential passive force factor f_P (F/F0), zero below the slack length."""
    if l_rel <= slack:
        return 0.0
    return ref_force * math.expm1(shape * (l_rel - slack)) / math.expm1(shape * (ref_length - slack))


@dataclass(frozen=True)
class Muscle:
    """Precomputed constants of one muscle; `force` is the rigid-tendon (no SEE) force."""

    params: MuscleParams
    inv_L0: float
    inv_vmax: float         # 1 / (Vmax L0), s/m
    hill_k: float
    ecc_max: float
    ecc_c: float
    fl_inv_width: float
    p_slack: float
    p_shape: float
    p_scale: float          # f_ref / expm1(k (l_ref - l_s))

    @classmethod
    def build(cls, p: MuscleParams) -> "Muscle":
        return cls(p, 1.0 / p.L0_m, 1.0 / p.vmax_m_per_s, p.hill_a_rel, p.ecc_force_max_rel,
                   eccentric_constant(p.hill_a_rel, p.ecc_force_max_rel, p.ecc_slope_ratio),
                   1.0 / p.fl_width_rel, p.passive_slack_rel, p.passive_shape,
                   p.passive_ref_force_rel / math.expm1(p.passive_shape
                                                        * (p.passive_ref_length_rel - p.passive_slack_rel)))

    # --- curves with the constants bound ---------------------------------------------------
    def f_l(self, l_rel: float) -> float:
        z = (l_rel - 1.0) * self.fl_inv_width
        return math.exp(-z * z)

    def f_v(self, v_rel: float) -> float:
        return force_velocity(v_rel, self.hill_k, self.ecc_max, self.ecc_c)

    def f_p(self, l_rel: float) -> float:
        if l_rel <= self.p_slack:
            return 0.0
        return self.p_scale * math.expm1(self.p_shape * (l_rel - self.p_slack))

    def force(self, length_m: float, velocity_m_per_s: float, activation: float) -> float:
        """Muscle tension (N) at a length and lengthening velocity, rigid tendon."""
        l_rel = length_m * self.inv_L0
        return self.params.F0_N * (activation * self.f_l(l_rel) * self.f_v(velocity_m_per_s * self.inv_vmax)
                                   + self.f_p(l_rel))

    # --- series elastic element --------------------------------------------------------------
    def see_force(self, see_length_m: float) -> float:
        """SEE tension (N): F0 (strain / strain_at_F0)^2, zero when slack."""
        p = self.params
        e = see_length_m / p.see_slack_length_m - 1.0
        return 0.0 if e <= 0.0 else p.F0_N * (e / p.see_strain_at_F0) ** 2

    def _see_residual(self, lf: float, lf_old: float, mtu_m: float, a: float,
                      step_s: float) -> tuple[float, float]:
        """Fibre force minus SEE force, and its derivative in the new fibre length (N, N/m)."""
        p = self.params
        l_rel = lf * self.inv_L0
        v_rel = (lf - lf_old) / step_s * self.inv_vmax
        dv_dlf = self.inv_vmax / step_s
        fl = self.f_l(l_rel)
        dfl = -2.0 * (l_rel - 1.0) * self.fl_inv_width ** 2 * fl * self.inv_L0
        if v_rel <= 0.0:
            s = -v_rel
            if s >= 1.0:
                fv, dfv = 0.0, 0.0
            else:
                den = 1.0 + s / self.hill_k
                fv = (1.0 - s) / den
                dfv = (1.0 + 1.0 / self.hill_k) / (den * den) * dv_dlf  # d fv/d v_rel = -d fv/d s
        else:
            den = v_rel + self.ecc_c
            fv = (self.ecc_max * v_rel + self.ecc_c) / den
            dfv = (self.ecc_max - 1.0) * self.ecc_c / (den * den) * dv_dlf
        if l_rel > self.p_slack:
            ex = math.exp(self.p_shape * (l_rel - self.p_slack))
            fp, dfp = self.p_scale * (ex - 1.0), self.p_scale * self.p_shape * ex * self.inv_L0
        else:
            fp, dfp = 0.0, 0.0
        beta = p.fiber_damping_rel
        f_fibre = p.F0_N * (a * fl * fv + fp + beta * v_rel)
        df_fibre = p.F0_N * (a * (dfl * fv + fl * dfv) + dfp + beta * dv_dlf)
        e = (mtu_m - lf) / p.see_slack_length_m - 1.0
        if e > 0.0:
            f_see = p.F0_N * (e / p.see_strain_at_F0) ** 2
            df_see = -2.0 * p.F0_N * e / (p.see_strain_at_F0 ** 2 * p.see_slack_length_m)
        else:
            f_see, df_see = 0.0, 0.0
        return f_fibre - f_see, df_fibre - df_see

    def see_step(self, lf_old: float, mtu_m: float, activation: float, step_s: float) -> tuple[float, float]:
        """Backward-Euler step of the fibre length with the SEE: returns (fibre length m, tension N).

        Solves fibre force(lf, (lf - lf_old)/h) = SEE force(mtu - lf) by Newton's method from
        lf_old. The residual increases strictly with lf (the damping term alone gives
        beta F0 / (Vmax h) > 0), so every iterate narrows a bracket; a Newton step that leaves
        it (across the kink of f_V at v = 0) is replaced by a false-position step between the
        bracket ends. Tolerance 1e-12 m, i.e. ~1e-8 N at the residual's ~1e4 N/m slope.
        """
        lo, hi = -math.inf, mtu_m
        r_lo = r_hi = 0.0
        lf = min(lf_old, hi)
        for _ in range(100):
            r, dr = self._see_residual(lf, lf_old, mtu_m, activation, step_s)
            step = r / dr
            if abs(step) < 1e-12:
                lf -= step
                break
            if r > 0.0:
                hi, r_hi = lf, r
            else:
                lo, r_lo = lf, r
            new = lf - step
            if not (lo < new < hi):  # only possible once lo is finite (dr > 0)
                new = lo - r_lo * (hi - lo) / (r_hi - r_lo) if r_hi > r_lo else 0.5 * (lo + hi)
                if abs(new - lf) < 1e-12:
                    lf = new
                    break
            lf = new
        return lf, self.see_force(mtu_m - lf)

    def see_static_fibre_length(self, mtu_m: float, activation: float) -> float:
        """Fibre length at rest (v = 0) in series with the SEE, by bisection."""
        lo, hi = 1e-6, mtu_m
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            l_rel = mid * self.inv_L0
            r = (self.params.F0_N * (activation * self.f_l(l_rel) + self.f_p(l_rel))
                 - self.see_force(mtu_m - mid))
            if r > 0.0:
                hi = mid
            else:
                lo = mid
        return 0.5 * (lo + hi)
