"""Shared fixtures: the fake Bot API server, and databases (every database test runs on
SQLite, a temp file, and on PostgreSQL).

The day-to-day run is spread over pytest-xdist workers (``-n`` in pyproject's addopts), so
every test is isolated: SQLite files under its own tmp_path, a PostgreSQL database per worker,
ephemeral ports. A test marked ``timed`` measures real time (a rate, how long the event loop
stalls, how soon a reply comes): it runs alone, the other workers waiting for it
(``run_alone_when_timed``).

PostgreSQL: a fresh, uniquely named database is created per test session from
COACHBOT_TEST_PG_URL (default postgresql+asyncpg://postgres@127.0.0.1:5432/test) and
dropped at the end; each test starts from an empty schema. If PostgreSQL is
unreachable the PostgreSQL tests fail, unless COACHBOT_SKIP_PG=1.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import uuid
from collections.abc import AsyncIterator, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from bot.store import Store
from tests.fakes import fake_bot_api

PG_DEFAULT = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"


async def _pg_admin(url: str, *statements: str) -> None:
    engine = create_async_engine(url, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            for sql in statements:
                await conn.execute(text(sql))
    finally:
        await engine.dispose()


def _run(coro: Coroutine[Any, Any, None]) -> None:
    """Run a coroutine to completion from sync code, even inside a running loop."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, coro).result()


@pytest.fixture(autouse=True)
def run_alone_when_timed(request: pytest.FixtureRequest,
                         tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Across the workers of one run, a ``timed`` test takes a file lock exclusively, every
    other test shares it. A waiting ``timed`` test first holds the gate, which the others
    pass on their way in: they cannot keep it waiting for ever."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        yield  # one process: nothing runs beside the test
        return
    shared_dir = tmp_path_factory.getbasetemp().parent  # the same for every worker of a run
    alone = request.node.get_closest_marker("timed") is not None
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


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    if os.environ.get("COACHBOT_SKIP_PG") == "1":
        pytest.skip("COACHBOT_SKIP_PG=1")
    admin = os.environ.get("COACHBOT_TEST_PG_URL", PG_DEFAULT)
    name = f"coachbot_test_{uuid.uuid4().hex[:12]}"
    _run(_pg_admin(admin, f'CREATE DATABASE "{name}"'))
    yield make_url(admin).set(database=name).render_as_string(hide_password=False)
    _run(_pg_admin(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(params=["sqlite", "postgresql"])
async def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
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


__all__ = ["db_url", "fake_bot_api", "pg_database", "store"]
