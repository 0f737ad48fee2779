"""Sessions with a linked client: scheduled one at a time or as a series, moved, cancelled
one or the rest of a series, marked held or missed; the planned rows follow every change,
and export and erase cover them on both backends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from icalendar import Calendar
from sqlalchemy import select

from bot.coaching.coach_errors import NotYourClient
from bot.coaching.sessions import (
    NewSessions,
    SessionNotFound,
    calendar_file,
    cancel_sessions,
    engagement,
    mark_outcome,
    move_rest,
    move_session,
    schedule_sessions,
    set_brief_consent,
    set_reminder_lead,
    upcoming,
)
from bot.i18n import translator_for
from bot.schedule.sessions import Repeat
from bot.store import (
    CoachingSession,
    CoachLink,
    PlannedCheckin,
    SessionMode,
    SessionStatus,
    Store,
    User,
)

NOW = datetime(2026, 3, 20, 12, 0, tzinfo=UTC)
COACH, CLIENT, STRANGER = 1, 2, 3


@pytest.fixture
async def db(store: Store) -> Store:
    async with store.sessionmaker() as s, s.begin():
        s.add(User(id=COACH, is_coach=True, time_zone="Europe/Rome", locale="it",
                   consent_at=NOW))
        s.add(User(id=CLIENT, time_zone="America/New_York", checkin_hour=9, locale="he",
                   consent_at=NOW, quiet_start=22 * 60, quiet_end=7 * 60))
        s.add(User(id=STRANGER, consent_at=NOW))
        await s.flush()
        s.add(CoachLink(coach_id=COACH, client_id=CLIENT, created_at=NOW, consent_at=NOW))
    return store


def weekly(count: int = 3) -> NewSessions:
    return NewSessions(client_id=CLIENT, first=datetime(2026, 3, 23, 18, 0),
                       zone="Europe/Rome", minutes=60, mode=SessionMode.VIDEO,
                       place="https://meet.example/abc", repeat=Repeat.WEEKLY, count=count)


async def _planned(store: Store) -> list[tuple[int, str, str, datetime, str]]:
    async with store.sessionmaker() as s:
        rows = (await s.execute(select(PlannedCheckin).order_by(
            PlannedCheckin.due_at, PlannedCheckin.user_id, PlannedCheckin.kind))).scalars()
        return [(r.user_id, r.kind, r.ref, r.due_at, r.status) for r in rows]


async def test_a_weekly_series_is_stored_as_wall_clock_and_zone_and_plans_its_rows(
        db: Store) -> None:
    async with db.sessionmaker() as s, s.begin():
        created = await schedule_sessions(s, COACH, weekly(), NOW)
    assert [(c.local_start.hour, c.zone) for c in created] == [(18, "Europe/Rome")] * 3
    assert [c.starts_at for c in created] == [
        datetime(2026, 3, 23, 17, tzinfo=UTC), datetime(2026, 3, 30, 16, tzinfo=UTC),
        datetime(2026, 4, 6, 16, tzinfo=UTC)]
    assert len({c.series for c in created}) == 1 and len({c.uid for c in created}) == 3
    planned = await _planned(db)
    first = str(created[0].id)
    assert [(u, k, d) for u, k, ref, d, _ in planned if ref == first] == [
        (CLIENT, "session_prep", datetime(2026, 3, 22, 13, tzinfo=UTC)),  # 09:00 EDT
        (COACH, "session_reminder", datetime(2026, 3, 23, 16, tzinfo=UTC)),
        (CLIENT, "session_reminder", datetime(2026, 3, 23, 16, tzinfo=UTC)),
        (COACH, "session_outcome", datetime(2026, 3, 23, 18, tzinfo=UTC)),
        (CLIENT, "session_recap", datetime(2026, 3, 23, 18, tzinfo=UTC)),
    ]
    assert len(planned) == 15
    async with db.sessionmaker() as s:
        assert [c.id for c in await upcoming(s, CLIENT, NOW)] == [c.id for c in created]
        assert (await engagement(s, COACH, CLIENT)).left == 3


async def test_only_a_linked_client_can_have_sessions(db: Store) -> None:
    async with db.sessionmaker() as s, s.begin():
        with pytest.raises(NotYourClient):
            await schedule_sessions(s, COACH, NewSessions(
                client_id=STRANGER, first=datetime(2026, 3, 23, 18, 0), zone="Europe/Rome",
                minutes=60, mode=SessionMode.PHONE, place=None), NOW)


async def test_moving_a_session_raises_its_sequence_and_replans_it(db: Store) -> None:
    async with db.sessionmaker() as s, s.begin():
        first = (await schedule_sessions(s, COACH, weekly(1), NOW))[0]
    async with db.sessionmaker() as s, s.begin():
        moved = await move_session(s, COACH, first.id, datetime(2026, 3, 24, 9, 0),
                                   "Europe/Rome", NOW)
        assert moved.sequence == 1 and moved.starts_at == datetime(2026, 3, 24, 8, tzinfo=UTC)
        tr = translator_for("he")
        [event] = Calendar.from_ical(calendar_file([moved], tr, NOW)).walk("VEVENT")
        assert (str(event["uid"]), int(event["sequence"])) == (moved.uid, 1)
        assert event.decoded("dtstart").astimezone(UTC) == moved.starts_at
    planned = await _planned(db)
    assert [p[4] for p in planned] == ["planned"] * 5  # the old plan is gone
    live = [(u, k, d) for u, k, _, d, status in planned if status == "planned"]
    assert (COACH, "session_reminder", datetime(2026, 3, 24, 7, tzinfo=UTC)) in live
    # 04:00 in New York: the client's reminder comes at 22:00, before their quiet hours.
    assert (CLIENT, "session_reminder", datetime(2026, 3, 24, 2, tzinfo=UTC)) in live
    async with db.sessionmaker() as s, s.begin():
        with pytest.raises(SessionNotFound):  # not the other coach's, nor the past
            await move_session(s, STRANGER, first.id, datetime(2026, 3, 25, 9, 0),
                               "Europe/Rome", NOW)
        with pytest.raises(ValueError):
            await move_session(s, COACH, first.id, datetime(2026, 3, 1, 9, 0),
                               "Europe/Rome", NOW)


async def test_moving_the_rest_of_a_series_keeps_its_wall_clock_in_the_zone_it_was_set_in(
        db: Store) -> None:
    async with db.sessionmaker() as s, s.begin():
        created = await schedule_sessions(s, COACH, weekly(4), NOW)
    # Mondays 18:00 in Rome from 23 March to Tuesdays 19:00, chosen by the coach now in
    # London (18:00 there); Rome changes to summer time on 29 March.
    async with db.sessionmaker() as s, s.begin():
        with pytest.raises(SessionNotFound):
            await move_rest(s, STRANGER, created[0].id, datetime(2026, 3, 24, 18, 0),
                            "Europe/London", NOW)
        with pytest.raises(ValueError):
            await move_rest(s, COACH, created[1].id, datetime(2026, 3, 19, 18, 0),
                            "Europe/London", NOW)
    async with db.sessionmaker() as s, s.begin():
        moved = await move_rest(s, COACH, created[1].id, datetime(2026, 3, 31, 18, 0),
                                "Europe/London", NOW)
        assert [m.id for m in moved] == [c.id for c in created[1:]]
        assert [(m.local_start, m.zone, m.sequence) for m in moved] == [
            (datetime(2026, 3, 31, 19), "Europe/Rome", 1),
            (datetime(2026, 4, 7, 19), "Europe/Rome", 1),
            (datetime(2026, 4, 14, 19), "Europe/Rome", 1)]
        assert [m.starts_at for m in moved] == [
            datetime(2026, 3, 31, 17, tzinfo=UTC), datetime(2026, 4, 7, 17, tzinfo=UTC),
            datetime(2026, 4, 14, 17, tzinfo=UTC)]
        events = Calendar.from_ical(calendar_file(moved, translator_for("he"), NOW)
                                    ).walk("VEVENT")
        assert [(str(e["uid"]), int(e["sequence"])) for e in events] == [
            (c.uid, 1) for c in created[1:]]
    async with db.sessionmaker() as s, s.begin():  # all, a day and an hour earlier
        back = await move_rest(s, COACH, created[0].id, datetime(2026, 3, 22, 16, 0),
                               "Europe/London", NOW)
        assert [b.local_start for b in back] == [
            datetime(2026, 3, 22, 17), datetime(2026, 3, 30, 18), datetime(2026, 4, 6, 18),
            datetime(2026, 4, 13, 18)]
        assert [b.sequence for b in back] == [1, 2, 2, 2]
    planned = await _planned(db)
    reminders = sorted(d for u, k, _, d, status in planned
                       if (u, k, status) == (COACH, "session_reminder", "planned"))
    assert reminders == [datetime(2026, 3, d, 15, tzinfo=UTC) for d in (22, 30)] + [
        datetime(2026, 4, d, 15, tzinfo=UTC) for d in (6, 13)]


async def test_cancelling_the_rest_of_a_series_leaves_the_earlier_ones(db: Store) -> None:
    async with db.sessionmaker() as s, s.begin():
        created = await schedule_sessions(s, COACH, weekly(4), NOW)
    async with db.sessionmaker() as s, s.begin():
        gone = await cancel_sessions(s, COACH, created[1].id, NOW, rest_of_series=True)
        assert [g.id for g in gone] == [c.id for c in created[1:]]
        assert all(g.sequence == 1 for g in gone)
        [event] = Calendar.from_ical(calendar_file(gone[:1], translator_for("en"), NOW)
                                     ).walk("VEVENT")
        assert str(event["status"]) == "CANCELLED"
    async with db.sessionmaker() as s:
        statuses = list((await s.execute(select(CoachingSession.status)
                                         .order_by(CoachingSession.starts_at))).scalars())
        assert statuses == ["scheduled", "cancelled", "cancelled", "cancelled"]
        assert (await engagement(s, COACH, CLIENT)).agreed == 1
    live = [p for p in await _planned(db) if p[4] == "planned"]
    assert {p[2] for p in live} == {str(created[0].id)}


async def test_the_coach_marks_a_session_held_or_missed_once_it_started(db: Store) -> None:
    async with db.sessionmaker() as s, s.begin():
        created = await schedule_sessions(s, COACH, weekly(2), NOW)
    after = created[0].starts_at + timedelta(minutes=61)
    async with db.sessionmaker() as s, s.begin():
        with pytest.raises(SessionNotFound):
            await mark_outcome(s, COACH, created[1].id, True, after)  # not yet
        await mark_outcome(s, COACH, created[0].id, True, after)
        counts = await engagement(s, COACH, CLIENT)
    assert (counts.agreed, counts.held, counts.left) == (2, 1, 1)


async def test_export_and_erase_cover_sessions_and_what_they_planned_for_the_other(
        db: Store) -> None:
    async with db.sessionmaker() as s, s.begin():
        await schedule_sessions(s, COACH, weekly(2), NOW)
    exported = await db.export_user(CLIENT)
    assert len(exported["coaching_sessions"]) == 2
    assert exported["coaching_sessions"][0]["place"] == "https://meet.example/abc"
    await db.erase_user(CLIENT)
    async with db.sessionmaker() as s:
        assert (await s.execute(select(CoachingSession))).first() is None
        assert (await s.execute(select(PlannedCheckin))).first() is None  # the coach's too


async def test_the_place_dialogue_creates_the_sessions_and_tells_both(db: Store) -> None:
    from bot.coaching.conversation import Start, converse
    from bot.dialogue import load_dialogues
    from bot.engine import Turn
    from bot.store import Outbox
    from tests.coaching.test_actions import REPO

    dialogues = load_dialogues(REPO / "dialogues")
    choices = {"session.client": str(CLIENT), "session.start": "2026-03-23T18:00",
               "session.minutes": 45, "session.mode": "in_person", "session.repeat": "weekly",
               "session.count": 2}
    async with db.sessionmaker() as s, s.begin():
        await s.get(User, COACH)
        client = await s.get(User, CLIENT)
        assert client is not None
        client.first_name = "Dana"

    async def run(t, action):  # type: ignore[no-untyped-def]
        return await converse(t, dialogues, action, NOW)

    await db.run_turn(COACH, lambda t: run(t, Start("session_place", choices)))
    outcome = await db.run_turn(COACH, lambda t: run(t, Turn(text="Via Roma 1, Milano")))
    assert outcome is not None
    async with db.sessionmaker() as s:
        created = list((await s.execute(select(CoachingSession)
                                        .order_by(CoachingSession.starts_at))).scalars())
        messages = list((await s.execute(select(Outbox).order_by(Outbox.id))).scalars())
    assert [(c.minutes, c.mode, c.place) for c in created] == [
        (45, SessionMode.IN_PERSON, "Via Roma 1, Milano")] * 2
    to_coach = [r.text for r in outcome.replies]  # after the dialogue's last words
    # In Italian, at 18:00 in Rome both weeks.
    assert to_coach[-2].startswith("2 sessioni fissate con \u2068Dana\u2069:")
    assert to_coach[-2].count("18:00") == 2 and "lunedì 30 marzo 2026" in to_coach[-2]
    assert to_coach[-1] == "Quante sessioni hai concordato con \u2068Dana\u2069?"
    to_client = [m.payload for m in messages if m.chat_id == CLIENT]
    # In Hebrew, at the client's time in New York (13:00, then 12:00 after Europe's change).
    assert "13:00" in to_client[0]["text"] and "12:00" in to_client[0]["text"]
    calendar = Calendar.from_ical(bytes.fromhex(to_client[1]["document"]))
    assert [e.decoded("dtstart").astimezone(UTC) for e in calendar.walk("VEVENT")] == [
        c.starts_at for c in created]


async def test_reminders_prompts_and_i_cant_make_it(db: Store) -> None:
    from bot.coaching.sessions import cant_make_it, record_outcome, session_work
    from bot.store import Outbox

    async with db.sessionmaker() as s, s.begin():
        [cs] = await schedule_sessions(s, COACH, weekly(1), NOW)
    ref = str(cs.id)
    before = cs.starts_at - timedelta(hours=1)

    async def work(user: int, kind: str, now: datetime):  # type: ignore[no-untyped-def]
        return await db.run_turn(user, lambda t: session_work(t, kind, ref, now))

    client_reminder = await work(CLIENT, "session_reminder", before)
    [message] = client_reminder.messages
    assert message["buttons"][0]["data"] == f"session:cant:{cs.id}"
    assert "13:00" in message["text"]  # 17:00 UTC in New York, in Hebrew
    coach_reminder = await work(COACH, "session_reminder", before)
    assert "18:00" in coach_reminder.messages[0]["text"] and coach_reminder.subject == CLIENT
    prep = await work(CLIENT, "session_prep", before)
    assert prep.dialogue == "session_prep"  # after the session's time, with the same way out
    assert prep.messages[0]["buttons"] == message["buttons"] and "13:00" in prep.messages[0][
        "text"]
    assert await work(CLIENT, "session_reminder", cs.starts_at) is None  # too late

    await db.run_turn(CLIENT, lambda t: cant_make_it(t, cs.id, before))
    async with db.sessionmaker() as s:
        told = [m.payload for m in (await s.execute(select(Outbox).where(
            Outbox.chat_id == COACH).order_by(Outbox.id))).scalars()]
    assert [b["data"] for b in told[-1]["buttons"]] == [f"session:move:{cs.id}",
                                                        f"session:cancel:{cs.id}"]

    after = cs.starts_at + timedelta(minutes=61)
    prompt = await work(COACH, "session_outcome", after)
    assert [b["data"] for b in prompt.messages[0]["buttons"]] == [
        f"session:held:{cs.id}", f"session:missed:{cs.id}"]
    await db.run_turn(COACH, lambda t: record_outcome(t, cs.id, True, after))
    assert (await work(CLIENT, "session_recap", after)).dialogue == "session_recap"
    async with db.sessionmaker() as s, s.begin():
        await cancel_sessions(s, COACH, (await schedule_sessions(
            s, COACH, NewSessions(client_id=CLIENT, first=datetime(2026, 4, 1, 9, 0),
                                  zone="Europe/Rome", minutes=60, mode=SessionMode.PHONE,
                                  place=None), NOW))[0].id, NOW)
        gone = (await s.execute(select(CoachingSession.id).where(
            CoachingSession.status == "cancelled"))).scalar_one()
    assert await db.run_turn(CLIENT, lambda t: session_work(
        t, "session_reminder", str(gone), NOW)) is None


async def test_the_brief_reaches_the_coach_only_with_the_clients_consent(db: Store) -> None:
    from bot.coaching.sessions import brief_answer, session_work
    from bot.store import ActionSource, Answer, CommitmentAction

    async with db.sessionmaker() as s, s.begin():
        [cs] = await schedule_sessions(s, COACH, weekly(1), NOW)
        s.add(Answer(user_id=CLIENT, dialogue_id="session_prep", step_id="want",
                     variable="prep.want", value="Talk about my manager",
                     answered_at=cs.starts_at - timedelta(hours=20)))
        s.add(Answer(user_id=CLIENT, dialogue_id="session_prep", step_id="scale",
                     variable="prep.scale", value=6,
                     answered_at=cs.starts_at - timedelta(hours=20)))
        s.add(CommitmentAction(user_id=CLIENT, words="Write the email",
                               source=ActionSource.DAILY, due_on=cs.starts_at.date(),
                               created_at=NOW))
    before = cs.starts_at - timedelta(hours=1)

    async def coach_reminder() -> str:
        due = await db.run_turn(COACH, lambda t: session_work(
            t, "session_reminder", str(cs.id), before))
        return str(due.messages[0]["text"])

    assert "Talk about my manager" not in await coach_reminder()  # never asked: no
    await db.run_turn(CLIENT, lambda t: brief_answer(t, f"no:{COACH}"))
    assert "Talk about my manager" not in await coach_reminder()
    await db.run_turn(CLIENT, lambda t: brief_answer(t, f"yes:{COACH}"))
    brief = await coach_reminder()
    assert "\u2068Talk about my manager\u2069" in brief and "6" in brief  # Italian labels
    assert "\u2068Write the email\u2069" in brief
    await db.run_turn(STRANGER, lambda t: brief_answer(t, f"yes:{COACH}"))  # not linked
    async with db.sessionmaker() as s:
        links = list((await s.execute(select(CoachLink))).scalars())
    assert [(link.client_id, link.brief_consent) for link in links] == [(CLIENT, True)]

    # With the reminders three hours before, the reminder comes without the brief, and the
    # brief still an hour before, as the client was told.
    async with db.sessionmaker() as s, s.begin():
        assert await set_reminder_lead(s, COACH, 180, NOW)
    coach_rows = [(k, d) for u, k, ref, d, status in await _planned(db)
                  if (u, ref, status) == (COACH, str(cs.id), "planned")]
    assert ("session_reminder", cs.starts_at - timedelta(hours=3)) in coach_rows
    assert ("session_brief", before) in coach_rows
    early = await db.run_turn(COACH, lambda t: session_work(
        t, "session_reminder", str(cs.id), cs.starts_at - timedelta(hours=3)))
    assert "Talk about my manager" not in early.messages[0]["text"]
    later = await db.run_turn(COACH, lambda t: session_work(t, "session_brief", str(cs.id),
                                                            before))
    assert "\u2068Talk about my manager\u2069" in later.messages[0]["text"]
    assert await db.run_turn(CLIENT, lambda t: session_work(  # the coach's alone
        t, "session_brief", str(cs.id), before)) is None
    async with db.sessionmaker() as s, s.begin():
        await set_brief_consent(s, CLIENT, COACH, False)
    assert await db.run_turn(COACH, lambda t: session_work(  # nothing shared: nothing sent
        t, "session_brief", str(cs.id), before)) is None


async def test_sessions_to_come_end_with_the_link(db: Store) -> None:
    from bot.coaching.links import unlink

    async with db.sessionmaker() as s, s.begin():
        await schedule_sessions(s, COACH, weekly(2), NOW)
    async with db.sessionmaker() as s, s.begin():
        await unlink(s, CLIENT, COACH, NOW)
    async with db.sessionmaker() as s:
        statuses = list((await s.execute(select(CoachingSession.status))).scalars())
        assert statuses == [SessionStatus.CANCELLED] * 2
        assert await upcoming(s, CLIENT, NOW) == []
    assert await _planned(db) == []
