"""The README's Python example runs as written and does what its comments say.

The block is taken from README.md itself (the first ```python fence), so an API change that
breaks the example fails here. Checked against the example's own comments (6 lengths,
2 x 6 moment arms, mass points only on the copy `heavy`) and a finite 0.5 s rollout of 501
states ending at t = 0.5 s; the numbers themselves are checked against OpenSim in
tests/paths/test_arm26.py.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parents[1] / "README.md"


def _python_block() -> str:
    match = re.search(r"```python\n(.*?)```", README.read_text(), re.S)
    assert match, "README.md has no ```python block"
    return match.group(1)


def test_readme_python_example():
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(_python_block(), str(README), "exec"), namespace)   # noqa: S102
    import myotwin

    model, heavy, q = namespace["model"], namespace["heavy"], namespace["q"]
    assert np.asarray(myotwin.muscle_lengths(model, q)).shape == (6,)
    assert np.asarray(myotwin.moment_arms(model, q)).shape == (2, 6)
    assert heavy.muscle_mass is not None and model.muscle_mass is None
    q_t, t = np.asarray(namespace["q_t"]), np.asarray(namespace["t"])
    assert q_t.shape == (501, 2) and np.all(np.isfinite(q_t))
    assert abs(t[-1] - 0.5) < 1e-12
