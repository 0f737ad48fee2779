"""The safety question in the shipped daily check-in: a mood of 2 or less asks it, whatever
the detector says, and a "yes" to it takes the urgent path, audited and counted like any
signal of the detector, with nothing of the words."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import insert

from bot.coaching.conversation import Start, converse
from bot.coaching.safety import CRISIS_PAUSE
from bot.dialogue import DialogueSet, load_dialogues
from bot.engine import Outcome, Turn, runner
from bot.engine.crisis import CrisisCategory, CrisisLevel
from bot.observability import REGISTRY
from bot.store import Goal, Store, User
from bot.store import Turn as StoreTurn

REPO = Path(__file__).parents[2]
NOW = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
CLIENT = 43
ASKED = "are you having thoughts of ending your life or of hurting yourself?"


@pytest.fixture(scope="module")
def dialogues() -> DialogueSet:
    return load_dialogues(REPO / "dialogues")


async def in_check_in(store: Store, dialogues: DialogueSet, mood: str) -> Outcome:
    """A consenting client with a goal, at the shipped daily check-in's mood question,
    answers it with ``mood`` (the real detector reads it)."""
    async with store.sessionmaker() as session, session.begin():
        await session.execute(insert(User), [{
            "id": CLIENT, "time_zone": "Europe/Rome", "created_at": NOW - timedelta(days=9),
            "consent_at": NOW - timedelta(days=9)}])
        await session.execute(insert(Goal), [{"user_id": CLIENT, "title": "Walk",
                                               "created_at": NOW - timedelta(days=9)}])
    return await say(store, dialogues, Turn(text=mood), start=True)


async def say(store: Store, dialogues: DialogueSet, turn: Turn, *,
              start: bool = False) -> Outcome:
    async def run(t: StoreTurn) -> Outcome:
        if start:
            opened = await converse(t, dialogues, Start("daily_checkin"), NOW)
            assert "How are you feeling today" in opened.replies[-1].text
        return await converse(t, dialogues, turn, NOW)

    outcome = await store.run_turn(CLIENT, run)
    assert outcome is not None
    return outcome


def counted(category: CrisisCategory) -> float:
    return REGISTRY.get_sample_value("crisis_signals_total", {
        "level": CrisisLevel.URGENT.value, "category": category.value}) or 0.0


async def test_a_mood_of_two_in_the_shipped_check_in_asks_the_safety_question(
    store: Store, dialogues: DialogueSet
) -> None:
    outcome = await in_check_in(store, dialogues, "2")
    assert outcome.state.safety_asked and not outcome.crisis and outcome.signal is None
    assert ASKED in outcome.replies[-1].text


async def test_a_mood_of_three_goes_on_without_it(store: Store,
                                                  dialogues: DialogueSet) -> None:
    outcome = await in_check_in(store, dialogues, "3")
    assert not outcome.state.safety_asked
    assert "today is hard" in outcome.replies[-1].text


async def test_yes_to_it_is_urgent_audited_and_counted_without_words(
    store: Store, dialogues: DialogueSet, caplog: pytest.LogCaptureFixture
) -> None:
    await in_check_in(store, dialogues, "1")
    caplog.set_level(logging.DEBUG)
    before = counted(CrisisCategory.EXPLICIT_IDEATION)
    outcome = await say(store, dialogues, Turn(text="Yes"))
    assert outcome.crisis and "pausing our coaching" in outcome.replies[0].text
    assert [r.getMessage() for r in caplog.records if "crisis signal" in r.getMessage()] == [
        "crisis signal: level=urgent category=explicit_ideation "
        f"fired={runner.SAFETY_YES_FIRED}"]
    assert counted(CrisisCategory.EXPLICIT_IDEATION) == before + 1
    user = await store.get_user(CLIENT)
    assert user is not None and user.crisis_pause_until == NOW + CRISIS_PAUSE
