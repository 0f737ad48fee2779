"""What a coach does with an assignment once made: list a client's, pause, resume, change the
schedule, cancel. Every action checks that the assignment is this coach's and the client is
still linked to them, so a forged id gets nowhere; planned exercises of a paused or cancelled
assignment are cancelled in the same transaction, and the planner plans a resumed or changed
one again on its next pass."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from enum import StrEnum
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from bot.coaching.assignments import assign_exercise, validate_schedule
from bot.coaching.coach_dialogues import row_id, title_in
from bot.coaching.coach_errors import InvalidSchedule, NotYourClient, UnknownExercise
from bot.coaching.exercise_checkins import cancel_exercise_checkins
from bot.coaching.links import active_link, is_linked
from bot.dialogue.expr import Value
from bot.engine import Outcome, Reply
from bot.engine.crisis import default_country_for_locale
from bot.engine.places import country_for_timezone
from bot.i18n import Translator, parse_weekdays, translator_for, week_order, working_days
from bot.store import Assignment, CoachDialogue, Exercise, Measure, User, UserView
from bot.store import Turn as StoreTurn

__all__ = [
    "EXERCISE_SCHEDULE",
    "AssignmentAction",
    "AssignmentView",
    "FromCoach",
    "InvalidSchedule",
    "NotYourClient",
    "act_on_assignment",
    "apply_schedule",
    "assigned_to",
    "assignments_of",
    "change_schedule",
    "client_country",
    "describe_schedule",
    "owned",
    "schedule_from_answers",
]

EXERCISE_SCHEDULE = "exercise_schedule"  # the dialogue in which a coach sets a schedule
CUSTOM_KEY = "x"  # a coach's own exercise as /assign names it: x<id>
SCHEDULE_ASSIGNMENT = "schedule.assignment"  # the assignment to change, or for a new one:
SCHEDULE_CLIENT, SCHEDULE_EXERCISE = "schedule.client", "schedule.exercise"


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
    active: bool = True


async def assignments_of(session: AsyncSession, coach_id: int,
                         client_id: int) -> list[AssignmentView]:
    """The active assignments this coach gave this client, oldest first."""
    if not await is_linked(session, coach_id, client_id):
        raise NotYourClient("no active link to this client")
    rows = await session.execute(
        select(Assignment, Exercise.title, Measure.name)
        .outerjoin(Exercise, Exercise.id == Assignment.exercise_id)
        .outerjoin(Measure, Measure.id == Assignment.measure_id)
        .where(Assignment.coach_id == coach_id, Assignment.client_id == client_id,
               Assignment.active.is_(True))
        .order_by(Assignment.created_at, Assignment.id))
    found = [(a, title or measure) for a, title, measure in rows]
    titles = await _coach_dialogue_titles(session, [a.exercise_slug for a, _ in found])
    return [AssignmentView(a.id, a.client_id, a.exercise_slug,
                           title or titles.get(a.exercise_slug or ""), a.schedule,
                           a.starts_on, a.ends_on, a.paused) for a, title in found]


async def _coach_dialogue_titles(session: AsyncSession, slugs: list[str | None],
                                 locale: str | None = None) -> dict[str, str]:
    """The titles of the coaches' own dialogues among these slugs (their run ids), in
    ``locale`` where a dialogue is translated into it."""
    titles: dict[str, str] = {}
    for slug in slugs:
        number = row_id(slug or "")
        row = await session.get(CoachDialogue, number) if number is not None else None
        if slug and row is not None:
            titles[slug] = title_in(row, locale)
    return titles


async def owned(session: AsyncSession, coach_id: int, assignment_id: int) -> Assignment:
    """This coach's active assignment to a client still linked to them; else NotYourClient."""
    assignment = await session.get(Assignment, assignment_id)
    if assignment is None or assignment.coach_id != coach_id or not assignment.active \
            or not await is_linked(session, coach_id, assignment.client_id):
        raise NotYourClient("no such assignment of yours")
    return assignment


@dataclass(frozen=True)
class FromCoach:
    """An exercise a coach assigned, as the client sees it in /exercises."""

    coach_name: str | None
    exercise_slug: str | None
    custom_title: str | None
    paused: bool


async def assigned_to(session: AsyncSession, client_id: int) -> list[FromCoach]:
    """The client's active assignments from coaches they still share with, oldest first."""
    coach = aliased(User)
    rows = await session.execute(
        select(coach.first_name, Assignment.exercise_slug, Exercise.title, Measure.name,
               Assignment.paused)
        .join(coach, coach.id == Assignment.coach_id)
        .outerjoin(Exercise, Exercise.id == Assignment.exercise_id)
        .outerjoin(Measure, Measure.id == Assignment.measure_id)
        .where(Assignment.client_id == client_id, Assignment.active.is_(True),
               active_link(Assignment.coach_id, Assignment.client_id))
        .order_by(Assignment.created_at, Assignment.id))
    found = list(rows)
    client = await session.get(User, client_id)
    titles = await _coach_dialogue_titles(session, [slug for _, slug, _, _, _ in found],
                                          client.locale if client is not None else None)
    return [FromCoach(name, slug, title or measure or titles.get(slug or ""), paused)
            for name, slug, title, measure, paused in found]


async def act_on_assignment(session: AsyncSession, coach_id: int, assignment_id: int,
                            action: AssignmentAction) -> AssignmentView:
    """Pause, resume or cancel one of this coach's assignments; NotYourClient otherwise."""
    assignment = await owned(session, coach_id, assignment_id)
    if action is AssignmentAction.RESUME:
        assignment.paused = False
    else:
        await cancel_exercise_checkins(session, assignment.client_id, [assignment.id])
        if action is AssignmentAction.PAUSE:
            assignment.paused = True
        else:
            assignment.active = False
    await session.flush()
    return AssignmentView(assignment.id, assignment.client_id, assignment.exercise_slug,
                          None, assignment.schedule, assignment.starts_on, assignment.ends_on,
                          assignment.paused, assignment.active)


async def change_schedule(session: AsyncSession, coach_id: int, assignment_id: int,
                          schedule: Mapping[str, Any], starts_on: date, ends_on: date | None,
                          now: datetime) -> None:
    """A new schedule for one of this coach's assignments, from ``starts_on``; what was
    planned by the old one is cancelled."""
    assignment = await owned(session, coach_id, assignment_id)
    clean = validate_schedule(schedule)
    if ends_on is not None and ends_on < starts_on:
        raise InvalidSchedule("the assignment ends before it starts")
    await cancel_exercise_checkins(session, assignment.client_id, [assignment.id])
    assignment.schedule, assignment.starts_on, assignment.ends_on = clean, starts_on, ends_on
    await session.flush()


def client_country(client: User | UserView) -> str | None:
    """Where the client lives, as far as the bot knows: from their time zone, else their
    language's usual country. Decides their week's order and working days."""
    return country_for_timezone(client.time_zone) or default_country_for_locale(client.locale)


def schedule_from_answers(answers: Mapping[str, Value], country: str | None,
                          locale: str) -> tuple[dict[str, Any], date, date | None]:
    """The schedule, first and last day that the ``exercise_schedule`` answers describe;
    InvalidSchedule when the named days are not days (nothing else can be wrong: the
    dialogue checked each answer)."""
    kind, clock = answers.get("schedule.kind"), answers.get("schedule.time")
    start, weeks = answers.get("schedule.start"), answers.get("schedule.weeks")
    if not isinstance(clock, str) or not isinstance(start, str):
        raise InvalidSchedule("the schedule's answers are incomplete")
    hour, minute = (int(part) for part in clock.split(":", 1))
    schedule: dict[str, Any] = {"hour": hour, "minute": minute}
    if kind == "daily":
        schedule.update(kind="weekdays", weekdays=list(range(7)))
    elif kind == "working":
        schedule.update(kind="weekdays", weekdays=sorted(working_days(country)))
    elif kind == "every":
        every = answers.get("schedule.every")
        schedule.update(kind="every", every=int(every) if isinstance(every, int | float) else 0)
    else:
        named = answers.get("schedule.days")
        days = parse_weekdays(named, locale) if isinstance(named, str) else None
        if days is None:
            raise InvalidSchedule("those are not names of days")
        schedule.update(kind="weekdays", weekdays=days)
    starts_on = date.fromisoformat(start)
    count = int(weeks) if isinstance(weeks, int | float) else 0
    ends_on = starts_on + timedelta(weeks=count, days=-1) if count > 0 else None
    return validate_schedule(schedule), starts_on, ends_on


def describe_schedule(schedule: Mapping[str, Any], starts_on: date, ends_on: date | None,
                      country: str | None, tr: Translator) -> str:
    """How a schedule reads to a coach: its days (in the client's week order), time and
    dates, in ``tr``'s language."""
    clock = tr.time(datetime(2000, 1, 1, schedule.get("hour", 0), schedule.get("minute", 0)))
    kind = schedule.get("kind")
    if kind == "every":
        every = int(schedule.get("every", 1))
        # Every 1 day reads as "every day"; the singular msgid serves the languages whose
        # "one" form also covers 21, 31 (the count is always there for them).
        days = tr.gettext("Every day") if every == 1 else tr.ngettext(
            "Every {count} days", "Every {count} days", every).format(count=tr.number(every))
    elif kind == "daily" or (kind == "weekdays" and len(schedule.get("weekdays", ())) == 7):
        days = tr.gettext("Every day")
    else:
        chosen = set(schedule.get("weekdays", ()))
        days = ", ".join(tr.weekday(d) for d in week_order(country) if d in chosen)
    if kind == "daily":
        ends_on = starts_on + timedelta(days=int(schedule.get("days", 1)) - 1)
    when = tr.gettext("{days} at {time}").format(days=days, time=clock)
    if ends_on is None:
        return tr.gettext("{schedule}, from {start} until cancelled").format(
            schedule=when, start=tr.date(starts_on, "short"))
    return tr.gettext("{schedule}, from {start} to {end}").format(
        schedule=when, start=tr.date(starts_on, "short"), end=tr.date(ends_on, "short"))


async def apply_schedule(t: StoreTurn, outcome: Outcome, now: datetime,
                         known_exercises: Collection[str]) -> list[Reply]:
    """A coach who finished ``exercise_schedule`` gets the assignment's schedule changed, or
    the new assignment made (an exercise key as ``/assign`` names it: a library slug, or
    ``x<id>`` for the coach's own); returns what to tell them: the schedule, or why not."""
    if EXERCISE_SCHEDULE not in outcome.finished:
        return []
    answers = outcome.state.variables
    tr = translator_for(t.user.locale)
    assignment_id, client_id = answers.get(SCHEDULE_ASSIGNMENT), answers.get(SCHEDULE_CLIENT)
    assignment = await t.session.get(Assignment, assignment_id) \
        if isinstance(assignment_id, int) else None
    if assignment is not None:
        client_id = assignment.client_id
    client = await t.session.get(User, client_id) if isinstance(client_id, int) else None
    try:
        if client is None:
            raise NotYourClient("no such client")
        country = client_country(client)
        schedule, starts_on, ends_on = schedule_from_answers(answers, country, t.user.locale)
        if assignment is not None:
            await change_schedule(t.session, t.user_id, assignment.id, schedule, starts_on,
                                  ends_on, now)
        else:
            await _assign(t, client.id, answers.get(SCHEDULE_EXERCISE), schedule, starts_on,
                          ends_on, now, known_exercises)
    except (NotYourClient, UnknownExercise):
        text = tr.gettext("That assignment is no longer yours to change: nothing was changed.")
    except InvalidSchedule:
        text = tr.gettext("I could not read those days, so nothing was changed. Press "
                          "“Change” again and name the days, for example: Monday, Thursday.")
    else:
        # TRANSLATORS: {schedule_and_dates} ends with a date ("…, from 2/3/27 to 1/4/27").
        text = tr.gettext("Done. The new schedule: {schedule_and_dates}.").format(
            schedule_and_dates=describe_schedule(schedule, starts_on, ends_on, country, tr))
    return [Reply(text)]


async def _assign(t: StoreTurn, client_id: int, key: object, schedule: dict[str, Any],
                  starts_on: date, ends_on: date | None, now: datetime,
                  known_exercises: Collection[str]) -> None:
    if not isinstance(key, str):
        raise UnknownExercise("no exercise")
    own = key[1:] if key.startswith(CUSTOM_KEY) else None
    custom = int(own) if own is not None and own.isdigit() else None
    if own is not None and custom is None:
        raise UnknownExercise("no exercise")
    await assign_exercise(t.session, t.user_id, client_id, key, schedule, starts_on, ends_on,
                          now, known_exercises, custom_exercise_id=custom)
