"""The button flows behind /schedule, /sessions and /actions, played in process: a coach in
Rome schedules a fortnightly series with a client in Tel Aviv, moves one, cancels the rest;
forged button data gets nowhere; the client marks an action done."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
from icalendar import Calendar
from sqlalchemy import select

from bot.coaching.sessions import NewSessions, schedule_sessions
from bot.dialogue import DialogueSet, load_dialogues
from bot.engine import Turn
from bot.schedule.sessions import Repeat
from bot.store import (
    ActionSource,
    CoachingSession,
    CoachLink,
    CommitmentAction,
    Outbox,
    PlannedCheckin,
    SessionMode,
    Store,
    User,
)
from bot.telegram.sessions import PAGES, SessionFlows

REPO = Path(__file__).parents[2]
NOW = datetime(2026, 3, 20, 9, 0, tzinfo=UTC)  # a Friday
COACH, CLIENT, OTHER = 10, 20, 30


@pytest.fixture(scope="module")
def dialogues() -> DialogueSet:
    return load_dialogues(REPO / "dialogues")


@pytest.fixture(autouse=True)
def frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every turn happens at NOW."""
    monkeypatch.setattr("bot.store.store.utcnow", lambda: NOW)


@pytest.fixture
async def db(store: Store) -> Store:
    async with store.sessionmaker() as s, s.begin():
        s.add(User(id=COACH, is_coach=True, time_zone="Europe/Rome", locale="it",
                   first_name="Marta", consent_at=NOW))
        s.add(User(id=CLIENT, time_zone="Asia/Jerusalem", locale="he", first_name="נועה",
                   consent_at=NOW))
        s.add(User(id=OTHER, is_coach=True, consent_at=NOW))
        await s.flush()
        s.add(CoachLink(coach_id=COACH, client_id=CLIENT, created_at=NOW, consent_at=NOW))
    return store


async def press(store: Store, flows: SessionFlows, user: int, data: str) -> list[dict[str, Any]]:
    """Press a button as ``user``; what the turn queued for them."""
    kind, _, rest = data.partition(":")
    method = flows.step if kind == "session" else flows.action_button
    await store.run_turn(user, lambda t: method(t, rest))
    return await queued(store, user)


async def queued(store: Store, user: int) -> list[dict[str, Any]]:
    async with store.sessionmaker() as s, s.begin():
        rows = list((await s.execute(select(Outbox).where(
            Outbox.chat_id == user, Outbox.status == "pending").order_by(Outbox.id))).scalars())
        for row in rows:
            row.status = "sent"
        return [row.payload for row in rows]


def data_of(payload: dict[str, Any], index: int = 0) -> str:
    return str(payload["buttons"][index]["data"])


def label_data(payload: dict[str, Any], label: str) -> str:
    """The data of the button with this label."""
    [data] = [b["data"] for b in payload["buttons"] if b["label"] == label]
    return str(data)


async def test_a_coach_schedules_a_series_moves_one_and_cancels_the_rest(
        db: Store, dialogues: DialogueSet) -> None:
    flows = SessionFlows(dialogues)
    [who] = await press(db, flows, COACH, "session:new")
    assert [b["label"] for b in who["buttons"]] == ["\u2068\u05e0\u05d5\u05e2\u05d4\u2069"]
    [days] = await press(db, flows, COACH, data_of(who))
    assert days["buttons"][3]["data"] == f"session:new:{CLIENT}:260323"  # Monday
    [hours] = await press(db, flows, COACH, data_of(days, 3))
    [quarters] = await press(db, flows, COACH, label_data(hours, "18:00"))
    assert [b["label"] for b in quarters["buttons"]] == ["18:00", "18:15", "18:30", "18:45"]
    [lengths] = await press(db, flows, COACH, label_data(quarters, "18:00"))
    assert lengths["buttons"][0]["label"] == "60 min"  # the usual length comes first
    [modes] = await press(db, flows, COACH, data_of(lengths))
    assert [b["label"] for b in modes["buttons"]] == ["Di persona", "Al telefono",
                                                      "In videochiamata"]
    [repeat] = await press(db, flows, COACH, data_of(modes, 2))  # video
    [count] = await press(db, flows, COACH, data_of(repeat, 2))  # every two weeks
    [place] = await press(db, flows, COACH, data_of(count, 0))  # 4 sessions
    assert "videochiamata" in place["text"]
    await db.run_turn(COACH, lambda t: _converse(t, dialogues, "https://meet.example/x"))
    told = await queued(db, COACH)
    assert [m["text"].split("\n")[0] for m in told] == [
        "Grazie.", "4 sessioni fissate con \u2068נועה\u2069:",
        "Quante sessioni hai concordato con \u2068נועה\u2069?"]  # none agreed yet
    assert told[-1]["buttons"][-1]["data"] == f"session:agree:{CLIENT}:24"
    async with db.sessionmaker() as s:
        sessions = list((await s.execute(select(CoachingSession).order_by(
            CoachingSession.starts_at))).scalars())
    assert [c.local_start for c in sessions] == [
        datetime(2026, 3, 23, 18), datetime(2026, 4, 6, 18), datetime(2026, 4, 20, 18),
        datetime(2026, 5, 4, 18)]
    client_got = await queued(db, CLIENT)
    assert "19:00" in client_got[0]["text"]  # 18:00 in Rome is 19:00 in Jerusalem
    calendar = Calendar.from_ical(bytes.fromhex(client_got[1]["document"]))
    assert len(calendar.walk("VEVENT")) == 4

    # Move the second to Wednesday 1 April at 09:30 (Rome).
    [day] = await press(db, flows, COACH, f"session:move:{sessions[1].id}")
    tuesday = next(b["data"] for b in day["buttons"] if b["data"].endswith(":260401"))
    [at] = await press(db, flows, COACH, tuesday)
    [quarters] = await press(db, flows, COACH, label_data(at, "09:00"))
    await press(db, flows, COACH, label_data(quarters, "09:30"))
    moved = await queued(db, CLIENT)
    [event] = Calendar.from_ical(bytes.fromhex(moved[1]["document"])).walk("VEVENT")
    assert (str(event["uid"]), int(event["sequence"])) == (sessions[1].uid, 1)
    assert event.decoded("dtstart").astimezone(UTC) == datetime(2026, 4, 1, 7, 30, tzinfo=UTC)

    # Cancel the third and the rest; another coach can't touch them, forged data neither.
    assert "non è più" in (await press(db, flows, COACH, "session:rest:999"))[0]["text"]
    await press(db, flows, OTHER, f"session:rest:{sessions[2].id}")
    await press(db, flows, COACH, f"session:rest:{sessions[2].id}")
    cancelled = await queued(db, CLIENT)
    calendar = Calendar.from_ical(bytes.fromhex(cancelled[1]["document"]))
    assert str(calendar["method"]) == "CANCEL"
    assert [str(e["status"]) for e in calendar.walk("VEVENT")] == ["CANCELLED"] * 2
    [listing] = await press(db, flows, CLIENT, "session:new")  # not a coach
    assert "/schedule" in listing["text"]
    await db.run_turn(CLIENT, lambda t: flows.sessions(t))
    [mine] = await queued(db, CLIENT)
    assert mine["text"].count("\n") == 3  # two sessions + counts
    assert [b["label"] for b in mine["buttons"]] == [
        "1: לא אוכל להגיע",
        "2: לא אוכל להגיע"]
    await press(db, flows, CLIENT, data_of(mine, 1))  # "I can't make it" to the second
    [heard] = await queued(db, COACH)
    assert heard["text"].startswith("Non potrà partecipare") and "1 aprile" in heard["text"]
    assert data_of(heard) == f"session:move:{sessions[1].id}"
    assert "\u20682\u2069" in mine["text"].splitlines()[-1]


@pytest.mark.parametrize("forged", [
    "session:new:999", f"session:new:{CLIENT}:261399", f"session:new:{CLIENT}:260323:0315",
    f"session:new:{CLIENT}:260323:1800:61", f"session:new:{CLIENT}:260323:1800:60:x",
    f"session:new:{CLIENT}:+27", f"session:new:{CLIENT}:+1:1800",
    f"session:new:{CLIENT}:260323:18:60", f"session:new:{CLIENT}:260323:1810",
    f"session:new:{CLIENT}:260323:0545", f"session:new:{CLIENT}:260323:1800:30:v:f:5",
    "session:move:abc", "session:held:1",
])
async def test_forged_session_buttons_get_nowhere(db: Store, dialogues: DialogueSet,
                                                  forged: str) -> None:
    flows = SessionFlows(dialogues)
    answer = await press(db, flows, COACH, forged)
    assert len(answer) == 1 and "buttons" not in answer[0]
    async with db.sessionmaker() as s:
        assert (await s.execute(select(CoachingSession))).first() is None


async def test_any_date_within_a_year_and_any_quarter_hour_from_six_to_midnight(
        db: Store, dialogues: DialogueSet) -> None:
    flows = SessionFlows(dialogues)
    [days] = await press(db, flows, COACH, f"session:new:{CLIENT}")
    assert len(days["buttons"]) == 15 and days["buttons"][-1]["label"] == "Date successive"
    page = days
    for _ in range(10):  # ten pages of two weeks on
        [page] = await press(db, flows, COACH, data_of(page, -1))
    assert page["buttons"][-2]["label"] == "Date precedenti"
    assert page["buttons"][0]["data"] == f"session:new:{CLIENT}:260807"  # 140 days on
    [hours] = await press(db, flows, COACH, label_data(page, "dom 9 ago"))
    assert [b["label"] for b in hours["buttons"]][::17] == ["06:00", "23:00"]
    [quarters] = await press(db, flows, COACH, label_data(hours, "21:00"))
    [lengths] = await press(db, flows, COACH, label_data(quarters, "21:45"))
    assert [b["label"] for b in lengths["buttons"]] == [
        "60 min", "30 min", "45 min", "90 min", "120 min"]
    [modes] = await press(db, flows, COACH, data_of(lengths, 1))
    [repeat] = await press(db, flows, COACH, data_of(modes, 1))
    await press(db, flows, COACH, data_of(repeat, 0))  # just this once
    await db.run_turn(COACH, lambda t: _converse(t, dialogues, "/skip"))
    assert "21:45" in (await queued(db, COACH))[1]["text"]
    async with db.sessionmaker() as s:
        [session] = (await s.execute(select(CoachingSession))).scalars()
    assert (session.local_start, session.minutes) == (datetime(2026, 8, 9, 21, 45), 30)
    while "Date precedenti" in [b["label"] for b in page["buttons"]]:
        [page] = await press(db, flows, COACH, data_of(page, -2))
    assert page["buttons"][0]["data"] == f"session:new:{CLIENT}:260320"  # today again
    for _ in range(PAGES - 1):
        [page] = await press(db, flows, COACH, data_of(page, -1))
    assert page["buttons"][-1]["label"] == "Date precedenti"  # the last page, a year on
    assert page["buttons"][-2]["data"] == f"session:new:{CLIENT}:270401"


async def test_a_coach_moves_the_rest_of_a_series_from_sessions(db: Store,
                                                                dialogues: DialogueSet) -> None:
    flows = SessionFlows(dialogues)
    async with db.sessionmaker() as s, s.begin():
        made = await schedule_sessions(s, COACH, NewSessions(
            client_id=CLIENT, first=datetime(2026, 3, 23, 18), zone="Europe/Rome", minutes=60,
            mode=SessionMode.VIDEO, place=None, repeat=Repeat.WEEKLY, count=3), NOW)
    await db.run_turn(COACH, lambda t: flows.sessions(t))
    [listing] = await queued(db, COACH)
    rest = label_data(listing, "2: sposta questa e le successive")
    assert rest == f"session:mrest:{made[1].id}"
    [refused] = await press(db, flows, OTHER, rest)  # another coach
    assert refused["text"] == "This session is not planned any more."
    [days] = await press(db, flows, COACH, rest)
    assert "successive della serie" in days["text"]
    [hours] = await press(db, flows, COACH, f"{rest}:260401")  # Wednesday
    [quarters] = await press(db, flows, COACH, label_data(hours, "07:00"))
    [told] = await press(db, flows, COACH, label_data(quarters, "07:45"))
    assert told["text"].startswith("2 sessioni con \u2068נועה\u2069 spostate:")
    text, ics = await queued(db, CLIENT)
    assert text["text"].count("\u20688:45\u2069") == 2  # 07:45 in Rome, 8:45 in Jerusalem
    events = Calendar.from_ical(bytes.fromhex(ics["document"])).walk("VEVENT")
    assert [(str(e["uid"]), int(e["sequence"])) for e in events] == [
        (c.uid, 1) for c in made[1:]]
    assert [e.decoded("dtstart").astimezone(UTC) for e in events] == [
        datetime(2026, 4, 1, 5, 45, tzinfo=UTC), datetime(2026, 4, 8, 5, 45, tzinfo=UTC)]


async def test_a_coach_sets_how_long_before_sessions_the_reminders_come(
        db: Store, dialogues: DialogueSet) -> None:
    flows = SessionFlows(dialogues)
    async with db.sessionmaker() as s, s.begin():
        [made] = await schedule_sessions(s, COACH, NewSessions(
            client_id=CLIENT, first=datetime(2026, 3, 23, 18), zone="Europe/Rome", minutes=60,
            mode=SessionMode.PHONE, place=None), NOW)
    assert await reminders(db) == [datetime(2026, 3, 23, 16, tzinfo=UTC)] * 2  # an hour

    await db.run_turn(COACH, lambda t: flows.sessions(t))
    [listing] = await queued(db, COACH)
    [asked] = await press(db, flows, COACH, label_data(listing, "Promemoria: un'ora prima"))
    assert [b["label"] for b in asked["buttons"]] == [
        "15 minuti", "30 minuti", "un'ora", "2 ore", "3 ore", "un giorno"]
    [done] = await press(db, flows, COACH, label_data(asked, "un giorno"))
    assert done["text"] == ("Fatto: da adesso i promemoria arrivano un giorno prima di "
                            "ogni sessione, a te e ai tuoi clienti.")
    assert await reminders(db) == [datetime(2026, 3, 22, 17, tzinfo=UTC)] * 2
    await db.run_turn(COACH, lambda t: flows.sessions(t))
    assert label_data((await queued(db, COACH))[0], "Promemoria: un giorno prima")

    for forged in ("session:lead:45", "session:lead:x", "session:lead:60:1"):
        [refused] = await press(db, flows, COACH, forged)
        assert "non è più valida" in refused["text"]
    [refused] = await press(db, flows, CLIENT, "session:lead:15")  # not a coach
    assert "/schedule" in refused["text"]
    assert await reminders(db) == [datetime(2026, 3, 22, 17, tzinfo=UTC)] * 2
    async with db.sessionmaker() as s:
        coach = await s.get(User, COACH)
        assert coach is not None and coach.session_reminder_minutes == 1440
    assert made.starts_at == datetime(2026, 3, 23, 17, tzinfo=UTC)


async def reminders(store: Store) -> list[datetime]:
    """When the planned session reminders (the coach's and the client's) are due."""
    async with store.sessionmaker() as s:
        return list((await s.execute(select(PlannedCheckin.due_at).where(
            PlannedCheckin.kind == "session_reminder", PlannedCheckin.status == "planned")
            .order_by(PlannedCheckin.user_id))).scalars())


def test_the_longest_session_button_data_fits() -> None:
    client = str(2**52)
    for data in (f"session:new:{client}:261231:2345:120:v:f:12",
                 f"session:new:{client}:+{PAGES - 1}"):
        assert len(data.encode()) <= 64, data


@pytest.mark.parametrize("forged", ["move:abc", "move:999", "mrest:", "move:999:260401:1800",
                                    "mrest:1:+27", "cancel:x"])
async def test_forged_group_session_buttons_get_nowhere(db: Store, dialogues: DialogueSet,
                                                        forged: str) -> None:
    flows = SessionFlows(dialogues)
    await db.run_turn(COACH, lambda t: flows.group_step(t, forged))
    [answer] = await queued(db, COACH)
    assert answer["text"] == "Questa sessione non è più in programma." and "buttons" not in answer


async def test_the_client_marks_an_action_done_from_actions(db: Store,
                                                           dialogues: DialogueSet) -> None:
    flows = SessionFlows(dialogues)
    async with db.sessionmaker() as s, s.begin():
        s.add(CommitmentAction(user_id=CLIENT, words="לקרוא פרק", source=ActionSource.DAILY,
                               due_on=date(2026, 3, 19), created_at=NOW))
    await db.run_turn(CLIENT, lambda t: flows.actions(t))
    [listing] = await queued(db, CLIENT)
    assert "\u2068לקרוא פרק\u2069" in listing["text"]
    done = await press(db, flows, CLIENT, data_of(listing, 0))
    assert "buttons" not in done[1]  # nothing open any more
    again = await press(db, flows, CLIENT, data_of(listing, 1))  # drop after done: refused
    assert len(again) == 2


async def _converse(t, dialogues, text):  # type: ignore[no-untyped-def]
    from bot.coaching.conversation import converse, enqueue_replies

    outcome = await converse(t, dialogues, Turn(text=text), t.now)
    enqueue_replies(t, outcome)
    return outcome
