"""`myotwin repro NAME --out DIR [--quick]`: run one reproduction of the seeds.

Each reproduction writes its figures and `summary.json` into DIR and the summary is printed.
The registry is `myotwin.repro.REGISTRY`; `--list` prints the names.
"""

from __future__ import annotations

import argparse
import pathlib


def cmd_repro(args: argparse.Namespace) -> int:
    from myotwin.repro import REGISTRY
    from myotwin.cli.main import print_json

    if args.list or not args.name:
        if not args.list:
            raise ValueError("repro: give a reproduction NAME (one of: "
                             + ", ".join(sorted(REGISTRY)) + ")")
        for name in sorted(REGISTRY):
            print(name)
        return 0
    if args.name not in REGISTRY:
        raise ValueError(f"repro: unknown reproduction {args.name!r}; expected one of: "
                         + ", ".join(sorted(REGISTRY)))
    if not args.out:
        raise ValueError("repro: --out DIR is required")
    from myotwin.jax_setup import configure_jax

    configure_jax()   # entry point: float64 physics, embedded constants
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    summary = REGISTRY[args.name](out, quick=args.quick)
    print_json(summary)
    return 0
