"""Re-encryption: every encrypted value put under the first key of the key list.

Run by ``coachbot admin reencrypt`` after a new key was put first in
``COACHBOT_ENCRYPTION_KEY``. It walks every encrypted column (found by type in the models,
so a new one is never missed) by primary key, a batch per transaction. A value already under
the first key is left alone, so an interrupted run just runs again, and a value the bot
rewrote meanwhile is not overwritten (each update names the value it replaces). Plain text
written before there was a key is encrypted too. When every value is under the first key,
only its fingerprint stays recorded (``bot/store/keys.py``): the old keys can go.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from cryptography.fernet import Fernet
from sqlalchemy import Column, Table, Text, bindparam, select, type_coerce, update
from sqlalchemy.ext.asyncio import AsyncEngine

from .keys import keep_only
from .models import Base
from .types import (
    ENCRYPTED_TYPES,
    DecryptionError,
    make_cipher,
    reseal,
    sealed_under,
    split_keys,
)

DEFAULT_BATCH = 500


@dataclass
class ColumnResult:
    """What a run did to one column."""

    table: str
    column: str
    rewritten: int = 0
    #: Already under the first key.
    current: int = 0
    #: Encrypted under none of the keys: left as they are.
    unreadable: int = 0


def encrypted_columns() -> Iterator[tuple[Table, Column[object]]]:
    """Every (table, column) stored encrypted, from the models' column types."""
    for table in Base.metadata.sorted_tables:
        for column in table.columns:
            if isinstance(column.type, ENCRYPTED_TYPES):
                yield table, column


async def reencrypt(engine: AsyncEngine, encryption_key: str, *, batch: int = DEFAULT_BATCH,
                    report: Callable[[ColumnResult], None] | None = None,
                    ) -> list[ColumnResult]:
    """Put every encrypted value under the first key of ``encryption_key``; then, if none was
    unreadable, record that key alone. Returns what was done, column by column."""
    keys = split_keys(encryption_key)
    if not keys:
        raise ValueError("re-encryption needs an encryption key")
    cipher, first = make_cipher(encryption_key), Fernet(keys[0].encode("ascii"))
    results = []
    for table, column in encrypted_columns():
        (key_column,) = table.primary_key.columns
        as_stored = type_coerce(column, Text)
        rewrite = (update(table)
                   .where(key_column == bindparam("b_key"),
                          as_stored == bindparam("b_old", type_=Text))
                   .values({column.name: bindparam("b_new", type_=Text)}))
        result = ColumnResult(table.name, column.name)
        after: object = None
        while True:
            query = select(key_column, as_stored).where(column.is_not(None)) \
                .order_by(key_column).limit(batch)
            if after is not None:
                query = query.where(key_column > after)
            async with engine.begin() as conn:
                rows = (await conn.execute(query)).all()
                if not rows:
                    break
                changes = []
                for row_key, value in rows:
                    stored = value if isinstance(value, str) else str(value)
                    if sealed_under(stored, first):
                        result.current += 1
                        continue
                    try:
                        changes.append({"b_key": row_key, "b_old": value,
                                        "b_new": reseal(stored, cipher)})
                    except DecryptionError:
                        result.unreadable += 1
                if changes:
                    await conn.execute(rewrite, changes)
                    result.rewritten += len(changes)
                after = rows[-1][0]
            await asyncio.sleep(0)  # let the bot's turns in between batches
        results.append(result)
        if report is not None:
            report(result)
    if not any(r.unreadable for r in results):
        async with engine.begin() as conn:
            await keep_only(conn, keys[0])
    return results
