"""Engine construction: SQLite pragmas and write serialisation, encryption cipher."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import InvalidatePoolError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from . import sqlite_async
from .sqlite_async import SQLiteConnection, SQLiteDBAPI, sqlite_connector
from .types import install_cipher, make_cipher

DEFAULT_URL = "sqlite+aiosqlite:///coachbot.db"
#: How long a SQLite writer waits for the write lock before "database is locked".
SQLITE_BUSY_TIMEOUT_MS = 30_000
#: PostgreSQL connections a replica keeps open; past them a turn waits for one.
PG_POOL_SIZE = 30
_pinged: ContextVar[bool] = ContextVar("pinged", default=True)


@contextmanager
def unpinged() -> Iterator[None]:
    """Within, connections taken from a PostgreSQL pool are not pinged first: for callers
    that run a transaction again when the database was away (a turn, the sender's writes),
    where a connection that died meanwhile costs one failed try, and the ping costs three
    round trips on every use (asyncpg's: BEGIN, an empty query, ROLLBACK)."""
    token = _pinged.set(False)
    try:
        yield
    finally:
        _pinged.reset(token)


def database_url() -> str:
    """The configured database URL (``COACHBOT_DATABASE_URL``)."""
    return os.environ.get("COACHBOT_DATABASE_URL") or DEFAULT_URL


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def make_engine(url: str, *, encryption_key: str | None = None,
                connections: int = PG_POOL_SIZE, pre_ping: bool = True) -> AsyncEngine:
    """Create an async engine for ``url``.

    On SQLite every transaction starts with ``BEGIN IMMEDIATE`` so writers are
    serialised across tasks and processes (waiting up to the busy timeout), the
    journal is WAL, foreign keys are enforced, and statements run on the event loop's
    thread, waiting for a lock on the connection's own (``sqlite_async``).

    ``connections``: the PostgreSQL pool's size; ``pre_ping``: test a pooled connection
    before each use, except within :func:`unpinged` (without it a dropped connection fails
    one transaction).

    Both engines hide statement parameters from error messages (``hide_parameters``): they
    hold what clients wrote, and a failed statement's error ends up in the logs.
    """
    if is_sqlite(url):
        # One connection: SQLite lets one writer in at a time anyway, and writers queued in
        # the pool take turns at once, where a second connection's BEGIN IMMEDIATE would
        # poll the lock with sleeps of up to 100 ms (docs/performance.md). Other processes
        # on the same file still wait through the busy timeout.
        one_connection = {} if _in_memory(url) else {  # in memory: one already (StaticPool)
            "pool_size": 1, "max_overflow": 0, "pool_timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
        if sqlite_async.INTERNALS_MISSING:  # the stock path, warned about at import
            engine = create_async_engine(
                url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
                hide_parameters=True, **one_connection)
        else:
            connector = sqlite_connector(make_url(url), lock_wait_ms=SQLITE_BUSY_TIMEOUT_MS)
            engine = create_async_engine(url, async_creator=connector, module=SQLiteDBAPI(),
                                         hide_parameters=True, **one_connection)
    else:
        # Up to 64 updates are handled at once (bot/telegram/app.py). No overflow: a
        # connection opened past the pool is closed again when returned, so under load each
        # turn past the pool paid for a new connection; waiting for a pooled one is cheaper
        # (docs/performance.md, items 20 and 24).
        engine = create_async_engine(url, pool_size=connections, max_overflow=0,
                                     hide_parameters=True)
        if pre_ping:
            _ping_on_checkout(engine)
    cipher = make_cipher(encryption_key) if encryption_key else None
    install_cipher(engine.sync_engine.dialect, cipher)
    if is_sqlite(url):
        _configure_sqlite(engine)
    return engine


def _ping_on_checkout(engine: AsyncEngine) -> None:
    """SQLAlchemy's ``pool_pre_ping``, skipped within :func:`unpinged`."""
    dialect = engine.sync_engine.dialect

    @event.listens_for(engine.sync_engine.pool, "checkout")
    def _ping(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        if not _pinged.get():
            return
        try:
            dialect.do_ping(dbapi_connection)
        except dialect.loaded_dbapi.Error as error:
            if dialect.is_disconnect(error, dbapi_connection, None):
                # The database went away: every connection pooled before now is stale.
                raise InvalidatePoolError() from error
            raise


def _in_memory(url: str | URL) -> bool:
    return make_url(url).database in (None, "", ":memory:")


def _configure_sqlite(engine: AsyncEngine) -> None:
    sync_engine = engine.sync_engine

    @event.listens_for(sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take transaction control away from the sqlite3 driver; we emit BEGIN ourselves.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("PRAGMA foreign_keys = ON")
            # Deleted rows (an erased client's words) are overwritten, not left in free pages;
            # some builds do this by default, none is relied on (review M7).
            cursor.execute("PRAGMA secure_delete = ON")
            if not _in_memory(engine.url):
                cursor.execute("PRAGMA journal_mode = WAL")
                cursor.execute("PRAGMA synchronous = NORMAL")
        finally:
            cursor.close()

    @event.listens_for(sync_engine, "begin")
    def _on_begin(conn: Any) -> None:
        driver = conn.connection.driver_connection
        if isinstance(driver, SQLiteConnection):
            driver.begin_immediate()
        else:  # the stock aiosqlite connection (see sqlite_async.INTERNALS_MISSING)
            conn.exec_driver_sql("BEGIN IMMEDIATE")
