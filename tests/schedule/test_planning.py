"""Planning rules with a controlled clock: DST both ways in two zones, quiet hours, pause,
the gentler rhythm, weekly reviews and exercise schedules."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.schedule.planning import (
    MINUTES_PER_DAY,
    Profile,
    daily_allowed_on,
    exercises,
    next_daily,
    occurrence,
    rhythm_days,
    wall_to_utc,
    weekly_reviews,
    zone_of,
)


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def dailies(profile: Profile, start: datetime, days: int) -> list[datetime]:
    """Successive daily check-ins as the scheduler would produce them (each started)."""
    out: list[datetime] = []
    now = start
    for _ in range(days):
        due = next_daily(profile, now, last_started=out[-1] if out else None)
        assert due is not None
        out.append(due)
        now = due
    return out


# Real transitions: Rome 2026-03-29 / 2026-10-25 / 2027-03-28 / 2027-10-31 (at 02:00/03:00),
# New York 2026-03-08 / 2026-11-01 / 2027-03-14 / 2027-11-07 (at 02:00).
SPRING = [("Europe/Rome", date(2026, 3, 29)), ("Europe/Rome", date(2027, 3, 28)),
          ("America/New_York", date(2026, 3, 8)), ("America/New_York", date(2027, 3, 14))]
FALL = [("Europe/Rome", date(2026, 10, 25), 2), ("Europe/Rome", date(2027, 10, 31), 2),
        ("America/New_York", date(2026, 11, 1), 1), ("America/New_York", date(2027, 11, 7), 1)]


@pytest.mark.parametrize(("zone", "day"), SPRING)
def test_spring_forward_gap_moves_to_the_end_of_the_gap_once(zone: str, day: date) -> None:
    z = ZoneInfo(zone)
    due = wall_to_utc(day, 2 * 60 + 30, z)  # 02:30 does not exist that day
    local = due.astimezone(z)
    assert (local.date(), local.hour, local.minute) == (day, 3, 0)
    # A 02:00 daily check-in around that day: exactly one per local day, 03:00 on the day.
    profile = Profile(zone, checkin_hour=2)
    start = datetime.combine(day - timedelta(days=3), datetime.min.time(), tzinfo=z)
    dues = dailies(profile, start.astimezone(UTC), 6)
    days = [d.astimezone(z).date() for d in dues]
    assert days == [day - timedelta(days=3) + timedelta(days=i) for i in range(6)]
    hours = {d.astimezone(z).date(): d.astimezone(z).hour for d in dues}
    assert hours[day] == 3
    assert all(h == 2 for d, h in hours.items() if d != day)


def test_spring_forward_with_quiet_hours_ending_at_0230() -> None:
    profile = Profile("Europe/Rome", checkin_hour=1, quiet_start=0, quiet_end=150)
    due = occurrence(date(2026, 3, 29), 60, profile)
    assert due == utc(2026, 3, 29, 1, 0)  # 03:00 CEST
    assert due.astimezone(ZoneInfo("Europe/Rome")).hour == 3


@pytest.mark.parametrize(("zone", "day", "hour"), FALL)
def test_fall_back_ambiguous_hour_happens_once(zone: str, day: date, hour: int) -> None:
    z = ZoneInfo(zone)
    profile = Profile(zone, checkin_hour=hour)  # this wall hour happens twice that day
    start = datetime.combine(day - timedelta(days=3), datetime.min.time(), tzinfo=z)
    dues = dailies(profile, start.astimezone(UTC), 6)
    days = [d.astimezone(z).date() for d in dues]
    assert days == sorted(set(days)) and day in days
    on_day = next(d for d in dues if d.astimezone(z).date() == day)
    first, second = (datetime.combine(day, datetime.min.time()).replace(hour=hour, tzinfo=z,
                                                                        fold=f) for f in (0, 1))
    assert on_day == first.astimezone(UTC) != second.astimezone(UTC)
    assert all(d.astimezone(z).hour == hour for d in dues)


def test_quiet_hours_shift_to_the_end_of_the_window() -> None:
    now = utc(2026, 6, 1, 0, 0)
    plain = Profile("UTC", checkin_hour=9, quiet_start=8 * 60, quiet_end=10 * 60 + 15)
    assert next_daily(plain, now) == utc(2026, 6, 1, 10, 15)
    wrapping = Profile("UTC", checkin_hour=23, quiet_start=22 * 60, quiet_end=7 * 60)
    assert next_daily(wrapping, now) == utc(2026, 6, 1, 7, 0)  # yesterday's, moved to today
    early = Profile("UTC", checkin_hour=6, quiet_start=22 * 60, quiet_end=7 * 60)
    assert next_daily(early, now) == utc(2026, 6, 1, 7, 0)
    outside = Profile("UTC", checkin_hour=12, quiet_start=22 * 60, quiet_end=7 * 60)
    assert next_daily(outside, now) == utc(2026, 6, 1, 12, 0)
    empty = Profile("UTC", checkin_hour=12, quiet_start=300, quiet_end=300)
    assert next_daily(empty, now) == utc(2026, 6, 1, 12, 0)


def test_wrapping_quiet_hours_still_one_check_in_a_day() -> None:
    profile = Profile("UTC", checkin_hour=23, quiet_start=22 * 60, quiet_end=7 * 60)
    dues = dailies(profile, utc(2026, 6, 1), 5)
    assert [d.date() for d in dues] == [date(2026, 6, i) for i in range(1, 6)]
    assert all(d.hour == 7 for d in dues)


def test_quiet_hours_in_local_time() -> None:
    profile = Profile("America/New_York", checkin_hour=7, quiet_start=0, quiet_end=8 * 60)
    assert next_daily(profile, utc(2026, 7, 1)) == utc(2026, 7, 1, 12, 0)  # 08:00 EDT


def test_never_while_paused() -> None:
    now = utc(2026, 6, 1, 0, 0)
    paused = Profile("UTC", checkin_hour=9, paused_until=utc(2026, 6, 4, 12, 0))
    assert next_daily(paused, now) == utc(2026, 6, 5, 9, 0)
    assert next_daily(paused, now, horizon=timedelta(days=2)) is None
    goal_created = utc(2026, 5, 28, 8, 0)
    assert weekly_reviews(paused, goal_created, now, timedelta(days=10)) == []
    sched = {"kind": "daily", "hour": 8, "days": 14}
    dues = exercises(paused, sched, date(2026, 6, 1), None, now, timedelta(days=6))
    assert dues[0] == utc(2026, 6, 5, 8, 0)


def test_gentler_rhythm_after_unanswered_check_ins() -> None:
    assert [rhythm_days(n) for n in range(9)] == [1, 1, 1, 2, 2, 2, 7, 7, 7]
    profile = Profile("Europe/Rome", checkin_hour=9)
    last = utc(2026, 6, 10, 7, 0)  # 09:00 CEST
    assert next_daily(profile, last, last_started=last, unanswered=2) == utc(2026, 6, 11, 7, 0)
    assert next_daily(profile, last, last_started=last, unanswered=3) == utc(2026, 6, 12, 7, 0)
    assert next_daily(profile, last, last_started=last, unanswered=6) == utc(2026, 6, 17, 7, 0)
    # After downtime the gentle rhythm never makes it due earlier than now.
    later = utc(2026, 6, 20, 12, 0)
    assert next_daily(profile, later, last_started=last, unanswered=3) == utc(2026, 6, 21, 7, 0)
    # Checked again when a check-in is started.
    assert daily_allowed_on(profile, utc(2026, 6, 11, 7, 0), last, 2)
    assert not daily_allowed_on(profile, utc(2026, 6, 11, 7, 0), last, 3)
    assert daily_allowed_on(profile, utc(2026, 6, 12, 7, 0), last, 3)
    assert daily_allowed_on(profile, utc(2026, 6, 11, 7, 0), None, 9)


def test_weekly_review_every_seven_days_after_creation() -> None:
    profile = Profile("America/New_York", checkin_hour=18)
    created = utc(2026, 10, 20, 15, 0)  # 11:00 EDT on 20 October
    dues = weekly_reviews(profile, created, created, timedelta(days=22))
    local = [d.astimezone(ZoneInfo("America/New_York")) for d in dues]
    assert [d.date() for d in local] == [date(2026, 10, 27), date(2026, 11, 3),
                                         date(2026, 11, 10)]
    assert all(d.hour == 18 for d in local)  # across the fall-back on 1 November
    assert weekly_reviews(profile, created, created, timedelta(days=6)) == []


def test_exercise_schedules() -> None:
    profile = Profile("Europe/Rome")
    now = utc(2026, 6, 1)
    daily = {"kind": "daily", "hour": 8, "days": 3}
    dues = exercises(profile, daily, date(2026, 6, 2), None, now, timedelta(days=10))
    assert dues == [utc(2026, 6, d, 6, 0) for d in (2, 3, 4)]
    weekdays = {"kind": "weekdays", "hour": 8, "weekdays": [0, 2, 4]}  # 1 June 2026: Monday
    dues = exercises(profile, weekdays, date(2026, 6, 1), date(2026, 6, 10), now,
                     timedelta(days=30))
    assert [d.day for d in dues] == [1, 3, 5, 8, 10]
    assert exercises(profile, {"kind": "monthly"}, date(2026, 6, 1), None, now,
                     timedelta(days=30)) == []


ZONES = ("Europe/Rome", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata", "UTC",
         "America/Sao_Paulo", "Pacific/Chatham", "No/Such_Zone")


@settings(max_examples=300, deadline=None)
@given(zone=st.sampled_from(ZONES), day=st.dates(date(2025, 1, 1), date(2028, 12, 31)),
       minute=st.integers(0, MINUTES_PER_DAY - 1))
def test_cached_local_times_are_the_rule(zone: str, day: date, minute: int) -> None:
    """Planning caches zones and local times (it asks the same few for every user): a cached
    answer is the rule's answer computed afresh, with an uncached zone object."""
    cached = wall_to_utc(day, minute, zone_of(zone))
    try:
        fresh_zone = ZoneInfo.no_cache(zone)
    except (ZoneInfoNotFoundError, ValueError):
        fresh_zone = ZoneInfo.no_cache("UTC")
    assert cached == wall_to_utc.__wrapped__(day, minute, fresh_zone)
    assert wall_to_utc(day, minute, zone_of(zone)) is cached


@pytest.mark.parametrize(("zone", "day"), SPRING)
def test_cached_gap_answer_is_the_same_on_every_call(zone: str, day: date) -> None:
    wall_to_utc.cache_clear()
    z = zone_of(zone)
    first = [wall_to_utc(day, m, z) for m in range(0, MINUTES_PER_DAY, 7)]
    again = [wall_to_utc(day, m, z) for m in range(0, MINUTES_PER_DAY, 7)]
    fresh = [wall_to_utc.__wrapped__(day, m, ZoneInfo.no_cache(zone))
             for m in range(0, MINUTES_PER_DAY, 7)]
    assert first == again == fresh
    assert first == sorted(first)  # local order is kept across the gap
