"""Timing helpers: best of several runs, and tables with the baseline of the same run."""

from __future__ import annotations

import platform
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime


def best_of(runs: int, work: Callable[[], object]) -> float:
    """The fastest of `runs` timings, in seconds: the least disturbed by a noisy machine."""
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


def machine() -> str:
    return (f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, "
            f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC")


def table(title: str, header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [list(map(str, header))] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = [f"## {title}", "",
             "| " + " | ".join(h.ljust(w) for h, w in zip(cells[0], widths, strict=True)) + " |",
             "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    lines += ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"
              for row in cells[1:]]
    return "\n".join(lines) + "\n"
