"""What a coach sees of a group: participation, exercise completion, mood and the movement on
the goal's 1-10 scale, as aggregates over fixed weekly windows, never one member's figure.

The rule (docs/privacy.md, "Group figures"), in the pure functions below:

1. Windows are fixed calendar weeks (Monday 00:00 UTC to the next), and only weeks that
   have ended are shown: a figure never changes while the coach watches it.
2. A week's cohort is the members whose membership covers the whole week. Someone who
   joins or leaves later is in the cohorts of exactly the same past weeks as before, so
   a join or a leave changes no figure shown earlier; a member who leaves stays counted
   in the weeks they were there for (they were told so when they joined).
3. A figure is shown only when at least ``MIN_CONTRIBUTORS`` (3) members of the cohort
   contributed to it whose own figures the coach cannot see (``seen``: the coach's
   one-to-one clients and members who share their progress, in any part of the week):
   the coach could subtract what they know from the aggregate.
4. Overlapping groups: a figure is withheld when, in the same week, another group of the
   same coach has a set of contributors to that figure whose unseen members differ from
   this one's by one or two people (subtracting the two would show those people's
   figures).
5. Erasure: a member's data leaves every aggregate, and the weeks that counted them are
   withheld from then on (``Group.withheld_before``), so the figures before and after an
   erasure can never be compared.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from statistics import fmean
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.coaching.assignments import STATUS_VARIABLE
from bot.coaching.chart import GOAL_VALUE_VARIABLES
from bot.coaching.contracts import GOAL_BASELINE
from bot.coaching.groups import coach_group
from bot.store import (
    Answer,
    Assignment,
    CoachLink,
    Group,
    GroupAssignment,
    GroupMember,
    PlannedCheckin,
    Visibility,
)

MIN_CONTRIBUTORS = 3
WEEK = timedelta(days=7)
MOOD_VARIABLE = "checkin.mood"
FIGURE_WEEKS = 4
#: How far back a member's latest goal rating still counts as where they stood when a
#: week began (a weekly review once a week leaves one rating in most weeks).
RATING_LOOKBACK = 4 * WEEK


@dataclass(frozen=True)
class Window:
    start: datetime
    end: datetime


def closed_weeks(now: datetime, count: int) -> list[Window]:
    """The last ``count`` calendar weeks (UTC) that have ended, oldest first."""
    monday = (now - timedelta(days=now.weekday())).replace(hour=0, minute=0, second=0,
                                                           microsecond=0)
    return [Window(monday - WEEK * i, monday - WEEK * (i - 1)) for i in range(count, 0, -1)]


@dataclass(frozen=True)
class Span:
    """One membership, or one link to the coach: from its start to its end (None: still
    on)."""

    user_id: int
    joined_at: datetime
    left_at: datetime | None


def cohort(spans: Iterable[Span], window: Window) -> frozenset[int]:
    """The members whose membership covers the whole window."""
    return frozenset(s.user_id for s in spans if s.joined_at <= window.start
                     and (s.left_at is None or s.left_at >= window.end))


def overlapping(spans: Iterable[Span], window: Window) -> frozenset[int]:
    """Whoever a span covers for any part of the window."""
    return frozenset(s.user_id for s in spans if s.joined_at < window.end
                     and (s.left_at is None or s.left_at > window.start))


def may_show(contributors: frozenset[int], others: Iterable[frozenset[int]],
             seen: frozenset[int] = frozenset()) -> bool:
    """Rules 3 and 4: enough contributors the coach does not see one by one, and no other
    view of the same coach's whose unseen contributors differ from these by fewer than
    ``MIN_CONTRIBUTORS`` people (what ``seen`` members add, the coach can take away)."""
    unseen = contributors - seen
    if len(unseen) < MIN_CONTRIBUTORS:
        return False
    return all(other - seen == unseen or len((other - seen) ^ unseen) >= MIN_CONTRIBUTORS
               for other in others if other)


@dataclass(frozen=True)
class Rating:
    """A member's rating of their goal on its 1-10 scale."""

    at: datetime
    value: float
    new_goal: bool  # given when the goal was set: the ratings before it were of another


def movement(ratings: Iterable[Rating], start: datetime) -> float | None:
    """The change on the goal's scale in a window that begins at ``start`` (``ratings`` end
    with it): from where the member stood as it began (their latest rating before it of the
    same goal, else their first in it) to their last rating in it. None: no rating in the
    window, or only one rating of that goal."""
    ordered = sorted(ratings, key=lambda r: r.at)
    if not ordered or ordered[-1].at < start:
        return None
    same_goal = ordered[max((i for i, r in enumerate(ordered) if r.new_goal), default=0):]
    before = [r for r in same_goal if r.at < start]
    first = before[-1] if before else same_goal[0]
    return None if first is same_goal[-1] else same_goal[-1].value - first.value


@dataclass(frozen=True)
class Raw:
    """One member's raw figures for one window."""

    answered: bool = False
    due: int = 0  # group exercise check-ins due (started or missed)
    done: int = 0  # of those, answered "done"
    moods: tuple[int, ...] = ()
    movement: float | None = None  # on the goal's 1-10 scale


@dataclass(frozen=True)
class Figure:
    """An aggregate with the members it was computed from (never shown: the rule needs
    them to compare views)."""

    value: float
    contributors: frozenset[int]


@dataclass(frozen=True)
class WeekFigures:
    window: Window
    cohort_size: int
    participation: int | None  # how many answered anything; None: withheld
    completion: float | None  # share of due group exercises done, 0..1
    mood: float | None  # mean of the members' mean mood
    movement: float | None  # mean of the members' change on their goal's 1-10 scale


def figures(raw: Mapping[int, Raw]) -> dict[str, Figure | None]:
    """The window's candidate figures (before rules 3 and 4), from the cohort's raws."""
    answered = frozenset(u for u, r in raw.items() if r.answered)
    with_due = {u: r for u, r in raw.items() if r.due}
    with_mood = {u: fmean(r.moods) for u, r in raw.items() if r.moods}
    moved = {u: r.movement for u, r in raw.items() if r.movement is not None}
    due = sum(r.due for r in with_due.values())
    return {
        "participation": Figure(len(answered), answered),
        "completion": Figure(sum(min(r.done, r.due) for r in with_due.values()) / due,
                             frozenset(with_due)) if due else None,
        "mood": Figure(fmean(with_mood.values()), frozenset(with_mood)) if with_mood else None,
        "movement": Figure(fmean(moved.values()), frozenset(moved)) if moved else None,
    }


def shown(candidate: Figure | None, others: Iterable[Figure | None],
          seen: frozenset[int]) -> float | None:
    if candidate is None or not may_show(
            candidate.contributors, (o.contributors for o in others if o is not None), seen):
        return None
    return candidate.value


# -- reading ------------------------------------------------------------------------------


async def _spans(session: AsyncSession, coach_id: int, group_ids: list[int]
                 ) -> tuple[dict[int, list[Span]], list[Span]]:
    """Each group's memberships, and the spans in which the coach could see someone's own
    figures: their one-to-one links (reports show what was written since the link) and
    memberships of the coach's groups with "share my progress" (also after /coach ended
    the link it made)."""
    spans: dict[int, list[Span]] = defaultdict(list)
    seen: list[Span] = []
    for gid, uid, joined, left, visibility in await session.execute(
            select(GroupMember.group_id, GroupMember.user_id, GroupMember.joined_at,
                   GroupMember.left_at, GroupMember.visibility)
            .where(GroupMember.group_id.in_(group_ids))):
        spans[gid].append(Span(uid, joined, left))
        if visibility == Visibility.PROGRESS:
            seen.append(Span(uid, joined, left))
    for uid, consent, unlinked in await session.execute(
            select(CoachLink.client_id, CoachLink.consent_at, CoachLink.unlinked_at)
            .where(CoachLink.coach_id == coach_id)):
        if consent is not None:  # an invitation not accepted shows nothing
            seen.append(Span(uid, consent, unlinked))
    return spans, seen


async def _ratings(session: AsyncSession, users: Iterable[int], start: datetime,
                   end: datetime) -> dict[int, list[Rating]]:
    ratings: dict[int, list[Rating]] = defaultdict(list)
    for uid, marker, value, at in await session.execute(
            select(Answer.user_id, Answer.marker, Answer.value, Answer.answered_at).where(
                Answer.user_id.in_(set(users)), Answer.marker.in_(GOAL_VALUE_VARIABLES),
                Answer.answered_at >= start, Answer.answered_at < end)):
        if isinstance(value, int | float) and not isinstance(value, bool):
            ratings[uid].append(Rating(at, float(value), marker == GOAL_BASELINE))
    return ratings


async def _raws(session: AsyncSession, group_id: int, members: frozenset[int],
                window: Window, ratings: Mapping[int, list[Rating]]) -> dict[int, Raw]:
    if not members:
        return {}
    copies = select(Assignment.id, Assignment.exercise_slug).where(
        Assignment.client_id.in_(members), Assignment.group_assignment_id.in_(
            select(GroupAssignment.id).where(GroupAssignment.group_id == group_id)))
    refs, slugs = set(), set()
    for assignment_id, slug in await session.execute(copies):
        refs.add(str(assignment_id))
        slugs.add(slug)
    due: dict[int, int] = defaultdict(int)
    if refs:
        for (uid,) in await session.execute(
                select(PlannedCheckin.user_id).where(
                    PlannedCheckin.user_id.in_(members), PlannedCheckin.kind == "exercise",
                    PlannedCheckin.ref.in_(refs), PlannedCheckin.status.in_(("started",
                                                                               "missed")),
                    PlannedCheckin.due_at >= window.start, PlannedCheckin.due_at < window.end)):
            due[uid] += 1
    answered: set[int] = set()
    done: dict[int, int] = defaultdict(int)
    moods: dict[int, list[int]] = defaultdict(list)
    for uid, dialogue, variable, value in await session.execute(
            select(Answer.user_id, Answer.dialogue_id, Answer.variable, Answer.value).where(
                Answer.user_id.in_(members), Answer.answered_at >= window.start,
                Answer.answered_at < window.end)):
        answered.add(uid)
        if variable == STATUS_VARIABLE and value == "done" and dialogue in slugs:
            done[uid] += 1
        elif variable == MOOD_VARIABLE and isinstance(value, int | float) \
                and not isinstance(value, bool):
            moods[uid].append(int(value))
    return {u: Raw(u in answered, due[u], done[u], tuple(moods[u]), movement(
        (r for r in ratings.get(u, ()) if window.start - RATING_LOOKBACK <= r.at < window.end),
        window.start)) for u in members}


async def group_week_figures(session: AsyncSession, coach_id: int, group_id: int,
                             now: datetime, weeks: int = FIGURE_WEEKS) -> list[WeekFigures]:
    """The group's figures for the last ``weeks`` closed weeks, each withheld (None) where
    the rule says so; only the coach's own group."""
    group = await coach_group(session, coach_id, group_id)
    others = [g for g in (await session.scalars(
        select(Group).where(Group.coach_id == coach_id, Group.id != group.id))).all()]
    spans, seen_spans = await _spans(session, coach_id, [group.id, *(g.id for g in others)])
    windows = closed_weeks(now, weeks)
    ratings = await _ratings(session, {s.user_id for g in spans.values() for s in g},
                             windows[0].start - RATING_LOOKBACK, windows[-1].end)
    result: list[WeekFigures] = []
    for window in windows:
        members = cohort(spans[group.id], window)
        if group.withheld_before is not None and window.start < group.withheld_before:
            result.append(WeekFigures(window, len(members), None, None, None, None))
            continue
        seen = overlapping(seen_spans, window)
        mine = figures(await _raws(session, group.id, members, window, ratings))
        theirs = [figures(await _raws(session, g.id, cohort(spans[g.id], window), window,
                                      ratings))
                  for g in others if cohort(spans[g.id], window) & members]
        picked: dict[str, Any] = {name: shown(mine[name], (t[name] for t in theirs), seen)
                                  for name in mine}
        participation = picked["participation"]
        result.append(WeekFigures(window, len(members),
                                  None if participation is None else int(participation),
                                  picked["completion"], picked["mood"], picked["movement"]))
    return result
