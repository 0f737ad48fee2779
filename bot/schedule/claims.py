"""Claiming due rows for one worker, and giving back the claims of dead workers.

Planned check-in statuses (``planned_checkins.status``):

``planned``
    waiting for its due time (a postponed one is ``planned`` again, 30 minutes later; a
    session's reminder due during a crisis pause, again for the pause's end);
``claimed``
    taken by one worker (``claimed_by``/``claimed_at``) that is about to start it; a claim
    older than the lease returns to ``planned``, so a worker that dies loses nothing;
``started``
    its dialogue was started and its first messages are in the outbox (``started_at``),
    in the same transaction as the conversation state. Delivery is the outbox's business;
``missed``
    found due after downtime on a later local day than it was meant for;
``cancelled``
    no longer wanted: the user is unreachable, withdrew consent or paused (a crisis pause
    too, as it falls due, or claimed at the crisis moment), has no active
    goal (daily), the gentler rhythm skips it, a daily already started that local day,
    or the assignment/dialogue is gone.

Each row is started at most once: the switch ``claimed`` → ``started`` happens inside the
user's turn, conditional on the row still being claimed by this worker, together with the
conversation state and the outbox rows. It is started at least once as long as some worker
keeps ticking (the lease brings back claims of dead workers).
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select, update

from bot.store import PlannedCheckin, Store, rowcount
from bot.store.kinds import CheckinStatus

DEFAULT_LEASE = timedelta(minutes=5)


def default_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True)
class Claimed:
    id: int
    user_id: int
    kind: str
    ref: str
    due_at: datetime


async def release_expired(store: Store, now: datetime, lease: timedelta) -> int:
    """Claims older than ``lease`` (their worker died) go back to ``planned``."""
    async with store.sessionmaker() as session, session.begin():
        result = await session.execute(
            update(PlannedCheckin)
            .where(PlannedCheckin.status == CheckinStatus.CLAIMED,
                   PlannedCheckin.claimed_at < now - lease)
            .values(status=CheckinStatus.PLANNED, claimed_by=None, claimed_at=None)
            .execution_options(synchronize_session=False)
        )
        return rowcount(result)


async def claim(store: Store, now: datetime, *, worker_id: str, batch: int) -> list[Claimed]:
    """Claim up to ``batch`` due rows, oldest first (SKIP LOCKED on PostgreSQL; SQLite's
    single writer lock elsewhere)."""
    # A materialised CTE: as a plain ``IN (subquery)`` PostgreSQL may run the LIMIT …
    # SKIP LOCKED subquery again for every row it scans, each time skipping the rows it
    # has just locked, and so claim several batches at once.
    due = (
        select(PlannedCheckin.id)
        .where(PlannedCheckin.status == CheckinStatus.PLANNED, PlannedCheckin.due_at <= now)
        .order_by(PlannedCheckin.due_at, PlannedCheckin.id)
        .limit(batch)
        .with_for_update(skip_locked=True)
        .cte("due")
        .prefix_with("MATERIALIZED", dialect="postgresql")
    )
    pc = PlannedCheckin
    async with store.sessionmaker() as session, session.begin():
        rows = await session.execute(
            update(pc)
            .where(pc.id.in_(select(due.c.id)), pc.status == CheckinStatus.PLANNED)
            .values(status=CheckinStatus.CLAIMED, claimed_by=worker_id, claimed_at=now)
            .returning(pc.id, pc.user_id, pc.kind, pc.ref, pc.due_at)
            .execution_options(synchronize_session=False)
        )
        claimed = [Claimed(r.id, r.user_id, r.kind, r.ref, r.due_at) for r in rows]
    return sorted(claimed, key=lambda c: (c.due_at, c.id))

