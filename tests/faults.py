"""Helpers for fault injection: PostgreSQL away for a while, outbox rows queued directly."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import insert, text
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from bot.store import Outbox, Store, User

PG_ADMIN = os.environ.get("COACHBOT_TEST_PG_URL",
                          "postgresql+asyncpg://postgres@127.0.0.1:5432/test")


async def _admin(*statements: str) -> int:
    engine = create_async_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
    try:
        killed = 0
        async with engine.connect() as conn:
            for sql in statements:
                result = await conn.execute(text(sql))
                row = result.first() if result.returns_rows else None
                if row is not None and isinstance(row[0], int):
                    killed += row[0]
        return killed
    finally:
        await engine.dispose()


async def fresh_postgresql(url: str) -> str:
    """``url``'s database with an empty schema (the session's database is shared)."""
    engine = create_async_engine(url, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            await conn.execute(text("DROP SCHEMA public CASCADE"))
            await conn.execute(text("CREATE SCHEMA public"))
    finally:
        await engine.dispose()
    return url


async def kill_backends(url: str) -> int:
    """Terminate every connection to the database of ``url``; returns how many."""
    name = make_url(url).database
    return await _admin(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
        f"WHERE datname = '{name}' AND pid <> pg_backend_pid()")


@asynccontextmanager
async def postgresql_away(url: str) -> AsyncIterator[None]:
    """Within the block, the database of ``url`` refuses connections and every open one
    is dropped (as during a restart or a failover)."""
    name = make_url(url).database
    await _admin(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
    try:
        await kill_backends(url)
        yield
    finally:
        await _admin(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')


async def postgresql_restart(url: str, seconds: float) -> None:
    async with postgresql_away(url):
        await asyncio.sleep(seconds)


def now() -> datetime:
    return datetime.now(UTC)


async def queue(store: Store, messages: list[tuple[int, dict[str, Any]]], *,
                kind: str = "message") -> None:
    """Outbox rows as a check-in or a digest queues them (for the background sender)."""
    users = sorted({chat for chat, _ in messages})
    async with store.engine.begin() as conn:
        if store.engine.dialect.name == "postgresql":
            ignore: Any = postgresql.insert(User).on_conflict_do_nothing()
        else:
            ignore = insert(User).prefix_with("OR IGNORE")
        await conn.execute(ignore, [{"id": u, "created_at": now()} for u in users])
        await conn.execute(insert(Outbox), [
            {"user_id": chat, "chat_id": chat, "payload": payload, "created_at": now(),
             "next_attempt_at": now(), "kind": kind} for chat, payload in messages])
