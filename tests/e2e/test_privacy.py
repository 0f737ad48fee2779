"""A large /export over real HTTP does not hold up the event loop (and so other chats).
(What /delete leaves and what /export holds: tests/handlers/test_privacy.py.)"""

from __future__ import annotations

import asyncio
import gc
import json

import pytest

from tests.e2e.conftest import RunningBot
from tests.flows import consented

COACH, CLIENT = 8001, 8002
@pytest.mark.timed
async def test_a_large_export_does_not_hold_up_other_chats(running_bot: RunningBot) -> None:
    from datetime import UTC, datetime

    from sqlalchemy import insert

    from bot.store import Answer, Outbox

    heavy = running_bot.user(8201)
    await consented(heavy)
    now = datetime.now(UTC)
    async with running_bot.store.engine.begin() as connection:
        await connection.execute(insert(Answer), [
            {"user_id": 8201, "dialogue_id": "d", "step_id": "s", "variable": "v",
             "value": "x" * 1000, "answered_at": now} for _ in range(6000)])
        await connection.execute(insert(Outbox), [
            {"user_id": 8201, "chat_id": 8201, "payload": {"text": "y" * 300},
             "status": "sent", "created_at": now, "next_attempt_at": now}
            for _ in range(6000)])
    gaps: list[float] = []
    loop = asyncio.get_running_loop()

    async def ticker() -> None:
        last = loop.time()
        while True:
            await asyncio.sleep(0.005)
            gaps.append(loop.time() - last)
            last = loop.time()

    gc.collect()
    gc.freeze()  # as `coachbot run` does once started: earlier tests' objects are not scanned
    ticking = asyncio.create_task(ticker())
    try:
        exported = await heavy.send("/export")
    finally:
        ticking.cancel()
        gc.unfreeze()
    assert exported[0].kind == "document"
    assert len(json.loads(running_bot.fake.documents[-1].content)["answers"]) > 6000
    print(f"longest stall of the event loop during the export: {max(gaps):.3f} s")
    assert max(gaps) < 0.1, f"the loop stalled for {max(gaps):.3f} s"
