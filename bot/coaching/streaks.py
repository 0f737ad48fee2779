"""Check-in streaks, as coaches count them: days in a row, today included."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, timedelta


def streak(checkin_days: Iterable[date], today: date) -> tuple[int, int]:
    """(current, best). The current streak counts today, since it is read during today's
    check-in, plus the unbroken run of days with a check-in just before it."""
    days = set(checkin_days)
    current = 1
    while today - timedelta(days=current) in days:
        current += 1
    best = current
    for day in days:
        if day - timedelta(days=1) in days:
            continue  # not the start of a run
        length = 1
        while day + timedelta(days=length) in days:
            length += 1
        best = max(best, length)
    return current, best
