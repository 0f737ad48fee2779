"""Check-in streaks, as coaches count them: days in a row, today included. A client who chose
their check-in days (a weekday mask, Monday = bit 0; None is every day) keeps their streak
over the days they did not choose: the streak counts their chosen days in a row."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, timedelta

from bot.schedule.planning import chosen_day


def previous_chosen(day: date, chosen: int | None = None) -> date:
    """The last chosen day before ``day`` (the day before, for every day)."""
    before = day - timedelta(days=1)
    while not chosen_day(chosen, before.weekday()):
        before -= timedelta(days=1)
    return before


def streak(checkin_dates: Iterable[date], today: date,
           chosen: int | None = None) -> tuple[int, int]:
    """(current, best). The current streak counts today, since it is read during today's
    check-in, plus the unbroken run of chosen days with a check-in just before it."""
    days = set(checkin_dates)
    current = 1 + run_through(days, previous_chosen(today, chosen), chosen)
    return current, max(current, best_run(days, chosen))


def run_through(checkin_dates: set[date], last: date, chosen: int | None = None) -> int:
    """The chosen days with a check-in in a row that end on ``last`` (0 if ``last`` has none)."""
    length = 0
    while last in checkin_dates:
        length += 1
        last = previous_chosen(last, chosen)
    return length


def best_run(checkin_dates: Iterable[date], chosen: int | None = None) -> int:
    """The longest run of chosen days with a check-in (0 without any)."""
    counted = {day for day in checkin_dates if chosen_day(chosen, day.weekday())}
    # A run ends on a day that is no other counted day's previous chosen day.
    continued = {previous_chosen(day, chosen) for day in counted}
    return max((run_through(counted, day, chosen) for day in counted - continued), default=0)
