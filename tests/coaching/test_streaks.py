"""Streaks count the chosen check-in days in a row: a day not chosen never breaks one."""

from __future__ import annotations

from datetime import date, timedelta

from bot.coaching.progress import current_streak
from bot.coaching.streaks import previous_chosen, streak
from bot.schedule.planning import days_mask

MON_FRI = days_mask(range(5))
MONDAY = date(2026, 6, 1)


def days(*offsets: int) -> list[date]:
    return [MONDAY + timedelta(days=n) for n in offsets]


def test_every_day_as_before() -> None:
    assert streak(days(0, 1, 2), MONDAY + timedelta(days=3)) == (4, 4)
    assert streak(days(0, 2), MONDAY + timedelta(days=3)) == (2, 2)
    assert current_streak(days(0, 1, 2), MONDAY + timedelta(days=3)) == (3, 3)
    assert current_streak(days(0, 1), MONDAY + timedelta(days=3)) == (0, 2)


def test_the_weekend_does_not_break_a_weekday_streak() -> None:
    week = days(0, 1, 2, 3, 4)  # Monday to Friday
    next_monday = MONDAY + timedelta(days=7)
    assert previous_chosen(next_monday, MON_FRI) == MONDAY + timedelta(days=4)
    assert streak(week, next_monday, MON_FRI) == (6, 6)
    # Outside a check-in, on Saturday, Sunday and next Monday before it: still five.
    for offset in (5, 6, 7):
        assert current_streak(week, MONDAY + timedelta(days=offset), MON_FRI) == (5, 5)
    # Every day, the weekend breaks it.
    assert streak(week, next_monday) == (1, 5)
    # A chosen day missed breaks it.
    assert current_streak(days(0, 1, 3, 4), next_monday, MON_FRI) == (2, 2)
    assert current_streak(days(0, 1, 2, 3), next_monday, MON_FRI) == (0, 4)


def test_three_times_a_week() -> None:
    mon_wed_fri = days_mask([0, 2, 4])
    checked = days(0, 2, 4, 7, 9)  # two weeks of Monday, Wednesday, Friday but the last
    assert current_streak(checked, MONDAY + timedelta(days=10), mon_wed_fri) == (5, 5)
    assert current_streak(checked, MONDAY + timedelta(days=12), mon_wed_fri) == (0, 5)
    # An extra check-in on a day not chosen neither breaks the run nor lengthens it.
    assert current_streak([*checked, MONDAY + timedelta(days=5)],
                          MONDAY + timedelta(days=10), mon_wed_fri) == (5, 5)
