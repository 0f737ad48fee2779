"""What a coach may see of a client: progress queries (answers since consent only), the
report's text and the weekly trend chart."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime

from sqlalchemy import ColumnElement, and_, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.coaching.actions import ActionsSummary, actions_summary, summary_lines
from bot.coaching.assignments import EXERCISE_STATUSES, STATUS_VARIABLE
from bot.coaching.chart import translated_labels, weekly_points, weekly_trend_png
from bot.coaching.checkins import user_zone
from bot.coaching.coach_errors import NotYourClient
from bot.coaching.contracts import CHECKIN_MARKER
from bot.coaching.links import linked_since
from bot.coaching.progress import current_streak
from bot.coaching.sessions import Engagement, engagement, engagement_text
from bot.i18n import Translator
from bot.store import Answer, Assignment, Goal, User
from bot.store.kinds import GoalStatus

REFLECTIONS_SHOWN = 5
#: Answers read at a time when looking for a client's latest reflections.
REFLECTION_PAGE = 200


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
    # What the client committed to since the link, and the sessions agreed with this coach.
    actions: ActionsSummary | None = None
    sessions: Engagement | None = None


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
        .where(Goal.user_id == client_id, Goal.created_at >= since)
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
    slugs = set((await session.execute(assigned)).scalars())
    statuses = await session.execute(
        select(Answer.dialogue_id, Answer.value).where(
            _answers_since(client_id, since, now), Answer.marker == STATUS_VARIABLE
        )
    )  # which exercise is encrypted: told apart here
    counts = Counter(value for dialogue_id, value in statuses
                     if dialogue_id in slugs and value in EXERCISE_STATUSES)
    return ExerciseStats(counts["done"], counts["partly"], counts["skipped"])


def _is_reflection(variable: str) -> bool:
    return variable.startswith("exercise.") and variable != STATUS_VARIABLE


async def _reflections(
    session: AsyncSession, client_id: int, since: datetime, now: datetime, limit: int
) -> list[Reflection]:
    # Which question an answer belongs to is encrypted: newest first, a page at a time,
    # until enough reflections are found.
    newest_first = (
        select(Answer)
        .where(_answers_since(client_id, since, now), Answer.marker.is_(None))
        .order_by(Answer.answered_at.desc(), Answer.id.desc())
    )
    found: list[Reflection] = []
    page = 0
    while len(found) < limit:
        answers = (await session.scalars(
            newest_first.offset(page * REFLECTION_PAGE).limit(REFLECTION_PAGE))).all()
        for a in answers:
            if _is_reflection(a.variable) and isinstance(a.value, str) and a.value.strip():
                found.append(Reflection(a.dialogue_id, a.variable, a.value, a.answered_at))
                if len(found) == limit:
                    break
        if len(answers) < REFLECTION_PAGE:
            break
        page += 1
    return found


async def _streak(
    session: AsyncSession, client: User, since: datetime, now: datetime
) -> tuple[date, int, int]:
    zone = user_zone(client)
    stamps = await session.execute(
        select(Answer.answered_at).where(
            _answers_since(client.id, since, now), Answer.marker == CHECKIN_MARKER
        )
    )
    today = now.astimezone(zone).date()
    current, best = current_streak([at.astimezone(zone).date() for at in stamps.scalars()], today,
                                   client.checkin_days)
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
    since = await linked_since(session, coach_id, client_id)
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
        actions=await actions_summary(session, client_id, since, today),
        sessions=await engagement(session, coach_id, client_id),
    )


def _client_name(progress: ClientProgress, tr: Translator) -> str:
    return tr.person(progress.first_name, progress.client_id)


def _goal_lines(goals: Sequence[GoalProgress], tr: Translator) -> list[str]:
    if not goals:
        return [tr.gettext("No goal set yet.")]
    lines: list[str] = []
    for g in goals:
        line = f"• {tr.words(g.title)}"
        if g.status == GoalStatus.DONE:
            line += " " + tr.gettext("(reached)")
        elif g.status == GoalStatus.DROPPED:
            # TRANSLATORS: after a goal's title in a coach's report: the client let it go.
            line += " " + tr.gettext("(let go)")
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
        tr.gettext("Exercises: {done} done, {partly} partly done, {skipped} skipped.").format(
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
    if progress.actions is not None:
        lines += summary_lines(progress.actions, progress.today, tr)
    if progress.sessions is not None and progress.sessions.agreed:
        lines.append(engagement_text(progress.sessions, tr))
    return "\n".join(lines)


async def client_trend_png(
    session: AsyncSession, coach_id: int, client_id: int, now: datetime, tr: Translator
) -> bytes:
    """The weekly trend chart of a client of this coach, from answers since consent."""
    since = await linked_since(session, coach_id, client_id)
    points = await weekly_points(session, client_id, now, since=since)
    name = await session.scalar(select(User.first_name).where(User.id == client_id))
    labels = translated_labels(tr)
    title = tr.gettext("Weekly average of {name}").format(name=name or tr.number(client_id))
    return weekly_trend_png(points.mood, title, goal_points=points.goal, labels=labels)


