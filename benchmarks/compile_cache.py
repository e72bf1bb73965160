"""What JAX's disk cache saves on arm26's first calls (docs/engine.md, "Compile time, and JAX's
cache on disk"). Not a test; numbers go to docs/engine.md and benchmarks/RESULTS.md.

Each measurement is a new Python process that calls `myotwin.muscle_lengths` and
`myotwin.moment_arms` of `models.arm26` once at q = (0, 1) and prints the wall time of each
first call (tracing, compilation or cache load, and the run): once without the cache, then twice
with a fresh cache directory (the first fills it, the second loads from it).

    taskset -c 1 .venv/bin/python benchmarks/compile_cache.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

CHILD = """
import json, time
import myotwin
myotwin.configure_jax()
import jax, jax.numpy as jnp
from myotwin.models import arm26
model, q = arm26.build(), jnp.array([0.0, 1.0])
out = {}
for f in (myotwin.muscle_lengths, myotwin.moment_arms):
    t = time.perf_counter()
    jax.block_until_ready(f(model, q))
    out[f.__name__] = time.perf_counter() - t
print(json.dumps(out))
"""


def first_calls(cache_dir: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    if cache_dir is not None:
        env["JAX_COMPILATION_CACHE_DIR"] = cache_dir
    run = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(run.stdout.strip().splitlines()[-1])


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="myotwin-jax-cache-") as cache:
        rows = [("no cache", first_calls(None)), ("cache, filled by this process",
                                                  first_calls(cache)),
                ("cache, loaded from the previous process", first_calls(cache))]
        entries = len(os.listdir(cache))
    for label, times in rows:
        print(f"{label:40s} muscle_lengths {times['muscle_lengths']:6.1f} s, "
              f"moment_arms {times['moment_arms']:6.1f} s")
    print(f"cache entries written: {entries}")


if __name__ == "__main__":
    main()
