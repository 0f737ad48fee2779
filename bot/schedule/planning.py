"""When check-ins are due: pure functions over plain values (no I/O, no clock).

Every rule works on the client's *local wall clock* (an IANA zone, through ``zoneinfo``)
and returns aware UTC datetimes.

Rules
-----
* **Local times.** A wall time that does not exist (the spring-forward gap) moves to the
  first minute after the gap: a 02:30 check-in on 29 March 2026 in Rome happens at 03:00
  CEST, once. A wall time that happens twice (fall-back) is taken at its first occurrence
  (``fold=0``), so it happens once, not twice. There is exactly one daily occurrence per
  local day.
* **Quiet hours** are ``[quiet_start, quiet_end)`` in minutes after local midnight; the
  window may wrap midnight (22:00–07:00). Equal ends mean no quiet hours. A time inside
  the window moves to the end of the window (the next morning for a wrapping window and
  an evening time).
* **Pause.** Nothing is due before ``paused_until``; occurrences inside a pause are dropped,
  not delivered late.
* **Daily check-in** at ``checkin_hour`` local time, one per local day, on the local
  days the client chose (``checkin_days``, a weekday mask with Monday as bit 0; None is
  every day). A day counts by the local date the check-in falls on, after quiet hours.
* **Gentler rhythm.** A check-in counts as *answered* when an answer to the check-in
  dialogue was recorded after it was started (its message put in the outbox) and before
  the next one was started. After 3 unanswered check-ins in a row the next one comes two
  days after the last one (every other day); after 6, seven days after (weekly). Any
  answer resets the count. The rhythm only ever removes messages, never adds: after
  it, the check-in comes on the first chosen day from the day the rhythm allows.
* **Weekly review** of an active goal: 7 days after the goal's creation (its local date),
  then every 7 days, at the check-in hour.
* **Exercises** from an assignment's schedule, in local time, between ``starts_on`` and
  ``ends_on`` (inclusive):
  ``{"kind": "daily", "hour": 8, "days": 14}`` — every day for ``days`` days;
  ``{"kind": "weekdays", "hour": 8, "weekdays": [0, 2, 4]}`` — on those weekdays
  (Monday = 0); ``{"kind": "every", "hour": 8, "every": 3}`` — every third day from
  ``starts_on``. Any schedule may carry ``"minute"`` (0 when absent). Quiet hours and pause
  apply to them too.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bot.store.kinds import ScheduleKind

MINUTES_PER_DAY = 24 * 60
GENTLE_AFTER = 3  # unanswered check-ins in a row before every other day
WEEKLY_AFTER = 6  # ... before weekly
REVIEW_EVERY_DAYS = 7
EVERY_DAY = 0b1111111  # the weekday mask of every day, Monday = bit 0


@dataclass(frozen=True)
class Profile:
    """What planning needs to know about a client."""

    time_zone: str = "UTC"
    checkin_hour: int = 9
    quiet_start: int | None = None
    quiet_end: int | None = None
    paused_until: datetime | None = None
    checkin_minute: int = 0  # of the check-in time: 07:30 is hour 7, minute 30
    checkin_days: int | None = None  # weekday mask, Monday = bit 0; None: every day

    @property
    def checkin_at(self) -> int:
        """The check-in time in minutes after local midnight."""
        return self.checkin_hour * 60 + self.checkin_minute

    @property
    def zone(self) -> ZoneInfo:
        return zone_of(self.time_zone)


@lru_cache(maxsize=4096)
def zone_of(name: str) -> ZoneInfo:
    """The zone called ``name``; UTC for an unknown name. Cached: ``ZoneInfo``'s own cache
    keeps only a few zones alive, and planning asks for one per user."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def local_date(instant: datetime, zone: ZoneInfo) -> date:
    return instant.astimezone(zone).date()


def _exists(wall: datetime, zone: ZoneInfo) -> bool:
    aware = wall.replace(tzinfo=zone, fold=0)
    return aware.astimezone(UTC).astimezone(zone).replace(tzinfo=None) == wall


@lru_cache(maxsize=65536)
def wall_to_utc(day: date, minute: int, zone: ZoneInfo) -> datetime:
    """The UTC instant of local ``day`` at ``minute`` after midnight (see the DST rules).

    Cached: planning asks the same few (day, minute, zone) questions for every user; the
    answer depends on nothing else (``tzdata`` does not change while a process runs)."""
    wall = datetime.combine(day, time()) + timedelta(minutes=minute)
    for _ in range(MINUTES_PER_DAY):  # a gap is at most a few hours long
        if _exists(wall, zone):
            return wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
        wall += timedelta(minutes=1)
    raise ValueError(f"no valid local time after {day} {minute} in {zone}")


def in_quiet(minute: int, start: int | None, end: int | None) -> bool:
    if start is None or end is None or start == end:
        return False
    if start < end:
        return start <= minute < end
    return minute >= start or minute < end


def out_of_quiet(day: date, minute: int, profile: Profile) -> tuple[date, int]:
    """Local (day, minute) moved to the end of the quiet window if it falls inside it."""
    start, end = profile.quiet_start, profile.quiet_end
    if start is None or end is None or not in_quiet(minute, start, end):
        return day, minute
    if start > end and minute >= start:  # evening part of a window that wraps midnight
        return day + timedelta(days=1), end
    return day, end


def occurrence(day: date, minute: int, profile: Profile) -> datetime:
    """The UTC due time of something planned on local ``day`` at ``minute``."""
    shifted_day, shifted_minute = out_of_quiet(day, minute, profile)
    return wall_to_utc(shifted_day, shifted_minute, profile.zone)


def days_mask(weekdays: Iterable[int]) -> int:
    """The mask of ``weekdays`` (Monday = 0)."""
    mask = 0
    for day in weekdays:
        mask |= 1 << day
    return mask


def mask_days(mask: int | None) -> tuple[int, ...]:
    """The weekdays (Monday = 0) of a mask, Monday first; None is every day."""
    return tuple(day for day in range(7) if chosen_day(mask, day))


def chosen_day(mask: int | None, weekday: int) -> bool:
    """Whether a mask (None: every day) holds ``weekday`` (Monday = 0). An empty mask (the
    database refuses it) reads as every day rather than never."""
    return not mask or bool(mask >> weekday & 1)


def every_day(mask: int | None) -> bool:
    return not mask or mask & EVERY_DAY == EVERY_DAY


def allowed(due: datetime, profile: Profile) -> bool:
    return profile.paused_until is None or due >= profile.paused_until


def rhythm_days(unanswered: int) -> int:
    """Days between daily check-ins after ``unanswered`` unanswered ones in a row."""
    if unanswered >= WEEKLY_AFTER:
        return 7
    if unanswered >= GENTLE_AFTER:
        return 2
    return 1


def _days_from(first: date) -> Iterator[date]:
    day = first
    while True:
        yield day
        day += timedelta(days=1)


def earliest_daily_day(
    profile: Profile, last_started: datetime | None, unanswered: int
) -> date | None:
    """The first local day a daily check-in may happen on, given the previous one."""
    if last_started is None:
        return None
    return local_date(last_started, profile.zone) + timedelta(days=rhythm_days(unanswered))


def next_daily(
    profile: Profile,
    now: datetime,
    *,
    last_started: datetime | None = None,
    unanswered: int = 0,
    horizon: timedelta = timedelta(days=8),
) -> datetime | None:
    """The next daily check-in due after ``now`` (and within ``horizon``), or None."""
    earliest = earliest_daily_day(profile, last_started, unanswered)
    return next_daily_from(profile, now, earliest, horizon)


def next_daily_from(profile: Profile, now: datetime, earliest: date | None,
                    horizon: timedelta) -> datetime | None:
    """:func:`next_daily` given the first local day the rhythm allows (None: any day).
    The answer depends on nothing else, so a planner may reuse it for users who share
    ``(profile, earliest)``."""
    zone = profile.zone
    first = local_date(now, zone) - timedelta(days=1)
    if earliest is not None:
        first = max(first, earliest - timedelta(days=1))
    limit = now + horizon
    for day in _days_from(first):
        due = occurrence(day, profile.checkin_at, profile)
        if due > limit:
            return None
        if (due > now and allowed(due, profile)
                and (earliest is None or local_date(due, zone) >= earliest)
                and chosen_day(profile.checkin_days, local_date(due, zone).weekday())):
            return due
    raise AssertionError("unreachable")


def daily_allowed_on(profile: Profile, due: datetime, last_started: datetime | None,
                     unanswered: int) -> bool:
    """Whether the rhythm and the chosen days let a daily check-in due at ``due`` happen
    (checked at start)."""
    earliest = earliest_daily_day(profile, last_started, unanswered)
    day = local_date(due, profile.zone)
    return (earliest is None or day >= earliest) and chosen_day(profile.checkin_days,
                                                                day.weekday())


def weekly_reviews(
    profile: Profile, goal_created: datetime, now: datetime, horizon: timedelta
) -> list[datetime]:
    """Weekly reviews of a goal due in ``(now, now + horizon]``."""
    return weekly_reviews_from(profile, local_date(goal_created, profile.zone), now, horizon)


def weekly_reviews_from(profile: Profile, created: date, now: datetime,
                        horizon: timedelta) -> list[datetime]:
    """:func:`weekly_reviews` of a goal created on local day ``created`` (all it depends
    on, so a planner may reuse the answer for goals that share ``(profile, created)``)."""
    zone = profile.zone
    weeks_before = max(1, (local_date(now, zone) - created).days // REVIEW_EVERY_DAYS)
    dues: list[datetime] = []
    week = weeks_before
    while True:
        due = occurrence(created + timedelta(days=REVIEW_EVERY_DAYS * week),
                         profile.checkin_at, profile)
        if due > now + horizon:
            return dues
        if due > now and allowed(due, profile):
            dues.append(due)
        week += 1


def exercise_days(schedule: Mapping[str, Any], starts_on: date, ends_on: date | None,
                  first: date, last: date) -> Iterator[date]:
    """Local days in ``[first, last]`` on which an assignment's schedule has an exercise."""
    kind = schedule.get("kind")
    end = last if ends_on is None else min(last, ends_on)
    if kind == ScheduleKind.DAILY:
        days = schedule.get("days")
        if isinstance(days, int):
            end = min(end, starts_on + timedelta(days=days - 1))
    day = max(first, starts_on)
    weekdays = set(schedule.get("weekdays") or ())
    every = schedule.get("every")
    while day <= end:
        if kind == ScheduleKind.DAILY or (kind == ScheduleKind.WEEKDAYS
                                        and day.weekday() in weekdays) or (
                kind == ScheduleKind.EVERY and isinstance(every, int) and every > 0
                and (day - starts_on).days % every == 0):
            yield day
        day += timedelta(days=1)


def exercises(
    profile: Profile,
    schedule: Mapping[str, Any],
    starts_on: date,
    ends_on: date | None,
    now: datetime,
    horizon: timedelta,
) -> list[datetime]:
    """An assignment's exercises due in ``(now, now + horizon]``."""
    hour = schedule.get("hour", profile.checkin_hour)
    minute = schedule.get("minute", 0)
    if not isinstance(hour, int) or not 0 <= hour <= 23 \
            or not isinstance(minute, int) or not 0 <= minute <= 59:
        return []
    zone = profile.zone
    first = local_date(now, zone) - timedelta(days=1)
    last = local_date(now + horizon, zone) + timedelta(days=1)
    dues = (occurrence(day, hour * 60 + minute, profile)
            for day in exercise_days(schedule, starts_on, ends_on, first, last))
    return [due for due in dues if now < due <= now + horizon and allowed(due, profile)]


def same_local_day(due: datetime, now: datetime, zone: ZoneInfo) -> bool:
    """Whether something due at ``due`` may still be started at ``now`` (after downtime)."""
    return local_date(due, zone) == local_date(now, zone)
