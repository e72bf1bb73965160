"""Where the shared reference material (seeds, notes, reference models and data) is.

The brief's layout puts it in `../shared` next to the repository. A clone elsewhere (a CI
checkout in /tmp, say) finds it through the environment variable MYOTWIN_SHARED, else at the
workplace's /work/shared. Tests that need a file skip, naming the path, when it is absent.
"""

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _shared() -> Path:
    candidates = [Path(os.environ["MYOTWIN_SHARED"])] if os.environ.get("MYOTWIN_SHARED") else []
    candidates += [REPO.parent / "shared", Path("/work/shared")]
    return next((p for p in candidates if p.is_dir()), candidates[0])


SHARED = _shared()


def needs(path) -> Path:
    """`path` (a file under SHARED), or skip the calling test naming it if it is absent."""
    import pytest

    path = Path(path)
    if not path.exists():
        pytest.skip(f"shared reference {path} is absent")
    return path
