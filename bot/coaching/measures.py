"""Measures: a scale (1 to 10) or a number a coach asks a client for on a schedule, with a
target; and the scores the wheel of life and the values exercise ask for. Each value is the
client's own answer, kept encrypted (``MeasureValue``), in their export, gone on erase.

A measure is asked by an ordinary assignment of the ``measure_checkin`` dialogue that points
to it, so its schedule, pause, resume, change and cancel are the assignments' own (the
planner plans it, ``/assignments`` lists it under the measure's name). Every few weeks (the
coach chooses) a start-versus-now summary goes to the client and to the coach, after an
answer. The arithmetic is pure (:func:`summarise`); the rest reads and writes rows.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from sqlalchemy import exists, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.coaching.assignments import checked_schedule
from bot.coaching.checkins import user_zone
from bot.coaching.coach_errors import CoachError, NotYourClient
from bot.coaching.contracts import MEASURE_CHECKIN, MEASURE_COUNT, NEW_MEASURE
from bot.coaching.links import is_linked, linked_since
from bot.coaching.managing import client_country, schedule_from_answers
from bot.dialogue.expr import Value
from bot.engine import Outcome, Reply
from bot.i18n import N_, Translator, translator_for
from bot.store import Assignment, Measure, MeasureValue, User, UserView
from bot.store import Turn as StoreTurn
from bot.store.kinds import MeasureKind

MAX_NAME = 80
MAX_NUMBER = 1_000_000_000.0
SCALE = (1, 10)
DEFAULT_SUMMARY_WEEKS = 4

# The variables of the two dialogues: what the coach answers in ``new_measure`` (with the
# client handed in), and what the client answers in ``measure_checkin`` (the measure handed in).
NEW_CLIENT, NEW_CLIENT_NAME = "measure.client", "measure.client_name"
NEW_NAME, NEW_KIND = "measure.name", "measure.kind"
NEW_TARGET_SCALE, NEW_TARGET_NUMBER = "measure.target_scale", "measure.target_number"
NEW_SUMMARY_WEEKS = "measure.summary_weeks"
ASKED_ID, ASKED_NAME, ASKED_FIRST = "tracked.id", "tracked.name", "tracked.first"
#: The dialogue that asks for a measure of each kind.
ASKS: dict[MeasureKind, str] = {MeasureKind.SCALE: MEASURE_CHECKIN,
                                MeasureKind.NUMBER: MEASURE_COUNT}
ANSWER_SCALE, ANSWER_NUMBER = "tracked.scale", "tracked.number"
#: How ``new_measure``'s schedule answers map to ``exercise_schedule``'s, read by one function.
_SCHEDULE_ANSWERS = {"measure.how_often": "schedule.kind", "measure.days": "schedule.days",
                     "measure.every": "schedule.every", "measure.time": "schedule.time",
                     "measure.weeks": "schedule.weeks"}

#: Scores exercises ask for, kept as measure values under their variable's name so that a
#: later wheel can be compared with the first (the key is encrypted like the value).
EXERCISE_SCORES = frozenset({
    "wheel.health", "wheel.work", "wheel.money", "wheel.people", "wheel.love",
    "wheel.growth", "wheel.fun", "wheel.home", "exercise.value_fit"})


class InvalidMeasure(CoachError, ValueError):
    """A measure's name, kind, target or summary interval is not valid."""


# -- pure ------------------------------------------------------------------------------------


def checked_definition(name: str, kind: str, target: object,
                       summary_weeks: int) -> tuple[str, MeasureKind, float | None]:
    """(name, kind, target) cleaned, or InvalidMeasure."""
    name = " ".join(name.split())
    if not name or len(name) > MAX_NAME:
        raise InvalidMeasure(f"a measure's name has 1 to {MAX_NAME} characters")
    try:
        measure_kind = MeasureKind(kind)
    except ValueError:
        raise InvalidMeasure("kind must be 'scale' or 'number'") from None
    if isinstance(summary_weeks, bool) or not isinstance(summary_weeks, int) \
            or not 0 <= summary_weeks <= 52:
        raise InvalidMeasure("summary_weeks must be 0 to 52")
    if target is None:
        return name, measure_kind, None
    number = valid_value(measure_kind, target)
    if number is None:
        raise InvalidMeasure("the target is not a value of this measure")
    return name, measure_kind, number


def valid_value(kind: MeasureKind, value: object) -> float | None:
    """``value`` as a number of a measure of this kind, or None when it is not one."""
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value) or abs(value) > MAX_NUMBER:
        return None
    if kind is MeasureKind.SCALE and not SCALE[0] <= value <= SCALE[1]:
        return None
    return float(value)


@dataclass(frozen=True)
class Summary:
    """Where a measure started, where it is now, and against its target."""

    first: float
    first_on: date
    latest: float
    latest_on: date
    count: int
    target: float | None

    @property
    def change(self) -> float:
        return self.latest - self.first

    @property
    def reached(self) -> bool | None:
        """Whether the latest value reached the target, in the direction the first value
        was from it (a target below the start is reached going down); None without one."""
        if self.target is None:
            return None
        if self.first <= self.target:
            return self.latest >= self.target
        return self.latest <= self.target


def summarise(values: Sequence[tuple[date, float]], target: float | None) -> Summary | None:
    """Start versus now over values in time order (the first of the first day, the last of
    the last day); None without any value."""
    if not values:
        return None
    ordered = sorted(values, key=lambda item: item[0])  # stable: same-day order is kept
    (first_on, first), (latest_on, latest) = ordered[0], ordered[-1]
    return Summary(first, first_on, latest, latest_on, len(ordered), target)


def summary_due(measure_weeks: int, since: datetime, now: datetime) -> bool:
    """Whether the next start-versus-now summary is due: every ``measure_weeks`` weeks from
    ``since`` (the measure's creation or the last summary); 0: never."""
    return measure_weeks > 0 and now - since >= timedelta(weeks=measure_weeks)


def summary_text(name: str, summary: Summary, tr: Translator) -> str:
    """A summary as its reader sees it (the client or their coach), labels before values."""
    lines = [tr.gettext("Then and now: {measure}").format(measure=tr.words(name)),
             tr.gettext("Start ({date}): {value}").format(
                 date=tr.date(summary.first_on, "short"), value=tr.number(summary.first)),
             tr.gettext("Now ({date}): {value}").format(
                 date=tr.date(summary.latest_on, "short"), value=tr.number(summary.latest))]
    change = summary.change
    sign = "+" if change > 0 else ""
    lines.append(tr.gettext("Change: {change}").format(change=sign + tr.number(change)))
    if summary.target is not None:
        lines.append(tr.gettext("Target: {value}").format(value=tr.number(summary.target)))
        if summary.reached:
            lines.append(tr.gettext("The target is reached."))
    lines.append(tr.ngettext("{count} answer so far.", "{count} answers so far.",
                             summary.count).format(count=tr.number(summary.count)))
    return "\n".join(lines)


# -- rows --------------------------------------------------------------------------------------


async def define_measure(session: AsyncSession, coach_id: int, client_id: int, *,
                         name: str, kind: str, target: object,
                         schedule: Mapping[str, Any], starts_on: date, ends_on: date | None,
                         summary_weeks: int, now: datetime) -> Measure:
    """A measure of this coach's for their client, asked on ``schedule`` (in the client's
    zone) by an assignment of ``measure_checkin`` (or ``measure_count``); NotYourClient,
    InvalidMeasure or InvalidSchedule otherwise, with nothing stored."""
    await linked_since(session, coach_id, client_id)
    clean_name, measure_kind, clean_target = checked_definition(name, kind, target,
                                                                summary_weeks)
    clean = checked_schedule(schedule, starts_on, ends_on)
    measure = Measure(coach_id=coach_id, client_id=client_id, name=clean_name,
                      kind=measure_kind.value, target=clean_target,
                      summary_weeks=summary_weeks, created_at=now)
    session.add(measure)
    await session.flush()
    session.add(Assignment(coach_id=coach_id, client_id=client_id,
                           exercise_slug=ASKS[measure_kind], measure_id=measure.id,
                           schedule=clean, starts_on=starts_on, ends_on=ends_on, active=True,
                           created_at=now))
    await session.flush()
    return measure


async def measure_start(session: AsyncSession,
                        measure: Measure) -> tuple[str, dict[str, Value]]:
    """The dialogue that asks for this measure, and what it is started with (whether it is
    asked for the first time: the coach's request is told only then)."""
    answered = await session.scalar(
        select(exists().where(MeasureValue.measure_id == measure.id)))
    return ASKS[MeasureKind(measure.kind)], {ASKED_ID: measure.id, ASKED_NAME: measure.name,
                                             ASKED_FIRST: not answered}


async def record_value(session: AsyncSession, client_id: int, measure_id: int | None,
                       key: str, value: float, now: datetime) -> None:
    session.add(MeasureValue(client_id=client_id, measure_id=measure_id, key=key, value=value,
                             answered_at=now))
    await session.flush()


async def measures_of_client(session: AsyncSession, client_id: int,
                             coach_id: int | None = None) -> list[Measure]:
    """The client's measures (of one coach, if given) whose coach is still linked, oldest
    first."""
    query = select(Measure).where(Measure.client_id == client_id)
    if coach_id is not None:
        query = query.where(Measure.coach_id == coach_id)
    found = (await session.execute(query.order_by(Measure.id))).scalars().all()
    return [m for m in found if await is_linked(session, m.coach_id, client_id)]


async def values_of(session: AsyncSession, client_id: int, *, measure_id: int | None = None,
                    key: str | None = None) -> list[tuple[datetime, float]]:
    """A client's values of one measure, or of one exercise score (by key), oldest first.
    Keys are encrypted, so exercise scores are picked here rather than in SQL."""
    query = select(MeasureValue.key, MeasureValue.value, MeasureValue.answered_at).where(
        MeasureValue.client_id == client_id)
    query = query.where(MeasureValue.measure_id == measure_id) if measure_id is not None \
        else query.where(MeasureValue.measure_id.is_(None))
    rows = await session.execute(query.order_by(MeasureValue.answered_at, MeasureValue.id))
    return [(at, float(value)) for row_key, value, at in rows
            if (key is None or row_key == key) and isinstance(value, int | float)]


def on_days(values: Sequence[tuple[datetime, float]], zone: Any) -> list[tuple[date, float]]:
    """Values dated by the client's own calendar day."""
    return [(at.astimezone(zone).date(), value) for at, value in values]


async def measure_summary(session: AsyncSession, measure: Measure,
                          zone: Any) -> Summary | None:
    values = await values_of(session, measure.client_id, measure_id=measure.id)
    target = measure.target if isinstance(measure.target, int | float) else None
    return summarise(on_days(values, zone), target)


#: The wheel of life's areas, in the exercise's order, with their names.
WHEEL_AREAS: tuple[tuple[str, str], ...] = (
    ("wheel.health", N_("Health")), ("wheel.work", N_("Work")), ("wheel.money", N_("Money")),
    ("wheel.people", N_("Family and friends")), ("wheel.love", N_("Love")),
    ("wheel.growth", N_("Personal growth")), ("wheel.fun", N_("Fun")),
    ("wheel.home", N_("Home")))


def wheel_text(first: Mapping[str, float], latest: Mapping[str, float],
               tr: Translator) -> str | None:
    """The first wheel of life against the latest, area by area; None before a second."""
    rows = [(label, first[key], latest[key]) for key, label in WHEEL_AREAS
            if key in first and key in latest]
    if not rows or first == latest:
        return None
    return "\n".join([tr.gettext("Wheel of life, your first and your latest:")] + [
        f"• {tr.gettext(label)}: {tr.number(a)} → {tr.number(b)}" for label, a, b in rows])


async def wheel_summary(session: AsyncSession, client_id: int, tr: Translator) -> str | None:
    """The client's first and latest wheels of life compared (each the area's first and
    latest score), or None."""
    first: dict[str, float] = {}
    latest: dict[str, float] = {}
    for key, _ in WHEEL_AREAS:
        values = await values_of(session, client_id, key=key)
        if values:
            first[key], latest[key] = values[0][1], values[-1][1]
    return wheel_text(first, latest, tr)


async def measure_reports(session: AsyncSession, client: UserView, tr: Translator, *,
                          coach_id: int | None = None) -> list[dict[str, Any]]:
    """For each of the client's measures (of one coach, if given): a chart with its
    start-versus-now summary as caption, as outbox payloads in ``tr``'s language."""
    from bot.coaching.chart import measure_png, translated_labels

    zone = user_zone(client)
    payloads: list[dict[str, Any]] = []
    for measure in await measures_of_client(session, client.id, coach_id):
        values = on_days(await values_of(session, client.id, measure_id=measure.id), zone)
        target = measure.target if isinstance(measure.target, int | float) else None
        summary = summarise(values, target)
        caption = summary_text(measure.name, summary, tr) if summary is not None else \
            tr.gettext("{measure}: no answer yet.").format(measure=tr.words(measure.name))
        # A quarter of a second of CPU each: drawn on a worker thread, not the event loop.
        png = await asyncio.to_thread(
            measure_png, values, measure.name, target=target,
            scale=measure.kind == MeasureKind.SCALE, labels=translated_labels(tr),
            target_label=tr.gettext("Target"))
        payloads.append({"photo": png.hex(), "caption": caption})
    return payloads


# -- inside a turn: what the two dialogues lead to ----------------------------------------------


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


async def apply_measures(t: StoreTurn, outcome: Outcome, now: datetime) -> list[Reply]:
    """A client's answer to their coach's measure, or an exercise's score, is kept as a
    measure value (with a summary to both when one is due); a coach who finished
    ``new_measure`` gets the measure made. Returns what to tell the turn's user."""
    told: list[Reply] = []
    for answer in outcome.saved:
        if answer.variable in EXERCISE_SCORES:
            number = _number(answer.value)
            if number is not None:
                await record_value(t.session, t.user_id, None, answer.variable, number, now)
        elif answer.dialogue in ASKS.values() and answer.variable in (ANSWER_SCALE,
                                                                      ANSWER_NUMBER):
            told.extend(await _measure_answered(t, outcome.state.variables.get(ASKED_ID),
                                                answer.value, now))
    if NEW_MEASURE in outcome.finished:
        told.extend(await _new_measure(t, outcome.state.variables, now))
    return told


async def _measure_answered(t: StoreTurn, raw_id: object, value: object,
                            now: datetime) -> list[Reply]:
    measure = await t.session.get(Measure, raw_id) if isinstance(raw_id, int) else None
    if measure is None or measure.client_id != t.user_id:
        return []
    number = valid_value(MeasureKind(measure.kind), value)
    if number is None:
        return []
    await record_value(t.session, t.user_id, measure.id, measure.kind, number, now)
    if not summary_due(measure.summary_weeks, measure.last_summary_at or measure.created_at,
                       now):
        return []
    zone = user_zone(t.user)
    summary = await measure_summary(t.session, measure, zone)
    if summary is None or summary.count < 2:
        return []
    measure.last_summary_at = now
    coach = await t.session.get(User, measure.coach_id)
    if coach is not None and await is_linked(t.session, coach.id, t.user_id):
        ctr = translator_for(coach.locale)
        who = ctr.person(t.user.first_name, t.user_id)
        t.enqueue(coach.id, Reply(ctr.gettext("{client}:").format(client=who) + "\n"
                                  + summary_text(measure.name, summary, ctr)).to_payload(),
                  subject=t.user_id)
    return [Reply(summary_text(measure.name, summary, translator_for(t.user.locale)))]


async def _new_measure(t: StoreTurn, answers: Mapping[str, Value],
                       now: datetime) -> list[Reply]:
    tr = translator_for(t.user.locale)
    raw_client = answers.get(NEW_CLIENT)
    client = await t.session.get(User, raw_client) if isinstance(raw_client, int) else None
    target = answers.get(NEW_TARGET_SCALE) if answers.get(NEW_KIND) == MeasureKind.SCALE \
        else answers.get(NEW_TARGET_NUMBER)
    weeks = answers.get(NEW_SUMMARY_WEEKS)
    try:
        if client is None or not t.user.is_coach:
            raise NotYourClient("no such client")
        schedule_answers = {new: answers[old] for old, new in _SCHEDULE_ANSWERS.items()
                            if old in answers}
        # From the client's today, in their zone: a measure set late in the coach's evening
        # for a client already in tomorrow starts on the client's day.
        schedule_answers["schedule.start"] = now.astimezone(user_zone(client)).date().isoformat()
        schedule, starts_on, ends_on = schedule_from_answers(
            schedule_answers, client_country(client), t.user.locale)
        await define_measure(
            t.session, t.user_id, client.id, name=str(answers.get(NEW_NAME) or ""),
            kind=str(answers.get(NEW_KIND) or ""), target=target, schedule=schedule,
            starts_on=starts_on, ends_on=ends_on,
            summary_weeks=int(weeks) if isinstance(weeks, int | float) else
            DEFAULT_SUMMARY_WEEKS, now=now)
    except NotYourClient:
        return [Reply(tr.gettext("That client no longer shares their progress with "
                                 "you: the measure was not kept."))]
    except (InvalidMeasure, ValueError):
        return [Reply(tr.gettext("I could not read those days, so the measure was not kept. "
                                 "Send /measure to try again, and name the days, for example: "
                                 "Monday, Thursday."))]
    return [Reply(tr.gettext("Done: I will ask {client} on that schedule. You see the answers "
                             "in /progress, and /assignments pauses or changes it.").format(
                                 client=tr.person(client.first_name, client.id)))]
