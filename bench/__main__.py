"""`python -m bench`: every benchmark, as tables with the baseline of the same run.

Benchmarks are not tests: they report, they never fail the test run.
"""

from __future__ import annotations

import importlib
import sys

SUITES = ("bench.engine", "bench.crisis", "bench.schedule", "bench.messages", "bench.delivery")


def main(names: list[str]) -> None:
    for name in names or SUITES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            print(f"(skipped {name}: {exc})\n")
            continue
        print(module.report(), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
