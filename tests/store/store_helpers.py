from __future__ import annotations

from typing import Any

from sqlalchemy import text

from bot.store import Store


async def count(store: Store, table: str, where: str = "1=1", **params: Any) -> int:
    async with store.engine.connect() as conn:
        n = (
            await conn.execute(text(f"SELECT count(*) FROM {table} WHERE {where}"), params)
        ).scalar()
    assert isinstance(n, int)
    return n


async def raw(store: Store, sql: str, **params: Any) -> list[Any]:
    async with store.engine.connect() as conn:
        return list((await conn.execute(text(sql), params)).all())
