"""A coaching session as a calendar file (.ics) the client adds to their phone's calendar.

Every version of a session carries the same UID and a higher SEQUENCE, so a calendar app
updates the event it already has; a cancelled session is sent as a cancelled event. The start
is written in the zone of whoever set it (with its VTIMEZONE), so the calendar shows the right
instant wherever the client is.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from icalendar import Calendar, Event

from bot.schedule.planning import wall_to_utc, zone_of

PRODID = "-//coachbot//sessions//EN"


@dataclass(frozen=True)
class CalendarSession:
    """What a calendar needs to know of a session (no ORM, no I/O)."""

    uid: str
    sequence: int
    local_start: datetime  # naive wall clock in ``zone``
    zone: str
    minutes: int
    summary: str  # in the client's language
    location: str | None
    cancelled: bool
    stamp: datetime  # when this version was made (UTC)


def session_ics(*sessions: CalendarSession) -> bytes:
    """The .ics file of sessions (one, or a series); a cancellation when they are cancelled."""
    calendar = Calendar()
    calendar.add("prodid", PRODID)
    calendar.add("version", "2.0")
    calendar.add("method", "CANCEL" if all(s.cancelled for s in sessions) else "PUBLISH")
    for session in sessions:
        calendar.add_component(_event(session))
    calendar.add_missing_timezones()
    ics: bytes = calendar.to_ical()
    return ics


def _event(session: CalendarSession) -> Event:
    event = Event()
    # The wall clock the setter chose, as it really happens (a time in a spring-forward gap
    # is moved like every other planned time).
    start = wall_to_utc(session.local_start.date(),
                        session.local_start.hour * 60 + session.local_start.minute,
                        zone_of(session.zone)).astimezone(zone_of(session.zone))
    event.add("uid", session.uid)
    event.add("sequence", session.sequence)
    event.add("dtstamp", session.stamp)
    event.add("dtstart", start)
    event.add("dtend", start + timedelta(minutes=session.minutes))
    event.add("summary", session.summary)
    if session.location:
        event.add("location", session.location)
    event.add("status", "CANCELLED" if session.cancelled else "CONFIRMED")
    return event
