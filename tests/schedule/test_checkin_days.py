"""The daily check-in comes only on the days the client chose, in their time zone."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from bot.i18n import working_days
from bot.schedule.planner import _Batch, _Planner
from bot.schedule.planning import (
    EVERY_DAY,
    Profile,
    chosen_day,
    daily_allowed_on,
    days_mask,
    every_day,
    mask_days,
    next_daily,
)

WEEK = timedelta(days=8)
MON_FRI = days_mask(range(5))


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def test_masks() -> None:
    assert MON_FRI == 0b0011111
    assert mask_days(MON_FRI) == (0, 1, 2, 3, 4)
    assert mask_days(None) == tuple(range(7))
    assert every_day(None) and every_day(EVERY_DAY) and not every_day(MON_FRI)
    assert chosen_day(None, 5) and not chosen_day(MON_FRI, 5) and chosen_day(MON_FRI, 0)


def test_weekday_client_on_friday_evening_gets_monday() -> None:
    profile = Profile("Europe/Rome", checkin_hour=9, checkin_days=MON_FRI)
    friday_evening = utc(2026, 6, 5, 18, 0)  # 20:00 in Rome
    assert next_daily(profile, friday_evening, horizon=WEEK) == utc(2026, 6, 8, 7, 0)
    # Not within two days: planned later, when Monday comes into the horizon.
    assert next_daily(profile, friday_evening, horizon=timedelta(days=2)) is None
    every = Profile("Europe/Rome", checkin_hour=9)
    assert next_daily(every, friday_evening, horizon=WEEK) == utc(2026, 6, 6, 7, 0)


def test_israel_sunday_to_thursday() -> None:
    days = days_mask(working_days("IL"))
    assert mask_days(days) == (0, 1, 2, 3, 6)
    profile = Profile("Asia/Jerusalem", checkin_hour=8, checkin_days=days)
    thursday = utc(2026, 6, 4, 6, 0)  # 09:00 in Israel, after the day's check-in
    sunday = utc(2026, 6, 7, 5, 0)  # 08:00 IDT
    assert next_daily(profile, thursday, horizon=WEEK) == sunday
    dues = []
    now = utc(2026, 6, 1, 0, 0)
    for _ in range(6):
        due = next_daily(profile, now, horizon=WEEK)
        assert due is not None
        dues.append(due)
        now = due
    assert [d.astimezone(profile.zone).strftime("%a") for d in dues] == [
        "Mon", "Tue", "Wed", "Thu", "Sun", "Mon"]


def test_chosen_day_across_the_spring_forward_gap() -> None:
    sundays = days_mask([6])
    profile = Profile("Europe/Rome", checkin_hour=2, checkin_minute=30, checkin_days=sundays)
    # 02:30 does not exist on 29 March 2026 in Rome: 03:00 CEST, once, on the Sunday.
    assert next_daily(profile, utc(2026, 3, 27, 12, 0), horizon=WEEK) == utc(2026, 3, 29, 1, 0)
    # and after the fall back, the Sunday at 02:30 CET
    assert next_daily(profile, utc(2026, 10, 23, 12, 0), horizon=WEEK) == \
        utc(2026, 10, 25, 0, 30)


def test_a_day_counts_by_when_the_check_in_falls_after_quiet_hours() -> None:
    profile = Profile("UTC", checkin_hour=23, quiet_start=22 * 60, quiet_end=7 * 60,
                      checkin_days=MON_FRI)
    # Friday's 23:00 moves to Saturday 07:00 (not chosen); Sunday's to Monday 07:00.
    assert next_daily(profile, utc(2026, 6, 5, 8, 0), horizon=WEEK) == utc(2026, 6, 8, 7, 0)
    assert not daily_allowed_on(profile, utc(2026, 6, 6, 7, 0), None, 0)
    assert daily_allowed_on(profile, utc(2026, 6, 8, 7, 0), None, 0)


def test_pause_then_the_next_chosen_day() -> None:
    mon_wed = days_mask([0, 2])
    profile = Profile("UTC", checkin_hour=9, checkin_days=mon_wed,
                      paused_until=utc(2026, 6, 8, 12, 0))  # Monday noon
    assert next_daily(profile, utc(2026, 6, 5, 12, 0), horizon=WEEK) == utc(2026, 6, 10, 9, 0)


def test_gentler_rhythm_then_the_next_chosen_day() -> None:
    profile = Profile("Europe/Rome", checkin_hour=9, checkin_days=MON_FRI)
    thursday = utc(2026, 6, 4, 7, 0)
    # Every other day: Saturday at the earliest, so Monday.
    assert next_daily(profile, thursday, last_started=thursday, unanswered=3,
                      horizon=WEEK) == utc(2026, 6, 8, 7, 0)
    # Weekly: the Thursday after.
    assert next_daily(profile, thursday, last_started=thursday, unanswered=6,
                      horizon=WEEK) == utc(2026, 6, 11, 7, 0)
    # Answered: the next chosen day.
    assert next_daily(profile, thursday, last_started=thursday, horizon=WEEK) == \
        utc(2026, 6, 5, 7, 0)
    assert not daily_allowed_on(profile, utc(2026, 6, 6, 7, 0), thursday, 0)
    assert not daily_allowed_on(profile, utc(2026, 6, 5, 7, 0), thursday, 3)
    assert daily_allowed_on(profile, utc(2026, 6, 8, 7, 0), thursday, 3)


def test_bulk_planner_keeps_profiles_apart_by_their_days() -> None:
    friday_evening = utc(2026, 6, 5, 18, 0)
    users = [(1, "Europe/Rome", 9, None, None, None, 0, None),
             (2, "Europe/Rome", 9, None, None, None, 0, MON_FRI),
             (3, "Europe/Rome", 9, None, None, None, 0, EVERY_DAY)]
    created = utc(2026, 6, 1, 8, 0)
    batch = _Batch(users, {uid: [(uid, created)] for uid in (1, 2, 3)}, {}, {}, set())
    rows = _Planner(friday_evening, WEEK).rows(batch)
    dailies = {uid: due for uid, kind, _, due in rows if kind == "daily"}
    assert dailies == {1: utc(2026, 6, 6, 7, 0), 2: utc(2026, 6, 8, 7, 0),
                       3: utc(2026, 6, 6, 7, 0)}
    assert date(2026, 6, 8).weekday() == 0
