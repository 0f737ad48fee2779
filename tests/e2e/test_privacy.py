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
    started = loop.time()
    try:
        exported = await heavy.send("/export")
    finally:
        took = loop.time() - started
        ticking.cancel()
        gc.unfreeze()
    assert exported[0].kind == "document"
    assert len(json.loads(running_bot.fake.documents[-1].content)["answers"]) > 6000
    stall = max(gaps)
    print(f"longest stall of the event loop: {stall:.3f} s, the export took {took:.3f} s")
    # Read off the loop and encoded on a thread, the export stalls the loop for about 0.03 s
    # of its 0.45 s here; done on the loop, it would stall it for most of its own time. A
    # loaded machine pauses the loop now and then for reasons of its own (a CI run with four
    # workers on two cores measured 0.103 s once), and the export takes longer there too.
    assert stall < 0.1 or stall < 0.25 * took, f"the loop stalled for {stall:.3f} s of {took:.3f} s"
