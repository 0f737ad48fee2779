"""Which encryption keys the data is under: the fingerprints in ``key_fingerprints``.

A replica records the fingerprints of its key list at start. One whose keys share none with
those recorded (or that has no key while some are recorded) would write what the others
cannot read and fail to read what they wrote, so it refuses to start. Rotation: put a new
key first and keep the old ones after it (the replica shares the old ones, and adds the new
one); ``coachbot admin reencrypt`` then puts every value under the first key and leaves only
its fingerprint, after which the old keys can be dropped from every replica's list.
"""

from __future__ import annotations

import logging

from sqlalchemy import delete, insert, select, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from .models import KeyFingerprint
from .types import fingerprint, split_keys, utcnow

log = logging.getLogger(__name__)

#: pg_advisory_xact_lock key serialising replicas that record their keys at the same time.
_PG_LOCK_KEY = 0x636F616368_6B6579  # "coach" "key"


class KeyMismatchError(RuntimeError):
    """This replica's keys cannot read the database's encrypted data."""


def short(fingerprints: set[str] | list[str]) -> str:
    """Fingerprints as people compare them: the first 8 hex digits, sorted."""
    return ", ".join(sorted(f[:8] for f in fingerprints))


async def _lock(conn: AsyncConnection) -> None:
    if conn.dialect.name == "postgresql":  # SQLite: BEGIN IMMEDIATE serialises already
        await conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_LOCK_KEY})


async def check_keys(engine: AsyncEngine, encryption_key: str | None) -> None:
    """Record this replica's key fingerprints, or raise :class:`KeyMismatchError`."""
    mine = [fingerprint(k) for k in split_keys(encryption_key)]
    async with engine.begin() as conn:
        await _lock(conn)
        recorded = set((await conn.execute(select(KeyFingerprint.fingerprint))).scalars())
        if recorded and not mine:
            raise KeyMismatchError(
                "COACHBOT_ENCRYPTION_KEY is not set, but this database holds data encrypted "
                f"under the key(s) with fingerprint {short(recorded)}: set the key the other "
                "replicas use")
        if recorded and not recorded.intersection(mine):
            raise KeyMismatchError(
                f"COACHBOT_ENCRYPTION_KEY (key fingerprint {short(mine)}) shares no key with "
                f"the data in this database (fingerprint {short(recorded)}): this replica "
                "could not read what the others wrote. To rotate keys, put the new key first "
                "and keep the old one after it")
        new = [f for f in dict.fromkeys(mine) if f not in recorded]
        if new:
            now = utcnow()
            await conn.execute(insert(KeyFingerprint),
                               [{"fingerprint": f, "recorded_at": now} for f in new])
        unreadable = recorded.difference(mine)
        if unreadable:
            log.warning("this replica lacks %d key(s) the database's data may be under "
                        "(fingerprint %s): values written under them cannot be read here; "
                        "give every replica the same key list", len(unreadable),
                        short(unreadable))


async def keep_only(conn: AsyncConnection, key: str) -> None:
    """Every value is under ``key`` now: it is the only one recorded."""
    await _lock(conn)
    kept = fingerprint(key)
    await conn.execute(delete(KeyFingerprint).where(KeyFingerprint.fingerprint != kept))
    if (await conn.execute(select(KeyFingerprint.fingerprint)
                           .where(KeyFingerprint.fingerprint == kept))).first() is None:
        await conn.execute(insert(KeyFingerprint).values(fingerprint=kept,
                                                         recorded_at=utcnow()))
