"""A flood from one chat (review M6): replies superseded by a later message are dropped
before sending, so a command sent after 30 messages is answered within a few seconds."""

from __future__ import annotations

import asyncio
import time

import pytest
from sqlalchemy import text

from bot.store import SUPERSEDED_BY_REPLY
from tests.e2e.conftest import RunningBot

HELP_LINE = "/checkin"  # in every /help answer


@pytest.mark.timed
async def test_a_command_after_a_flood_of_30_is_answered_within_seconds(
        running_bot: RunningBot) -> None:
    fake, user = running_bot.fake, 601
    ana = running_bot.user(user)
    await running_bot.agree(user)
    await ana.send("/goal")
    for i in range(30):
        fake.send_text(user, f"and another thing {i}")
    fake.send_text(user, "/help")
    asked = time.monotonic()
    answered = None
    while time.monotonic() - asked < 30:
        await asyncio.sleep(0.05)
        if any(HELP_LINE in (m.text or "") for m in fake.messages_to(user)):
            answered = time.monotonic() - asked
            break
    print(f"flood: /help answered after {answered}s")
    assert answered is not None and answered < 5.0, answered  # was 28 s
    await running_bot.idle(user, timeout=1.5)  # the rest sent or dropped soon after
    async with running_bot.store.engine.connect() as connection:
        rows = (await connection.execute(text(
            "SELECT status, last_error, count(*) FROM outbox WHERE chat_id = :c "
            "GROUP BY status, last_error"), {"c": user})).all()
    by_status = {status: n for status, _, n in rows}
    assert by_status.get("pending", 0) == 0 and by_status.get("sending", 0) == 0
    assert by_status["cancelled"] >= 15  # most of the 30 answers were superseded
    assert all(error == SUPERSEDED_BY_REPLY for status, error, _ in rows
               if status == "cancelled")
    sent = [m.text or "" for m in fake.messages_to(user)]
    print(f"flood: {len(sent)} messages sent, outbox by status {by_status}")
    assert len(sent) <= 16, len(sent)  # not one reply per message of the flood
    assert HELP_LINE in sent[-1]  # nothing older after the answer to the last message
