"""The SQLite connection that takes one trip to its thread per statement."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.store.engine import make_engine
from bot.store.sqlite_async import OneTripConnection


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    e = make_engine(f"sqlite+aiosqlite:///{tmp_path / 'trips.db'}")
    async with e.begin() as conn:
        await conn.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)"))
    yield e
    await e.dispose()


async def test_a_statement_is_one_trip_to_the_connection_thread(
        engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    trips: list[str] = []
    original = OneTripConnection._execute

    async def counted(self: OneTripConnection, fn: Any, *args: Any, **kwargs: Any) -> Any:
        trips.append(getattr(fn, "__name__", repr(fn)))
        return await original(self, fn, *args, **kwargs)

    monkeypatch.setattr(OneTripConnection, "_execute", counted)
    async with engine.begin() as conn:
        trips.clear()
        await conn.execute(text("INSERT INTO t (v) VALUES ('a'), ('b'), ('c')"))
        rows = (await conn.execute(text("SELECT id, v FROM t ORDER BY id"))).all()
        assert len(trips) == 2  # aiosqlite's own cursor takes 3 or 4 per statement
    assert [tuple(r) for r in rows] == [(1, "a"), (2, "b"), (3, "c")]


async def test_rowcounts_ids_many_rows_and_errors_come_through(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        result = await conn.execute(text("INSERT INTO t (v) VALUES (:v)"),
                                    [{"v": str(i)} for i in range(500)])
        assert result.rowcount == 500
        one = await conn.execute(text("INSERT INTO t (v) VALUES ('last')"))
        assert one.lastrowid == 501
        assert (await conn.execute(text("UPDATE t SET v = 'x' WHERE id <= 10"))).rowcount == 10
        streamed = await conn.execute(text("SELECT v FROM t ORDER BY id"))
        assert len(streamed.fetchmany(7)) == 7 and len(streamed.fetchall()) == 494
    with pytest.raises(IntegrityError):
        async with engine.begin() as conn:
            await conn.execute(text("INSERT INTO t (id, v) VALUES (1, 'taken')"))
    async with engine.connect() as conn:  # the connection is still good after the error
        assert (await conn.execute(text("SELECT count(*) FROM t"))).scalar_one() == 501
