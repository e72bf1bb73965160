"""`myotwin train-wrap --out PATH [--quick] [--seed N]`: train the seed's wrapping-surface
network (Wang et al. 2022 §3.3; `myotwin.inertia.wrap_network`) and write its weights.

Without --quick this reproduces the shipped `myotwin/inertia/data/wrap_cylinder.npz` (same
settings `wrap_network.FULL`, same seed; see docs/inertia.md for the run time and how exactly
it reproduces). --quick is a tiny run (`wrap_network.QUICK`) that checks the pipeline.
Prints the metadata (config, domain, loss, held-out errors) as JSON.
"""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
import sys


def cmd_train_wrap(args: argparse.Namespace) -> int:
    from myotwin.jax_setup import configure_jax

    configure_jax()   # entry point: the library runs in float64
    from myotwin.cli.main import print_json
    from myotwin.inertia import wrap_network

    out = pathlib.Path(args.out)
    if out.suffix != ".npz":
        raise ValueError(f"train-wrap: --out must name a .npz file, got {str(out)!r}")
    config = wrap_network.QUICK if args.quick else wrap_network.FULL
    if args.seed is not None:
        config = dataclasses.replace(config, seed=args.seed)

    def log(msg: str) -> None:
        print(f"train-wrap: {msg}", file=sys.stderr, flush=True)

    params, metadata = wrap_network.train(config, log=log)
    metadata["quick"] = bool(args.quick)
    wrap_network.save_params(out, params, metadata)
    print_json({k: v for k, v in metadata.items() if k != "loss_history"} | {"out": str(out)})
    return 0
