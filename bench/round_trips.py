"""Round trips to PostgreSQL per turn, counted in process (issue 28).

``python -m bench.round_trips`` (``COACHBOT_DATABASE_URL``: a PostgreSQL database this may
fill). Each write of the client to the server's socket is one round trip (asyncpg sends a
statement's messages in one write and waits for the answer). A usual update's turn (the
state, one answer, one reply held for the caller, then recorded sent), before the handler
runs and after it, for a chat alone; deterministic, unlike the timings, which are printed
for a rough view.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from asyncio import selector_events
from datetime import timedelta
from typing import Any

from sqlalchemy import update

from bot.store import Outbox, Store, Turn
from bot.store.kinds import OutboxStatus

USERS = 50
TURNS = 10
_writes = 0
_write = selector_events._SelectorSocketTransport.write


def _counting(transport: Any, data: Any) -> None:
    global _writes
    peer = transport.get_extra_info("peername")
    if peer and peer[1] == 5432:
        _writes += 1
    _write(transport, data)


async def main() -> None:
    global _writes
    url = os.environ["COACHBOT_DATABASE_URL"]
    store = Store(url)
    await store.start()
    selector_events._SelectorSocketTransport.write = _counting  # type: ignore[method-assign]
    before: list[int] = []
    after: list[int] = []
    opening: list[float] = []
    closing: list[float] = []
    base = int(time.time() * 1000) % 1_000_000_000 * 100
    try:
        for user in range(1, USERS + 1):  # first contact, not counted
            await store.run_turn(user, _usual, update_id=base + user)
            await _sent(store, user)
        for i in range(TURNS):
            for user in range(1, USERS + 1):
                started = time.perf_counter()
                _writes = 0
                marks: dict[str, Any] = {}

                async def handler(t: Turn, marks: dict[str, Any] = marks) -> None:
                    marks["writes"], marks["at"] = _counted(), time.perf_counter()
                    await _usual(t)

                await store.run_turn(user, handler, update_id=base + (i + 1) * 1000 + user,
                                     hold_for=timedelta(seconds=30))
                before.append(marks["writes"])
                after.append(_writes - marks["writes"])
                opening.append(marks["at"] - started)
                closing.append(time.perf_counter() - marks["at"])
                await _sent(store, user)
    finally:
        selector_events._SelectorSocketTransport.write = _write  # type: ignore[method-assign]
        await store.close()
    print(f"round trips per turn: before the handler {statistics.mean(before):.2f}, "
          f"after it {statistics.mean(after):.2f} ({len(before)} turns)")
    print(f"time (rough, machine shared): before the handler p50 "
          f"{statistics.median(opening) * 1000:.2f} ms, after it p50 "
          f"{statistics.median(closing) * 1000:.2f} ms")


def _counted() -> int:
    return _writes


async def _sent(store: Store, user: int) -> None:
    """What the sender records once Telegram took the reply (not counted: a statement of
    its own, unchanged here)."""
    global _writes
    writes = _writes
    async with store.engine.begin() as connection:
        await connection.execute(update(Outbox).where(Outbox.chat_id == user)
                                 .values(status=OutboxStatus.SENT))
    _writes = writes


async def _usual(t: Turn) -> None:
    t.set_state({"step": "why", "n": (t.state or {}).get("n", 0) + 1})
    t.record_answer("goal_setting", "goal", "goal_setting.goal", "Run a 10k", marker="goal")
    t.enqueue(t.user_id, {"text": "Why does it matter?"})


if __name__ == "__main__":
    asyncio.run(main())
