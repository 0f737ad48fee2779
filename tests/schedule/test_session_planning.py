"""Session planning rules across time zones and daylight saving, and the calendar file read
back by the icalendar library at the right instant."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from icalendar import Calendar

from bot.coaching.calendar import CalendarSession, session_ics
from bot.schedule.planning import Profile
from bot.schedule.sessions import (
    Planned,
    Repeat,
    after_due,
    group_plan,
    member_plan,
    prep_due,
    reminder_due,
    series,
    session_plan,
    start_utc,
)
from bot.store.kinds import SESSION_KINDS, CheckinKind

ROME = Profile(time_zone="Europe/Rome", checkin_hour=8)
NEW_YORK = Profile(time_zone="America/New_York", checkin_hour=9)
COACH, CLIENT = 1, 2


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def test_a_weekly_series_keeps_its_wall_clock_across_the_setters_dst_change() -> None:
    # A coach in Rome sets Mondays 18:00 from 23 March 2026; Europe moves to summer time on
    # the 29th, New York already did on the 8th.
    starts = [start_utc(s, "Europe/Rome")
              for s in series(datetime(2026, 3, 23, 18, 0), Repeat.WEEKLY, 3)]
    assert starts == [utc(2026, 3, 23, 17), utc(2026, 3, 30, 16), utc(2026, 4, 6, 16)]
    # The client in New York sees 13:00 and then 12:00: the session moved for them only.
    assert [s.astimezone(NEW_YORK.zone).hour for s in starts] == [13, 12, 12]
    fortnightly = series(datetime(2026, 3, 23, 18, 0), Repeat.FORTNIGHTLY, 2)
    assert fortnightly[1] == datetime(2026, 4, 6, 18, 0)
    assert series(datetime(2026, 3, 23, 18, 0), Repeat.ONCE, 6) == [datetime(2026, 3, 23, 18)]


def test_a_series_set_in_new_york_crosses_the_autumn_change_there() -> None:
    starts = [start_utc(s, "America/New_York")
              for s in series(datetime(2026, 10, 26, 8, 30), Repeat.WEEKLY, 2)]
    # 08:30 EDT (UTC-4), then 08:30 EST (UTC-5) after 1 November.
    assert starts == [utc(2026, 10, 26, 12, 30), utc(2026, 11, 2, 13, 30)]
    # For the client in Rome (summer time ended 25 October) that is 13:30, then 14:30.
    assert [s.astimezone(ROME.zone).strftime("%H:%M") for s in starts] == ["13:30", "14:30"]


def test_a_start_in_the_spring_forward_gap_moves_to_the_end_of_the_gap() -> None:
    assert start_utc(datetime(2026, 3, 29, 2, 30), "Europe/Rome") == utc(2026, 3, 29, 1)


def test_the_plan_of_a_session_for_a_coach_and_a_client_in_different_zones() -> None:
    starts = utc(2026, 3, 30, 16)  # 18:00 in Rome, 12:00 in New York
    now = utc(2026, 3, 20)
    plan = session_plan(starts, 60, coach_id=COACH, coach=ROME, client_id=CLIENT,
                        client=NEW_YORK, now=now)
    assert plan == [
        # The day before at the client's 09:00 check-in time (EDT).
        Planned(CLIENT, CheckinKind.SESSION_PREP, utc(2026, 3, 29, 13)),
        Planned(CLIENT, CheckinKind.SESSION_REMINDER, utc(2026, 3, 30, 15)),
        Planned(COACH, CheckinKind.SESSION_REMINDER, utc(2026, 3, 30, 15)),
        Planned(CLIENT, CheckinKind.SESSION_RECAP, utc(2026, 3, 30, 17)),
        Planned(COACH, CheckinKind.SESSION_OUTCOME, utc(2026, 3, 30, 17)),
    ]
    # What the starter knows; the brief rides on the coach's reminder an hour before.
    assert sorted({p.work for p in plan} | {CheckinKind.SESSION_BRIEF}) == sorted(SESSION_KINDS)
    # Nothing in the past: once the session started, only what follows it.
    later = session_plan(starts, 60, coach_id=COACH, coach=ROME, client_id=CLIENT,
                         client=NEW_YORK, now=starts)
    assert [p.work for p in later] == [CheckinKind.SESSION_RECAP, CheckinKind.SESSION_OUTCOME]


def test_quiet_hours_bring_a_reminder_forward_and_hold_a_recap_back() -> None:
    tokyo = Profile(time_zone="Asia/Tokyo", checkin_hour=7, quiet_start=22 * 60,
                    quiet_end=7 * 60)
    starts = datetime(2026, 5, 12, 7, 30, tzinfo=tokyo.zone)  # 06:30 would be quiet
    assert reminder_due(starts, tokyo).astimezone(tokyo.zone) == datetime(
        2026, 5, 11, 22, 0, tzinfo=tokyo.zone)
    late = datetime(2026, 5, 12, 21, 30, tzinfo=tokyo.zone)  # over at 22:30: quiet
    assert after_due(late, 60, tokyo).astimezone(tokyo.zone) == datetime(
        2026, 5, 13, 7, 0, tzinfo=tokyo.zone)
    assert after_due(starts, 60, tokyo) == starts + timedelta(hours=1)
    # The day before at 07:00 is before the session; a check-in time after an early
    # session's start the day before still counts, one on the same day would not.
    assert prep_due(starts, tokyo) == datetime(2026, 5, 11, 7, 0, tzinfo=tokyo.zone)


def test_the_calendar_file_reads_back_at_the_right_instant_and_updates_the_same_event() -> None:
    made = utc(2026, 3, 1)
    base = CalendarSession(uid="s-1@coachbot", sequence=0,
                           local_start=datetime(2026, 3, 30, 18, 0), zone="Europe/Rome",
                           minutes=45, summary="Coaching session", location="Via Roma 1",
                           cancelled=False, stamp=made)
    [event] = Calendar.from_ical(session_ics(base)).walk("VEVENT")
    assert event.decoded("dtstart").astimezone(UTC) == utc(2026, 3, 30, 16)
    assert event.decoded("dtend").astimezone(UTC) == utc(2026, 3, 30, 16, 45)
    assert str(event["uid"]) == "s-1@coachbot" and int(event["sequence"]) == 0
    assert str(event["status"]) == "CONFIRMED" and str(event["location"]) == "Via Roma 1"
    calendar = Calendar.from_ical(session_ics(base))
    assert [str(tz["tzid"]) for tz in calendar.walk("VTIMEZONE")] == ["Europe/Rome"]

    moved = CalendarSession(**{**base.__dict__, "sequence": 1,
                               "local_start": datetime(2026, 3, 31, 9, 0)})
    [event] = Calendar.from_ical(session_ics(moved)).walk("VEVENT")
    assert (str(event["uid"]), int(event["sequence"])) == ("s-1@coachbot", 1)
    assert event.decoded("dtstart").astimezone(UTC) == utc(2026, 3, 31, 7)

    cancelled = CalendarSession(**{**base.__dict__, "sequence": 2, "cancelled": True})
    calendar = Calendar.from_ical(session_ics(cancelled))
    [event] = calendar.walk("VEVENT")
    assert str(calendar["method"]) == "CANCEL" and str(event["status"]) == "CANCELLED"
    assert int(event["sequence"]) == 2


def test_a_group_sessions_rows_each_member_in_their_own_quiet_hours_and_the_chat_once() -> None:
    # 07:30 in Rome on the first Monday of summer time: 05:30 UTC, reminders at 04:30 UTC.
    starts = start_utc(datetime(2026, 3, 30, 7, 30), "Europe/Rome")
    assert starts == utc(2026, 3, 30, 5, 30)
    sleeper = Profile(time_zone="America/New_York", checkin_hour=9, quiet_start=22 * 60,
                      quiet_end=7 * 60)  # 00:30 in New York: inside their night
    early = Profile(time_zone="Asia/Jerusalem", checkin_hour=7)  # 07:30 there: no quiet hours
    # 22:00 the evening before, when their night begins.
    assert member_plan(starts, client_id=CLIENT, client=sleeper, now=utc(2026, 3, 1)) == [
        Planned(CLIENT, CheckinKind.SESSION_REMINDER, utc(2026, 3, 30, 2))]
    assert member_plan(starts, client_id=3, client=early, now=utc(2026, 3, 1)) == [
        Planned(3, CheckinKind.SESSION_REMINDER, utc(2026, 3, 30, 4, 30))]
    assert member_plan(starts, client_id=3, client=early, now=utc(2026, 3, 30, 4, 30)) == []
    # The coach's own reminder and the chat's, exactly an hour before (a chat has no night).
    coach = Profile(time_zone="Europe/Rome", checkin_hour=8, quiet_start=23 * 60,
                    quiet_end=7 * 60 + 15)
    assert group_plan(starts, coach_id=COACH, coach=coach, now=utc(2026, 3, 1)) == [
        Planned(COACH, CheckinKind.GROUP_SESSION, utc(2026, 3, 29, 21)),
        Planned(COACH, CheckinKind.GROUP_CHAT, utc(2026, 3, 30, 4, 30))]


def test_the_coachs_lead_time_sets_both_reminders_across_zones_and_quiet_hours() -> None:
    sleeper = Profile(time_zone="America/New_York", checkin_hour=9, quiet_start=22 * 60,
                      quiet_end=7 * 60)
    evening = utc(2026, 3, 30, 16)  # 18:00 in Rome (summer time since the 29th), 12:00 EDT
    now = utc(2026, 3, 1)

    def reminders(starts: datetime, before: timedelta) -> list[Planned]:
        return [p for p in session_plan(starts, 60, coach_id=COACH, coach=ROME,
                                        client_id=CLIENT, client=sleeper, now=now,
                                        before=before)
                if p.work == CheckinKind.SESSION_REMINDER]

    assert [p.due_at for p in reminders(evening, timedelta(minutes=15))] == [
        utc(2026, 3, 30, 15, 45)] * 2
    assert [p.due_at for p in reminders(evening, timedelta(hours=3))] == [
        utc(2026, 3, 30, 13)] * 2  # 15:00 in Rome, 09:00 in New York
    # A day is the day before at the session's own time in each one's zone.
    assert [p.due_at for p in reminders(evening, timedelta(days=1))] == [
        utc(2026, 3, 29, 16)] * 2
    # Also when the clocks change in between: Rome springs forward in the night of the 29th,
    # so 18:00 on the 29th (16:00 UTC) has its reminder at 18:00 on the 28th (17:00 UTC,
    # not 24 hours before); New York changed weeks before, so 12:00 there is 16:00 UTC.
    sunday = utc(2026, 3, 29, 16)
    assert sorted(p.due_at for p in reminders(sunday, timedelta(days=1))) == [
        utc(2026, 3, 28, 16), utc(2026, 3, 28, 17)]
    # The brief keeps its hour: on a row of its own when the reminders come at another time.
    three = session_plan(evening, 60, coach_id=COACH, coach=ROME, client_id=CLIENT,
                         client=sleeper, now=now, before=timedelta(hours=3))
    assert [p for p in three if p.work == CheckinKind.SESSION_BRIEF] == [
        Planned(COACH, CheckinKind.SESSION_BRIEF, utc(2026, 3, 30, 15))]
    assert not [p for p in session_plan(evening, 60, coach_id=COACH, coach=ROME,
                                        client_id=CLIENT, client=sleeper, now=now)
                if p.work == CheckinKind.SESSION_BRIEF]
    # 08:00 in Rome is 02:00 in New York: three hours before is 23:00 there, in the night,
    # so the client's comes at 22:00 when it begins; the coach's at 05:00 in Rome.
    morning = start_utc(datetime(2026, 3, 30, 8), "Europe/Rome")
    assert reminders(morning, timedelta(hours=3)) == [
        Planned(CLIENT, CheckinKind.SESSION_REMINDER, utc(2026, 3, 30, 2)),
        Planned(COACH, CheckinKind.SESSION_REMINDER, utc(2026, 3, 30, 3))]
    # A member's copy and the coach's own reminder of a group session follow the lead; the
    # chat's stays an hour before, as its text says.
    assert member_plan(evening, client_id=CLIENT, client=sleeper, now=now,
                       before=timedelta(days=1)) == [
        Planned(CLIENT, CheckinKind.SESSION_REMINDER, utc(2026, 3, 29, 16))]
    assert group_plan(evening, coach_id=COACH, coach=ROME, now=now,
                      before=timedelta(minutes=30)) == [
        Planned(COACH, CheckinKind.GROUP_CHAT, utc(2026, 3, 30, 15)),
        Planned(COACH, CheckinKind.GROUP_SESSION, utc(2026, 3, 30, 15, 30))]
