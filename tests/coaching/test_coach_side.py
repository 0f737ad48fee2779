"""The coach's side of issue 26, in process on SQLite and PostgreSQL: messages both ways
(quiet hours, crisis pause, crisis in a reply), noticing (silence, skipped twice, a goal
reached), managing assignments, notes; each tried as an attacker would."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from bot.coaching import managing, messages, notes, noticing, safety, sessions
from bot.coaching.conversation import Start, converse
from bot.dialogue import DialogueSet, load_dialogues
from bot.engine import Turn
from bot.i18n import translator_for
from bot.store import (
    ActionSource,
    ActionStatus,
    Answer,
    Assignment,
    CoachEvent,
    CoachLink,
    CoachMessage,
    CoachNote,
    CommitmentAction,
    Outbox,
    PlannedCheckin,
    Store,
    User,
)
from bot.store import Turn as StoreTurn
from tests.coaching.turns import NOW, rows, run

REPO = Path(__file__).parents[2]
COACH, OTHER_COACH, CLIENT, OTHER_CLIENT = 1, 2, 10, 11


@pytest.fixture(scope="module")
def dialogues() -> DialogueSet:
    return load_dialogues(REPO / "dialogues")


@pytest.fixture
async def db(store: Store) -> AsyncIterator[Store]:
    """Two coaches; CLIENT linked to COACH, OTHER_CLIENT to OTHER_COACH."""
    async with store.sessionmaker() as s, s.begin():
        s.add_all([User(id=COACH, first_name="Carla", is_coach=True, locale="en"),
                   User(id=OTHER_COACH, first_name="Oscar", is_coach=True),
                   User(id=CLIENT, first_name="Ana", locale="hr", consent_at=NOW,
                        time_zone="Europe/Zagreb"),
                   User(id=OTHER_CLIENT, first_name="Bo", consent_at=NOW)])
        await s.flush()
        s.add_all([CoachLink(coach_id=COACH, client_id=CLIENT, created_at=NOW,
                             consent_at=NOW - timedelta(days=10)),
                   CoachLink(coach_id=OTHER_COACH, client_id=OTHER_CLIENT, created_at=NOW,
                             consent_at=NOW - timedelta(days=10))])
    yield store




def message_start(client: int, name: str = "Ana") -> Start:
    return Start(messages.MESSAGE_CLIENT, {messages.TO_CLIENT: client,
                                           messages.TO_CLIENT_NAME: name})


def reply_start(coach: int, name: str = "Carla") -> Start:
    return Start(messages.REPLY_TO_COACH, {messages.TO_COACH: coach,
                                           messages.TO_COACH_NAME: name})


async def test_a_coach_message_goes_to_the_client_marked_with_a_reply_button(
        db: Store, dialogues: DialogueSet) -> None:
    await run(db, dialogues, COACH, message_start(CLIENT), Turn(text="How was the week?"))
    sent = [r for r in await rows(db, Outbox) if r.chat_id == CLIENT]
    assert len(sent) == 1 and sent[0].subject_user_id == CLIENT
    text = sent[0].payload["text"]
    assert "Carla" in text and "How was the week?" in text
    assert "Carla" in text.split("\n")[0]
    assert sent[0].payload["buttons"][0]["data"] == f"coachreply:{COACH}"
    [kept] = await rows(db, CoachMessage)
    assert (kept.coach_id, kept.client_id, kept.from_coach, kept.delivered_at) == (
        COACH, CLIENT, True, NOW)
    # Not kept as the coach's answer, nor left in the coach's conversation.
    assert [a for a in await rows(db, Answer) if a.user_id == COACH] == []
    async with db.turn(COACH) as t:
        assert "How was the week?" not in repr(t.state)


async def test_quiet_hours_and_a_crisis_pause_hold_the_message_until_they_end(
        db: Store, dialogues: DialogueSet) -> None:
    async with db.sessionmaker() as s, s.begin():
        client = await s.get(User, CLIENT)
        assert client is not None
        client.quiet_start, client.quiet_end = 12 * 60, 14 * 60  # 13:00 in Zagreb: quiet
    await run(db, dialogues, COACH, message_start(CLIENT), Turn(text="See you on Monday"))
    assert [r for r in await rows(db, Outbox) if r.chat_id == CLIENT] == []
    async with db.sessionmaker() as s, s.begin():
        assert await messages.deliver_waiting(s, NOW + timedelta(minutes=30)) == 0
        client = await s.get(User, CLIENT)
        assert client is not None
        client.crisis_pause_until = NOW + timedelta(hours=5)
    async with db.sessionmaker() as s, s.begin():
        assert await messages.deliver_waiting(s, NOW + timedelta(hours=2)) == 0
    async with db.sessionmaker() as s, s.begin():
        assert await messages.deliver_waiting(s, NOW + timedelta(hours=6)) == 1
    async with db.sessionmaker() as s, s.begin():  # once only
        assert await messages.deliver_waiting(s, NOW + timedelta(hours=7)) == 0
    [sent] = [r for r in await rows(db, Outbox) if r.chat_id == CLIENT]
    assert "See you on Monday" in sent.payload["text"]


async def test_a_waiting_message_of_an_ended_link_is_dropped(
        db: Store, dialogues: DialogueSet) -> None:
    async with db.sessionmaker() as s, s.begin():
        client = await s.get(User, CLIENT)
        assert client is not None
        client.reachable = False
    await run(db, dialogues, COACH, message_start(CLIENT), Turn(text="Hello"))
    async with db.sessionmaker() as s, s.begin():
        link = await s.scalar(select(CoachLink).where(CoachLink.client_id == CLIENT))
        assert link is not None
        link.unlinked_at = NOW
        client = await s.get(User, CLIENT)
        assert client is not None
        client.reachable = True
    async with db.sessionmaker() as s, s.begin():
        assert await messages.deliver_waiting(s, NOW) == 0
    assert await rows(db, CoachMessage) == []


async def test_a_coach_cannot_message_someone_elses_client(
        db: Store, dialogues: DialogueSet) -> None:
    # Even with the dialogue started with a forged client id (the handler refuses first).
    outcome = await run(db, dialogues, COACH, message_start(OTHER_CLIENT, "Bo"),
                        Turn(text="Hi Bo"))
    assert [r for r in await rows(db, Outbox) if r.chat_id == OTHER_CLIENT] == []
    assert await rows(db, CoachMessage) == []
    assert "no longer shares their progress" in outcome.replies[-1].text


async def test_the_clients_confirmed_reply_reaches_the_coach(
        db: Store, dialogues: DialogueSet) -> None:
    await run(db, dialogues, CLIENT, reply_start(COACH), Turn(text="It went well, thanks"),
              Turn(text="da"))
    to_coach = [r for r in await rows(db, Outbox) if r.chat_id == COACH]
    assert len(to_coach) == 1 and to_coach[0].subject_user_id == CLIENT
    assert "It went well, thanks" in to_coach[0].payload["text"]
    assert "Ana" in to_coach[0].payload["text"]
    assert to_coach[0].payload["buttons"][0]["data"] == f"message:{CLIENT}"
    [kept] = await rows(db, CoachMessage)
    assert not kept.from_coach and kept.text == "It went well, thanks"


async def test_a_reply_the_client_does_not_confirm_stays_with_them(
        db: Store, dialogues: DialogueSet) -> None:
    await run(db, dialogues, CLIENT, reply_start(COACH), Turn(text="Draft"), Turn(text="ne"))
    assert [r for r in await rows(db, Outbox) if r.chat_id == COACH] == []
    assert await rows(db, CoachMessage) == []


async def test_a_reply_showing_a_crisis_takes_the_crisis_path_and_never_reaches_the_coach(
        db: Store, dialogues: DialogueSet) -> None:
    outcome = await run(db, dialogues, CLIENT, reply_start(COACH),
                        Turn(text="I want to kill myself tonight"))
    assert outcome.crisis
    to_coach = [r for r in await rows(db, Outbox) if r.chat_id == COACH]
    assert to_coach == []  # the digest tells the coach, without the words
    assert [e.kind for e in await rows(db, CoachEvent)] == ["crisis"]
    assert await rows(db, CoachMessage) == []
    assert all("kill" not in repr(r.payload) for r in await rows(db, Outbox)
               if r.chat_id != CLIENT)


async def test_a_reply_to_a_coach_no_longer_linked_is_not_passed_on(
        db: Store, dialogues: DialogueSet) -> None:
    await run(db, dialogues, CLIENT, reply_start(OTHER_COACH, "Oscar"), Turn(text="Hi"),
              Turn(text="da"))
    assert [r for r in await rows(db, Outbox) if r.chat_id == OTHER_COACH] == []
    assert await rows(db, CoachMessage) == []


# -- noticing ----------------------------------------------------------------------------


async def answer(store: Store, user: int, at: datetime, variable: str = "checkin.mood",
                 value: Any = 7, dialogue: str = "daily_checkin") -> None:
    async with store.sessionmaker() as s, s.begin():
        s.add(Answer(user_id=user, dialogue_id=dialogue, step_id="s", variable=variable,
                     value=value, answered_at=at))


async def silent(store: Store, now: datetime) -> int:
    async with store.sessionmaker() as s, s.begin():
        return await noticing.notice_silence(s, now)


async def test_a_silent_client_is_noticed_once_per_silence(db: Store) -> None:
    await answer(db, CLIENT, NOW - timedelta(days=3))
    await answer(db, OTHER_CLIENT, NOW - timedelta(days=1))

    async def told() -> list[tuple[int, int, str]]:
        return [(e.coach_id, e.client_id, e.kind) for e in await rows(db, CoachEvent)]

    assert await silent(db, NOW) == 0  # 3 days < the default 4
    assert await silent(db, NOW + timedelta(days=1, minutes=1)) == 1
    assert await silent(db, NOW + timedelta(days=2)) == 0  # told already
    assert await told() == [(COACH, CLIENT, "silent")]
    await answer(db, CLIENT, NOW + timedelta(days=3))  # they came back, then went quiet
    await silent(db, NOW + timedelta(days=6))
    assert (await told()).count((COACH, CLIENT, "silent")) == 1
    await silent(db, NOW + timedelta(days=7, minutes=1))
    assert (await told()).count((COACH, CLIENT, "silent")) == 2
    assert (OTHER_COACH, OTHER_CLIENT, "silent") in await told()


async def test_the_coach_sets_the_silent_days_and_a_pause_is_not_silence(db: Store) -> None:
    await answer(db, CLIENT, NOW)
    await answer(db, OTHER_CLIENT, NOW + timedelta(days=3))
    async with db.sessionmaker() as s, s.begin():
        await noticing.set_silent_days(s, COACH, CLIENT, 2)
        with pytest.raises(noticing.NotYourClient):
            await noticing.set_silent_days(s, COACH, OTHER_CLIENT, 2)
        with pytest.raises(ValueError):
            await noticing.set_silent_days(s, COACH, CLIENT, 0)
        client = await s.get(User, CLIENT)
        assert client is not None
        client.paused_until = NOW + timedelta(days=10)  # on holiday
    assert await silent(db, NOW + timedelta(days=3)) == 0
    async with db.sessionmaker() as s, s.begin():
        client = await s.get(User, CLIENT)
        assert client is not None
        client.paused_until = None
    assert await silent(db, NOW + timedelta(days=3)) == 1


async def test_the_same_exercise_skipped_twice_in_a_row_is_noticed(
        db: Store, dialogues: DialogueSet) -> None:
    for status in ("skipped", "done", "skipped", "skipped"):
        await run(db, dialogues, CLIENT, Start("gratitude_note"))
        await _answer_status(db, dialogues, status)
    kinds = [e.kind for e in await rows(db, CoachEvent)]
    assert kinds.count("skipped_twice") == 1
    assert kinds.count("exercise_skipped") == 3


async def _answer_status(store: Store, dialogues: DialogueSet, status: str) -> None:
    """Walk the exercise to its status question and answer it."""
    for _ in range(6):
        async with store.turn(CLIENT) as t:
            frame = t.state["stack"][-1] if t.state and t.state.get("stack") else None
        if frame is None:
            return
        step = dialogues[frame["dialogue"]].steps[frame["step"]]
        if step.ask.save == "exercise.status":
            await run(store, dialogues, CLIENT, Turn(button=f"{_token(frame)}:{status}"))
            return
        await run(store, dialogues, CLIENT, Turn(text="something"))
    raise AssertionError("no status question")


def _token(frame: dict[str, Any]) -> str:
    from bot.engine.runner import step_token

    return step_token(frame["dialogue"], frame["step"])


async def test_a_goal_reached_is_noticed_by_coaches_who_saw_it_set(db: Store) -> None:
    async with db.sessionmaker() as s, s.begin():
        before = await noticing.goal_completed(s, CLIENT, NOW - timedelta(days=20), NOW)
        after = await noticing.goal_completed(s, CLIENT, NOW - timedelta(days=2), NOW)
    assert (before, after) == (0, 1)
    assert [(e.coach_id, e.kind) for e in await rows(db, CoachEvent)] == [(COACH, "goal_done")]


async def test_the_overview_shows_activity_assignments_and_attention(db: Store) -> None:
    await answer(db, CLIENT, NOW - timedelta(days=5))
    await answer(db, CLIENT, NOW - timedelta(days=30))  # before the link: not theirs to see
    async with db.sessionmaker() as s, s.begin():
        s.add_all([Assignment(coach_id=COACH, client_id=CLIENT, exercise_slug="gratitude_note",
                              schedule={"kind": "daily", "hour": 8, "days": 7},
                              starts_on=NOW.date(), paused=paused) for paused in (False, True)])
        s.add(CoachEvent(coach_id=COACH, client_id=CLIENT, kind="skipped_twice",
                         created_at=NOW - timedelta(days=1)))
    async with db.sessionmaker() as s:
        [(seen, linked)] = await noticing.overview(s, COACH, NOW)
        assert await noticing.overview(s, OTHER_COACH, NOW) != []
    assert seen.first_name == "Ana" and seen.last_activity == NOW - timedelta(days=5)
    assert (seen.assignments, seen.paused_assignments) == (1, 1)
    assert seen.skipped_twice and not seen.in_crisis_pause
    assert seen.quiet_for(NOW, linked) == 5
    assert (seen.open_actions, seen.overdue_actions) == (0, 0)
    async with db.sessionmaker() as s, s.begin():
        for due in (NOW.date() - timedelta(days=2), NOW.date() + timedelta(days=2)):
            s.add(CommitmentAction(user_id=CLIENT, words="Call Sam", source=ActionSource.DAILY,
                                   due_on=due, created_at=NOW))
        s.add(CommitmentAction(user_id=CLIENT, words="Done one", source=ActionSource.DAILY,
                               due_on=NOW.date(), status=ActionStatus.DONE, created_at=NOW))
    async with db.sessionmaker() as s:
        [(seen, linked)] = await noticing.overview(s, COACH, NOW)
    assert (seen.open_actions, seen.overdue_actions) == (2, 1)
    from bot.coaching.sessions import Engagement
    from bot.telegram.coach_side import overview_line

    line = overview_line(seen, linked, NOW, translator_for("en"),
                         Engagement(agreed=6, held=2, missed=1, set=True))
    assert "2 open actions" in line and "3 sessions left" in line
    assert "⚠" in line and "1 action past its date" in line


# -- managing assignments -------------------------------------------------------------------


async def test_pause_resume_change_and_cancel_an_assignment(db: Store) -> None:
    async with db.sessionmaker() as s, s.begin():
        a = Assignment(coach_id=COACH, client_id=CLIENT, exercise_slug="gratitude_note",
                       schedule={"kind": "daily", "hour": 8, "days": 7}, starts_on=NOW.date())
        s.add(a)
        await s.flush()
        s.add(PlannedCheckin(user_id=CLIENT, kind="exercise", ref=str(a.id),
                             due_at=NOW + timedelta(hours=20)))
        aid = a.id
    A = managing.AssignmentAction
    async with db.sessionmaker() as s, s.begin():
        [view] = await managing.assignments_of(s, COACH, CLIENT)
        assert view.id == aid and not view.paused
        assert (await managing.act_on_assignment(s, COACH, aid, A.PAUSE)).paused
    assert [p.status for p in await rows(db, PlannedCheckin)] == ["cancelled"]
    async with db.sessionmaker() as s, s.begin():
        assert not (await managing.act_on_assignment(s, COACH, aid, A.RESUME)).paused
        await managing.change_schedule(
            s, COACH, aid, {"kind": "every", "every": 3, "hour": 7, "minute": 30},
            date(2026, 3, 9), None, NOW)
        with pytest.raises(managing.InvalidSchedule):
            await managing.change_schedule(s, COACH, aid, {"kind": "every", "every": 0,
                                                           "hour": 7}, NOW.date(), None, NOW)
    [changed] = await rows(db, Assignment)
    assert changed.schedule == {"kind": "every", "every": 3, "hour": 7, "minute": 30}
    assert (changed.starts_on, changed.ends_on) == (date(2026, 3, 9), None)
    async with db.sessionmaker() as s, s.begin():
        await managing.act_on_assignment(s, COACH, aid, A.CANCEL)
        assert await managing.assignments_of(s, COACH, CLIENT) == []


async def test_another_coach_cannot_touch_an_assignment(db: Store) -> None:
    async with db.sessionmaker() as s, s.begin():
        a = Assignment(coach_id=COACH, client_id=CLIENT, exercise_slug="gratitude_note",
                       schedule={"kind": "daily", "hour": 8, "days": 7}, starts_on=NOW.date())
        s.add(a)
        await s.flush()
        aid = a.id
    for action in managing.AssignmentAction:
        async with db.sessionmaker() as s, s.begin():
            with pytest.raises(managing.NotYourClient):
                await managing.act_on_assignment(s, OTHER_COACH, aid, action)
    async with db.sessionmaker() as s, s.begin():
        with pytest.raises(managing.NotYourClient):
            await managing.act_on_assignment(s, COACH, aid + 99, managing.AssignmentAction.PAUSE)
        with pytest.raises(managing.NotYourClient):
            await managing.assignments_of(s, OTHER_COACH, CLIENT)
        with pytest.raises(managing.NotYourClient):
            await managing.change_schedule(s, OTHER_COACH, aid, {"kind": "daily", "hour": 8,
                                                                 "days": 3}, NOW.date(),
                                           None, NOW)
    [untouched] = await rows(db, Assignment)
    assert untouched.active and not untouched.paused


# -- notes ----------------------------------------------------------------------------------


async def test_notes_are_the_coachs_own_and_only_for_their_clients(db: Store) -> None:
    async with db.sessionmaker() as s, s.begin():
        await notes.add_note(s, COACH, CLIENT, "Talks fast when anxious", NOW)
        with pytest.raises(notes.NotYourClient):
            await notes.add_note(s, COACH, OTHER_CLIENT, "forged", NOW)
        with pytest.raises(ValueError):
            await notes.add_note(s, COACH, CLIENT, "  ", NOW)
    async with db.sessionmaker() as s:
        assert [n.text for n in await notes.notes_about(s, COACH, CLIENT)] == [
            "Talks fast when anxious"]
        with pytest.raises(notes.NotYourClient):
            await notes.notes_about(s, OTHER_COACH, CLIENT)


# -- schedules --------------------------------------------------------------------------------


def test_working_days_and_week_order_follow_the_clients_country() -> None:
    from bot.i18n import week_order, working_days

    assert working_days("IL") == (6, 0, 1, 2, 3)  # Sunday to Thursday
    assert working_days("HR") == (0, 1, 2, 3, 4)
    assert week_order("IL")[0] == 6 and week_order("IT")[0] == 0


@pytest.mark.parametrize(("text", "locale", "days"), [
    ("Monday, Thursday", "en", [0, 3]), ("pon, srijeda i petak", "hr", [0, 2, 4]),
    ("lunedì e venerdì", "it", [0, 4]), ("יום שני, יום רביעי", "he", [0, 2]),
    ("понеделник и сряда", "bg", [0, 2]), ("dilluns i dimecres", "ca", [0, 2]),
    ("Mon Wed", "hr", [0, 2]), ("Monday, someday", "en", None), ("", "en", None),
    # Typed without accents, as on many phones (r29-it).
    ("lunedi, giovedi", "it", [0, 3]), ("cetvrtak i petak", "hr", [3, 4]),
    ("dimecres, dissabte", "ca", [2, 5]),
])
def test_days_are_read_in_the_coachs_language(text: str, locale: str,
                                               days: list[int] | None) -> None:
    from bot.i18n import parse_weekdays

    assert parse_weekdays(text, locale) == days


def test_schedule_answers_become_a_schedule_in_the_clients_week() -> None:
    base = {"schedule.time": "07:45", "schedule.start": "2026-03-08", "schedule.weeks": 2}
    working = managing.schedule_from_answers({**base, "schedule.kind": "working"}, "IL", "en")
    assert working == ({"kind": "weekdays", "hour": 7, "minute": 45,
                        "weekdays": [0, 1, 2, 3, 6]}, date(2026, 3, 8), date(2026, 3, 21))
    every = managing.schedule_from_answers({**base, "schedule.kind": "every",
                                            "schedule.every": 3, "schedule.weeks": 0},
                                           "HR", "en")
    assert every == ({"kind": "every", "hour": 7, "minute": 45, "every": 3},
                     date(2026, 3, 8), None)
    named = managing.schedule_from_answers({**base, "schedule.kind": "days",
                                            "schedule.days": "utorak, četvrtak"}, "HR", "hr")
    assert named[0]["weekdays"] == [1, 3]
    with pytest.raises(managing.InvalidSchedule):
        managing.schedule_from_answers({**base, "schedule.kind": "days",
                                        "schedule.days": "soon"}, "HR", "en")


def test_a_schedule_reads_in_the_clients_week_order() -> None:
    from bot.i18n import translator_for

    schedule = {"kind": "weekdays", "hour": 7, "minute": 30, "weekdays": [0, 6]}
    israel = managing.describe_schedule(schedule, date(2026, 3, 8), None, "IL",
                                        translator_for("en"))
    assert israel.startswith("Sunday, Monday at 7:30") and "until cancelled" in israel
    italy = managing.describe_schedule(schedule, date(2026, 3, 8), date(2026, 3, 21), "IT",
                                       translator_for("en"))
    assert italy.startswith("Monday, Sunday at 7:30")


def test_every_n_days_and_minutes_are_planned_in_local_time() -> None:
    from bot.schedule import planning

    profile = planning.Profile(time_zone="Asia/Jerusalem")
    dues = planning.exercises(profile, {"kind": "every", "every": 3, "hour": 7, "minute": 45},
                              date(2026, 3, 4), None, NOW, timedelta(days=7))
    assert [d.astimezone(profile.zone).strftime("%m-%d %H:%M") for d in dues] == [
        "03-07 07:45", "03-10 07:45"]


async def test_a_coach_changes_a_schedule_and_writes_a_note_in_dialogues(
        db: Store, dialogues: DialogueSet) -> None:
    async with db.sessionmaker() as s, s.begin():
        a = Assignment(coach_id=COACH, client_id=CLIENT, exercise_slug="gratitude_note",
                       schedule={"kind": "daily", "hour": 8, "days": 7}, starts_on=NOW.date())
        s.add(a)
        await s.flush()
        aid = a.id
    change = Start(managing.EXERCISE_SCHEDULE, {managing.SCHEDULE_ASSIGNMENT: aid,
                                                "schedule.client_name": "Ana"})
    await run(db, dialogues, COACH, change, Turn(text="3"), Turn(text="Mon, Thu"),
              Turn(text="18:15"), Turn(text="2026-03-09"), Turn(text="4"))
    [changed] = await rows(db, Assignment)
    assert changed.schedule == {"kind": "weekdays", "hour": 18, "minute": 15,
                                "weekdays": [0, 3]}
    assert changed.ends_on == date(2026, 4, 5)
    note = Start(notes.COACH_NOTE, {notes.NOTE_CLIENT: CLIENT, notes.NOTE_CLIENT_NAME: "Ana"})
    await run(db, dialogues, COACH, note, Turn(text="Ready for a bigger goal"))
    # A forged schedule start for another coach's assignment changes nothing.
    forged = Start(managing.EXERCISE_SCHEDULE, {managing.SCHEDULE_ASSIGNMENT: aid,
                                                "schedule.client_name": "Ana"})
    await run(db, dialogues, OTHER_COACH, forged, Turn(text="1"), Turn(text="07:00"),
              Turn(text="2026-03-09"), Turn(text="0"))
    [same] = await rows(db, Assignment)
    assert same.schedule == changed.schedule
    [kept] = await rows(db, CoachNote)
    assert (kept.coach_id, kept.client_id, kept.text) == (COACH, CLIENT, "Ready for a bigger goal")
    coach_answers = [a for a in await rows(db, Answer) if a.user_id in (COACH, OTHER_COACH)]
    assert coach_answers == []  # carried, not kept
    async with db.turn(COACH) as t:
        assert "schedule." not in repr(t.state) and "note." not in repr(t.state)


async def test_a_coachs_words_to_a_client_are_not_taken_for_the_coachs_crisis(
        db: Store, dialogues: DialogueSet) -> None:
    # A coach quoting what a client said is not a coach in crisis (an earlier model also took
    # "Thinking of you" for a sign of one).
    words = "You wrote 'I want to end my life' last week"
    outcome = await run(db, dialogues, COACH, message_start(CLIENT), Turn(text=words))
    assert not outcome.crisis and outcome.signal is None
    assert [r for r in await rows(db, Outbox) if r.chat_id == CLIENT]
    async with db.sessionmaker() as s:
        coach = await s.get(User, COACH)
        assert coach is not None and coach.crisis_pause_until is None
    # Words of crisis from the client, replying, take the crisis path.
    replied = await run(db, dialogues, CLIENT, reply_start(COACH),
                        Turn(text="I want to end my life"))
    assert replied.crisis


async def test_a_new_assignment_with_a_schedule_of_the_coachs_own(
        db: Store, dialogues: DialogueSet) -> None:
    def new(coach: int, client: int, exercise: str) -> Start:
        return Start(managing.EXERCISE_SCHEDULE, {
            managing.SCHEDULE_CLIENT: client, managing.SCHEDULE_EXERCISE: exercise,
            "schedule.client_name": "Ana"})

    steps = [Turn(text="2"), Turn(text="07:15"), Turn(text="2026-03-08"), Turn(text="2")]
    done = await run(db, dialogues, COACH, new(COACH, CLIENT, "gratitude_note"), *steps)
    assert done.replies[-1].text.startswith("Done. The new schedule: Monday, Tuesday")
    [made] = await rows(db, Assignment)
    assert (made.coach_id, made.client_id, made.exercise_slug) == (COACH, CLIENT,
                                                                    "gratitude_note")
    assert made.schedule == {"kind": "weekdays", "hour": 7, "minute": 15,
                             "weekdays": [0, 1, 2, 3, 4]}  # Croatia's working days
    assert (made.starts_on, made.ends_on) == (date(2026, 3, 8), date(2026, 3, 21))
    # Another coach's client, an unknown exercise, someone else's own exercise: nothing.
    for coach, client, exercise in ((COACH, OTHER_CLIENT, "gratitude_note"),
                                    (COACH, CLIENT, "daily_checkin"), (COACH, CLIENT, "x999"),
                                    (COACH, CLIENT, "xx")):
        refused = await run(db, dialogues, coach, new(coach, client, exercise), *steps)
        assert "nothing was changed" in refused.replies[-1].text
    assert len(await rows(db, Assignment)) == 1


# -- what a coach's actions send during a client's crisis pause (issue 21) ----------------


async def comes_back(store: Store, dialogues: DialogueSet, text: str, at: datetime) -> None:
    """The client writes again, as the Telegram front end passes it on."""
    async def go(t: StoreTurn) -> None:
        outcome = await converse(t, dialogues, Turn(text=text), at)
        await safety.end_pause_when_client_comes_back(t, outcome, at)

    await store.run_turn(CLIENT, go)


async def from_coach(store: Store, chat: int = CLIENT) -> list[tuple[str, str]]:
    """(status, text) of what the coach's turns queued for ``chat``."""
    return [(r.status, r.payload["text"]) for r in await rows(store, Outbox)
            if r.chat_id == chat and r.user_id == COACH]


async def paused_for_five_hours(store: Store) -> datetime:
    """The client's crisis pause ends in five hours, by a store turn's clock: now, returned."""
    now = datetime.now(UTC)
    async with store.sessionmaker() as s, s.begin():
        client = await s.get(User, CLIENT)
        assert client is not None
        client.crisis_pause_until = now + timedelta(hours=5)
    return now


async def release(store: Store, at: datetime) -> int:
    async with store.sessionmaker() as s, s.begin():
        return await messages.release_after_pause(s, at)


async def test_a_relayed_message_queued_before_a_crisis_waits_for_the_client_to_come_back(
        db: Store, dialogues: DialogueSet) -> None:
    await run(db, dialogues, COACH, message_start(CLIENT), Turn(text="See you on Monday"))
    assert [status for status, _ in await from_coach(db)] == ["pending"]
    assert (await run(db, dialogues, CLIENT, Turn(text="I want to kill myself tonight"))).crisis
    # Not held back for good by the help lines: it waits for the pause.
    assert [status for status, _ in await from_coach(db)] == ["held"]
    assert await release(db, NOW + timedelta(hours=1)) == 0
    await comes_back(db, dialogues, "Hello again", NOW + timedelta(hours=2))
    [(status, text)] = await from_coach(db)
    assert status == "pending" and "See you on Monday" in text


async def test_a_session_count_agreed_during_the_pause_arrives_after_it(
        db: Store, dialogues: DialogueSet) -> None:
    now = await paused_for_five_hours(db)

    async def agree(t: StoreTurn) -> None:
        await sessions.agree_button(t, [str(CLIENT), "6"])

    await db.run_turn(COACH, agree)
    [(status, text)] = await from_coach(db)
    assert status == "held" and "6" in text
    assert [status for status, _ in await from_coach(db, COACH)] == ["pending"]  # the coach's
    assert await release(db, now + timedelta(hours=2)) == 0
    assert await release(db, now + timedelta(hours=6)) == 1
    assert [status for status, _ in await from_coach(db)] == ["pending"]
    assert await release(db, now + timedelta(hours=7)) == 0  # once


async def test_whatever_a_coach_sends_waits_only_for_the_paused_client(
        db: Store, dialogues: DialogueSet) -> None:
    """One mechanism for a celebration, a group session's notice, a contribution offer: any
    message a coach's turn queues for a paused client's chat waits; for anyone else, or a
    group's chat, it goes as usual."""
    now = await paused_for_five_hours(db)

    async def celebrate(t: StoreTurn) -> None:
        for chat in (CLIENT, OTHER_CLIENT, -100123):
            t.enqueue(chat, {"text": "Congratulations, team!"})

    await db.run_turn(COACH, celebrate)
    assert [status for status, _ in await from_coach(db)] == ["held"]
    assert [status for status, _ in await from_coach(db, OTHER_CLIENT)] == ["pending"]
    assert [status for status, _ in await from_coach(db, -100123)] == ["pending"]
    await comes_back(db, dialogues, "Hi", now + timedelta(hours=1))
    assert [status for status, _ in await from_coach(db)] == ["pending"]
