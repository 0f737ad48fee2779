"""After an urgent crisis: what was scheduled pauses for a day (in the same transaction as the
help lines), a caring check-in follows the next day, and nothing of the words is kept. An
answer still in need ("about the same", "worse") shows the help lines and extends the
pause with another caring check-in, a bounded number of days in a row; "better" resumes."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import insert, select

from bot.coaching.conversation import Start, converse
from bot.coaching.safety import (
    CRISIS_PAUSE,
    MAX_CARE_CHECKINS,
    comes_back,
    end_pause_when_client_comes_back,
    keeps_the_pause,
    paused_by_crisis,
)
from bot.dialogue import DialogueSet, load_dialogues
from bot.engine import ConversationState, Outcome, Turn, runner
from bot.engine.crisis import CrisisCategory, CrisisLevel, CrisisSignal
from bot.schedule.starting import claim_and_start
from bot.store import (
    Answer,
    CoachingSession,
    Conversation,
    Goal,
    Outbox,
    PlannedCheckin,
    SessionMode,
    SessionStatus,
    Store,
    User,
)

REPO = Path(__file__).parents[2]
SAFETY_QUESTION = "are you having thoughts of ending your life or of hurting yourself?"
CARE_OPENING = "How are you today, compared with yesterday?"
NOW = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
CLIENT = 42
WORDS = "MARKER I took all the pills tonight"
SIGNAL = CrisisSignal(CrisisLevel.URGENT, CrisisCategory.PLAN_MEANS, 0.99, ("test",))


@pytest.fixture(scope="module")
def dialogues() -> DialogueSet:
    return load_dialogues(REPO / "dialogues")


@pytest.fixture(autouse=True)
def fixed_detector(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "detect_crisis", lambda text: SIGNAL if text == WORDS else None)


async def client(store: Store, *, consent: bool = True) -> None:
    async with store.sessionmaker() as session, session.begin():
        await session.execute(insert(User), [{
            "id": CLIENT, "time_zone": "Europe/Rome", "created_at": NOW - timedelta(days=9),
            "consent_at": NOW - timedelta(days=9) if consent else None}])
        await session.execute(insert(Goal), [{"user_id": CLIENT, "title": "Walk",
                                               "created_at": NOW - timedelta(days=9)}])
        await session.execute(insert(PlannedCheckin), [
            {"user_id": CLIENT, "kind": "daily", "due_at": NOW + timedelta(hours=1)},
            {"user_id": CLIENT, "kind": "daily", "due_at": NOW - timedelta(minutes=1),
             "status": "claimed", "claimed_by": "other-worker", "claimed_at": NOW},
            {"user_id": CLIENT, "kind": "weekly", "due_at": NOW + timedelta(hours=30)}])


async def crisis(store: Store, dialogues: DialogueSet) -> None:
    async def run(t):  # type: ignore[no-untyped-def]
        await converse(t, dialogues, Start("daily_checkin"), NOW)
        return None

    await store.run_turn(CLIENT, run)

    async def cry(t):  # type: ignore[no-untyped-def]
        outcome = await converse(t, dialogues, Turn(text=WORDS), NOW)
        assert outcome.crisis
        return None

    await store.run_turn(CLIENT, cry)


async def planned(store: Store) -> list[tuple[str, str, datetime]]:
    async with store.sessionmaker() as session:
        rows = await session.execute(select(PlannedCheckin.kind, PlannedCheckin.status,
                                            PlannedCheckin.due_at).order_by(PlannedCheckin.id))
        return [tuple(r) for r in rows]  # type: ignore[misc]


async def test_a_crisis_pauses_a_day_and_plans_a_caring_check_in(
    store: Store, dialogues: DialogueSet, caplog: pytest.LogCaptureFixture
) -> None:
    await client(store)
    caplog.set_level(logging.DEBUG)
    await crisis(store, dialogues)
    user = await store.get_user(CLIENT)
    assert user is not None and user.crisis_pause_until == NOW + CRISIS_PAUSE
    assert await planned(store) == [
        ("daily", "planned", NOW + timedelta(hours=1)),  # skipped if still paused by then
        ("daily", "cancelled", NOW - timedelta(minutes=1)),  # already claimed: cancelled
        ("weekly", "planned", NOW + timedelta(hours=30)),  # after the pause: kept
        ("care", "planned", NOW + CRISIS_PAUSE),
    ]
    assert "level=urgent category=plan_means" in caplog.text
    assert "MARKER" not in caplog.text and "pills" not in caplog.text
    async with store.sessionmaker() as session:
        stored = [str(v) for v in (await session.execute(select(Answer.value))).scalars()]
        stored += [str(s) for s in (await session.execute(select(Conversation.state))).scalars()]
    assert not any("MARKER" in value for value in stored)


async def test_nothing_scheduled_starts_during_the_pause_and_care_comes_after(
    store: Store, dialogues: DialogueSet
) -> None:
    await client(store)
    await crisis(store, dialogues)
    async with store.sessionmaker() as session, session.begin():
        await session.execute(insert(PlannedCheckin), [
            {"user_id": CLIENT, "kind": "exercise", "ref": "7",
             "due_at": NOW + timedelta(hours=2)}])
    # The exercise, and the daily check-in due an hour after the crisis: skipped.
    assert await claim_and_start(store, dialogues, NOW + timedelta(hours=2),
                                 worker_id="w") == {"cancelled": 2}
    later = NOW + CRISIS_PAUSE + timedelta(minutes=1)
    assert await claim_and_start(store, dialogues, later, worker_id="w") == {"started": 1}
    async with store.sessionmaker() as session:
        last = (await session.execute(select(Outbox.payload).order_by(Outbox.id.desc())
                                      .limit(1))).scalar_one()
    assert CARE_OPENING in last["text"]


async def test_quiet_hours_hold_the_caring_check_in(store: Store,
                                                    dialogues: DialogueSet) -> None:
    await client(store)
    await crisis(store, dialogues)
    async with store.sessionmaker() as session, session.begin():
        user = await session.get(User, CLIENT)
        assert user is not None
        user.quiet_start, user.quiet_end = 9 * 60, 12 * 60  # 10:00 in Rome is quiet
    later = NOW + CRISIS_PAUSE + timedelta(minutes=1)
    assert (await claim_and_start(store, dialogues, later, worker_id="w"))["postponed"] == 1


async def test_before_consent_only_help_is_given(store: Store, dialogues: DialogueSet) -> None:
    await client(store, consent=False)

    async def cry(t):  # type: ignore[no-untyped-def]
        return await converse(t, dialogues, Turn(text=WORDS), NOW)

    outcome = await store.run_turn(CLIENT, cry)
    assert outcome.crisis and "pausing our coaching" in outcome.replies[0].text
    user = await store.get_user(CLIENT)
    assert user is not None and user.crisis_pause_until is None
    assert [k for k, _, _ in await planned(store)] == ["daily", "daily", "weekly"]


async def care_answer(store: Store, dialogues: DialogueSet, at: datetime, answer: str) -> str:
    """The caring check-in due by ``at`` starts, and the client answers it as the Telegram
    front end passes it on (their writing ends a pause unless the answer keeps it): what the
    bot said in reply (a check-in due during the pause, never claimed in these tests, is
    missed by then)."""
    assert (await claim_and_start(store, dialogues, at, worker_id="w"))["started"] == 1
    said = await client_writes(store, dialogues, at, answer)
    if answer == "hard":  # "Worse" is asked about directly first; "no" goes on
        assert said.endswith(SAFETY_QUESTION) and "Telefono Amico" not in said
        said = await client_writes(store, dialogues, at, "no")
        assert said.startswith("Thank you for answering.")
    return said


async def client_writes(store: Store, dialogues: DialogueSet, at: datetime, text: str) -> str:
    """The client's message, passed on as the Telegram front end does (their writing ends a
    pause unless the answer keeps it): what the bot said in reply."""
    async def run(t):  # type: ignore[no-untyped-def]
        outcome = await converse(t, dialogues, Turn(text=text), at)
        await end_pause_when_client_comes_back(t, outcome, at)
        return outcome

    outcome = await store.run_turn(CLIENT, run)
    return "\n".join(reply.text for reply in outcome.replies)


async def planned_care_refs(store: Store) -> list[str]:
    """The rounds of the care check-ins still planned ("" is the first)."""
    async with store.sessionmaker() as session:
        return list((await session.execute(select(PlannedCheckin.ref).where(
            PlannedCheckin.kind == "care", PlannedCheckin.status == "planned"))).scalars())


async def care_rows(store: Store) -> list[tuple[str, datetime]]:
    return [(status, due) for kind, status, due in await planned(store) if kind == "care"]


@pytest.mark.parametrize("answer", ["same", "hard"])
async def test_still_in_need_shows_the_help_lines_and_extends_the_pause(
    store: Store, dialogues: DialogueSet, answer: str
) -> None:
    await client(store)
    await crisis(store, dialogues)
    day1 = NOW + CRISIS_PAUSE + timedelta(minutes=1)
    async with store.sessionmaker() as session, session.begin():
        await session.execute(insert(PlannedCheckin), [
            {"user_id": CLIENT, "kind": "daily", "due_at": day1 + timedelta(hours=3)}])
    said = await care_answer(store, dialogues, day1, answer)
    # The help lines themselves, for the client's country (Rome: Italy), and no coaching.
    assert "Telefono Amico Italia: 02 2327 2327" in said and "emergency number now: 112" in said
    assert "goal" not in said and "/checkin" not in said
    assert "Until tomorrow, I will not send you anything else" in said
    user = await store.get_user(CLIENT)
    assert user is not None and user.crisis_pause_until == day1 + CRISIS_PAUSE
    assert paused_by_crisis(user, day1 + timedelta(hours=3))
    assert await claim_and_start(store, dialogues, day1 + timedelta(hours=3),
                                 worker_id="w") == {"cancelled": 1}  # still paused: skipped
    assert ("planned", day1 + CRISIS_PAUSE) in await care_rows(store)


async def test_care_check_ins_in_a_row_are_bounded_then_the_pause_ends(
    store: Store, dialogues: DialogueSet
) -> None:
    await client(store)
    await crisis(store, dialogues)
    at = NOW
    for day in range(1, MAX_CARE_CHECKINS + 1):
        at = at + CRISIS_PAUSE + timedelta(minutes=1)
        said = await care_answer(store, dialogues, at, "hard" if day % 2 else "same")
        assert "Telefono Amico" in said
    assert "You have told me for a few days now that it is still hard" in said
    assert said.endswith("Would you like all of these to stay paused for a while?")
    assert "Until tomorrow" not in said
    user = await store.get_user(CLIENT)
    assert user is not None and not paused_by_crisis(user, at)
    assert [due for status, due in await care_rows(store) if status == "planned"] == []
    later = at + CRISIS_PAUSE + timedelta(minutes=1)
    assert await claim_and_start(store, dialogues, later, worker_id="w") == {}


async def test_still_hard_at_the_last_care_check_in_the_client_may_keep_the_pause(
    store: Store, dialogues: DialogueSet
) -> None:
    await client(store)
    await crisis(store, dialogues)
    at = NOW
    for _ in range(MAX_CARE_CHECKINS):
        at = at + CRISIS_PAUSE + timedelta(minutes=1)
        said = await care_answer(store, dialogues, at, "hard")
    for answer in ("yes", "4"):
        said = await client_writes(store, dialogues, at, answer)
    assert said.startswith("Done. For 4 days, I will not send you check-ins, weekly reviews, "
                           "exercises or session reminders.")
    assert "/sos shows them again" in said
    user = await store.get_user(CLIENT)
    assert user is not None and user.paused_until == at + timedelta(days=4)


async def test_better_resumes_as_usual_and_says_so(store: Store,
                                                   dialogues: DialogueSet) -> None:
    await client(store)
    await crisis(store, dialogues)
    day1 = NOW + CRISIS_PAUSE + timedelta(minutes=1)
    said = await care_answer(store, dialogues, day1, "better")
    assert said.startswith("Thank you for letting me know. Your check-ins, weekly reviews, "
                           "exercises and session reminders start again as usual.")
    assert "Telefono Amico" not in said and "/checkin" not in said
    user = await store.get_user(CLIENT)
    assert user is not None and not paused_by_crisis(user, day1)
    assert [status for status, _ in await care_rows(store)] == ["started"]


async def test_a_new_crisis_during_the_care_days_counts_again_from_the_first(
    store: Store, dialogues: DialogueSet
) -> None:
    await client(store)
    await crisis(store, dialogues)
    day1 = NOW + CRISIS_PAUSE + timedelta(minutes=1)
    await care_answer(store, dialogues, day1, "same")

    async def cry(t):  # type: ignore[no-untyped-def]
        return await converse(t, dialogues, Turn(text=WORDS), day1 + timedelta(hours=1))

    assert (await store.run_turn(CLIENT, cry)).crisis
    refs = await planned_care_refs(store)
    assert refs == [""]  # the first care check-in again: three more days at most


async def test_worse_answered_yes_to_the_safety_question_is_a_crisis_again(
    store: Store, dialogues: DialogueSet
) -> None:
    await client(store)
    await crisis(store, dialogues)
    day2 = NOW + CRISIS_PAUSE + timedelta(minutes=1)
    await care_answer(store, dialogues, day2, "same")
    day3 = day2 + CRISIS_PAUSE + timedelta(minutes=1)
    assert (await claim_and_start(store, dialogues, day3, worker_id="w"))["started"] == 1
    assert (await client_writes(store, dialogues, day3, "hard")).endswith(SAFETY_QUESTION)
    said = await client_writes(store, dialogues, day3, "yes")
    assert "Telefono Amico Italia: 02 2327 2327" in said and "Until tomorrow" in said
    user = await store.get_user(CLIENT)
    assert user is not None and user.crisis_pause_until == day3 + CRISIS_PAUSE
    refs = await planned_care_refs(store)
    assert refs == [""]  # a crisis again: the care check-ins count from the first


# -- a pause, not a loss: what comes back when the client does (gap 3 of the audit) ------

COACH = 7
EVENING = NOW + timedelta(hours=8)  # 18:00 in Rome: today's check-in


async def sessions_ahead(store: Store) -> None:
    """Two sessions today (UTC): one at 14:00 (its reminder due at 10:00), one at 19:00
    (its reminder at 18:00); and the evening check-in, at 17:00."""
    async with store.sessionmaker() as s, s.begin():
        s.add(User(id=COACH, first_name="Carla", is_coach=True, created_at=NOW))
        await s.flush()
        for number, hours, reminder in ((1, 5, 1), (2, 10, 9)):
            at = NOW + timedelta(hours=hours)
            s.add(CoachingSession(uid=f"s{number}@coachbot", coach_id=COACH, client_id=CLIENT,
                                  local_start=at.replace(tzinfo=None), zone="UTC",
                                  starts_at=at, minutes=60, mode=SessionMode.VIDEO,
                                  status=SessionStatus.SCHEDULED, created_at=NOW,
                                  updated_at=NOW))
            await s.flush()
            s.add(PlannedCheckin(user_id=CLIENT, kind="session_reminder", ref=str(number),
                                 due_at=NOW + timedelta(hours=reminder)))
        s.add(PlannedCheckin(user_id=CLIENT, kind="daily", due_at=EVENING))


async def said_last(store: Store) -> str:
    async with store.sessionmaker() as session:
        payload = (await session.execute(select(Outbox.payload).order_by(Outbox.id.desc())
                                         .limit(1))).scalar()
    return "" if payload is None else str(payload["text"])


async def test_a_client_who_comes_back_gets_what_is_still_to_come_today(
        store: Store, dialogues: DialogueSet) -> None:
    await client(store)
    await sessions_ahead(store)
    await crisis(store, dialogues)
    # 10:00: the check-in of 10:00 is skipped; the reminder of the 15:00 session waits.
    assert await claim_and_start(store, dialogues, NOW + timedelta(hours=1),
                                 worker_id="w") == {"cancelled": 1, "held": 1}

    async def writes(t):  # type: ignore[no-untyped-def]
        outcome = await converse(t, dialogues, Turn(text="I slept a bit"), NOW + timedelta(
            hours=2))
        await end_pause_when_client_comes_back(t, outcome, NOW + timedelta(hours=2))

    await store.run_turn(CLIENT, writes)
    user = await store.get_user(CLIENT)
    assert user is not None and user.crisis_pause_until is None
    # The held reminder now (its session is still to come), the rest at its own time.
    assert await claim_and_start(store, dialogues, NOW + timedelta(hours=2),
                                 worker_id="w") == {"started": 1}
    assert "your coaching session is coming up" in await said_last(store)
    assert await claim_and_start(store, dialogues, EVENING, worker_id="w") == {"started": 1}
    assert "How are you feeling today, from 1" in await said_last(store)
    assert await claim_and_start(store, dialogues, NOW + timedelta(hours=9),
                                 worker_id="w") == {"started": 1}
    assert "your coaching session is coming up" in await said_last(store)
    statuses = [status for kind, status, _ in await planned(store) if kind == "care"]
    assert statuses == ["planned"]  # the care check-in still comes the next day


async def test_a_client_who_does_not_come_back_gets_nothing_until_the_care_check_in(
        store: Store, dialogues: DialogueSet) -> None:
    await client(store)
    await sessions_ahead(store)
    await crisis(store, dialogues)
    after_crisis = await said_last(store)
    for hours, expected in ((1, {"cancelled": 1, "held": 1}), (8, {"cancelled": 1}),
                            (9, {"held": 1})):
        assert await claim_and_start(store, dialogues, NOW + timedelta(hours=hours),
                                     worker_id="w") == expected
        assert await said_last(store) == after_crisis  # nothing sent
    # The next day: the care check-in; both sessions are over, so their reminders go.
    later = NOW + CRISIS_PAUSE + timedelta(minutes=1)
    assert await claim_and_start(store, dialogues, later, worker_id="w") == {
        "started": 1, "cancelled": 2}
    assert CARE_OPENING in await said_last(store)


def test_only_coming_back_to_a_dialogue_ends_the_pause() -> None:
    """Free text or a dialogue's button comes back; a command, /sos, a caption or an edit
    does not; nor a message that shows a sign of crisis, urgent or possible (the safety
    question was just asked)."""
    assert comes_back(Turn(text="hello")) and comes_back(Turn(button="mood:3"))
    assert not comes_back(Turn(text="hello", answers=False))
    assert not comes_back(None) and not comes_back(Start("daily_checkin"))
    check = CrisisSignal(CrisisLevel.CHECK, CrisisCategory.INDIRECT_IDEATION, 0.6, ("t",))
    state = ConversationState()
    assert keeps_the_pause(Outcome(state, (), signal=check))
    assert keeps_the_pause(Outcome(state, (), crisis=True, signal=SIGNAL))
    assert keeps_the_pause(None)
    assert not keeps_the_pause(Outcome(state, ()))
