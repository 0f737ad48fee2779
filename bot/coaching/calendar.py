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

from bot.schedule.planning import zone_of

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


def session_ics(session: CalendarSession) -> bytes:
    """The .ics file of one session (a REQUEST, or a CANCEL when it is cancelled)."""
    calendar = Calendar()
    calendar.add("prodid", PRODID)
    calendar.add("version", "2.0")
    calendar.add("method", "CANCEL" if session.cancelled else "PUBLISH")
    event = Event()
    start = session.local_start.replace(tzinfo=zone_of(session.zone))
    event.add("uid", session.uid)
    event.add("sequence", session.sequence)
    event.add("dtstamp", session.stamp)
    event.add("dtstart", start)
    event.add("dtend", start + timedelta(minutes=session.minutes))
    event.add("summary", session.summary)
    if session.location:
        event.add("location", session.location)
    event.add("status", "CANCELLED" if session.cancelled else "CONFIRMED")
    calendar.add_component(event)
    calendar.add_missing_timezones()
    ics: bytes = calendar.to_ical()
    return ics
