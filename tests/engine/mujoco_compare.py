"""Comparison of an engine output with MuJoCo's, shared by the engine's constraint tests."""

from __future__ import annotations

import numpy as np


def close_to_mujoco(name: str, ours, ref, tol: float) -> float:
    """max |ours - ref| / max |ref| (relative to MuJoCo's largest entry); asserts the shapes
    agree and the error is <= tol, naming `name`; returns the error."""
    ours, ref = np.asarray(ours), np.asarray(ref)
    assert ours.shape == ref.shape, f"{name}: shape {ours.shape} vs MuJoCo {ref.shape}"
    err = np.abs(ours - ref).max(initial=0.0) / max(np.abs(ref).max(initial=0.0), 1e-300)
    assert err <= tol, f"{name}: relative error {err:.3e} > {tol:g} vs MuJoCo"
    return float(err)
