"""Programmes given to a client: each step of a programme (``dialogues/programmes/``) is an
assignment pointing to the run, planned from the run's start in the client's zone like any
assignment (so /assignments pauses or cancels a single step too). A step the client reports
done lets the next one start the next day if it was due later; the whole run is paused,
resumed or cancelled in one step; both sides see where the client is.

:func:`assign_programme` gives one client a programme: the groups side calls it for each
member of a group.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.coaching.assignments import checked_exercise, checked_schedule
from bot.coaching.coach_errors import CoachError, NotYourClient
from bot.coaching.exercise_checkins import cancel_exercise_checkins
from bot.coaching.links import is_linked, linked_since
from bot.coaching.managing import AssignmentAction
from bot.dialogue.programmes import Programme
from bot.store import Assignment, ProgrammeRun, User
from bot.store.kinds import ProgrammeStatus

DONE_STATUSES = ("done", "partly")  # exercise.status answers that complete a step


class UnknownProgramme(CoachError, ValueError):
    """No such programme in the library."""


@dataclass(frozen=True)
class Step:
    exercise: str
    starts_on: date
    done: bool


@dataclass(frozen=True)
class RunView:
    """A programme given to a client, and where they are in it."""

    id: int
    coach_id: int
    client_id: int
    programme: str
    status: str
    steps: tuple[Step, ...]

    @property
    def done(self) -> int:
        return sum(step.done for step in self.steps)

    def current(self, today: date) -> int | None:
        """The index of the step the client is at: the first not done that has started,
        else None (the next has not started yet, or all are done)."""
        for index, step in enumerate(self.steps):
            if not step.done:
                return index if step.starts_on <= today else None
        return None

    def next_start(self, today: date) -> date | None:
        later = [s.starts_on for s in self.steps if not s.done and s.starts_on > today]
        return min(later) if later else None


async def assign_programme(
    session: AsyncSession,
    coach_id: int,
    client_id: int,
    programme: Programme,
    starts_on: date,
    hour: int,
    minute: int,
    now: datetime,
    known_exercises: Collection[str],
    group_assignment_id: int | None = None,
) -> int:
    """Give one client of this coach a programme from ``starts_on`` (the client's local
    date), each step at ``hour:minute`` of the client's day; returns the run's id.
    NotYourClient without an active link, UnknownExercise or InvalidSchedule otherwise;
    nothing is stored then. With ``group_assignment_id`` the run is a member's copy of a
    group's programme: the membership (checked by the groups side) stands for the link,
    and the steps stop when the member leaves, like the group's exercises."""
    if group_assignment_id is None:
        await linked_since(session, coach_id, client_id)
    steps = []
    for step in programme.steps:
        slug = await checked_exercise(session, coach_id, step.exercise, known_exercises, None)
        first = starts_on + timedelta(days=step.day)
        last = first + timedelta(days=step.days - 1)
        schedule = checked_schedule({"kind": "daily", "days": step.days, "hour": hour,
                                     "minute": minute}, first, last)
        steps.append((slug, schedule, first, last))
    run = ProgrammeRun(coach_id=coach_id, client_id=client_id, programme=programme.id,
                       starts_on=starts_on, status=ProgrammeStatus.ACTIVE, created_at=now)
    session.add(run)
    await session.flush()
    for slug, schedule, first, last in steps:
        session.add(Assignment(coach_id=coach_id, client_id=client_id, exercise_slug=slug,
                               schedule=schedule, starts_on=first, ends_on=last, active=True,
                               created_at=now, programme_run_id=run.id,
                               group_assignment_id=group_assignment_id))
    await session.flush()
    return run.id


async def _steps_of(session: AsyncSession, run_id: int) -> list[Assignment]:
    rows = await session.execute(select(Assignment).where(
        Assignment.programme_run_id == run_id).order_by(Assignment.starts_on, Assignment.id))
    return list(rows.scalars())


async def act_on_programme(session: AsyncSession, coach_id: int, run_id: int,
                           action: AssignmentAction) -> ProgrammeRun:
    """Pause, resume or cancel the whole of one of this coach's runs (its coach, a client
    still linked); NotYourClient otherwise."""
    run = await session.get(ProgrammeRun, run_id)
    if run is None or run.coach_id != coach_id or run.status == ProgrammeStatus.CANCELLED \
            or not await is_linked(session, coach_id, run.client_id):
        raise NotYourClient("no such programme of yours")
    steps = [a for a in await _steps_of(session, run.id) if a.active]
    if action is AssignmentAction.RESUME:
        for step in steps:
            step.paused = False
        run.status = ProgrammeStatus.ACTIVE
    else:
        await cancel_exercise_checkins(session, run.client_id, [a.id for a in steps])
        for step in steps:
            if action is AssignmentAction.PAUSE:
                step.paused = True
            else:
                step.active = False
        run.status = ProgrammeStatus.PAUSED if action is AssignmentAction.PAUSE \
            else ProgrammeStatus.CANCELLED
    await session.flush()
    return run


async def step_done(session: AsyncSession, client_id: int, dialogue_id: str, status: object,
                    today: date, now: datetime) -> bool:
    """The client reported an exercise done (or partly): if it is the open step of one of
    their running programmes, the step is over (nothing more of it is sent) and the next
    step starts tomorrow if it was due later. Returns whether a step was completed."""
    if status not in DONE_STATUSES:
        return False
    found = (await session.execute(
        select(Assignment).join(ProgrammeRun, ProgrammeRun.id == Assignment.programme_run_id)
        .where(Assignment.client_id == client_id, Assignment.exercise_slug == dialogue_id,
               Assignment.active.is_(True), Assignment.paused.is_(False),
               Assignment.done_at.is_(None), Assignment.starts_on <= today,
               ProgrammeRun.status == ProgrammeStatus.ACTIVE)
        .order_by(Assignment.starts_on, Assignment.id).limit(1))).scalar_one_or_none()
    if found is None or found.programme_run_id is None:
        return False
    found.done_at, found.ends_on = now, today
    await cancel_exercise_checkins(session, client_id, [found.id], after=now)
    later = [a for a in await _steps_of(session, found.programme_run_id)
             if a.active and a.done_at is None and a.starts_on > found.starts_on]
    tomorrow = today + timedelta(days=1)
    if later and later[0].starts_on > tomorrow:
        step = later[0]
        await cancel_exercise_checkins(session, client_id, [step.id])
        length = (step.ends_on - step.starts_on) if step.ends_on is not None else timedelta()
        step.starts_on, step.ends_on = tomorrow, tomorrow + length
    await session.flush()
    return True


async def runs_of(session: AsyncSession, client_id: int, *, coach_id: int | None = None
                  ) -> list[RunView]:
    """The client's running or paused programmes (of one coach, if given) from coaches
    still linked, oldest first. The client also sees the runs of their groups' programmes;
    a coach sees those only with the link (the member chose to share their progress)."""
    query = select(ProgrammeRun).where(ProgrammeRun.client_id == client_id,
                                       ProgrammeRun.status != ProgrammeStatus.CANCELLED)
    if coach_id is not None:
        query = query.where(ProgrammeRun.coach_id == coach_id)
    views = []
    for run in (await session.execute(query.order_by(ProgrammeRun.id))).scalars():
        rows = await _steps_of(session, run.id)
        of_group = any(a.group_assignment_id is not None for a in rows)
        if (coach_id is not None or not of_group) \
                and not await is_linked(session, run.coach_id, client_id):
            continue
        steps = tuple(Step(a.exercise_slug or "", a.starts_on, a.done_at is not None)
                      for a in rows)
        views.append(RunView(run.id, run.coach_id, run.client_id, run.programme, run.status,
                             steps))
    return views


async def client_of(session: AsyncSession, coach_id: int, client_id: int) -> User:
    """The coach's linked client, or NotYourClient."""
    client = await session.get(User, client_id)
    if client is None or not await is_linked(session, coach_id, client_id):
        raise NotYourClient("no active link to this client")
    return client
