"""The SQLite connection SQLAlchemy's aiosqlite dialect gets: statements run on the event
loop's own thread, and only a wait for another process's lock goes to a thread.

aiosqlite runs every call on the connection's thread, and SQLAlchemy's adapter makes three
or four calls per statement (open a cursor, execute, fetch, close). A statement itself takes
microseconds; each hand-off to the thread and back (and the fight for the GIL it starts)
cost far more: measured here, a bot's turn (8 statements) took 4.6 ms of CPU through the
thread and 1.35 ms inline (see docs/performance.md). So the cursor executes, fetches every
row and closes in one call, and calls run inline. SQLAlchemy's adapter would still hand each
call to ``await_`` (greenlet switches, a coroutine and a lock: about 10 us a statement, as
much as the statement), so its cursor and connection are adapted too (``SQLiteDBAPI``, the
engine's ``module``), calling straight through when a call may run inline.

What must not run inline is waiting: the connection's busy timeout is 0, so a call that finds
the database locked (another process writing) fails at once, and is then run again on the
connection's thread, which waits up to ``lock_wait_ms`` for the lock while the loop goes on.
A call that fails busy has done nothing, so running it again is safe. Calls made while one
waits there queue behind it on the thread (a cancelled turn's rollback, say), in order.
Commits run inline too: in WAL mode with ``synchronous = NORMAL`` a commit does not wait for
the disk (10 us here). The automatic checkpoint every 1,000 pages of WAL does, inside the
commit that triggers it: measured here, 1 commit in about 400 took 1-9 ms, where sending
every commit to the thread would cost 0.35 ms of CPU each.

Two things keep the loop going otherwise: a run of inline calls gives the loop a turn every
``YIELD_EVERY`` (a hundred check-ins started in a row would hold up every chat), and work that
reads or writes thousands of rows at a time (planning) runs its calls on the thread, within
:func:`off_the_loop`.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import partial
from typing import Any, cast

import aiosqlite
from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_cursor,
    AsyncAdapt_aiosqlite_dbapi,
)
from sqlalchemy.dialects.sqlite.aiosqlite import dialect as aiosqlite_dialect
from sqlalchemy.engine import URL
from sqlalchemy.util.concurrency import await_

log = logging.getLogger(__name__)

_BUSY = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
YIELD_EVERY = 0.005  # seconds of inline calls before the loop gets a turn
_on_the_loop: ContextVar[bool] = ContextVar("sqlite_on_the_loop", default=True)


@contextmanager
def off_the_loop() -> Iterator[None]:
    """Within, this task's (and the tasks it starts') SQLite calls run on the connection's
    thread: for statements over thousands of rows, which inline would stop the loop for tens
    of milliseconds each. No effect on other databases."""
    token = _on_the_loop.set(False)
    try:
        yield
    finally:
        _on_the_loop.reset(token)


class SQLiteCursor:
    """The part of aiosqlite's cursor SQLAlchemy uses, one connection call per execute."""

    arraysize = 1

    def __init__(self, connection: SQLiteConnection) -> None:
        self._connection = connection
        self._rows: list[Any] = []
        self.description: Any = None
        self.rowcount = -1
        self.lastrowid: int | None = None

    async def __aenter__(self) -> SQLiteCursor:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._rows = []

    def _run(self, method: str, sql: str, parameters: Any) -> None:
        """Run (after the transaction's BEGIN, if due), keep what SQLAlchemy will ask for,
        close."""
        self._connection._begin_if_due()
        cursor = self._connection._conn.cursor()
        try:
            getattr(cursor, method)(sql, parameters)
            self.description = cursor.description
            self._rows = cursor.fetchall() if cursor.description else []
            self.rowcount, self.lastrowid = cursor.rowcount, cursor.lastrowid
        finally:
            cursor.close()

    async def execute(self, sql: str, parameters: Any = ()) -> SQLiteCursor:
        await self._connection._execute(self._run, "execute", sql, parameters)
        return self

    async def executemany(self, sql: str, parameters: Any) -> SQLiteCursor:
        await self._connection._execute(self._run, "executemany", sql, parameters)
        return self

    async def fetchall(self) -> list[Any]:
        rows, self._rows = self._rows, []
        return rows

    async def fetchone(self) -> Any:
        return self._rows.pop(0) if self._rows else None

    async def fetchmany(self, size: int | None = None) -> list[Any]:
        size = size or self.arraysize
        rows, self._rows = self._rows[:size], self._rows[size:]
        return rows

    async def close(self) -> None:
        self._rows = []


class SQLiteConnection(aiosqlite.Connection):
    """aiosqlite's connection, calling SQLite inline unless it has to wait for a lock."""

    def __init__(self, connector: Callable[[], sqlite3.Connection], *, lock_wait_ms: int) -> None:
        super().__init__(connector, iter_chunk_size=64)
        self._thread.daemon = True  # as SQLAlchemy does for the connections it opens itself
        self._lock_wait_ms = lock_wait_ms
        self._on_thread = 0  # calls handed to the thread and not finished there yet
        self._counting = threading.Lock()  # the thread counts down, the loop up
        self._yield_at = 0.0  # perf_counter() after which the next inline call yields first
        self._begin_due = False

    def cursor(self) -> SQLiteCursor:  # type: ignore[override]
        return SQLiteCursor(self)

    def begin_immediate(self) -> None:
        """Start a ``BEGIN IMMEDIATE`` transaction, sent with the next statement: the write
        lock is taken (or waited for) there, and it costs no call of its own."""
        self._begin_due = True

    def _begin_if_due(self) -> None:
        if self._begin_due:
            self._conn.execute("BEGIN IMMEDIATE")  # if busy, the statement is run again
            self._begin_due = False

    def commit_now(self) -> None:
        """COMMIT, on whichever thread calls it; nothing if no statement ran."""
        if self._begin_due:
            self._begin_due = False
        else:
            self._conn.commit()

    def rollback_now(self) -> None:
        self._begin_due = False
        self._conn.rollback()

    async def commit(self) -> None:
        await self._execute(self.commit_now)

    async def rollback(self) -> None:
        await self._execute(self.rollback_now)

    def try_inline(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[bool, Any]:
        """``(True, fn's result)`` if ``fn`` could run inline at once; ``(False, None)`` if it
        must go through :meth:`_execute` instead: it found the database locked (having done
        nothing), the thread has calls in hand, the loop is due a turn, or this work is kept
        off the loop."""
        if (not _on_the_loop.get() or self._on_thread
                or time.perf_counter() >= self._yield_at):
            return False, None
        try:
            return True, fn(*args, **kwargs)
        except sqlite3.OperationalError as error:
            if error.sqlite_errorcode & 0xFF not in _BUSY:
                raise
            return False, None

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` from SQLAlchemy's synchronous side (its greenlet): inline if it may
        run inline, else through :meth:`_execute` by way of ``await_``."""
        done, result = self.try_inline(fn, *args)
        return result if done else await_(self._execute(fn, *args))

    async def _execute(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if _on_the_loop.get() and time.perf_counter() >= self._yield_at:
            await asyncio.sleep(0)
            self._yield_at = time.perf_counter() + YIELD_EVERY
        done, result = self.try_inline(fn, *args, **kwargs)
        if done:
            return result
        return await self._on_the_thread(fn, *args, **kwargs)

    async def _on_the_thread(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        with self._counting:
            self._on_thread += 1
        return await super()._execute(self._waiting, fn, args, kwargs)  # type: ignore[no-untyped-call]

    def _waiting(self, fn: Callable[..., Any], args: Any, kwargs: Any) -> Any:
        """On the connection's thread: ``fn``, waiting for the database's lock if need be."""
        try:
            self._conn.execute(f"PRAGMA busy_timeout = {self._lock_wait_ms}")
            try:
                return fn(*args, **kwargs)
            finally:
                self._conn.execute("PRAGMA busy_timeout = 0")
        finally:
            with self._counting:
                self._on_thread -= 1


def sqlite_connector(url: URL, *, lock_wait_ms: int) -> Callable[[], Any]:
    """An ``async_creator`` for ``create_async_engine``: the connection SQLAlchemy's aiosqlite
    dialect would open for ``url``, as a :class:`SQLiteConnection`."""
    args, kwargs = aiosqlite_dialect().create_connect_args(url)
    # Opened on the connection's thread, then used from the loop's: SQLite serialises calls
    # on one connection itself, and the pool lends it to one task at a time.
    kwargs = {**kwargs, "timeout": 0, "check_same_thread": False}
    connect = partial(sqlite3.connect, *args, **kwargs)

    async def creator() -> SQLiteConnection:
        connection = SQLiteConnection(connect, lock_wait_ms=lock_wait_ms)
        await connection  # starts its thread and connects there
        return connection

    return creator


class _AdaptedCursor(AsyncAdapt_aiosqlite_cursor):
    """SQLAlchemy's cursor adapter, calling :class:`SQLiteCursor` directly when the call may
    run inline: through ``await_`` each call cost two greenlet switches, a coroutine and a
    lock, more than most statements themselves. Creating the cursor still goes through
    ``await_``, which ``AsyncConnection.execute`` checks for."""

    __slots__ = ()

    def execute(self, operation: Any, parameters: Any = None) -> None:
        self._run("execute", operation, () if parameters is None else parameters)

    def executemany(self, operation: Any, seq_of_parameters: Any) -> None:
        self._run("executemany", operation, seq_of_parameters)

    def _run(self, method: str, sql: str, parameters: Any) -> None:
        cursor = cast(SQLiteCursor, self._cursor)
        try:
            cursor._connection.call(cursor._run, method, sql, parameters)
        except Exception as error:
            self._adapt_connection._handle_exception(error)
        if cursor.description:
            self._rows = collections.deque(cursor._rows)
            cursor._rows = []

    def close(self) -> None:  # a SQLiteCursor holds nothing to release
        self._rows.clear()


class _AdaptedConnection(AsyncAdapt_aiosqlite_connection):
    """SQLAlchemy's connection adapter, committing and rolling back inline when it may."""

    __slots__ = ()
    _cursor_cls = _AdaptedCursor

    def commit(self) -> None:
        self._end(self._sqlite.commit_now)

    def rollback(self) -> None:
        self._end(self._sqlite.rollback_now)

    @property
    def _sqlite(self) -> SQLiteConnection:
        return cast(SQLiteConnection, self._connection)

    def _end(self, now: Callable[[], None]) -> None:
        if not self._sqlite._connection:  # closed already: nothing to end (as SQLAlchemy's)
            return
        try:
            self._sqlite.call(now)
        except Exception as error:
            self._handle_exception(error)


class SQLiteDBAPI(AsyncAdapt_aiosqlite_dbapi):
    """SQLAlchemy's aiosqlite DB-API (``module=`` of the engine), opening connections with the
    engine's ``async_creator`` and adapting them with :class:`_AdaptedConnection`."""

    def __init__(self) -> None:
        super().__init__(aiosqlite, sqlite3)

    def connect(self, *args: Any, **kwargs: Any) -> _AdaptedConnection:
        creator = kwargs.pop("async_creator_fn")
        return _AdaptedConnection(self, await_(creator(*args, **kwargs)))


def missing_internals() -> list[str]:
    """The private names of aiosqlite (0.22) and SQLAlchemy (2.1) this module builds on that
    the installed versions lack; with any missing, ``make_engine`` takes the stock path."""
    missing = []
    try:
        connection = aiosqlite.Connection(partial(sqlite3.connect, ":memory:"),
                                          iter_chunk_size=64)  # not started: no thread runs
    except TypeError:
        missing.append("aiosqlite.Connection(connector, iter_chunk_size=)")
    else:
        missing += [f"aiosqlite.Connection.{name}" for name in ("_thread", "_connection")
                    if not hasattr(connection, name)]
    if not callable(getattr(aiosqlite.Connection, "_execute", None)):
        missing.append("aiosqlite.Connection._execute")
    if not isinstance(getattr(aiosqlite.Connection, "_conn", None), property):
        missing.append("aiosqlite.Connection._conn")
    for cls, names in ((AsyncAdapt_aiosqlite_cursor, ("_cursor", "_rows", "_adapt_connection")),
                       (AsyncAdapt_aiosqlite_connection,
                        ("_connection", "_handle_exception", "_cursor_cls"))):
        missing += [f"sqlalchemy {cls.__name__}.{name}" for name in names
                    if not hasattr(cls, name)]
    return missing


#: Checked once, at import: what the installed libraries lack of what this module needs.
INTERNALS_MISSING = missing_internals()
if INTERNALS_MISSING:
    log.warning("SQLite runs on the stock aiosqlite path (every statement through its thread, "
                "slower): the installed aiosqlite or SQLAlchemy lacks %s",
                ", ".join(INTERNALS_MISSING))
