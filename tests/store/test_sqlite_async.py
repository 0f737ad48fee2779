"""The SQLite connection: statements inline on the loop, waits for a lock on its thread."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import aiosqlite
import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.store import engine as engine_module
from bot.store import off_the_loop, sqlite_async
from bot.store.engine import make_engine


@pytest.fixture
def database(tmp_path: Path) -> Path:
    return tmp_path / "inline.db"


@pytest.fixture
async def engine(database: Path) -> AsyncIterator[AsyncEngine]:
    e = make_engine(f"sqlite+aiosqlite:///{database}")
    async with e.begin() as conn:
        await conn.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)"))
    yield e
    await e.dispose()


@pytest.fixture
def thread_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the connection hands to its thread (aiosqlite's own ``_execute``)."""
    calls: list[str] = []
    original = aiosqlite.Connection._execute

    async def counted(self: aiosqlite.Connection, fn: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(getattr(args[0], "__name__", repr(args[0])) if args else repr(fn))
        return await original(self, fn, *args, **kwargs)  # type: ignore[no-untyped-call]

    monkeypatch.setattr(aiosqlite.Connection, "_execute", counted)
    return calls


@pytest.fixture
def awaited(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """What the SQLAlchemy adapter hands to ``await_`` (a greenlet round trip) rather than
    calling inline: the calls that had to wait."""
    calls: list[object] = []
    original = sqlite_async.await_

    def counted(awaitable: Any) -> Any:
        calls.append(awaitable)
        return original(awaitable)

    monkeypatch.setattr(sqlite_async, "await_", counted)
    return calls


@contextmanager
def write_lock_held_elsewhere(database: Path) -> Iterator[None]:
    """Another process's writer, as far as SQLite can tell: its own connection."""
    other = sqlite3.connect(database, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


async def insert_value(engine: AsyncEngine, value: str) -> None:
    """One row, in a transaction of its own (BEGIN IMMEDIATE: it takes the write lock)."""
    async with engine.begin() as conn:
        await conn.execute(text("INSERT INTO t (v) VALUES (:v)"), {"v": value})


async def longest_stall_while(work: asyncio.Future[Any]) -> float:
    """The longest the event loop went without running a 5 ms ticker until ``work`` ended."""
    longest, last = 0.0, time.monotonic()
    while not work.done():
        await asyncio.sleep(0.005)
        now = time.monotonic()
        longest, last = max(longest, now - last), now
    return longest


async def test_statements_and_commits_run_on_the_loop_without_a_trip_to_the_thread(
        engine: AsyncEngine, thread_calls: list[str], awaited: list[object],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_async, "YIELD_EVERY", 60.0)  # however slow the machine
    async with engine.begin() as conn:
        for v in "abcdefghij":
            await conn.execute(text("INSERT INTO t (v) VALUES (:v)"), {"v": v})
        rows = (await conn.execute(text("SELECT id, v FROM t ORDER BY id"))).all()
    assert [tuple(r) for r in rows] == list(enumerate("abcdefghij", start=1))
    assert thread_calls == []
    # Not even through a coroutine, but straight from SQLAlchemy's adapter: all but (maybe)
    # the first, which gives the loop its turn.
    assert len(awaited) <= 1


async def test_a_transaction_takes_the_write_lock_with_its_first_statement(
        engine: AsyncEngine, database: Path) -> None:
    other = sqlite3.connect(database, isolation_level=None, timeout=0)

    def other_can_write() -> bool:
        try:
            other.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            assert "locked" in str(error)
            return False
        other.execute("ROLLBACK")
        return True

    try:
        async with engine.begin():  # no statement: no lock taken, nothing to commit
            assert other_can_write()
        async with engine.connect() as conn:
            await conn.begin()
            await conn.rollback()
        async with engine.begin() as conn:
            await conn.execute(text("SELECT count(*) FROM t"))  # only a read, and yet
            assert not other_can_write()
        assert other_can_write()  # released at the commit
        await insert_value(engine, "after empty transactions")
    finally:
        other.close()


async def test_a_long_run_of_statements_lets_other_tasks_in(
        engine: AsyncEngine, thread_calls: list[str]) -> None:
    other_task_turns = 0
    seen: list[int] = []  # what the writer saw of them, at its first and its last statement

    async def write() -> None:  # awaits nothing but the database
        async with engine.begin() as conn:
            for i in range(5000):
                await conn.execute(text("INSERT INTO t (v) VALUES (:v)"), {"v": str(i)})
                if i in (0, 4999):
                    seen.append(other_task_turns)

    writing = asyncio.ensure_future(write())
    while not writing.done():
        await asyncio.sleep(0)
        other_task_turns += 1
    await writing
    assert seen[1] - seen[0] >= 2  # 5000 statements take well over 10 ms: a turn every 5 ms
    assert thread_calls == []


async def test_bulk_work_runs_on_the_thread(engine: AsyncEngine,
                                            thread_calls: list[str]) -> None:
    async def count() -> int:
        async with engine.connect() as conn:
            return int((await conn.execute(text("SELECT count(*) FROM t"))).scalar_one())

    with off_the_loop():
        async with engine.begin() as conn:
            await conn.execute(text("INSERT INTO t (v) VALUES (:v)"),
                               [{"v": str(i)} for i in range(100)])
        assert {"_run", "commit_now"} <= set(thread_calls)
        thread_calls.clear()
        assert await asyncio.create_task(count()) == 100  # tasks started within, too
        assert thread_calls
    thread_calls.clear()
    assert await count() == 100
    assert thread_calls == []


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


@pytest.mark.timed
async def test_waiting_for_another_writer_happens_off_the_loop(
        engine: AsyncEngine, database: Path, thread_calls: list[str]) -> None:
    with write_lock_held_elsewhere(database):
        writing = asyncio.ensure_future(insert_value(engine, "after the wait"))
        await asyncio.sleep(0.3)
        assert not writing.done()  # still waiting for the lock
    stall = await longest_stall_while(writing)
    await writing
    assert stall < 0.2
    assert thread_calls == ["_run"]  # BEGIN IMMEDIATE waited there, the rest ran inline
    thread_calls.clear()
    async with engine.connect() as conn:  # back inline, and not waiting there any more
        assert (await conn.execute(text("PRAGMA busy_timeout"))).scalar_one() == 0
        assert (await conn.execute(text("SELECT v FROM t"))).scalars().all() == ["after the wait"]
    assert thread_calls == []


@pytest.mark.timed
async def test_the_loop_keeps_running_while_a_writer_waits(
        engine: AsyncEngine, database: Path) -> None:
    with write_lock_held_elsewhere(database):
        writing = asyncio.ensure_future(insert_value(engine, "x"))
        waited = asyncio.ensure_future(asyncio.sleep(0.5))
        stall = await longest_stall_while(waited)
        assert not writing.done()
    await writing
    assert stall < 0.2  # inline, the busy wait would have stalled the loop for all 0.5 s


async def test_a_writer_gives_up_after_the_lock_wait_and_the_connection_recovers(
        engine: AsyncEngine, database: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    await engine.dispose()
    monkeypatch.setattr(engine_module, "SQLITE_BUSY_TIMEOUT_MS", 200)
    short = make_engine(f"sqlite+aiosqlite:///{database}")
    try:
        with write_lock_held_elsewhere(database):
            started = time.monotonic()
            with pytest.raises(OperationalError, match="database is locked"):
                async with short.begin() as conn:
                    await conn.execute(text("INSERT INTO t (v) VALUES ('x')"))
            assert 0.15 < time.monotonic() - started < 5
        async with short.begin() as conn:
            await conn.execute(text("INSERT INTO t (v) VALUES ('y')"))
            assert (await conn.execute(text("SELECT v FROM t"))).scalars().all() == ["y"]
    finally:
        await short.dispose()


@pytest.mark.timed
async def test_a_turn_cancelled_while_waiting_rolls_back_behind_the_wait(
        engine: AsyncEngine, database: Path) -> None:
    with write_lock_held_elsewhere(database):
        writing = asyncio.ensure_future(insert_value(engine, "cancelled"))
        await asyncio.sleep(0.1)
        writing.cancel()
        waited = asyncio.ensure_future(asyncio.sleep(0.4))
        stall = await longest_stall_while(waited)
    assert stall < 0.2  # the cleanup queued behind the wait instead of blocking the loop
    with pytest.raises(asyncio.CancelledError):
        await writing
    async with engine.begin() as conn:
        await conn.execute(text("INSERT INTO t (v) VALUES ('next')"))
        assert (await conn.execute(text("SELECT v FROM t"))).scalars().all() == ["next"]


def test_the_installed_libraries_have_every_internal_the_fast_path_reads() -> None:
    assert sqlite_async.missing_internals() == []
    assert sqlite_async.INTERNALS_MISSING == []


def test_a_missing_internal_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(aiosqlite.Connection, "_execute")
    assert sqlite_async.missing_internals() == ["aiosqlite.Connection._execute"]


async def test_without_the_internals_the_stock_path_serves_turns(
        monkeypatch: pytest.MonkeyPatch, database: Path) -> None:
    """A later aiosqlite or SQLAlchemy without them: the stock connection, writers still
    serialised by BEGIN IMMEDIATE, nothing lost (only slower)."""
    from bot.store import Store

    monkeypatch.setattr(sqlite_async, "INTERNALS_MISSING", ["aiosqlite.Connection._thread"])
    store = Store(f"sqlite+aiosqlite:///{database}")
    await store.start()
    try:
        async with store.engine.connect() as conn:
            driver = (await conn.get_raw_connection()).driver_connection
            assert not isinstance(driver, sqlite_async.SQLiteConnection)

        async def write(t: Any) -> None:
            t.set_state({"n": 1})

        await asyncio.gather(*(store.run_turn(user_id, write) for user_id in range(1, 21)))
        async with store.engine.connect() as conn:
            assert (await conn.execute(text("SELECT count(*) FROM conversations"))).scalar() == 20
    finally:
        await store.close()
