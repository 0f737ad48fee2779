"""The exercise check-ins planned for a coach's assignments, cancelled when an assignment
stops, pauses or changes its schedule (``planned_checkins.ref`` holds the assignment's id)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Select, String, cast, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bot.store import Assignment, PlannedCheckin
from bot.store.kinds import CheckinKind, CheckinStatus

_WAITING = (CheckinStatus.PLANNED, CheckinStatus.CLAIMED)


async def cancel_exercise_checkins(session: AsyncSession, user_id: int,
                                   assignments: Iterable[int] | Select[Any], *,
                                   after: datetime | None = None) -> None:
    """Cancel what is planned (or claimed) for these assignments, by id or a query of their
    ids as text; only what falls due after ``after`` if given."""
    refs = assignments if isinstance(assignments, Select) else [str(i) for i in assignments]
    query = update(PlannedCheckin).where(
        PlannedCheckin.user_id == user_id, PlannedCheckin.kind == CheckinKind.EXERCISE,
        PlannedCheckin.status.in_(_WAITING), PlannedCheckin.ref.in_(refs))
    if after is not None:
        query = query.where(PlannedCheckin.due_at > after)
    await session.execute(query.values(status=CheckinStatus.CANCELLED)
                          .execution_options(synchronize_session=False))


async def stop_assignments_where(session: AsyncSession, user_id: int,
                                 *which: ColumnElement[bool]) -> None:
    """End the user's assignments that match ``which``, and what they planned."""
    await cancel_exercise_checkins(session, user_id, select(cast(Assignment.id, String)).where(
        Assignment.client_id == user_id, Assignment.active.is_(True), *which))
    await session.execute(
        update(Assignment).where(Assignment.client_id == user_id, *which).values(active=False)
        .execution_options(synchronize_session=False))
