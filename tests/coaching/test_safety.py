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
    end_pause_when_client_writes,
    paused_by_crisis,
)
from bot.dialogue import DialogueSet, load_dialogues
from bot.engine import Turn, runner
from bot.engine.crisis import CrisisCategory, CrisisLevel, CrisisSignal
from bot.schedule.starting import claim_and_start
from bot.store import Answer, Conversation, Goal, Outbox, PlannedCheckin, Store, User

REPO = Path(__file__).parents[2]
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
        ("daily", "cancelled", NOW + timedelta(hours=1)),
        ("daily", "cancelled", NOW - timedelta(minutes=1)),  # already claimed: cancelled too
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
    assert await claim_and_start(store, dialogues, NOW + timedelta(hours=2),
                                 worker_id="w") == {"cancelled": 1}
    later = NOW + CRISIS_PAUSE + timedelta(minutes=1)
    assert await claim_and_start(store, dialogues, later, worker_id="w") == {"started": 1}
    async with store.sessionmaker() as session:
        last = (await session.execute(select(Outbox.payload).order_by(Outbox.id.desc())
                                      .limit(1))).scalar_one()
    assert "check in with you after yesterday" in last["text"]


async def test_quiet_hours_hold_the_caring_check_in(store: Store,
                                                    dialogues: DialogueSet) -> None:
    await client(store)
    await crisis(store, dialogues)
    async with store.sessionmaker() as session, session.begin():
        user = await session.get(User, CLIENT)
        assert user is not None
        user.quiet_start, user.quiet_end = 9 * 60, 12 * 60  # 10:00 in Rome is quiet
    later = NOW + CRISIS_PAUSE + timedelta(minutes=1)
    assert await claim_and_start(store, dialogues, later, worker_id="w") == {"postponed": 1}


async def test_before_consent_only_help_is_given(store: Store, dialogues: DialogueSet) -> None:
    await client(store, consent=False)

    async def cry(t):  # type: ignore[no-untyped-def]
        return await converse(t, dialogues, Turn(text=WORDS), NOW)

    outcome = await store.run_turn(CLIENT, cry)
    assert outcome.crisis and "pausing our coaching" in outcome.replies[0].text
    user = await store.get_user(CLIENT)
    assert user is not None and user.crisis_pause_until is None
    assert [k for k, _, _ in await planned(store)] == ["daily", "daily", "weekly"]


def test_writing_again_ends_the_pause() -> None:
    from types import SimpleNamespace

    user = SimpleNamespace(crisis_pause_until=NOW + CRISIS_PAUSE)
    end_pause_when_client_writes(user, None, NOW)  # type: ignore[arg-type]
    assert user.crisis_pause_until is None


async def care_answer(store: Store, dialogues: DialogueSet, at: datetime, answer: str) -> str:
    """The caring check-in due by ``at`` starts, and the client answers it as the Telegram
    front end passes it on (their writing ends a pause unless the answer keeps it): what the
    bot said in reply."""
    assert await claim_and_start(store, dialogues, at, worker_id="w") == {"started": 1}

    async def run(t):  # type: ignore[no-untyped-def]
        outcome = await converse(t, dialogues, Turn(text=answer), at)
        end_pause_when_client_writes(t.user, outcome, at)
        return outcome

    outcome = await store.run_turn(CLIENT, run)
    return "\n".join(reply.text for reply in outcome.replies)


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
    statuses = {(kind, due): status for kind, status, due in await planned(store)}
    assert statuses[("daily", day1 + timedelta(hours=3))] == "cancelled"
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
    assert "I will not keep asking every day" in said
    assert "Your check-ins come back at their usual time" in said and "/sos" in said
    assert "Until tomorrow" not in said
    user = await store.get_user(CLIENT)
    assert user is not None and not paused_by_crisis(user, at)
    assert [due for status, due in await care_rows(store) if status == "planned"] == []
    later = at + CRISIS_PAUSE + timedelta(minutes=1)
    assert await claim_and_start(store, dialogues, later, worker_id="w") == {}


async def test_better_resumes_as_usual_and_says_so(store: Store,
                                                   dialogues: DialogueSet) -> None:
    await client(store)
    await crisis(store, dialogues)
    day1 = NOW + CRISIS_PAUSE + timedelta(minutes=1)
    said = await care_answer(store, dialogues, day1, "better")
    assert said.startswith("I am glad to hear that. Your check-ins come back at their usual")
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
    async with store.sessionmaker() as session:
        refs = (await session.execute(select(PlannedCheckin.ref).where(
            PlannedCheckin.kind == "care", PlannedCheckin.status == "planned"))).scalars().all()
    assert refs == [""]  # the first care check-in again: three more days at most
