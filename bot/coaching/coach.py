"""The coach's side: invites and consent, links, exercise assignment, a client's progress,
and batched notifications.

Every function takes the caller's session and an explicit ``now`` and never commits: the
caller's turn does. A coach reaches a client only through an active link (consent given,
not unlinked), checked by every query; and sees only answers given since that consent.
"""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from enum import Enum
from typing import Any

from sqlalchemy import ColumnElement, String, and_, cast, delete, exists, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bot.coaching.chart import ChartLabels, weekly_points, weekly_trend_png
from bot.coaching.checkins import CHECKIN_MARKER, user_zone
from bot.coaching.progress import current_streak
from bot.dialogue.model import DialogueSet
from bot.i18n import N_, Translator
from bot.store import (
    Answer,
    Assignment,
    CoachEvent,
    CoachLink,
    Exercise,
    Goal,
    Invite,
    PlannedCheckin,
    User,
)
from bot.store.models import COACH_EVENT_KINDS

CUSTOM_EXERCISE = "custom_exercise"  # the dialogue that runs a coach's own exercise

INVITE_TTL = timedelta(days=7)
INVITE_BYTES = 24  # 192 bits; token_urlsafe gives 32 characters of [A-Za-z0-9_-]
STATUS_VARIABLE = "exercise.status"
EXERCISE_STATUSES = ("done", "partly", "skipped")
REFLECTIONS_SHOWN = 5
MAX_DAILY_DAYS = 90
MAX_EVERY_DAYS = 30
CRISIS = "crisis"


# -- errors -----------------------------------------------------------------------------


class CoachError(Exception):
    """A coaching rule refused the action; nothing was changed."""


class NotACoach(CoachError):
    """Only coaches may do this."""


class NotYourClient(CoachError):
    """No active link between this coach and this client (or no such client: same error)."""


class InviteProblem(Enum):
    UNKNOWN = "unknown"  # never existed, or its coach is no coach any more
    EXPIRED = "expired"
    USED = "used"
    OWN = "own"  # a coach opening their own invite
    ALREADY_LINKED = "already_linked"


class InviteError(CoachError):
    def __init__(self, problem: InviteProblem) -> None:
        super().__init__(f"invite refused: {problem.value}")
        self.problem = problem


class InvalidSchedule(CoachError, ValueError):
    """The schedule or the dates of an assignment are not valid."""


class UnknownExercise(CoachError, ValueError):
    """The exercise is not one of the known exercise dialogues."""


# -- results ------------------------------------------------------------------------------


@dataclass(frozen=True)
class InviteCheck:
    """Whether an invite can be accepted; the coach is named only when it can."""

    problem: InviteProblem | None
    coach_id: int | None = None
    coach_name: str | None = None

    @property
    def valid(self) -> bool:
        return self.problem is None


@dataclass(frozen=True)
class LinkSummary:
    """The other person of an active link: a client (for a coach) or a coach (for a client)."""

    user_id: int
    first_name: str | None
    linked_at: datetime


ClientSummary = LinkSummary
CoachSummary = LinkSummary


@dataclass(frozen=True)
class GoalProgress:
    title: str
    status: str
    baseline: int | None
    current: int | None
    target: int | None


@dataclass(frozen=True)
class ExerciseStats:
    done: int = 0
    partly: int = 0
    skipped: int = 0

    @property
    def total(self) -> int:
        return self.done + self.partly + self.skipped

    @property
    def rate(self) -> float | None:
        """Share of the reported exercises that were done in full; None before any."""
        return self.done / self.total if self.total else None


@dataclass(frozen=True)
class Reflection:
    dialogue_id: str
    variable: str
    text: str
    answered_at: datetime


@dataclass(frozen=True)
class ClientProgress:
    client_id: int
    first_name: str | None
    linked_at: datetime
    today: date
    goals: list[GoalProgress]
    streak_current: int
    streak_best: int
    exercises: ExerciseStats
    reflections: list[Reflection]


@dataclass(frozen=True)
class Digest:
    """One message for one coach: either a prompt crisis notice or the batched news.

    ``names_by_kind``: per event kind, the names (or ids) of the clients it happened to,
    never anything a client wrote (they agreed that this coach follows their progress).
    A crisis notice names one client, ``subject``, so that it goes with that client's data
    (their export, their erasure).
    """

    coach_id: int
    locale: str
    crisis: bool
    names_by_kind: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    crisis_clients: tuple[str, ...] = ()
    subject: int | None = None


# -- coaches ------------------------------------------------------------------------------


async def make_coach(session: AsyncSession, user_id: int) -> None:
    """Admin action: let a user coach (creating the user row if it is new)."""
    user = await session.get(User, user_id)
    if user is None:
        session.add(User(id=user_id, is_coach=True))
    else:
        user.is_coach = True
    await session.flush()


async def is_coach(session: AsyncSession, user_id: int) -> bool:
    found = await session.scalar(select(User.is_coach).where(User.id == user_id))
    return bool(found)


def _active_link(coach_id: Any, client_id: Any) -> ColumnElement[bool]:
    return and_(
        CoachLink.coach_id == coach_id,
        CoachLink.client_id == client_id,
        CoachLink.consent_at.is_not(None),
        CoachLink.unlinked_at.is_(None),
    )


async def is_linked(session: AsyncSession, coach_id: int, client_id: int) -> bool:
    """Whether this coach has an active link (consent given, not ended) to this client."""
    return bool(await session.scalar(select(exists().where(_active_link(coach_id, client_id)))))


async def _linked_since(session: AsyncSession, coach_id: int, client_id: int) -> datetime:
    """When the client consented to this coach's active link, or NotYourClient."""
    since = await session.scalar(
        select(CoachLink.consent_at).where(_active_link(coach_id, client_id))
    )
    if since is None:
        raise NotYourClient("no active link to this client")
    return since


# -- invites ------------------------------------------------------------------------------


async def create_invite(
    session: AsyncSession, coach_id: int, now: datetime, ttl: timedelta = INVITE_TTL
) -> str:
    """A new single-use invite code, fit for a Telegram ``/start`` deep link."""
    if not await is_coach(session, coach_id):
        raise NotACoach("only coaches can invite clients")
    code = secrets.token_urlsafe(INVITE_BYTES)
    session.add(Invite(code=code, coach_id=coach_id, created_at=now, expires_at=now + ttl))
    await session.flush()
    return code


async def invite_status(
    session: AsyncSession, code: str, client_id: int, now: datetime
) -> InviteCheck:
    """Whether ``client_id`` may accept the invite, without using it up."""
    row = (
        await session.execute(
            select(Invite, User.first_name)
            .join(User, User.id == Invite.coach_id)
            .where(Invite.code == code, User.is_coach.is_(True))
        )
    ).first()
    if row is None:
        return InviteCheck(InviteProblem.UNKNOWN)
    invite, name = row
    problem = await _invite_problem(session, invite, client_id, now)
    if problem is not None:
        return InviteCheck(problem)
    return InviteCheck(None, coach_id=invite.coach_id, coach_name=name)


async def _invite_problem(
    session: AsyncSession, invite: Invite, client_id: int, now: datetime
) -> InviteProblem | None:
    if invite.used_by is not None:
        return InviteProblem.USED
    if invite.expires_at <= now:
        return InviteProblem.EXPIRED
    if invite.coach_id == client_id:
        return InviteProblem.OWN
    linked = await session.scalar(select(exists().where(_active_link(invite.coach_id, client_id))))
    return InviteProblem.ALREADY_LINKED if linked else None


async def accept_invite(session: AsyncSession, code: str, client_id: int, now: datetime) -> int:
    """Use the invite up and link the client to its coach, consent given now.

    Returns the coach's id. Race-safe: of two concurrent accepts exactly one wins.
    Raises InviteError (and changes nothing) for an unknown, expired, used or own invite,
    or when the client already has this coach.
    """
    check = await invite_status(session, code, client_id, now)
    if check.problem is not None or check.coach_id is None:
        raise InviteError(check.problem or InviteProblem.UNKNOWN)
    claimed = await session.execute(
        update(Invite)
        .where(
            Invite.code == code,
            Invite.used_by.is_(None),
            Invite.expires_at > now,
            Invite.coach_id != client_id,
        )
        .values(used_by=client_id, used_at=now)
        .execution_options(synchronize_session=False)
    )
    if _rowcount(claimed) != 1:  # someone else used it since we looked
        raise InviteError(InviteProblem.USED)
    session.add(
        CoachLink(coach_id=check.coach_id, client_id=client_id, created_at=now, consent_at=now)
    )
    await session.flush()
    return check.coach_id


def _rowcount(result: Any) -> int:
    count: int = result.rowcount
    return count


# -- links --------------------------------------------------------------------------------


async def unlink(
    session: AsyncSession, client_id: int, coach_id: int | None, now: datetime
) -> list[int]:
    """End the client's link to one coach (or to every coach when ``coach_id`` is None).

    The coach loses access at once; their assignments for the client stop, planned
    exercise check-ins are cancelled and pending notifications about the client dropped.
    Returns the ids of the coaches unlinked.
    """
    links = select(CoachLink).where(
        CoachLink.client_id == client_id, CoachLink.unlinked_at.is_(None)
    )
    if coach_id is not None:
        links = links.where(CoachLink.coach_id == coach_id)
    coaches: list[int] = []
    for link in (await session.execute(links)).scalars():
        link.unlinked_at = now
        coaches.append(link.coach_id)
    if coaches:
        await _stop_assignments(session, client_id, coaches)
        await session.execute(
            delete(CoachEvent).where(
                CoachEvent.client_id == client_id,
                CoachEvent.coach_id.in_(coaches),
                CoachEvent.notified_at.is_(None),
            )
        )
    await session.flush()
    return coaches


async def _stop_assignments(session: AsyncSession, client_id: int, coaches: list[int]) -> None:
    of_these = and_(Assignment.client_id == client_id, Assignment.coach_id.in_(coaches))
    ids = select(cast(Assignment.id, String)).where(of_these, Assignment.active.is_(True))
    await session.execute(
        update(PlannedCheckin)
        .where(
            PlannedCheckin.user_id == client_id,
            PlannedCheckin.kind == "exercise",
            PlannedCheckin.status.in_(("planned", "claimed")),
            PlannedCheckin.ref.in_(ids),
        )
        .values(status="cancelled")
        .execution_options(synchronize_session=False)
    )
    await session.execute(
        update(Assignment)
        .where(of_these)
        .values(active=False)
        .execution_options(synchronize_session=False)
    )


async def _linked_people(
    session: AsyncSession, me: ColumnElement[bool], other: Any
) -> list[LinkSummary]:
    rows = await session.execute(
        select(User.id, User.first_name, CoachLink.consent_at)
        .join(CoachLink, other == User.id)
        .where(me, CoachLink.consent_at.is_not(None), CoachLink.unlinked_at.is_(None))
        .order_by(func.lower(User.first_name).asc().nulls_last(), User.id)
    )
    return [LinkSummary(uid, name, at) for uid, name, at in rows if at is not None]


async def clients_of(session: AsyncSession, coach_id: int) -> list[ClientSummary]:
    """The coach's clients with an active link, ordered by name."""
    return await _linked_people(session, CoachLink.coach_id == coach_id, CoachLink.client_id)


async def coaches_of(session: AsyncSession, client_id: int) -> list[CoachSummary]:
    """The client's coaches with an active link, ordered by name."""
    return await _linked_people(session, CoachLink.client_id == client_id, CoachLink.coach_id)


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
SCHEDULE_KINDS = {"daily": "days", "weekdays": "weekdays", "every": "every"}


def validate_schedule(schedule: Mapping[str, Any]) -> dict[str, Any]:
    """A clean copy of a valid schedule, or InvalidSchedule. Kinds: ``daily`` (for ``days``
    days), ``weekdays`` (a list, Monday = 0) and ``every`` (``every`` N days from the start);
    each at ``hour`` and an optional ``minute`` of the client's local time."""
    kind = schedule.get("kind")
    if kind not in SCHEDULE_KINDS:
        raise InvalidSchedule("kind must be 'daily', 'weekdays' or 'every'")
    extra = SCHEDULE_KINDS[kind]
    if not {"kind", "hour", extra} <= set(schedule) <= {"kind", "hour", "minute", extra}:
        raise InvalidSchedule(f"a {kind} schedule has: kind, hour, {extra} and maybe minute")
    clean: dict[str, Any] = {"kind": kind, "hour": _whole(schedule["hour"], 0, 23, "hour")}
    if "minute" in schedule:
        clean["minute"] = _whole(schedule["minute"], 0, 59, "minute")
    value = schedule[extra]
    if kind == "weekdays":
        if not isinstance(value, list | tuple) or not value or not all(
            isinstance(d, int) and not isinstance(d, bool) and 0 <= d <= 6 for d in value
        ):
            raise InvalidSchedule("weekdays must be a non-empty list of days 0 (Monday) to 6")
        clean[extra] = sorted(set(value))
    else:
        clean[extra] = _whole(value, 1, MAX_DAILY_DAYS if kind == "daily" else MAX_EVERY_DAYS,
                              extra)
    return clean


async def own_exercises(session: AsyncSession, coach_id: int) -> list[tuple[int, str]]:
    """(id, title) of the exercises this coach wrote, oldest first."""
    rows = await session.execute(select(Exercise.id, Exercise.title)
                                 .where(Exercise.coach_id == coach_id).order_by(Exercise.id))
    return [(row.id, row.title) for row in rows]


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
    await _linked_since(session, coach_id, client_id)
    if custom_exercise_id is not None:
        own = await session.scalar(select(Exercise.id).where(
            Exercise.id == custom_exercise_id, Exercise.coach_id == coach_id))
        if own is None:
            raise UnknownExercise("no such exercise of yours")
        exercise_slug = CUSTOM_EXERCISE
    elif exercise_slug not in known_exercises:
        raise UnknownExercise(f"no exercise {exercise_slug!r}")
    clean = validate_schedule(schedule)
    if ends_on is not None and ends_on < starts_on:
        raise InvalidSchedule("the assignment ends before it starts")
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


# -- progress -----------------------------------------------------------------------------


def _answers_since(client_id: int, since: datetime, now: datetime) -> ColumnElement[bool]:
    return and_(
        Answer.user_id == client_id, Answer.answered_at >= since, Answer.answered_at <= now
    )


async def _goals(session: AsyncSession, client_id: int, since: datetime) -> list[GoalProgress]:
    """The goals the client set since they agreed to share (the invitation promises that
    nothing written before is shared)."""
    goals = await session.execute(
        select(Goal)
        .where(Goal.user_id == client_id, Goal.status != "dropped", Goal.created_at >= since)
        .order_by(Goal.created_at, Goal.id)
    )
    return [
        GoalProgress(g.title, g.status, g.baseline, g.current, g.target) for g in goals.scalars()
    ]


async def _exercise_stats(
    session: AsyncSession, coach_id: int, client_id: int, since: datetime, now: datetime
) -> ExerciseStats:
    assigned = select(Assignment.exercise_slug).where(
        Assignment.coach_id == coach_id, Assignment.client_id == client_id
    )
    values = await session.execute(
        select(Answer.value).where(
            _answers_since(client_id, since, now),
            Answer.variable == STATUS_VARIABLE,
            Answer.dialogue_id.in_(assigned),
        )
    )
    counts = Counter(v for v in values.scalars() if v in EXERCISE_STATUSES)
    return ExerciseStats(counts["done"], counts["partly"], counts["skipped"])


def _is_reflection(variable: str) -> bool:
    return variable.startswith("reflection.") or (
        variable.startswith("exercise.") and variable != STATUS_VARIABLE
    )


async def _reflections(
    session: AsyncSession, client_id: int, since: datetime, now: datetime, limit: int
) -> list[Reflection]:
    rows = await session.execute(
        select(Answer)
        .where(
            _answers_since(client_id, since, now),
            Answer.variable.like("exercise.%") | Answer.variable.like("reflection.%"),
        )
        .order_by(Answer.answered_at.desc(), Answer.id.desc())
    )
    found: list[Reflection] = []
    for a in rows.scalars():
        if _is_reflection(a.variable) and isinstance(a.value, str) and a.value.strip():
            found.append(Reflection(a.dialogue_id, a.variable, a.value, a.answered_at))
            if len(found) == limit:
                break
    return found


async def _streak(
    session: AsyncSession, client: User, since: datetime, now: datetime
) -> tuple[date, int, int]:
    zone = user_zone(client)
    stamps = await session.execute(
        select(Answer.answered_at).where(
            _answers_since(client.id, since, now), Answer.variable == CHECKIN_MARKER
        )
    )
    today = now.astimezone(zone).date()
    current, best = current_streak([at.astimezone(zone).date() for at in stamps.scalars()], today)
    return today, current, best


async def client_progress(
    session: AsyncSession,
    coach_id: int,
    client_id: int,
    now: datetime,
    reflections: int = REFLECTIONS_SHOWN,
) -> ClientProgress:
    """What the coach may see of a client: goals, check-in streak, exercises done for this
    coach, and the latest reflections, from answers given since the client's consent."""
    since = await _linked_since(session, coach_id, client_id)
    client = await session.get(User, client_id)
    if client is None:  # the link's foreign key makes this impossible; no leak either way
        raise NotYourClient("no active link to this client")
    today, current, best = await _streak(session, client, since, now)
    return ClientProgress(
        client_id=client_id,
        first_name=client.first_name,
        linked_at=since,
        today=today,
        goals=await _goals(session, client_id, since),
        streak_current=current,
        streak_best=best,
        exercises=await _exercise_stats(session, coach_id, client_id, since, now),
        reflections=await _reflections(session, client_id, since, now, reflections),
    )


def _client_name(progress: ClientProgress, tr: Translator) -> str:
    return tr.words(progress.first_name or tr.number(progress.client_id))


def _goal_lines(goals: Sequence[GoalProgress], tr: Translator) -> list[str]:
    if not goals:
        return [tr.gettext("No goal set yet.")]
    lines: list[str] = []
    for g in goals:
        line = f"• {tr.words(g.title)}"
        if g.status == "done":
            line += " " + tr.gettext("(reached)")
        lines.append(line)
        if g.baseline is not None and g.target is not None:
            current = g.current if g.current is not None else g.baseline
            # TRANSLATORS: a line of a coach's report about a client, not addressed to anyone.
            lines.append("  " + tr.gettext(
                "Baseline {baseline}, now {current}, target {target} (scale of 1 to 10).")
                .format(
                    baseline=tr.number(g.baseline), current=tr.number(current),
                    target=tr.number(g.target)))
    return lines


def _streak_lines(progress: ClientProgress, tr: Translator) -> list[str]:
    current, best = progress.streak_current, progress.streak_best
    if not best:
        return [tr.gettext("No check-ins yet.")]
    lines = [tr.ngettext("Check-ins in a row: {count} day.", "Check-ins in a row: {count} days.",
                         current).format(count=tr.number(current))]
    lines.append(tr.ngettext("Longest run: {count} day.", "Longest run: {count} days.",
                             best).format(count=tr.number(best)))
    return lines


def _exercise_lines(stats: ExerciseStats, tr: Translator) -> list[str]:
    if stats.rate is None:
        return [tr.gettext("No assigned exercise reported yet.")]
    return [
        tr.gettext("Exercises: {done} done, {partly} partly, {skipped} skipped.").format(
            done=tr.number(stats.done), partly=tr.number(stats.partly),
            skipped=tr.number(stats.skipped)),
        tr.gettext("Completion rate: {percent}%.").format(
            percent=tr.number(round(stats.rate * 100))),
    ]


def _reflection_lines(reflections: Sequence[Reflection], tr: Translator) -> list[str]:
    if not reflections:
        return []
    lines = [tr.gettext("Latest reflections:")]
    for r in reflections:
        lines.append(f"• {tr.date(r.answered_at.date(), 'short')}: {tr.words(r.text)}")
    return lines


def progress_report(progress: ClientProgress, tr: Translator) -> str:
    """The text a coach reads about one client."""
    lines = [tr.gettext("Progress of {name}").format(name=_client_name(progress, tr))]
    lines += _goal_lines(progress.goals, tr)
    lines += _streak_lines(progress, tr)
    lines += _exercise_lines(progress.exercises, tr)
    lines += _reflection_lines(progress.reflections, tr)
    return "\n".join(lines)


async def client_trend_png(
    session: AsyncSession, coach_id: int, client_id: int, now: datetime, tr: Translator
) -> bytes:
    """The weekly trend chart of a client of this coach, from answers since consent."""
    since = await _linked_since(session, coach_id, client_id)
    points = await weekly_points(session, client_id, now, since=since)
    name = await session.scalar(select(User.first_name).where(User.id == client_id))
    labels = ChartLabels(
        mood=tr.gettext("Mood"), goal=tr.gettext("Goal"),
        no_data=tr.gettext("No check-ins yet"), tick=lambda d: tr.date(d, "short"))
    title = tr.gettext("Weekly average of {name}").format(name=name or tr.number(client_id))
    return weekly_trend_png(points.mood, title, goal_points=points.goal, labels=labels)


# -- notifications ------------------------------------------------------------------------


def event_for_status(status: object) -> str | None:
    """The coach event kind for an ``exercise.status`` answer."""
    return f"exercise_{status}" if status in EXERCISE_STATUSES else None


async def record_event(
    session: AsyncSession, coach_id: int, client_id: int, kind: str, now: datetime
) -> bool:
    """Note that something happened (no content, ever). Only for an active link; returns
    whether it was recorded."""
    if kind not in COACH_EVENT_KINDS:
        raise ValueError(f"unknown coach event kind {kind!r}")
    linked = await session.scalar(select(exists().where(_active_link(coach_id, client_id))))
    if not linked:
        return False
    session.add(CoachEvent(coach_id=coach_id, client_id=client_id, kind=kind, created_at=now))
    await session.flush()
    return True


async def notify_coaches(session: AsyncSession, client_id: int, kind: str, now: datetime) -> int:
    """Record an event for every coach the client is actively linked to; returns how many."""
    coaches = await coaches_of(session, client_id)
    for coach in coaches:
        await record_event(session, coach.user_id, client_id, kind, now)
    return len(coaches)


async def _last_regular_digest(session: AsyncSession, coach_id: int) -> datetime | None:
    return await session.scalar(
        select(func.max(CoachEvent.notified_at)).where(
            CoachEvent.coach_id == coach_id, CoachEvent.kind != CRISIS
        )
    )


async def _claim(
    session: AsyncSession, coach_id: int, crisis: bool, now: datetime
) -> list[tuple[int, str]]:
    """Mark the coach's pending events of active links as notified; (client, kind) of each.
    Of two concurrent ticks only one gets each event. Events of ended links are dropped."""
    kind = CoachEvent.kind == CRISIS if crisis else CoachEvent.kind != CRISIS
    await session.execute(
        delete(CoachEvent).where(
            CoachEvent.coach_id == coach_id,
            CoachEvent.notified_at.is_(None),
            ~exists().where(_active_link(CoachEvent.coach_id, CoachEvent.client_id)),
        )
    )
    rows = await session.execute(
        update(CoachEvent)
        .where(
            CoachEvent.coach_id == coach_id,
            CoachEvent.notified_at.is_(None),
            kind,
            exists().where(_active_link(CoachEvent.coach_id, CoachEvent.client_id)),
        )
        .values(notified_at=now)
        .returning(CoachEvent.client_id, CoachEvent.kind)
        .execution_options(synchronize_session=False)
    )
    return [(client, k) for client, k in rows]


async def _crisis_digests(
    session: AsyncSession, coach: User, events: list[tuple[int, str]]
) -> list[Digest]:
    """One notice per client in crisis: each is that client's data as well as the coach's."""
    clients = sorted({client for client, _ in events})
    names = await session.execute(select(User.id, User.first_name).where(User.id.in_(clients)))
    by_id = {uid: name for uid, name in names}
    return [Digest(coach.id, coach.locale, crisis=True, crisis_clients=(by_id.get(c) or str(c),),
                   subject=c) for c in clients]


async def _regular_digest(session: AsyncSession, coach: User,
                          events: list[tuple[int, str]]) -> Digest:
    clients: dict[str, set[int]] = {}
    for client, kind in events:
        clients.setdefault(kind, set()).add(client)
    ids = {client for client, _ in events}
    names = dict((await session.execute(
        select(User.id, User.first_name).where(User.id.in_(ids)))).all())
    by_kind = {kind: tuple(sorted((names.get(c) or str(c) for c in found), key=str.casefold))
               for kind, found in clients.items()}
    return Digest(coach.id, coach.locale, crisis=False, names_by_kind=by_kind)


async def due_digests(
    session: AsyncSession, now: datetime, min_interval: timedelta = timedelta(hours=1)
) -> list[Digest]:
    """The digests to send now, their events marked as notified.

    A crisis is reported at once in its own digest; other events wait until the coach's
    last digest is at least ``min_interval`` old, then go out together.
    """
    pending = await session.execute(
        select(CoachEvent.coach_id).where(CoachEvent.notified_at.is_(None)).distinct()
    )
    digests: list[Digest] = []
    for coach_id in sorted(pending.scalars()):
        coach = await session.get(User, coach_id)
        if coach is None:
            continue
        crisis = await _claim(session, coach_id, crisis=True, now=now)
        if crisis:
            digests.extend(await _crisis_digests(session, coach, crisis))
        last = await _last_regular_digest(session, coach_id)
        if last is None or now - last >= min_interval:
            events = await _claim(session, coach_id, crisis=False, now=now)
            if events:
                digests.append(await _regular_digest(session, coach, events))
    return digests


#: What each kind of news says, before the names of the clients it is about (a label
#: first: no verb to agree with a name's gender or number in any language).
NEWS = {
    "exercise_done": N_("Completed an exercise: {names}"),
    "exercise_partly": N_("Did part of an exercise: {names}"),
    "exercise_skipped": N_("Skipped an exercise: {names}"),
    "skipped_twice": N_("Skipped the same exercise twice in a row: {names}"),
    "goal_done": N_("Reached a goal: {names}"),
    "silent": N_("No answer for a few days: {names}"),
}


def digest_text(digest: Digest, tr: Translator) -> str:
    """The message for a digest, in the coach's language; never any client content."""
    if digest.crisis:
        names = ", ".join(tr.words(n) for n in digest.crisis_clients)
        return tr.ngettext(
            "Please reach out soon: the bot noticed signs that {names} may be in crisis. "
            "Nothing they wrote is shared here.",
            "Please reach out soon: the bot noticed signs that these clients may be in "
            "crisis: {names}. Nothing they wrote is shared here.",
            len(digest.crisis_clients),
        ).format(names=names)
    lines = [tr.gettext("News from your clients:")]
    for kind, text in NEWS.items():
        clients = digest.names_by_kind.get(kind, ())
        if clients:
            lines.append("• " + tr.gettext(text).format(
                names=", ".join(tr.words(n) for n in clients)))
    return "\n".join(lines)
