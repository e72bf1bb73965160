"""Excitation-contraction coupling: stimulus pulses -> active state -> activation.

Two stages (docs/invitro/emulator.md §3):

1. **Active state** u(t) in [0, 1], a calcium-like state in the sense of Hill's (1949) active
   state: each supramaximal pulse saturates it for a plateau `release_plateau_s`, after which
   it decays exponentially with `release_decay_s` (Ca re-uptake). Implemented as a state c
   that jumps to exp(plateau / decay) at a pulse, decays as c' = -c / decay, and u = min(1, c).
   A later pulse resets c, so trains faster than 1 / plateau (here 250 Hz) keep u = 1.
   The pulse width (0.5 ms) is ignored: a pulse acts at its onset.
2. **Activation** a(t), the first-order model of Zajac (1989, eq. 2; He, Levine & Loeb 1991):

       da/dt = (u - (beta + (1 - beta) u) a) / tau_act,  beta = tau_act / tau_deact

   so a rises with tau_act when u = 1 and falls with tau_deact when u = 0. For u held over a
   sub-step the ODE is linear in a and is integrated exactly:
       a(t + h) = a_inf + (a - a_inf) exp(-k h),  k = (beta + (1 - beta) u) / tau_act,
       a_inf = u / (beta + (1 - beta) u).
   u is sampled at the start of each sub-step (it changes only through its own decay).

Why Zajac's form and not MuJoCo's (tau_act (0.5 + 1.5 a), tau_deact / (0.5 + 1.5 a)): the
MuJoCo scaling makes activation from rest 2x faster (5 ms), and with no series elasticity
the twitch then peaks at <= 18 ms for any active-state duration that fuses at 250 Hz, below
the 20-40 ms of frog twitches (notes §5, R). Zajac's form with MuJoCo's two time constants
gives a 23 ms twitch, fused tetanus at 250 Hz and 95 % of F0 30 ms after train onset.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from myotwin.invitro.emulator.params import ActivationParams


def zajac_rate(a: float, u: float, tau_act_s: float, tau_deact_s: float) -> float:
    """da/dt of Zajac's (1989) first-order activation dynamics."""
    beta = tau_act_s / tau_deact_s
    return (u - (beta + (1.0 - beta) * u) * a) / tau_act_s


def zajac_step(a: float, u: float, step_s: float, tau_act_s: float, tau_deact_s: float) -> float:
    """Exact solution of `zajac_rate` after `step_s` with u held constant."""
    beta = tau_act_s / tau_deact_s
    g = beta + (1.0 - beta) * u
    a_inf = u / g
    return a_inf + (a - a_inf) * math.exp(-g * step_s / tau_act_s)


@dataclass(frozen=True)
class Activation:
    """Constants of both stages for one sub-step length."""

    params: ActivationParams
    step_s: float
    beta: float
    c_peak: float           # active-state value right after a pulse, exp(plateau / decay)
    c_decay: float          # per-sub-step factor exp(-h / decay)
    k_per_step: float       # h / tau_act
    e_full: float           # exp(-h / tau_act): decay factor when u = 1
    e_zero: float           # exp(-h / tau_deact): decay factor when u = 0

    @classmethod
    def build(cls, p: ActivationParams, step_s: float) -> "Activation":
        beta = p.tau_act_s / p.tau_deact_s
        return cls(p, step_s, beta, math.exp(p.release_plateau_s / p.release_decay_s),
                   math.exp(-step_s / p.release_decay_s), step_s / p.tau_act_s,
                   math.exp(-step_s / p.tau_act_s), math.exp(-step_s / p.tau_deact_s))

    def step(self, a: float, c: float) -> tuple[float, float]:
        """Advance (activation, active-state variable c) by one sub-step, no pulse in it."""
        if c >= 1.0:
            a = 1.0 + (a - 1.0) * self.e_full
        elif c <= 0.0:
            a = a * self.e_zero
        else:
            g = self.beta + (1.0 - self.beta) * c
            a_inf = c / g
            a = a_inf + (a - a_inf) * math.exp(-g * self.k_per_step)
        return a, c * self.c_decay

    @staticmethod
    def active_state(c: float) -> float:
        """u = min(1, c)."""
        return 1.0 if c > 1.0 else c
