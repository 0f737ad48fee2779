"""When the work around a coaching session is due: pure functions over plain values.

Rules
-----
* **The session's time** is the wall clock of whoever set it in their IANA zone; a series
  repeats that wall clock (a weekly 18:00 stays 18:00 across daylight saving in that zone,
  and moves for someone in a zone that changes on another date; moving the rest of a
  series shifts each wall clock by the same change). A wall time in a
  spring-forward gap moves to the first minute after it (see ``planning``).
* **Reminder** to each of the two ``before`` the start: the coach's choice (``LEADS``, one
  hour until they choose), the same for both: minutes and hours in elapsed time, a day as
  the session's wall-clock time the day before in each one's zone. One that falls in
  the person's quiet hours comes earlier, when the quiet window begins.
* **The brief** reaches the coach an hour before (``BRIEF_BEFORE``, as the client was told
  when asked to share it): with the coach's reminder when that comes an hour before, else
  on a row of its own, quiet hours respected like a reminder.
* **Preparation** for the client the day before the session (their local day) at their
  check-in time, quiet hours respected; none if that is not before the session.
* **Recap** for the client and the held-or-missed **prompt** for the coach when the session
  is over; inside quiet hours they wait for the end of the window.
* **A group session**: each member's copy plans only the member's reminder (their zone,
  their quiet hours); the group session itself plans the coach's reminder and one in the
  group's linked chat exactly an hour before the start, whatever the coach's choice (its
  text says "in an hour"; a chat has no quiet hours of its own).
* Nothing is planned in the past; the crisis pause is checked when a row is started.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from enum import StrEnum
from zoneinfo import ZoneInfo

from bot.schedule.planning import (
    Profile,
    in_quiet,
    local_date,
    occurrence,
    out_of_quiet,
    wall_to_utc,
    zone_of,
)
from bot.store.kinds import CheckinKind

REMINDER_BEFORE = timedelta(hours=1)
BRIEF_BEFORE = timedelta(hours=1)
#: The reminder lead times a coach can choose, in minutes: 15 min, 30 min, 1 h, 2 h, 3 h, a day.
LEADS = (15, 30, 60, 120, 180, 1440)
MAX_SERIES = 52  # sessions planned at once for a series


class Repeat(StrEnum):
    ONCE = "once"
    WEEKLY = "weekly"
    FORTNIGHTLY = "fortnightly"


REPEAT_EVERY = {Repeat.ONCE: timedelta(0), Repeat.WEEKLY: timedelta(days=7),
                Repeat.FORTNIGHTLY: timedelta(days=14)}


#: The rows a group session plans itself (ref ``g<group session id>``).
GROUP_WORK: tuple[CheckinKind, ...] = (CheckinKind.GROUP_SESSION, CheckinKind.GROUP_CHAT)


def start_utc(local_start: datetime, zone: str) -> datetime:
    """The instant of a wall-clock start (naive) in ``zone``."""
    return wall_to_utc(local_start.date(), local_start.hour * 60 + local_start.minute,
                       zone_of(zone))


def series(first: datetime, repeat: Repeat, count: int) -> list[datetime]:
    """The wall-clock starts of a series: ``count`` of them (1 for a single session)."""
    if repeat is Repeat.ONCE:
        return [first]
    count = max(1, min(count, MAX_SERIES))
    return [first + REPEAT_EVERY[repeat] * n for n in range(count)]


def moved_series(local_starts: Sequence[datetime], old: datetime,
                 new: datetime) -> list[datetime]:
    """The wall-clock starts of the rest of a series when one of them moves from ``old`` to
    ``new`` (all in the zone they were set in): each by the same change of day and
    wall-clock time, so a weekly 18:00 moved to 19:00 stays 19:00 across daylight saving."""
    return [start + (new - old) for start in local_starts]


def _minute(instant: datetime, profile: Profile) -> tuple[date, int]:
    local = instant.astimezone(profile.zone)
    return local.date(), local.hour * 60 + local.minute


def lead_back(starts_at: datetime, before: timedelta, zone: ZoneInfo) -> datetime:
    """``before`` ahead of ``starts_at``, whole days counted on the calendar in ``zone``: a
    day's lead comes at the session's own wall-clock time the day before, also when the
    clocks change in between."""
    days, rest = divmod(before, timedelta(days=1))
    if not days:
        return starts_at - before
    local = starts_at.astimezone(zone)
    return wall_to_utc(local.date() - timedelta(days=days), local.hour * 60 + local.minute,
                       zone) - rest


def reminder_due(starts_at: datetime, profile: Profile,
                 before: timedelta = REMINDER_BEFORE) -> datetime:
    """When the reminder reaches someone with ``profile`` (see the rules)."""
    due = lead_back(starts_at, before, profile.zone)
    day, minute = _minute(due, profile)
    start, end = profile.quiet_start, profile.quiet_end
    if start is None or end is None or not in_quiet(minute, start, end):
        return due
    if start > end and minute < end:  # the morning part of a window that wraps midnight
        day -= timedelta(days=1)
    return wall_to_utc(day, start, profile.zone)


def prep_due(starts_at: datetime, client: Profile) -> datetime | None:
    """The preparation the day before, at the client's check-in time."""
    day_before = local_date(starts_at, client.zone) - timedelta(days=1)
    due = occurrence(day_before, client.checkin_at, client)
    return due if due < starts_at else None


def after_due(starts_at: datetime, minutes: int, profile: Profile) -> datetime:
    """When the session is over, for someone with ``profile`` (quiet hours respected)."""
    day, minute = _minute(starts_at + timedelta(minutes=minutes), profile)
    shifted_day, shifted_minute = out_of_quiet(day, minute, profile)
    if (shifted_day, shifted_minute) == (day, minute):
        return starts_at + timedelta(minutes=minutes)
    return wall_to_utc(shifted_day, shifted_minute, profile.zone)


@dataclass(frozen=True)
class Planned:
    user_id: int
    work: CheckinKind  # one of SESSION_KINDS or GROUP_WORK
    due_at: datetime


def session_plan(starts_at: datetime, minutes: int, *, coach_id: int, coach: Profile,
                 client_id: int, client: Profile, now: datetime,
                 before: timedelta = REMINDER_BEFORE) -> list[Planned]:
    """Every row a scheduled session plans that is still to come, earliest first."""
    rows = [Planned(client_id, CheckinKind.SESSION_REMINDER,
                    reminder_due(starts_at, client, before)),
            Planned(coach_id, CheckinKind.SESSION_REMINDER,
                    reminder_due(starts_at, coach, before)),
            Planned(client_id, CheckinKind.SESSION_RECAP, after_due(starts_at, minutes, client)),
            Planned(coach_id, CheckinKind.SESSION_OUTCOME, after_due(starts_at, minutes, coach))]
    if before != BRIEF_BEFORE:
        rows.append(Planned(coach_id, CheckinKind.SESSION_BRIEF,
                            reminder_due(starts_at, coach, BRIEF_BEFORE)))
    prep = prep_due(starts_at, client)
    if prep is not None:
        rows.append(Planned(client_id, CheckinKind.SESSION_PREP, prep))
    return sorted((r for r in rows if r.due_at > now), key=lambda r: r.due_at)


def member_plan(starts_at: datetime, *, client_id: int, client: Profile, now: datetime,
                before: timedelta = REMINDER_BEFORE) -> list[Planned]:
    """A member's copy of a group session: their own reminder, if still to come."""
    due = reminder_due(starts_at, client, before)
    return [Planned(client_id, CheckinKind.SESSION_REMINDER, due)] if due > now else []


def group_plan(starts_at: datetime, *, coach_id: int, coach: Profile, now: datetime,
               before: timedelta = REMINDER_BEFORE) -> list[Planned]:
    """A group session's own rows: the coach's reminder, and the chat's (sent on the
    coach's behalf, so the row is the coach's), earliest first, those still to come."""
    rows = [Planned(coach_id, CheckinKind.GROUP_SESSION, reminder_due(starts_at, coach, before)),
            Planned(coach_id, CheckinKind.GROUP_CHAT, starts_at - REMINDER_BEFORE)]
    return sorted((r for r in rows if r.due_at > now), key=lambda r: r.due_at)
