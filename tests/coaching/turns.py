"""What the coaching tests that drive conversations through the store share: their clock,
running actions as the client's turns, and reading a table back."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select

from bot.coaching.conversation import converse
from bot.dialogue import DialogueSet
from bot.engine import Outcome, Turn
from bot.store import Store
from bot.store import Turn as StoreTurn

NOW = datetime(2026, 3, 4, 12, 0, tzinfo=UTC)  # a Wednesday, 13:00 in Rome


async def run(store: Store, dialogues: DialogueSet, user: int, *actions: Any,
              now: datetime = NOW) -> Outcome:
    """Each action as one turn of the user's, committed; the last turn's outcome."""
    outcome: Outcome | None = None
    for action in actions:
        async def go(t: StoreTurn, action: Any = action) -> Outcome:
            return await converse(t, dialogues, action, now)

        outcome = await store.run_turn(user, go)
    assert outcome is not None
    return outcome


async def say(store: Store, dialogues: DialogueSet, *actions: Any, user: int,
              now: datetime = NOW, time_zone: str | None = None) -> Outcome:
    """Each action as one turn of a client who has consented (answers are kept only after
    consent, so this is what a client in the middle of their coaching sends)."""
    outcome: Outcome | None = None
    for action in actions:
        async def go(t: StoreTurn, action: Any = action) -> Outcome:
            t.user.consent_at = t.user.consent_at or now
            if time_zone is not None:
                t.user.time_zone = time_zone
            return await converse(t, dialogues, action, now)

        outcome = await store.run_turn(user, go)
    assert outcome is not None
    return outcome


def texts(*lines: str) -> list[Turn]:
    """The client's typed lines, one turn each."""
    return [Turn(text=line) for line in lines]


async def rows(store: Store, model: Any) -> list[Any]:
    """Every row of a table with an ``id``, in the order written."""
    async with store.sessionmaker() as s:
        return list((await s.execute(select(model).order_by(model.id))).scalars())
