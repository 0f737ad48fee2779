"""What the aiogram peer stores (SQLAlchemy models), and the benchmark's and the test's
look at it afterwards, without importing aiogram (seconds of start-up)."""

from __future__ import annotations

import os

from redis.asyncio import Redis
from redis.exceptions import RedisError
from sqlalchemy import BigInteger, String, func, select
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")

class Base(DeclarativeBase):
    pass


class Answer(Base):
    __tablename__ = "peer_answers"
    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(BigInteger, index=True)
    key: Mapped[str] = mapped_column(String(32))
    value: Mapped[str | None] = mapped_column(String(1000))


class Goal(Base):
    __tablename__ = "peer_goals"
    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(BigInteger, index=True)
    title: Mapped[str] = mapped_column(String(200))
    baseline: Mapped[int]
    target: Mapped[int]
    first_step: Mapped[str] = mapped_column(String(300))
    first_step_date: Mapped[str] = mapped_column(String(10))


async def stored(database_url: str, users: range) -> tuple[int, int]:
    """(goals, answers) the users' conversations stored."""
    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as connection:
            goals, answers = [await connection.scalar(
                select(func.count()).select_from(table)
                .where(table.user_id.between(users.start, users.stop - 1))) or 0
                for table in (Goal, Answer)]
    finally:
        await engine.dispose()
    return goals, answers


async def redis_down(redis_url: str = REDIS_URL) -> str | None:
    """Why Redis cannot be used, or None when it answers."""
    redis = Redis.from_url(redis_url, socket_connect_timeout=2)
    try:
        await redis.ping()
    except (RedisError, OSError) as exc:
        return f"no Redis at {redis_url} ({exc})"
    finally:
        await redis.aclose()
    return None


async def forget(redis_url: str, key_prefix: str) -> int:
    """Delete every key of a run from Redis; how many there were."""
    redis = Redis.from_url(redis_url)
    try:
        keys = [key async for key in redis.scan_iter(match=f"{key_prefix}:*", count=1000)]
        if keys:
            await redis.delete(*keys)
    finally:
        await redis.aclose()
    return len(keys)
