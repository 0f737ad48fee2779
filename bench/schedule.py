"""The scheduler: planning 100,000 users, claiming due rows, and the sender's rate.

Each measure has a baseline from the same run:

* planning (SQLite, PostgreSQL): ``plan()`` for 100,000 users against a bare Core bulk
  insert (executemany of ``insert(planned_checkins)``) of the very rows it planned, into
  the same table after they were deleted: what planning costs on top of writing its result.
  Re-planning (every row already there, what each later tick does) is shown too.
* claiming (PostgreSQL): ``claim()`` in batches of the tick's size until 20,000 due rows
  are claimed, against the same loop with a plain ``UPDATE … WHERE id IN (SELECT … LIMIT)``
  (no row locks, no SKIP LOCKED) over the same rows.
* sending: the outbox sender draining 2,000 messages to 2,000 chats against the fake Bot
  API server (tests/fakes), the achieved rate measured from the fake's request times,
  and the most requests in any one-second window.

Databases are temporary: a SQLite file in a temporary directory, and a fresh PostgreSQL
database (``COACHBOT_BENCH_PG_URL``, default the test server) created and dropped here.
After seeding, both are ANALYZEd (the bench server runs without autovacuum); the
population: 12 time zones, check-in hours 6–21, 30 % with quiet hours 22:00–07:00, one
active goal each (1–40 days old), 10 % with a daily exercise, every third user with three
started check-ins and every sixth with a check-in answer.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import telegram
from sqlalchemy import Table, delete, insert, select, text, update
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine

from bench.common import machine, table
from bot.schedule.claims import claim
from bot.schedule.planner import plan
from bot.store import Answer, Assignment, Goal, Outbox, PlannedCheckin, Store, User
from bot.telegram.http import AiohttpRequest
from bot.telegram.sender import Sender
from tests.fakes.bot_api import FakeBotApi

USERS = 100_000
CLAIM_ROWS = 20_000
CLAIM_BATCH = 100  # bot.schedule.runner.CLAIM_BATCH
MESSAGES = 2_000
RATES = (100.0, 200.0)
PG_ADMIN = os.environ.get("COACHBOT_BENCH_PG_URL",
                          "postgresql+asyncpg://postgres@127.0.0.1:5432/test")
NOW = datetime(2026, 6, 10, 8, 0, tzinfo=UTC)
ZONES = ("UTC", "Europe/Rome", "America/New_York", "Asia/Tokyo", "Europe/London",
         "America/Los_Angeles", "Australia/Sydney", "Asia/Kolkata", "Europe/Zagreb",
         "Asia/Jerusalem", "America/Sao_Paulo", "Africa/Lagos")


def _table(model: Any) -> Table:
    found = model.__table__
    assert isinstance(found, Table)
    return found


# -- seeding ---------------------------------------------------------------------------


def population(users: int) -> dict[Table, list[dict[str, Any]]]:
    rnd = random.Random(1)
    month = NOW - timedelta(days=30)
    rows: dict[Table, list[dict[str, Any]]] = {}
    quiet = [rnd.random() < 0.3 for _ in range(users)]
    rows[_table(User)] = [
        {"id": i, "time_zone": rnd.choice(ZONES), "checkin_hour": rnd.randint(6, 21),
         "quiet_start": 22 * 60 if quiet[i - 1] else None,
         "quiet_end": 7 * 60 if quiet[i - 1] else None,
         "consent_at": month, "created_at": month, "reachable": True}
        for i in range(1, users + 1)]
    rows[_table(Goal)] = [
        {"user_id": i, "title": "Walk", "status": "active",
         "created_at": NOW - timedelta(days=rnd.randint(1, 40))} for i in range(1, users + 1)]
    rows[_table(Assignment)] = [
        {"coach_id": 1, "client_id": i, "exercise_slug": "breathing",
         "schedule": {"kind": "daily", "hour": 8, "days": 14}, "starts_on": NOW.date(),
         "created_at": month}
        for i in range(10, users + 1, 10)]
    rows[_table(PlannedCheckin)] = [
        {"user_id": i, "kind": "daily", "ref": "", "status": "started",
         "due_at": NOW - timedelta(days=d), "started_at": NOW - timedelta(days=d)}
        for i in range(3, users + 1, 3) for d in (1, 2, 3)]
    rows[_table(Answer)] = [
        {"user_id": i, "dialogue_id": "daily_checkin", "step_id": "mood",
         "variable": "checkin.mood", "value": 5,
         "answered_at": NOW - timedelta(days=2, hours=-1)} for i in range(6, users + 1, 6)]
    return rows


async def _copy(conn: AsyncConnection, target: Table, rows: list[dict[str, Any]]) -> None:
    """PostgreSQL COPY (seeding only; JSON columns as text)."""
    columns = list(rows[0])
    records = [tuple(_copy_value(row[c]) for c in columns) for row in rows]
    raw = await conn.get_raw_connection()
    await raw.driver_connection.copy_records_to_table(  # type: ignore[union-attr]
        target.name, records=records, columns=columns)


def _copy_value(value: Any) -> Any:
    return json.dumps(value) if isinstance(value, dict) else value


async def seed(store: Store, users: int) -> None:
    postgres = store.engine.dialect.name == "postgresql"
    async with store.engine.begin() as conn:
        for target, rows in population(users).items():
            if postgres and target.name != "answers":
                await _copy(conn, target, rows)
            else:
                await conn.execute(insert(target), rows)
    await analyze(store)


async def analyze(store: Store) -> None:
    async with store.engine.connect() as conn:
        conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
        await conn.execute(text("ANALYZE"))


async def vacuum(store: Store) -> None:
    if store.engine.dialect.name != "postgresql":
        return
    async with store.engine.connect() as conn:
        conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
        await conn.execute(text("VACUUM ANALYZE planned_checkins"))


# -- databases -------------------------------------------------------------------------


async def _admin(url: str, sql: str) -> None:
    engine = create_async_engine(url, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            await conn.execute(text(sql))
    finally:
        await engine.dispose()


async def with_database(backend: str, work: Callable[[Store], Awaitable[Any]]) -> Any:
    """Run ``work`` on a started Store over a temporary database of ``backend``."""
    if backend == "sqlite":
        with tempfile.TemporaryDirectory() as directory:
            store = Store(f"sqlite+aiosqlite:///{directory}/bench.db")
            await store.start()
            try:
                return await work(store)
            finally:
                await store.close()
    name = f"coachbot_bench_{uuid.uuid4().hex[:12]}"
    await _admin(PG_ADMIN, f'CREATE DATABASE "{name}"')
    try:
        store = Store(make_url(PG_ADMIN).set(database=name).render_as_string(hide_password=False))
        await store.start()
        try:
            return await work(store)
        finally:
            await store.close()
    finally:
        await _admin(PG_ADMIN, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# -- planning --------------------------------------------------------------------------


async def planning(store: Store) -> dict[str, float]:
    await seed(store, USERS)
    started = time.perf_counter()
    proposed = await plan(store, NOW)
    seconds = time.perf_counter() - started
    started = time.perf_counter()
    await plan(store, NOW)
    again = time.perf_counter() - started
    pc = _table(PlannedCheckin)
    async with store.engine.begin() as conn:
        planned = [dict(r._mapping) for r in await conn.execute(
            select(pc.c.user_id, pc.c.kind, pc.c.ref, pc.c.due_at, pc.c.status)
            .where(pc.c.status == "planned"))]
        await conn.execute(delete(pc).where(pc.c.status == "planned"))
    await vacuum(store)
    started = time.perf_counter()
    async with store.engine.begin() as conn:
        await conn.execute(insert(pc), planned)
    baseline = time.perf_counter() - started
    return {"seconds": seconds, "again": again, "baseline": baseline,
            "proposed": proposed, "rows": len(planned)}


# -- claiming --------------------------------------------------------------------------


async def _plain_claim(store: Store, batch: int) -> int:
    pc = PlannedCheckin
    due = (select(pc.id).where(pc.status == "planned", pc.due_at <= NOW)
           .order_by(pc.due_at, pc.id).limit(batch))
    async with store.sessionmaker() as session, session.begin():
        rows = await session.execute(
            update(pc).where(pc.id.in_(due.scalar_subquery()), pc.status == "planned")
            .values(status="claimed", claimed_by="plain", claimed_at=NOW)
            .returning(pc.id, pc.user_id, pc.kind, pc.ref, pc.due_at)
            .execution_options(synchronize_session=False))
        return len(rows.all())


async def claiming(store: Store) -> dict[str, float]:
    await seed(store, CLAIM_ROWS)
    await plan(store, NOW)
    pc = PlannedCheckin
    async with store.engine.begin() as conn:  # every planned daily is due, in id order
        await conn.execute(update(pc).where(pc.kind == "daily", pc.status == "planned")
                           .values(due_at=NOW - timedelta(minutes=1)))
        due = (await conn.execute(select(pc.id).where(pc.status == "planned",
                                                      pc.due_at <= NOW))).all()
    await vacuum(store)

    async def drain(step: Callable[[], Awaitable[int]]) -> tuple[int, float]:
        claimed = 0
        started = time.perf_counter()
        while (got := await step()) > 0:
            claimed += got
        return claimed, time.perf_counter() - started

    async def ours() -> int:
        return len(await claim(store, NOW, worker_id="bench", batch=CLAIM_BATCH))

    claimed, seconds = await drain(ours)
    async with store.engine.begin() as conn:
        await conn.execute(update(pc).where(pc.status == "claimed")
                           .values(status="planned", claimed_by=None, claimed_at=None))
    await vacuum(store)
    plain, baseline = await drain(lambda: _plain_claim(store, CLAIM_BATCH))
    assert claimed == plain == len(due), (claimed, plain, len(due))
    return {"rows": claimed, "rate": claimed / seconds, "baseline": plain / baseline}


# -- sending ---------------------------------------------------------------------------


def busiest_second(times: list[float]) -> int:
    most = end = 0
    for start, at in enumerate(times):
        while end < len(times) and times[end] < at + 1.0:
            end += 1
        most = max(most, end - start)
    return most


async def sending(store: Store, rate: float) -> dict[str, float]:
    async with store.engine.begin() as conn:
        await conn.execute(insert(_table(User)), [
            {"id": 1000 + i, "created_at": NOW} for i in range(MESSAGES)])
        await conn.execute(insert(_table(Outbox)), [
            {"user_id": 1000 + i, "chat_id": 1000 + i, "payload": {"text": f"Hello {i}"},
             "created_at": NOW, "next_attempt_at": NOW, "status": "pending", "attempts": 0}
            for i in range(MESSAGES)])
    async with FakeBotApi() as fake:
        request = AiohttpRequest(connections=8)  # as bot.telegram.app serves
        async with telegram.Bot(fake.token, base_url=fake.base_url, request=request) as bot:
            sent = await Sender(store, bot, rate=rate).drain()
        times = [r.time for r in fake.calls("sendMessage")]
    achieved = (len(times) - 1) / (times[-1] - times[0])
    return {"sent": sent, "achieved": achieved, "busiest": busiest_second(times)}


# -- report ----------------------------------------------------------------------------


def _met(ok: bool) -> str:
    return "yes" if ok else "NO"


async def _measure() -> list[list[object]]:
    rows: list[list[object]] = []
    for backend in ("sqlite", "postgresql"):
        try:
            p = await with_database(backend, planning)
        except OSError as exc:  # PostgreSQL not reachable
            rows.append([f"plan {USERS:,} users ({backend})", f"skipped: {exc}", "", "", "",
                         ""])
            continue
        rows.append([f"plan {USERS:,} users, {p['rows']:,} rows ({backend})",
                     f"{p['seconds']:.2f} s", f"{p['baseline']:.2f} s (Core bulk insert)",
                     f"{p['seconds'] / p['baseline']:.2f}", "< 10 s",
                     _met(p["seconds"] < 10)])
        rows.append([f"re-plan, all rows there ({backend})", f"{p['again']:.2f} s", "", "",
                     "", ""])
    try:
        c = await with_database("postgresql", claiming)
        rows.append([f"claim {c['rows']:,} due rows, batches of {CLAIM_BATCH} (postgresql)",
                     f"{c['rate']:,.0f} rows/s",
                     f"{c['baseline']:,.0f} rows/s (UPDATE, no SKIP LOCKED)",
                     f"{c['rate'] / c['baseline']:.2f}", "> 5,000 rows/s",
                     _met(c["rate"] > 5000)])
    except OSError as exc:
        rows.append(["claim (postgresql)", f"skipped: {exc}", "", "", "", ""])
    for rate in RATES:
        s = await with_database("sqlite", lambda store, rate=rate: sending(store, rate))
        ratio = s["achieved"] / rate
        rows.append([f"send {MESSAGES:,} messages at {rate:.0f}/s (busiest second: "
                     f"{s['busiest']:.0f})", f"{s['achieved']:.1f}/s", f"{rate:.0f}/s configured",
                     f"{ratio:.3f}", "within 5 %", _met(abs(ratio - 1) <= 0.05)])
    return rows


def report() -> str:
    logging.getLogger("telegram").setLevel(logging.WARNING)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    rows = asyncio.run(_measure())
    return table(f"Scheduler ({machine()})",
                 ["measure", "coachbot", "baseline", "ratio", "target", "met"], rows)


if __name__ == "__main__":
    print(report())
