"""A day-long exercise comes back on its own in the evening (a ``later`` step): planned in
the client's zone, started at its status question by the scheduler under the usual rules,
and its answer reaches the coach and the programme as if it had run in one go. On SQLite
and PostgreSQL."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

from bot.coaching import programmes
from bot.coaching.assignments import exercise_ids
from bot.coaching.conversation import Start
from bot.coaching.later import plan_later
from bot.dialogue import DialogueSet, load_dialogues
from bot.engine import Later, Turn
from bot.schedule.starting import claim_and_start
from bot.store import (
    Answer,
    Assignment,
    CoachEvent,
    CoachLink,
    Conversation,
    Outbox,
    PlannedCheckin,
    Store,
    User,
)
from bot.store import Turn as StoreTurn
from tests.coaching.turns import run

REPO = Path(__file__).parents[2]
MORNING = datetime(2026, 3, 4, 8, 0, tzinfo=UTC)  # a Wednesday, 9:00 in Rome
EVENING = datetime(2026, 3, 4, 18, 0, tzinfo=UTC)  # 19:00 in Rome
COACH, CLIENT = 1, 10


@pytest.fixture(scope="module")
def dialogues() -> DialogueSet:
    return load_dialogues(REPO / "dialogues")


@pytest.fixture
async def db(store: Store) -> AsyncIterator[Store]:
    async with store.sessionmaker() as s, s.begin():
        s.add_all([User(id=COACH, first_name="Carla", is_coach=True),
                   User(id=CLIENT, first_name="Ana", consent_at=MORNING - timedelta(days=9),
                        time_zone="Europe/Rome", reachable=True)])
        await s.flush()
        s.add(CoachLink(coach_id=COACH, client_id=CLIENT, created_at=MORNING,
                        consent_at=MORNING - timedelta(days=3)))
    yield store


async def later_rows(store: Store) -> list[tuple[str, str, datetime]]:
    async with store.sessionmaker() as s:
        found = await s.execute(select(PlannedCheckin).where(PlannedCheckin.kind == "later")
                                .order_by(PlannedCheckin.id))
        return [(r.ref, r.status, r.due_at.astimezone(UTC)) for r in found.scalars()]


async def sent(store: Store) -> list[dict[str, Any]]:
    async with store.sessionmaker() as s:
        return [o.payload for o in (await s.execute(
            select(Outbox).where(Outbox.user_id == CLIENT).order_by(Outbox.id))).scalars()]


async def test_it_comes_back_this_evening_and_the_coach_hears_how_it_went(
        db: Store, dialogues: DialogueSet) -> None:
    async with db.sessionmaker() as s, s.begin():
        await programmes.assign_programme(
            s, COACH, CLIENT, dialogues.programmes["two_week_focus"], MORNING.date(), 8, 0,
            MORNING, exercise_ids(dialogues))
    outcome = await run(db, dialogues, CLIENT, Start("time_log"), now=MORNING)
    assert outcome.replies[-1].text == ("You have the rest of the day for it. I will check in with "
                                        "you this evening at 7:00\u202fPM to hear how it went.")
    assert not outcome.replies[-1].buttons and not outcome.state.active
    assert await later_rows(db) == [("time_log:status", "planned", EVENING)]

    assert await claim_and_start(db, dialogues, EVENING, worker_id="w") == {"started": 1}
    assert await later_rows(db) == [("time_log:status", "started", EVENING)]
    question = (await sent(db))[-1]
    assert question["text"] == "Did you get to keep your time log?"
    assert [b["label"] for b in question["buttons"]] == [
        "I did it", "I did part of it", "Not this time"]

    done = question["buttons"][0]["data"]
    outcome = await run(db, dialogues, CLIENT, Turn(button=done), now=EVENING)
    assert outcome.replies[0].text == "Thank you for making time for it."
    async with db.sessionmaker() as s:
        answers = (await s.execute(select(Answer).where(
            Answer.variable == "exercise.status"))).scalars().all()
        assert [(a.dialogue_id, a.value) for a in answers] == [("time_log", "done")]
        events = (await s.execute(select(CoachEvent))).scalars().all()
        assert [(e.coach_id, e.client_id, e.kind) for e in events] == [
            (COACH, CLIENT, "exercise_done")]
        step = (await s.execute(select(Assignment).where(
            Assignment.exercise_slug == "time_log"))).scalar_one()
        assert step.done_at is not None  # the programme's step is over, as in one go


async def test_late_in_the_day_it_comes_back_tomorrow_evening(
        db: Store, dialogues: DialogueSet) -> None:
    # 16:30 in Rome: 19:00 is less than three hours away there (not in UTC, at 15:30).
    half_past_four = datetime(2026, 3, 4, 15, 30, tzinfo=UTC)
    outcome = await run(db, dialogues, CLIENT, Start("energy_audit"), now=half_past_four)
    assert outcome.replies[-1].text == (
        "There is not much of the day left, so this one is for tomorrow. I will check in with "
        "you tomorrow at 7:00\u202fPM to hear how it went.")
    assert await later_rows(db) == [
        ("energy_audit:status", "planned", EVENING + timedelta(days=1))]
    assert await claim_and_start(db, dialogues, EVENING, worker_id="w") == {}


async def test_another_dialogue_in_between_does_not_lose_it(
        db: Store, dialogues: DialogueSet) -> None:
    await run(db, dialogues, CLIENT, Start("three_good_things"), now=MORNING)
    other = await run(db, dialogues, CLIENT, Start("stop_start_continue"),
                      now=MORNING + timedelta(hours=4))
    assert other.state.active  # left in the middle of another dialogue
    async with db.sessionmaker() as s, s.begin():  # then (the row keeps the real clock's)
        await s.execute(update(Conversation).values(updated_at=MORNING + timedelta(hours=4)))
    evening = datetime(2026, 3, 4, 19, 0, tzinfo=UTC)  # 20:00 in Rome
    assert await later_rows(db) == [("three_good_things:status", "planned", evening)]
    assert await claim_and_start(db, dialogues, evening, worker_id="w") == {"started": 1}
    assert (await sent(db))[-1]["text"] == "Did you get to write down your three good things?"


async def test_a_client_in_the_middle_of_a_dialogue_is_asked_half_an_hour_later(
        db: Store, dialogues: DialogueSet) -> None:
    await run(db, dialogues, CLIENT, Start("time_log"), now=MORNING)
    asking = await run(db, dialogues, CLIENT, Start("stop_start_continue"),
                       now=EVENING - timedelta(minutes=5))
    assert asking.state.active
    async with db.sessionmaker() as s, s.begin():
        await s.execute(update(Conversation).values(updated_at=EVENING - timedelta(minutes=5)))
    assert await claim_and_start(db, dialogues, EVENING, worker_id="w") == {"postponed": 1}
    assert await later_rows(db) == [
        ("time_log:status", "planned", EVENING + timedelta(minutes=30))]


async def test_after_the_day_is_over_it_is_missed(db: Store, dialogues: DialogueSet) -> None:
    await run(db, dialogues, CLIENT, Start("time_log"), now=MORNING)
    next_day = EVENING + timedelta(hours=6)  # 01:00 in Rome, the next day
    assert await claim_and_start(db, dialogues, next_day, worker_id="w") == {"missed": 1}


async def test_running_it_again_moves_its_coming_back(db: Store,
                                                      dialogues: DialogueSet) -> None:
    await run(db, dialogues, CLIENT, Start("time_log"), now=MORNING)
    await run(db, dialogues, CLIENT, Start("time_log"), now=MORNING + timedelta(hours=1))
    assert await later_rows(db) == [("time_log:status", "planned", EVENING)]
    await run(db, dialogues, CLIENT, Start("time_log"), now=EVENING)  # now for tomorrow
    assert await later_rows(db) == [
        ("time_log:status", "cancelled", EVENING),
        ("time_log:status", "planned", EVENING + timedelta(days=1))]


async def test_export_has_it_and_erase_removes_it(db: Store, dialogues: DialogueSet) -> None:
    await run(db, dialogues, CLIENT, Start("time_log"), now=MORNING)
    exported = await db.export_user(CLIENT)
    assert [(r["kind"], r["ref"]) for r in exported["planned_checkins"]] == [
        ("later", "time_log:status")]
    await db.erase_user(CLIENT)
    assert await later_rows(db) == []


async def test_a_reference_too_long_is_not_planned_and_the_log_names_no_one(
        db: Store, caplog: pytest.LogCaptureFixture) -> None:
    step = "s" * 60

    async def go(t: StoreTurn) -> bool:
        return await plan_later(t, Later("time_log", step, date(2026, 3, 4), time(19)))

    with caplog.at_level(logging.WARNING):
        assert await db.run_turn(CLIENT, go) is False
    assert await later_rows(db) == []
    assert "not planned" in caplog.text
    assert step not in caplog.text and "time_log" not in caplog.text and "Ana" not in caplog.text
