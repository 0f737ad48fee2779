"""One APScheduler interval job per process: plan, claim and start, then nudge the sender."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol

from apscheduler.schedulers.asyncio import AsyncIOScheduler  # type: ignore[import-untyped]
from sqlalchemy import func, select

from bot.config import Settings
from bot.dialogue.model import DialogueSet
from bot.observability import CHECKINS_DUE, CHECKINS_SENT, OUTBOX_DEPTH
from bot.schedule.digests import send_digests
from bot.schedule.jobs import DEFAULT_LEASE, claim_and_start, default_worker_id, plan
from bot.store import Outbox, Retention, Store, undelivered

log = logging.getLogger(__name__)

TICK_SECONDS = 5.0
PLAN_EVERY_SECONDS = 60.0
CLAIM_BATCH = 100
PROCESSED_UPDATES_KEPT = timedelta(days=2)
#: Someone who never agreed that their answers are kept is forgotten after this long.
CONSENT_WITHIN = timedelta(days=7)
DEFAULT_RETENTION = Retention()


class Nudgeable(Protocol):
    def nudge(self) -> None: ...


async def outbox_depth(store: Store) -> int:
    async with store.sessionmaker() as session:
        return int(await session.scalar(
            select(func.count()).where(undelivered(Outbox.status))) or 0)


def make_tick(store: Store, dialogues: DialogueSet, sender: Nudgeable, *, worker_id: str,
              plan_every: float = PLAN_EVERY_SECONDS, batch: int = CLAIM_BATCH,
              lease: timedelta = DEFAULT_LEASE,
              consent_within: timedelta = CONSENT_WITHIN,
              retention: Retention = DEFAULT_RETENTION) -> Callable[[], Awaitable[None]]:
    """One tick: plan (at most every ``plan_every`` seconds), then claim and start due rows
    ``batch`` at a time until fewer come back, taking back claims older than ``lease``."""
    last_plan = -float("inf")

    async def tick() -> None:
        nonlocal last_plan
        now = datetime.now(UTC)
        if time.monotonic() - last_plan >= plan_every:
            last_plan = time.monotonic()
            await plan(store, now)
            # Telegram redelivers an update for a day at most: older ids need not be kept.
            await store.prune_processed_updates(now - PROCESSED_UPDATES_KEPT)
            await store.purge_unconsented(now - consent_within)
            await store.prune(now, retention)
        if await send_digests(store, now):
            sender.nudge()
        OUTBOX_DEPTH.set(await outbox_depth(store))
        while True:
            results = await claim_and_start(store, dialogues, now, worker_id=worker_id,
                                            batch=batch, lease=lease)
            CHECKINS_DUE.inc(sum(results.values()))
            CHECKINS_SENT.inc(results.get("started", 0))
            if results.get("started"):
                sender.nudge()
            if sum(results.values()) < batch:
                return

    return tick


def start_scheduler(store: Store, dialogues: DialogueSet, sender: Nudgeable,
                    settings: Settings, *, tick_seconds: float = TICK_SECONDS) -> AsyncIOScheduler:
    """Start the per-process tick (``max_instances=1``, ``coalesce=True``)."""
    scheduler = AsyncIOScheduler(timezone=UTC)
    retention = Retention(**{kind: timedelta(days=days)
                             for kind, days in settings.retention_days.items()})
    tick = make_tick(store, dialogues, sender, worker_id=default_worker_id(),
                     consent_within=timedelta(days=settings.consent_days), retention=retention)
    scheduler.add_job(tick,
                      "interval", seconds=tick_seconds, max_instances=1, coalesce=True,
                      id="coachbot-checkins", next_run_time=datetime.now(UTC))
    scheduler.start()
    return scheduler
