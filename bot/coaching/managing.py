"""What a coach does with an assignment once made: list a client's, pause, resume, change the
schedule, cancel. Every action checks that the assignment is this coach's and the client is
still linked to them, so a forged id gets nowhere; planned exercises of a paused or cancelled
assignment are cancelled in the same transaction, and the planner plans a resumed or changed
one again on its next pass."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bot.coaching.coach import InvalidSchedule, NotYourClient, is_linked, validate_schedule

__all__ = ["AssignmentAction", "AssignmentView", "InvalidSchedule", "NotYourClient",
           "act_on_assignment", "assignments_of", "change_schedule"]
from bot.store import Assignment, Exercise, PlannedCheckin


class AssignmentAction(StrEnum):
    PAUSE = "pause"
    RESUME = "resume"
    CANCEL = "cancel"


@dataclass(frozen=True)
class AssignmentView:
    id: int
    client_id: int
    exercise_slug: str | None
    custom_title: str | None  # a coach's own exercise
    schedule: Mapping[str, Any]
    starts_on: date
    ends_on: date | None
    paused: bool


async def assignments_of(session: AsyncSession, coach_id: int,
                         client_id: int) -> list[AssignmentView]:
    """The active assignments this coach gave this client, oldest first."""
    if not await is_linked(session, coach_id, client_id):
        raise NotYourClient("no active link to this client")
    rows = await session.execute(
        select(Assignment, Exercise.title)
        .outerjoin(Exercise, Exercise.id == Assignment.exercise_id)
        .where(Assignment.coach_id == coach_id, Assignment.client_id == client_id,
               Assignment.active.is_(True))
        .order_by(Assignment.created_at, Assignment.id))
    return [AssignmentView(a.id, a.client_id, a.exercise_slug, title, a.schedule,
                           a.starts_on, a.ends_on, a.paused) for a, title in rows]


async def _own(session: AsyncSession, coach_id: int, assignment_id: int) -> Assignment:
    assignment = await session.get(Assignment, assignment_id)
    if assignment is None or assignment.coach_id != coach_id or not assignment.active \
            or not await is_linked(session, coach_id, assignment.client_id):
        raise NotYourClient("no such assignment of yours")
    return assignment


async def _cancel_planned(session: AsyncSession, assignment: Assignment) -> None:
    await session.execute(
        update(PlannedCheckin)
        .where(PlannedCheckin.user_id == assignment.client_id,
               PlannedCheckin.kind == "exercise", PlannedCheckin.ref == str(assignment.id),
               PlannedCheckin.status.in_(("planned", "claimed")))
        .values(status="cancelled")
        .execution_options(synchronize_session=False))


async def act_on_assignment(session: AsyncSession, coach_id: int, assignment_id: int,
                            action: AssignmentAction) -> AssignmentView:
    """Pause, resume or cancel one of this coach's assignments; NotYourClient otherwise."""
    assignment = await _own(session, coach_id, assignment_id)
    if action is AssignmentAction.RESUME:
        assignment.paused = False
    else:
        await _cancel_planned(session, assignment)
        if action is AssignmentAction.PAUSE:
            assignment.paused = True
        else:
            assignment.active = False
    await session.flush()
    return AssignmentView(assignment.id, assignment.client_id, assignment.exercise_slug,
                          None, assignment.schedule, assignment.starts_on, assignment.ends_on,
                          assignment.paused)


async def change_schedule(session: AsyncSession, coach_id: int, assignment_id: int,
                          schedule: Mapping[str, Any], starts_on: date, ends_on: date | None,
                          now: datetime) -> None:
    """A new schedule for one of this coach's assignments, from ``starts_on``; what was
    planned by the old one is cancelled."""
    assignment = await _own(session, coach_id, assignment_id)
    clean = validate_schedule(schedule)
    if ends_on is not None and ends_on < starts_on:
        raise InvalidSchedule("the assignment ends before it starts")
    await _cancel_planned(session, assignment)
    assignment.schedule, assignment.starts_on, assignment.ends_on = clean, starts_on, ends_on
    await session.flush()
