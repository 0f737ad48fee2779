"""Due work is rows: planning them, claiming the due ones, starting their dialogues.

Planned check-in statuses (``planned_checkins.status``):

``planned``
    waiting for its due time (a postponed one is ``planned`` again, 30 minutes later);
``claimed``
    taken by one worker (``claimed_by``/``claimed_at``) that is about to start it; a claim
    older than the lease returns to ``planned``, so a worker that dies loses nothing;
``started``
    its dialogue was started and its first messages are in the outbox (``started_at``),
    in the same transaction as the conversation state. Delivery is the outbox's business;
``missed``
    found due after downtime on a later local day than it was meant for;
``cancelled``
    no longer wanted: the user is unreachable, withdrew consent or paused, has no active
    goal (daily), the gentler rhythm skips it, a daily already started that local day,
    or the assignment/dialogue is gone.

Each row is started at most once: the switch ``claimed`` → ``started`` happens inside the
user's turn, conditional on the row still being claimed by this worker, together with the
conversation state and the outbox rows. It is started at least once as long as some worker
keeps ticking (the lease brings back claims of dead workers).
"""

from __future__ import annotations

import logging
import os
import socket
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Row, case, func, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from bot.coaching.checkins import CHECKIN_DIALOGUE
from bot.coaching.conversation import WEEKLY_REVIEW, Start, converse, custom_exercise_start
from bot.dialogue.model import DialogueSet
from bot.schedule import planning
from bot.schedule.planning import Profile
from bot.store import (
    Answer,
    Assignment,
    Conversation,
    Exercise,
    Goal,
    PlannedCheckin,
    Store,
    Turn,
    User,
)

log = logging.getLogger(__name__)

DEFAULT_HORIZON = timedelta(days=2)
DEFAULT_LEASE = timedelta(minutes=5)
BUSY_WINDOW = timedelta(minutes=30)
POSTPONE_BY = timedelta(minutes=30)
#: How far back started check-ins are looked at for the gentler rhythm (≥ 6 weekly ones).
RHYTHM_LOOKBACK = timedelta(days=60)
PLAN_BATCH = 5000

OPEN = ("planned", "claimed")


def default_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _insert(store: Store) -> Any:
    if store.engine.dialect.name == "postgresql":
        return postgresql.insert(PlannedCheckin)
    return sqlite.insert(PlannedCheckin)


def profile_of(row: Any) -> Profile:
    return Profile(row.time_zone, row.checkin_hour, row.quiet_start, row.quiet_end,
                   row.paused_until)


# -- planning ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Rhythm:
    """A user's recent daily check-ins: the last one started and how many went unanswered
    (started after the user's last check-in answer)."""

    last_started: datetime | None = None
    unanswered: int = 0


def _rhythm_query(first: int, last: int, now: datetime) -> Any:
    answered = (
        select(Answer.user_id, func.max(Answer.answered_at).label("last"))
        .where(Answer.dialogue_id == CHECKIN_DIALOGUE, Answer.user_id.between(first, last))
        .group_by(Answer.user_id)
        .subquery()
    )
    pc = PlannedCheckin
    unanswered = case((or_(answered.c.last.is_(None), pc.started_at > answered.c.last), 1))
    return (
        select(pc.user_id, func.max(pc.started_at).label("last_started"),
               func.count(unanswered).label("unanswered"))
        .outerjoin(answered, answered.c.user_id == pc.user_id)
        .where(pc.kind == "daily", pc.status == "started", pc.user_id.between(first, last),
               pc.started_at > now - RHYTHM_LOOKBACK)
        .group_by(pc.user_id)
    )


async def rhythms(session: AsyncSession, first: int, last: int,
                  now: datetime) -> dict[int, Rhythm]:
    rows = await session.execute(_rhythm_query(first, last, now))
    return {r.user_id: Rhythm(r.last_started, int(r.unanswered)) for r in rows}


def planning_rhythm(rhythm: Rhythm, now: datetime, profile: Profile) -> Rhythm:
    """The latest check-in started today may still be answered: don't count it yet."""
    last = rhythm.last_started
    if last is not None and rhythm.unanswered and planning.same_local_day(last, now,
                                                                          profile.zone):
        return Rhythm(last, rhythm.unanswered - 1)
    return rhythm


async def _plan_batch(session: AsyncSession, users: Sequence[Row[Any]], now: datetime,
                      horizon: timedelta) -> list[dict[str, Any]]:
    first, last = users[0].id, users[-1].id
    open_daily = set((await session.execute(
        select(PlannedCheckin.user_id).distinct()
        .where(PlannedCheckin.kind == "daily", PlannedCheckin.status.in_(OPEN),
               PlannedCheckin.user_id.between(first, last))
    )).scalars())
    goals: dict[int, list[tuple[int, datetime]]] = {}
    for g in await session.execute(
        select(Goal.id, Goal.user_id, Goal.created_at)
        .where(Goal.status == "active", Goal.user_id.between(first, last))
    ):
        goals.setdefault(g.user_id, []).append((g.id, g.created_at))
    assignments: dict[int, list[Row[Any]]] = {}
    for a in await session.execute(
        select(Assignment.id, Assignment.client_id, Assignment.schedule, Assignment.starts_on,
               Assignment.ends_on)
        .where(Assignment.active, Assignment.client_id.between(first, last),
               or_(Assignment.ends_on.is_(None),
                   Assignment.ends_on >= (now - timedelta(days=2)).date()))
    ):
        assignments.setdefault(a.client_id, []).append(a)
    recent = await rhythms(session, first, last, now)
    rows: list[dict[str, Any]] = []
    for user in users:
        profile = profile_of(user)
        if user.id in goals and user.id not in open_daily:
            rhythm = planning_rhythm(recent.get(user.id, Rhythm()), now, profile)
            due = planning.next_daily(profile, now, last_started=rhythm.last_started,
                                      unanswered=rhythm.unanswered, horizon=horizon)
            if due is not None:
                rows.append(_row(user.id, "daily", "", due))
        for goal_id, created in goals.get(user.id, ()):
            rows.extend(_row(user.id, "weekly", str(goal_id), due)
                        for due in planning.weekly_reviews(profile, created, now, horizon))
        for a in assignments.get(user.id, ()):
            schedule = a.schedule if isinstance(a.schedule, dict) else {}
            rows.extend(_row(user.id, "exercise", str(a.id), due) for due in planning.exercises(
                profile, schedule, a.starts_on, a.ends_on, now, horizon))
    return rows


def _row(user_id: int, kind: str, ref: str, due: datetime) -> dict[str, Any]:
    return {"user_id": user_id, "kind": kind, "ref": ref, "due_at": due, "status": "planned"}


def _plannable(now: datetime, horizon: timedelta, after: int, batch: int) -> Any:
    return (
        select(User.id, User.time_zone, User.checkin_hour, User.quiet_start, User.quiet_end,
               User.paused_until)
        .where(User.id > after, User.reachable, User.consent_at.is_not(None),
               or_(User.paused_until.is_(None), User.paused_until <= now + horizon))
        .order_by(User.id)
        .limit(batch)
    )


async def plan(store: Store, now: datetime, *, horizon: timedelta = DEFAULT_HORIZON,
               batch: int = PLAN_BATCH) -> int:
    """Make sure every reachable, consenting user has their next check-ins planned.

    Set-based, ``batch`` users per transaction; duplicates are ignored by the unique
    (user_id, kind, ref, due_at). Returns the number of rows proposed.
    """
    after = -(2**63)
    proposed = 0
    while True:
        async with store.sessionmaker() as session, session.begin():
            users = (await session.execute(_plannable(now, horizon, after, batch))).all()
            if not users:
                return proposed
            rows = await _plan_batch(session, users, now, horizon)
            if rows:
                await session.execute(_insert(store).on_conflict_do_nothing(), rows)
            proposed += len(rows)
        after = users[-1].id
        if len(users) < batch:
            return proposed


# -- claiming -------------------------------------------------------------------------


@dataclass(frozen=True)
class Claimed:
    id: int
    user_id: int
    kind: str
    ref: str
    due_at: datetime


async def release_expired(store: Store, now: datetime, lease: timedelta) -> int:
    """Claims older than ``lease`` (their worker died) go back to ``planned``."""
    async with store.sessionmaker() as session, session.begin():
        result = await session.execute(
            update(PlannedCheckin)
            .where(PlannedCheckin.status == "claimed", PlannedCheckin.claimed_at < now - lease)
            .values(status="planned", claimed_by=None, claimed_at=None)
            .execution_options(synchronize_session=False)
        )
        return int(getattr(result, "rowcount", 0) or 0)


async def claim(store: Store, now: datetime, *, worker_id: str, batch: int) -> list[Claimed]:
    """Claim up to ``batch`` due rows, oldest first (SKIP LOCKED on PostgreSQL; SQLite's
    single writer lock elsewhere)."""
    due = (
        select(PlannedCheckin.id)
        .where(PlannedCheckin.status == "planned", PlannedCheckin.due_at <= now)
        .order_by(PlannedCheckin.due_at, PlannedCheckin.id)
        .limit(batch)
        .with_for_update(skip_locked=True)
    )
    pc = PlannedCheckin
    async with store.sessionmaker() as session, session.begin():
        rows = await session.execute(
            update(pc)
            .where(pc.id.in_(due.scalar_subquery()), pc.status == "planned")
            .values(status="claimed", claimed_by=worker_id, claimed_at=now)
            .returning(pc.id, pc.user_id, pc.kind, pc.ref, pc.due_at)
            .execution_options(synchronize_session=False)
        )
        claimed = [Claimed(r.id, r.user_id, r.kind, r.ref, r.due_at) for r in rows]
    return sorted(claimed, key=lambda c: (c.due_at, c.id))


async def _still_mine(t: Turn, row: Claimed, worker_id: str) -> bool:
    current = (await t.session.execute(
        select(PlannedCheckin.status, PlannedCheckin.claimed_by)
        .where(PlannedCheckin.id == row.id).with_for_update()
    )).one_or_none()
    return current is not None and tuple(current) == ("claimed", worker_id)


async def _has_active_goal(session: AsyncSession, user_id: int) -> bool:
    found = await session.execute(
        select(Goal.id).where(Goal.user_id == user_id, Goal.status == "active").limit(1))
    return found.first() is not None


async def _started_dailies(session: AsyncSession, user_id: int, now: datetime) -> list[datetime]:
    rows = await session.execute(
        select(PlannedCheckin.started_at)
        .where(PlannedCheckin.user_id == user_id, PlannedCheckin.kind == "daily",
               PlannedCheckin.status == "started",
               PlannedCheckin.started_at > now - RHYTHM_LOOKBACK)
        .order_by(PlannedCheckin.started_at))
    return [at for at in rows.scalars() if at is not None]


async def _last_checkin_answer(session: AsyncSession, user_id: int) -> datetime | None:
    at: datetime | None = (await session.execute(
        select(func.max(Answer.answered_at))
        .where(Answer.user_id == user_id, Answer.dialogue_id == CHECKIN_DIALOGUE)
    )).scalar()
    return at


async def _daily_verdict(t: Turn, row: Claimed, profile: Profile, now: datetime) -> str | None:
    """Why a due daily check-in should not start (a status), or None to start it."""
    if not await _has_active_goal(t.session, t.user_id):
        return "cancelled"
    started = await _started_dailies(t.session, t.user_id, now)
    zone = profile.zone
    if any(planning.local_date(s, zone) == planning.local_date(row.due_at, zone)
           for s in started):
        return "cancelled"  # one daily check-in per local day
    answered = await _last_checkin_answer(t.session, t.user_id)
    unanswered = sum(1 for s in started if answered is None or s > answered)
    last = started[-1] if started else None
    if not planning.daily_allowed_on(profile, row.due_at, last, unanswered):
        return "cancelled"  # the gentler rhythm skips this one
    return None


async def _start_for(t: Turn, row: Claimed) -> Start | None:
    """What to start for this row: a check-in, a review, or an assigned exercise (a coach's
    own exercise runs in the custom exercise dialogue, filled with its title and text)."""
    if row.kind == "daily":
        return Start(CHECKIN_DIALOGUE)
    if row.kind == "weekly":
        return Start(WEEKLY_REVIEW)
    if not row.ref.isdigit():
        return None
    assignment = await t.session.get(Assignment, int(row.ref))
    if assignment is None or not assignment.active or assignment.client_id != t.user_id:
        return None
    if assignment.exercise_id is not None:
        exercise = await t.session.get(Exercise, assignment.exercise_id)
        return None if exercise is None else custom_exercise_start(exercise)
    return Start(assignment.exercise_slug or "")


async def _busy(t: Turn, now: datetime) -> bool:
    """In the middle of a dialogue they touched in the last 30 minutes."""
    if not (t.state or {}).get("stack"):
        return False
    updated = (await t.session.execute(
        select(Conversation.updated_at).where(Conversation.user_id == t.user_id)
    )).scalar()
    return updated is not None and updated > now - BUSY_WINDOW


def _user_gone(user: User, now: datetime) -> bool:
    paused = user.paused_until is not None and user.paused_until > now
    return not user.reachable or user.consent_at is None or paused


async def _decide(t: Turn, row: Claimed, dialogues: DialogueSet,
                  now: datetime) -> tuple[str, Start | None]:
    """(status, what to start) for a claimed row inside its user's turn."""
    profile = profile_of(t.user)
    if _user_gone(t.user, now):
        return "cancelled", None
    if not planning.same_local_day(row.due_at, now, profile.zone):
        return "missed", None
    if row.kind == "daily":
        verdict = await _daily_verdict(t, row, profile, now)
        if verdict is not None:
            return verdict, None
    action = await _start_for(t, row)
    if action is None or action.dialogue_id not in dialogues:
        log.warning("check-in %s (%s): nothing to start", row.id, row.kind)
        return "cancelled", None
    if await _busy(t, now):
        return "postponed", None
    return "started", action


async def _set_status(t: Turn, row: Claimed, status: str, now: datetime) -> None:
    values: dict[str, Any] = {"status": status}
    if status == "postponed":
        values = {"status": "planned", "due_at": now + POSTPONE_BY, "claimed_by": None,
                  "claimed_at": None}
    elif status == "started":
        values["started_at"] = now
    await t.session.execute(
        update(PlannedCheckin).where(PlannedCheckin.id == row.id).values(**values)
        .execution_options(synchronize_session=False))


async def start_one(t: Turn, row: Claimed, dialogues: DialogueSet, now: datetime,
                    worker_id: str) -> str:
    """Inside the user's turn: start the row's dialogue into the outbox, or settle it."""
    if not await _still_mine(t, row, worker_id):
        return "lost"
    status, action = await _decide(t, row, dialogues, now)
    if action is not None:
        outcome = await converse(t, dialogues, action, now)
        for reply in outcome.replies:
            t.enqueue(chat_id=t.user_id, payload=reply.to_payload())
    await _set_status(t, row, status, now)
    return status


async def claim_and_start(store: Store, dialogues: DialogueSet, now: datetime, *,
                          worker_id: str, batch: int = 100,
                          lease: timedelta = DEFAULT_LEASE) -> Counter[str]:
    """Claim due rows and start each in one store turn of its user.

    Returns how many rows ended in each status ("started", "postponed", "missed",
    "cancelled", "lost" when another worker took it over after our lease ran out).
    """
    await release_expired(store, now, lease)
    results: Counter[str] = Counter()
    for row in await claim(store, now, worker_id=worker_id, batch=batch):
        async def run(t: Turn, row: Claimed = row) -> str:
            return await start_one(t, row, dialogues, now, worker_id)

        try:
            status = await store.run_turn(row.user_id, run)
        except Exception:
            log.exception("check-in %s of user %s could not be started", row.id, row.user_id)
            status = "error"  # stays claimed; the lease brings it back
        results[status or "lost"] += 1
    return results
