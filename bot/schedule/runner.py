"""The scheduler's loops, one of each per process: the tick (plan, claim and start, then nudge
the sender) and the coach digests. Each runs under :func:`bot.loops.run_loop`: a failing
round is logged by its type and retried after a back-off, and every completed round beats
the loop's heart (``/healthz``, ``loop_last_round_timestamp_seconds``)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol

from sqlalchemy import func, select

from bot.dialogue.model import DialogueSet
from bot.loops import Supervisor, run_loop
from bot.observability import CHECKINS_DUE, CHECKINS_SENT, OUTBOX_DEPTH, Heartbeats
from bot.schedule.claims import DEFAULT_LEASE, default_worker_id
from bot.schedule.digests import deliver_coach_messages, notice_quiet_clients, send_digests
from bot.schedule.planner import plan
from bot.schedule.starting import claim_and_start
from bot.store import Outbox, Retention, Store, undelivered

log = logging.getLogger(__name__)

TICK_SECONDS = 5.0
DIGEST_SECONDS = 5.0  # a crisis digest goes out at once
#: A loop that has not completed a round for this long makes /healthz answer 503.
STALE_AFTER = {"sender": 60.0, "scheduler": 180.0, "digests": 180.0}
PLAN_EVERY_SECONDS = 60.0
NOTICE_EVERY_SECONDS = 60.0  # quiet clients are counted in days: once a minute is plenty
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


def make_digests(store: Store, sender: Nudgeable, *,
                 notice_every: float = NOTICE_EVERY_SECONDS) -> Callable[[], Awaitable[None]]:
    """One round of the digest loop: notice quiet clients (at most every ``notice_every``
    seconds), queue the coach digests that are due and the coaches' messages that waited."""
    last_notice = -float("inf")

    async def digests() -> None:
        nonlocal last_notice
        now = datetime.now(UTC)
        if time.monotonic() - last_notice >= notice_every:
            last_notice = time.monotonic()
            await notice_quiet_clients(store, now)
        queued = await send_digests(store, now) + await deliver_coach_messages(store, now)
        if queued:
            sender.nudge()

    return digests


def make_tick(store: Store, dialogues: DialogueSet, sender: Nudgeable, *, worker_id: str,
              plan_every: float = PLAN_EVERY_SECONDS, batch: int = CLAIM_BATCH,
              lease: timedelta = DEFAULT_LEASE,
              with_digests: bool = True,
              consent_within: timedelta = CONSENT_WITHIN,
              retention: Retention = DEFAULT_RETENTION) -> Callable[[], Awaitable[None]]:
    """One tick: plan (at most every ``plan_every`` seconds, and then erase who never
    consented within ``consent_within`` and prune by ``retention``), then claim and start due
    rows ``batch`` at a time until fewer come back, taking back claims older than ``lease``.
    ``with_digests``: run a digest round too (when no digest loop runs them)."""
    last_plan = -float("inf")
    digests = make_digests(store, sender) if with_digests else None

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
        if digests is not None:
            await digests()
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


def start_scheduler(store: Store, dialogues: DialogueSet, sender: Nudgeable, *,
                    supervisor: Supervisor, heartbeats: Heartbeats, stop: asyncio.Event,
                    consent_within: timedelta = CONSENT_WITHIN,
                    retention: Retention = DEFAULT_RETENTION,
                    tick_seconds: float = TICK_SECONDS,
                    digest_seconds: float = DIGEST_SECONDS) -> None:
    """Start this process's scheduler tick and digest loop under ``supervisor`` (a round
    at a time: a slow round delays the next, never overlaps it) until ``stop`` is set."""
    tick = make_tick(store, dialogues, sender, worker_id=default_worker_id(),
                     with_digests=False, consent_within=consent_within,
                     retention=retention)
    digests = make_digests(store, sender)
    heartbeats.expect("scheduler", STALE_AFTER["scheduler"])
    heartbeats.expect("digests", STALE_AFTER["digests"])
    supervisor.start("scheduler", lambda: run_loop(
        "scheduler", tick, interval=tick_seconds, stop=stop, heartbeats=heartbeats))
    supervisor.start("digests", lambda: run_loop(
        "digests", digests, interval=digest_seconds, stop=stop, heartbeats=heartbeats))
