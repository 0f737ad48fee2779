"""A bot process for tests/schedule/test_crash.py: ticks (plan, claim and start, send) until
nothing is due or waiting, optionally killing itself with SIGKILL at a chosen point.

    python crash_worker.py '{"url": ..., "base_url": ..., "token": ..., "kill": ...}'

``kill``: ``null`` (run until idle, exit 0), ``"claimed"`` (right after the first claim of
due check-ins committed, before any is started) or ``"accepted:K"`` (right after the fake
Telegram server accepted the K-th message, before the sender recorded it as sent).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import telegram
from sqlalchemy import func, or_, select

from bot.dialogue import load_dialogues
from bot.schedule import claims
from bot.schedule.runner import make_tick
from bot.store import Outbox, PlannedCheckin, Store
from bot.telegram.http import AiohttpRequest
from bot.telegram.sender import Sender

DIALOGUES = Path(__file__).parent / "dialogues"


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class KillingBot(telegram.Bot):
    """Dies right after the fake accepted the ``kill_after``-th message."""

    kill_after: int | None = None
    accepted = 0

    async def _post(self, endpoint: str, *args: Any, **kwargs: Any) -> Any:
        result = await super()._post(endpoint, *args, **kwargs)  # where the sender's go
        if endpoint == "sendMessage":
            KillingBot.accepted += 1
            if KillingBot.accepted == KillingBot.kill_after:
                die()
        return result


def kill_after_first_claim() -> None:
    real_claim = claims.claim

    async def claim(*args: Any, **kwargs: Any) -> list[claims.Claimed]:
        rows = await real_claim(*args, **kwargs)
        if rows:
            die()  # the claims are committed; nothing was started
        return rows

    claims.claim = claim  # claim_and_start looks it up in this module


async def idle(store: Store) -> bool:
    now = datetime.now(UTC)
    async with store.sessionmaker() as session:
        due = (await session.execute(
            select(func.count()).select_from(PlannedCheckin).where(or_(
                PlannedCheckin.status == "claimed",
                (PlannedCheckin.status == "planned") & (PlannedCheckin.due_at <= now))))).scalar()
        waiting = (await session.execute(
            select(func.count()).select_from(Outbox)
            .where(Outbox.status.in_(("pending", "sending"))))).scalar()
    return not due and not waiting


async def main(config: dict[str, Any]) -> int:
    kill = config.get("kill")
    if kill == "claimed":
        kill_after_first_claim()
    elif isinstance(kill, str) and kill.startswith("accepted:"):
        KillingBot.kill_after = int(kill.split(":", 1)[1])
    lease = timedelta(seconds=float(config["lease"]))
    store = Store(config["url"])
    await store.start()
    request = AiohttpRequest(connections=16)
    async with KillingBot(config["token"], base_url=config["base_url"], request=request) as bot:
        sender = Sender(store, bot, rate=float(config["rate"]), lease=lease, release_every=0.1,
                        per_chat_interval=0.0)
        tick = make_tick(store, load_dialogues(DIALOGUES), sender, worker_id=config["worker"],
                         batch=int(config["batch"]), lease=lease)
        deadline = time.monotonic() + float(config["timeout"])
        while time.monotonic() < deadline:
            await tick()
            await sender.drain()
            if await idle(store):
                await store.close()
                return 0
            await asyncio.sleep(0.05)
    await store.close()
    return 3  # not done in time


if __name__ == "__main__":
    sys.exit(asyncio.run(main(json.loads(sys.argv[1]))))
