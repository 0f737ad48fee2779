"""Goals follow the client's answers: set, reviewed, completed, and the next one set."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import select

from bot.coaching.conversation import Start, converse
from bot.dialogue import DialogueSet, load_dialogues
from bot.engine import Outcome, Turn
from bot.store import Goal, Store

REPO = Path(__file__).parents[2]
NOW = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
USER = 7
DEFAULTS = {"text": "In my own words", "scale": "5", "yes_no": "yes", "date": "tomorrow",
            "time": "08:00", "timezone": "Rome", "number": "3"}


@pytest.fixture(scope="module")
def dialogues() -> DialogueSet:
    return load_dialogues(REPO / "dialogues")



async def play(store: Store, dialogues: DialogueSet, dialogue_id: str,
               answers: dict[str, str]) -> list[Outcome]:
    """Answer every question, by step id where given, else a plausible answer for its type."""

    async def step(action: Turn | Start) -> Outcome:
        async def run(t):  # type: ignore[no-untyped-def]
            t.user.consent_at = t.user.consent_at or NOW  # answers are kept after consent
            return await converse(t, dialogues, action, NOW)

        outcome = await store.run_turn(USER, run)
        assert outcome is not None
        return outcome

    outcomes = [await step(Start(dialogue_id))]
    for _ in range(200):
        state = outcomes[-1].state
        if not state.active:
            return outcomes
        frame = state.stack[-1]
        ask = dialogues[frame.dialogue].steps[frame.step].ask
        default = ask.options[0].key if ask.type == "choice" else DEFAULTS[ask.type]
        outcomes.append(await step(Turn(text=answers.get(frame.step, default))))
    raise AssertionError("the dialogue did not end")


async def goals(store: Store) -> list[tuple[str, str, int | None, int | None, int | None]]:
    async with store.sessionmaker() as session:
        rows = (await session.execute(select(Goal).order_by(Goal.id))).scalars()
        return [(g.title, g.status, g.baseline, g.current, g.target) for g in rows]


GOAL = {"goal": "Run a 10k race", "baseline": "3", "target": "8", "commitment": "9"}


async def test_goal_setting_creates_the_goal(store: Store, dialogues: DialogueSet) -> None:
    await play(store, dialogues, "goal_setting", GOAL)
    assert await goals(store) == [("Run a 10k race", "active", 3, 3, 8)]


async def test_a_review_updates_it(store: Store, dialogues: DialogueSet) -> None:
    await play(store, dialogues, "goal_setting", GOAL)
    await play(store, dialogues, "weekly_review", {"current": "5", "adjust": "no"})
    assert await goals(store) == [("Run a 10k race", "active", 3, 5, 8)]


async def test_completion_then_a_new_goal_in_one_go(store: Store,
                                                    dialogues: DialogueSet) -> None:
    await play(store, dialogues, "goal_setting", GOAL)
    answers = {**GOAL, "current": "8", "goal": "Learn Italian", "baseline": "2", "target": "6"}
    outcomes = await play(store, dialogues, "weekly_review", answers)
    finished = [d for o in outcomes for d in o.finished]
    assert {"goal_setting", "goal_completion", "weekly_review"} <= set(finished)
    assert await goals(store) == [("Run a 10k race", "done", 3, 8, 8),
                                  ("Learn Italian", "active", 2, 2, 6)]


async def test_not_yet_keeps_the_goal_open(store: Store, dialogues: DialogueSet) -> None:
    await play(store, dialogues, "goal_setting", GOAL)
    await play(store, dialogues, "goal_completion", {"confirm": "no"})
    assert [g[1] for g in await goals(store)] == ["active"]
