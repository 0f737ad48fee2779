"""Migrations are the schema's only source, and they match the models."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy.engine import Connection

from bot.store import Base, Store, ensure_schema
from bot.store.engine import make_engine
from bot.store.migrate import current_revision, head_revision, upgrade
from tests.store.store_helpers import count


def _diff(connection: Connection) -> list[Any]:
    ctx = MigrationContext.configure(
        connection, opts={"compare_type": True, "compare_server_default": True}
    )
    return list(compare_metadata(ctx, Base.metadata))


async def test_no_drift_between_migrations_and_models(db_url: str) -> None:
    await upgrade(db_url)
    engine = make_engine(db_url)
    try:
        async with engine.connect() as conn:
            assert await conn.run_sync(_diff) == []
    finally:
        await engine.dispose()


async def test_ensure_schema_is_idempotent_and_concurrency_safe(db_url: str) -> None:
    assert head_revision() == "0005"
    assert await current_revision(db_url) is None
    await asyncio.gather(*(ensure_schema(db_url) for _ in range(4)))
    await ensure_schema(db_url)
    assert await current_revision(db_url) == "0005"


async def test_start_creates_the_database_from_any_cwd(
    db_url: str, tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    store = Store(db_url)
    await store.start()
    await store.start()  # idempotent
    try:
        async with store.turn(1) as t:
            t.set_state({"ok": True})
        assert await count(store, "conversations") == 1
    finally:
        await store.close()


async def test_default_sqlite_url_is_relative_to_cwd(tmp_path: Path, monkeypatch: Any) -> None:
    from bot.store import DEFAULT_URL, database_url

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("COACHBOT_DATABASE_URL", raising=False)
    assert database_url() == DEFAULT_URL
    store = Store(database_url())
    await store.start()
    await store.close()
    assert (tmp_path / "coachbot.db").exists()
    assert os.environ.get("COACHBOT_DATABASE_URL") is None
