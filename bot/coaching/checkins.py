"""Daily check-ins as the record shows them: which local days a client checked in."""

from __future__ import annotations

from datetime import date
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.coaching.contracts import CHECKIN_MARKER
from bot.store import Answer, Goal, UserView
from bot.store.kinds import GoalStatus

STREAK_LOOKBACK = 400


async def has_active_goal(session: AsyncSession, user_id: int) -> bool:
    """Whether a check-in has a goal to look at."""
    found = await session.execute(
        select(Goal.id).where(Goal.user_id == user_id, Goal.status == GoalStatus.ACTIVE).limit(1))
    return found.first() is not None


def user_zone(user: UserView) -> ZoneInfo:
    try:
        return ZoneInfo(user.time_zone)
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


async def checkin_dates(session: AsyncSession, user: UserView, zone: ZoneInfo) -> list[date]:
    rows = await session.execute(
        select(Answer.answered_at)
        .where(Answer.user_id == user.id, Answer.marker == CHECKIN_MARKER)
        .order_by(Answer.answered_at.desc())
        .limit(STREAK_LOOKBACK)
    )
    return [at.astimezone(zone).date() for at in rows.scalars()]
