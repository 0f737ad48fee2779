"""Schema migrations, configured in code so they work from any working directory.

The migration scripts ship as package data in ``bot/store/migrations``.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from .engine import make_engine

MIGRATIONS_DIR = Path(__file__).resolve().with_name("migrations")
#: pg_advisory_xact_lock key serialising concurrent upgrades ("coachbot" in ASCII, truncated).
_PG_LOCK_KEY = 0x636F616368626F74 & 0x7FFFFFFFFFFFFFFF


def alembic_config(url: str | None = None) -> Config:
    """An Alembic config pointing at the packaged migrations."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("path_separator", "os")
    if url is not None:
        cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


async def upgrade_engine(engine: AsyncEngine, revision: str = "head") -> None:
    """Upgrade the database behind ``engine`` in one transaction.

    Idempotent. Concurrent callers are serialised: by an advisory lock on
    PostgreSQL, by ``BEGIN IMMEDIATE`` on SQLite (see :func:`make_engine`), so the
    second one finds the schema already current.
    """
    async with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            await conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_LOCK_KEY})
        await conn.run_sync(_upgrade, revision)


def _upgrade(connection: Connection, revision: str) -> None:
    if revision == "head" and _current(connection) == head_revision():
        return
    cfg = alembic_config()
    cfg.attributes["connection"] = connection
    command.upgrade(cfg, revision)


def _current(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


async def upgrade(url: str, revision: str = "head") -> None:
    """Upgrade the database at ``url`` (what ``coachbot migrate`` runs)."""
    engine = make_engine(url)
    try:
        await upgrade_engine(engine, revision)
    finally:
        await engine.dispose()


async def ensure_schema(url: str) -> None:
    """Create or upgrade the schema at start-up; safe to call every time."""
    await upgrade(url)


async def current_revision(url: str) -> str | None:
    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(_current)
    finally:
        await engine.dispose()
