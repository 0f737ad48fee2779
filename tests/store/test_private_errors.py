"""A failed statement's error never quotes its parameters, which hold what clients wrote
(review finding H4), on every database."""

from __future__ import annotations

import pytest
from sqlalchemy.exc import DBAPIError

from bot.store import Answer, Store

WORDS = "Tell my wife about the debts"


async def test_a_failed_statement_does_not_show_its_parameters(store: Store) -> None:
    with pytest.raises(DBAPIError) as failure:
        async with store.turn(1) as t:  # NOT NULL broken in the statement holding the words
            t.session.add(Answer(user_id=1, dialogue_id="goal_setting", step_id="goal",
                                 variable=None, value=WORDS))
            await t.flush()
    assert "INSERT INTO answers" in str(failure.value)
    assert WORDS not in str(failure.value)
