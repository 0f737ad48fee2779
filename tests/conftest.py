"""Shared fixtures: the fake Bot API server, and databases (every database test runs on
SQLite, a temp file, and on PostgreSQL).

The day-to-day run is spread over pytest-xdist workers (``-n`` in pyproject's addopts), so
every test is isolated: SQLite files under its own tmp_path, a PostgreSQL database per worker,
ephemeral ports. A test marked ``timed`` measures real time (a rate, how long the event loop
stalls, how soon a reply comes): it runs alone, the other workers waiting for it
(``run_alone_when_timed``).

Databases: ``db_url`` is a database with the current schema and no rows, not migrated for
each test (every migration took about 0.3 s of CPU on SQLite and 1 s on PostgreSQL): on
SQLite a copy of a file migrated once per worker (``sqlite_template``), on PostgreSQL the
worker's database emptied; ``empty_db_url`` has no tables at all, for the migrations' tests.

PostgreSQL: a fresh, uniquely named database is created per worker from
COACHBOT_TEST_PG_URL (default postgresql+asyncpg://postgres@127.0.0.1:5432/test) and
dropped at the end (``pg_database``): ``db_url`` and ``pg_url`` give it at the current schema,
emptied (``PgMigrated``), ``empty_db_url`` with an empty schema. If PostgreSQL is
unreachable the PostgreSQL tests fail, unless COACHBOT_SKIP_PG=1.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import shutil
import uuid
from collections.abc import AsyncIterator, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import asyncpg
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from bot.store import Base, Store
from bot.store.migrate import head_revision, upgrade
from tests.fakes import fake_bot_api

T = TypeVar("T")
PG_DEFAULT = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"


def _admin_url() -> str:
    return os.environ.get("COACHBOT_TEST_PG_URL", PG_DEFAULT)


async def _pg_admin(url: str, *statements: str) -> None:
    engine = create_async_engine(url, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            for sql in statements:
                await conn.execute(text(sql))
    finally:
        await engine.dispose()


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from sync code, even inside a running loop."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


TIMED_LOCKS = pytest.StashKey[Path]()


@contextmanager
def _locked(shared_dir: Path, *, alone: bool) -> Iterator[None]:
    """Across the workers of one run, a ``timed`` test takes a file lock exclusively, every
    other test shares it. A waiting ``timed`` test first holds the gate, which the others
    pass on their way in: they cannot keep it waiting for ever."""
    mode = fcntl.LOCK_EX if alone else fcntl.LOCK_SH
    with open(shared_dir / "timed.gate", "a") as gate, \
            open(shared_dir / "timed.lock", "a") as lock:
        fcntl.flock(gate, mode)
        fcntl.flock(lock, mode)
        if not alone:
            fcntl.flock(gate, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            if alone:
                fcntl.flock(gate, fcntl.LOCK_UN)


@pytest.fixture(autouse=True)
def run_alone_when_timed(request: pytest.FixtureRequest,
                         tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Any other test holds the shared lock from its first fixture to its last teardown; a
    ``timed`` one holds it exclusively while it runs (``pytest_runtest_call``): its own
    fixtures are set up and torn down beside the others, which its measures do not cover."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        yield  # one process: nothing runs beside the test
        return
    shared_dir = tmp_path_factory.getbasetemp().parent  # the same for every worker of a run
    if request.node.get_closest_marker("timed") is not None:
        request.node.stash[TIMED_LOCKS] = shared_dir
        yield
        return
    with _locked(shared_dir, alone=False):
        yield


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    shared_dir = item.stash.get(TIMED_LOCKS, None)
    if shared_dir is None:
        return (yield)
    with _locked(shared_dir, alone=True):
        return (yield)


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    """The URL of this worker's database (its schema and rows are each test's to set)."""
    if os.environ.get("COACHBOT_SKIP_PG") == "1":
        pytest.skip("COACHBOT_SKIP_PG=1")
    admin = _admin_url()
    name = f"coachbot_test_{uuid.uuid4().hex[:12]}"
    _run(_pg_admin(admin, f'CREATE DATABASE "{name}"'))
    yield make_url(admin).set(database=name).render_as_string(hide_password=False)
    _run(_pg_admin(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


_END_OTHER_CONNECTIONS = (
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
    "WHERE datname = current_database() AND pid <> pg_backend_pid()")
_EMPTY = "".join([
    "BEGIN; ",
    *(f'DELETE FROM "{table.name}"; ' for table in reversed(Base.metadata.sorted_tables)),
    "DO $$ DECLARE s record; BEGIN FOR s IN SELECT format('%I.%I', schemaname, sequencename) "
    "AS name FROM pg_sequences LOOP EXECUTE 'ALTER SEQUENCE ' || s.name || ' RESTART'; "
    "END LOOP; END $$; COMMIT;"])


class PgMigrated:
    """This worker's PostgreSQL database kept at the current schema and emptied for each
    test: its other connections ended, every row deleted (children first) and every sequence
    restarted, as if just migrated. It is migrated again only after a test left it at another
    revision (the migrations' own tests empty its schema). Migrating for each test took about
    1 s, and a database made anew from a template waits for a checkpoint of the whole server
    when the old one is dropped (seconds on a busy one)."""

    def __init__(self, url: str) -> None:
        self.url = url

    async def _empty(self) -> None:
        plain = make_url(self.url).set(drivername="postgresql")
        connection = await asyncpg.connect(plain.render_as_string(hide_password=False))
        try:
            await connection.execute(_END_OTHER_CONNECTIONS)
            try:
                revision = await connection.fetchval("SELECT version_num FROM alembic_version")
            except asyncpg.UndefinedTableError:
                revision = None
            if revision != head_revision():
                await connection.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
                await upgrade(self.url)
            await connection.execute(_EMPTY)
        finally:
            await connection.close()

    def fresh(self) -> str:
        _run(self._empty())
        return self.url


@pytest.fixture(scope="session")
def pg_migrated(pg_database: str) -> PgMigrated:
    return PgMigrated(pg_database)


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite database file with the current schema, no rows: copy it, never open it."""
    path = tmp_path_factory.mktemp("migrated") / "coachbot.db"
    _run(upgrade(f"sqlite+aiosqlite:///{path}"))
    assert not path.with_name("coachbot.db-wal").exists()  # all of it is in the one file
    return path


@pytest.fixture
def pg_url(pg_migrated: PgMigrated) -> str:
    """URL of a PostgreSQL database with the current schema and no rows (this worker's)."""
    return pg_migrated.fresh()


@pytest.fixture(params=["sqlite", "postgresql"])
async def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """URL of a database with the current schema and no rows."""
    if request.param == "sqlite":
        template: Path = request.getfixturevalue("sqlite_template")
        shutil.copyfile(template, tmp_path / "coachbot.db")
        yield f"sqlite+aiosqlite:///{tmp_path / 'coachbot.db'}"
        return
    yield request.getfixturevalue("pg_url")


@pytest.fixture(params=["sqlite", "postgresql"])
async def empty_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """URL of an empty database (no tables yet)."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'coachbot.db'}"
        return
    url: str = request.getfixturevalue("pg_database")
    await _pg_admin(url, "DROP SCHEMA public CASCADE", "CREATE SCHEMA public")
    yield url


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    s = Store(db_url)
    await s.start()
    yield s
    await s.close()


__all__ = ["db_url", "empty_db_url", "fake_bot_api", "pg_database", "pg_migrated", "pg_url",
           "sqlite_template", "store"]
