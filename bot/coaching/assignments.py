"""Assigning exercises: the exercises a coach may assign, schedule validation, a coach's
own exercises, and the assignment itself (only to a client of an active link)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import date, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.coaching.coach_dialogues import assignable, row_id
from bot.coaching.coach_errors import InvalidSchedule, UnknownExercise
from bot.coaching.contracts import CUSTOM_EXERCISE, EXERCISE_STATUS
from bot.coaching.links import linked_since
from bot.dialogue.model import DialogueSet
from bot.store import Assignment, Exercise, User
from bot.store.kinds import ScheduleKind

MAX_DAILY_DAYS = 90
MAX_EVERY_DAYS = 30
STATUS_VARIABLE = EXERCISE_STATUS
EXERCISE_STATUSES = ("done", "partly", "skipped")


# -- assignments --------------------------------------------------------------------------


def exercise_ids(dialogues: DialogueSet) -> frozenset[str]:
    """The library exercises, what ``assign_exercise`` accepts by slug: exercise dialogues
    that need nothing from the platform to run (not the coach's own, `custom_exercise`)."""
    return frozenset(i for i, d in dialogues.dialogues.items()
                     if d.kind == "exercise" and not d.requires)


def _whole(value: object, low: int, high: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidSchedule(f"{what} must be a whole number from {low} to {high}")
    return value


#: What each kind of schedule has besides kind, hour and an optional minute.
SCHEDULE_KINDS = {ScheduleKind.DAILY: "days", ScheduleKind.WEEKDAYS: "weekdays",
                  ScheduleKind.EVERY: "every"}


def validate_schedule(schedule: Mapping[str, Any]) -> dict[str, Any]:
    """A clean copy of a valid schedule, or InvalidSchedule. Kinds: ``daily`` (for ``days``
    days), ``weekdays`` (a list, Monday = 0) and ``every`` (``every`` N days from the start);
    each at ``hour`` and an optional ``minute`` of the client's local time."""
    raw = schedule.get("kind")
    if not isinstance(raw, str) or raw not in SCHEDULE_KINDS:
        raise InvalidSchedule("kind must be 'daily', 'weekdays' or 'every'")
    kind = ScheduleKind(raw)
    extra = SCHEDULE_KINDS[kind]
    if not {"kind", "hour", extra} <= set(schedule) <= {"kind", "hour", "minute", extra}:
        raise InvalidSchedule(f"a {kind} schedule has: kind, hour, {extra} and maybe minute")
    clean: dict[str, Any] = {"kind": kind.value,
                             "hour": _whole(schedule["hour"], 0, 23, "hour")}
    if "minute" in schedule:
        clean["minute"] = _whole(schedule["minute"], 0, 59, "minute")
    value = schedule[extra]
    if kind is ScheduleKind.WEEKDAYS:
        if not isinstance(value, list | tuple) or not value or not all(
            isinstance(d, int) and not isinstance(d, bool) and 0 <= d <= 6 for d in value
        ):
            raise InvalidSchedule("weekdays must be a non-empty list of days 0 (Monday) to 6")
        clean[extra] = sorted(set(value))
    else:
        most = MAX_DAILY_DAYS if kind is ScheduleKind.DAILY else MAX_EVERY_DAYS
        clean[extra] = _whole(value, 1, most, extra)
    return clean


async def own_exercises(session: AsyncSession, coach_id: int) -> list[tuple[int, str]]:
    """(id, title) of the exercises this coach wrote, oldest first."""
    rows = await session.execute(select(Exercise.id, Exercise.title)
                                 .where(Exercise.coach_id == coach_id).order_by(Exercise.id))
    return [(row.id, row.title) for row in rows]


async def checked_exercise(session: AsyncSession, coach_id: int, exercise_slug: str,
                           known_exercises: Collection[str],
                           custom_exercise_id: int | None,
                           client_locale: str | None = None) -> str:
    """The slug an assignment runs: a library exercise, ``custom_exercise`` for one of this
    coach's own (never another coach's), or a dialogue this coach sent, for a client who uses
    its language (none for a group: its members' languages differ)."""
    if row_id(exercise_slug) is not None and custom_exercise_id is None:
        await assignable(session, coach_id, exercise_slug, client_locale)
        return exercise_slug
    if custom_exercise_id is not None:
        own = await session.scalar(select(Exercise.id).where(
            Exercise.id == custom_exercise_id, Exercise.coach_id == coach_id))
        if own is None:
            raise UnknownExercise("no such exercise of yours")
        return CUSTOM_EXERCISE
    if exercise_slug not in known_exercises:
        raise UnknownExercise(f"no exercise {exercise_slug!r}")
    return exercise_slug


def checked_schedule(schedule: Mapping[str, Any], starts_on: date,
                     ends_on: date | None) -> dict[str, Any]:
    """The schedule, validated, for an assignment running from ``starts_on`` to ``ends_on``."""
    clean = validate_schedule(schedule)
    if ends_on is not None and ends_on < starts_on:
        raise InvalidSchedule("the assignment ends before it starts")
    return clean


async def assign_exercise(
    session: AsyncSession,
    coach_id: int,
    client_id: int,
    exercise_slug: str,
    schedule: Mapping[str, Any],
    starts_on: date,
    ends_on: date | None,
    now: datetime,
    known_exercises: Collection[str],
    custom_exercise_id: int | None = None,
) -> int:
    """Assign a library exercise (by its slug), or one of this coach's own exercises (by its
    id, run by the `custom_exercise` dialogue), to a client of this coach; returns the
    assignment id."""
    await linked_since(session, coach_id, client_id)
    client = await session.get(User, client_id)
    exercise_slug = await checked_exercise(session, coach_id, exercise_slug, known_exercises,
                                           custom_exercise_id,
                                           client.locale if client is not None else None)
    clean = checked_schedule(schedule, starts_on, ends_on)
    assignment = Assignment(
        coach_id=coach_id,
        client_id=client_id,
        exercise_slug=exercise_slug,
        exercise_id=custom_exercise_id,
        schedule=clean,
        starts_on=starts_on,
        ends_on=ends_on,
        active=True,
        created_at=now,
    )
    session.add(assignment)
    await session.flush()
    return assignment.id


