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

import asyncio
import logging
import os
import socket
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from sqlalchemy import (
    BigInteger,
    Row,
    String,
    Table,
    and_,
    bindparam,
    case,
    delete,
    func,
    literal_column,
    or_,
    select,
    union_all,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from bot.coaching.checkins import CHECKIN_DIALOGUE
from bot.coaching.conversation import (
    WEEKLY_REVIEW,
    Start,
    converse,
    custom_exercise_start,
    enqueue_replies,
)
from bot.coaching.safety import CARE_CHECKIN, CARE_KIND, paused_by_crisis
from bot.dialogue.model import DialogueSet
from bot.observability import describe_failure
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
    UserView,
    off_the_loop,
)
from bot.store.types import UTCDateTime

log = logging.getLogger(__name__)

DEFAULT_HORIZON = timedelta(days=2)
DEFAULT_LEASE = timedelta(minutes=5)
BUSY_WINDOW = timedelta(minutes=30)
POSTPONE_BY = timedelta(minutes=30)
START_CONCURRENCY = 8  # check-ins started at once within a tick
#: How far back started check-ins are looked at for the gentler rhythm (≥ 6 weekly ones).
RHYTHM_LOOKBACK = timedelta(days=60)
PLAN_BATCH = 5000

OPEN = ("planned", "claimed")


def default_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def profile_of(row: Any) -> Profile:
    return Profile(row.time_zone, row.checkin_hour, row.quiet_start, row.quiet_end,
                   row.paused_until, row.checkin_minute)


# -- planning ---------------------------------------------------------------------------
#
# plan() walks the plannable users in id order, ``batch`` at a time. Per batch it reads
# everything planning needs with four set-based SELECTs (users, active goals, active
# assignments, and one aggregate over each user's recent daily check-ins and answers), in a
# short transaction of its own; computes the rows in Python outside any transaction (the
# pure rules of ``planning``, with each answer reused for every user who asks the same
# question); and writes them in another short transaction as bulk inserts that ignore rows
# already there (the unique (user_id, kind, ref, due_at)). No ORM objects are loaded.


@dataclass(frozen=True)
class Rhythm:
    """A user's recent daily check-ins: the last one started and how many went unanswered
    (started after the user's last check-in answer)."""

    last_started: datetime | None = None
    unanswered: int = 0


def _daily_history(first: int, last: int, now: datetime) -> Any:
    """Per user of ``[first, last]`` with any recent daily check-in: the last one started,
    how many of those started since the last check-in answer went unanswered, and how many
    are open (planned or claimed).

    One pass over the union of the users' recent daily check-ins and check-in answers, the
    last answer spread over each user's rows by a window function: no join, so no plan
    that depends on statistics (without them PostgreSQL nested-looped a join of the two
    and took a second per batch). Answers older than the look-back cannot change the
    count: every started check-in looked at is newer than them.
    """
    since = now - RHYTHM_LOOKBACK
    pc = PlannedCheckin
    answer = literal_column("'answer'", String)
    both = union_all(
        # Only started rows have a started_at; saying it this way (not "status = started
        # and …") keeps SQLite on the (user_id, …) index instead of scanning by status.
        select(pc.user_id.label("user_id"), pc.status.label("status"),
               pc.started_at.label("at"))
        .where(pc.kind == "daily", pc.user_id.between(first, last),
               or_(pc.status.in_(OPEN), pc.started_at > since)),
        select(Answer.user_id, answer, Answer.answered_at)
        .where(Answer.dialogue_id == CHECKIN_DIALOGUE, Answer.user_id.between(first, last),
               Answer.answered_at > since),
    ).subquery()
    rows = select(
        both.c.user_id, both.c.status, both.c.at,
        func.max(case((both.c.status == answer, both.c.at)))
        .over(partition_by=both.c.user_id).label("last_answer"),
    ).subquery()
    started = rows.c.status == "started"
    unanswered = case((and_(started, or_(rows.c.last_answer.is_(None),
                                         rows.c.at > rows.c.last_answer)), 1))
    return (
        select(rows.c.user_id,
               func.max(case((started, rows.c.at))).label("last_started"),
               func.count(unanswered).label("unanswered"),
               func.count(case((rows.c.status.in_(OPEN), 1))).label("open"))
        .group_by(rows.c.user_id)
    )


def planning_rhythm(rhythm: Rhythm, now: datetime, profile: Profile) -> Rhythm:
    """The latest check-in started today may still be answered: don't count it yet."""
    last = rhythm.last_started
    if last is not None and rhythm.unanswered and planning.same_local_day(last, now,
                                                                          profile.zone):
        return Rhythm(last, rhythm.unanswered - 1)
    return rhythm


@dataclass
class _Batch:
    users: Sequence[Any]  # rows of _plannable()
    goals: dict[int, list[tuple[int, datetime]]]
    assignments: dict[int, list[Row[Any]]]
    recent: dict[int, Rhythm]
    open_daily: set[int]


def _plannable(now: datetime, horizon: timedelta, after: int, batch: int) -> Any:
    return (
        select(User.id, User.time_zone, User.checkin_hour, User.quiet_start, User.quiet_end,
               User.paused_until, User.checkin_minute)
        .where(User.id > after, User.reachable, User.consent_at.is_not(None),
               or_(User.paused_until.is_(None), User.paused_until <= now + horizon))
        .order_by(User.id)
        .limit(batch)
    )


async def _read_batch(conn: AsyncConnection, now: datetime, horizon: timedelta, after: int,
                      batch: int) -> _Batch | None:
    users = (await conn.execute(_plannable(now, horizon, after, batch))).all()
    if not users:
        return None
    first, last = users[0].id, users[-1].id
    goals: dict[int, list[tuple[int, datetime]]] = {}
    for goal_id, user_id, created in (await conn.execute(
        select(Goal.id, Goal.user_id, Goal.created_at)
        .where(Goal.status == "active", Goal.user_id.between(first, last))
    )).all():
        goals.setdefault(user_id, []).append((goal_id, created))
    assignments: dict[int, list[Row[Any]]] = {}
    for a in (await conn.execute(
        select(Assignment.id, Assignment.client_id, Assignment.schedule, Assignment.starts_on,
               Assignment.ends_on)
        .where(Assignment.active, Assignment.paused.is_(False),
               Assignment.client_id.between(first, last),
               or_(Assignment.ends_on.is_(None),
                   Assignment.ends_on >= (now - timedelta(days=2)).date()))
    )).all():
        assignments.setdefault(a.client_id, []).append(a)
    recent: dict[int, Rhythm] = {}
    open_daily: set[int] = set()
    for user_id, last_started, unanswered, is_open in (
            await conn.execute(_daily_history(first, last, now))).all():
        if last_started is not None:
            recent[user_id] = Rhythm(last_started, int(unanswered))
        if is_open:
            open_daily.add(user_id)
    return _Batch(users, goals, assignments, recent, open_daily)


class _Planner:
    """The rows to propose for a batch of users, at one ``now``. Users who share a profile
    (zone, hour, quiet hours, pause) and the same question share the answer: it is computed
    once per plan() run."""

    def __init__(self, now: datetime, horizon: timedelta) -> None:
        self.now = now
        self.horizon = horizon
        self._profiles: dict[tuple[Any, ...], tuple[int, Profile]] = {}
        self._dailies: dict[tuple[int, date | None], datetime | None] = {}
        self._reviews: dict[tuple[int, date], list[datetime]] = {}

    def daily(self, key: int, profile: Profile, rhythm: Rhythm) -> datetime | None:
        rhythm = planning_rhythm(rhythm, self.now, profile)
        earliest = planning.earliest_daily_day(profile, rhythm.last_started,
                                               rhythm.unanswered)
        try:
            return self._dailies[key, earliest]
        except KeyError:
            due = planning.next_daily_from(profile, self.now, earliest, self.horizon)
            self._dailies[key, earliest] = due
            return due

    def reviews(self, key: int, profile: Profile, created: datetime) -> list[datetime]:
        day = planning.local_date(created, profile.zone)
        try:
            return self._reviews[key, day]
        except KeyError:
            dues = planning.weekly_reviews_from(profile, day, self.now, self.horizon)
            self._reviews[key, day] = dues
            return dues

    def rows(self, batch: _Batch) -> list[tuple[int, str, str, datetime]]:
        rows: list[tuple[int, str, str, datetime]] = []
        no_rhythm = Rhythm()
        profiles = self._profiles
        for uid, zone, hour, quiet_start, quiet_end, paused_until, minute in batch.users:
            goals = batch.goals.get(uid)
            assignments = batch.assignments.get(uid)
            if not goals and not assignments:
                continue
            profile_key = (zone, hour, quiet_start, quiet_end, paused_until, minute)
            known = profiles.get(profile_key)
            if known is None:
                known = profiles[profile_key] = (len(profiles), Profile(*profile_key))
            key, profile = known
            if goals:
                if uid not in batch.open_daily:
                    due = self.daily(key, profile, batch.recent.get(uid, no_rhythm))
                    if due is not None:
                        rows.append((uid, "daily", "", due))
                for goal_id, created in goals:
                    ref = str(goal_id)
                    rows.extend((uid, "weekly", ref, due)
                                for due in self.reviews(key, profile, created))
            for a in assignments or ():
                schedule = a.schedule if isinstance(a.schedule, dict) else {}
                ref = str(a.id)
                rows.extend((uid, "exercise", ref, due) for due in planning.exercises(
                    profile, schedule, a.starts_on, a.ends_on, self.now, self.horizon))
        return rows


INSERT_CHUNK = 10_000
_PLANNED_COLUMNS = ("user_id", "kind", "ref", "due_at")


async def _insert_planned(conn: AsyncConnection,
                          rows: Sequence[tuple[int, str, str, datetime]]) -> None:
    """Bulk-insert planned rows, ignoring those already there (ON CONFLICT DO NOTHING).

    PostgreSQL: one INSERT … SELECT FROM unnest(arrays) per chunk, a single statement with
    four array parameters. SQLite: one DBAPI executemany per chunk of the compiled Core
    insert, with the due times converted by the column type's own bind processor (the
    per-row parameter handling of a Core executemany cost as much as the insert itself).
    """
    table = PlannedCheckin.__table__
    assert isinstance(table, Table)
    dialect = conn.dialect
    for start in range(0, len(rows), INSERT_CHUNK):
        chunk = rows[start:start + INSERT_CHUNK]
        if dialect.name == "postgresql":
            source = select(*(func.unnest(bindparam(name, type_=_ARRAY_TYPES[name]))
                              for name in _PLANNED_COLUMNS))
            statement = (postgresql.insert(table)
                         .from_select(list(_PLANNED_COLUMNS), source)
                         .on_conflict_do_nothing())
            columns = [list(column) for column in zip(*chunk, strict=True)]
            await conn.execute(statement, dict(zip(_PLANNED_COLUMNS, columns, strict=True)))
        else:
            compiled = (sqlite.insert(table).on_conflict_do_nothing()
                        .values({name: bindparam(name)
                                 for name in (*_PLANNED_COLUMNS, "status")})
                        .compile(dialect=dialect))
            order = compiled.positiontup or ()
            due = table.c.due_at.type.bind_processor(dialect)
            assert due is not None and list(order) == [*_PLANNED_COLUMNS, "status"]
            await conn.exec_driver_sql(
                compiled.string, [(u, k, r, due(d), "planned") for u, k, r, d in chunk])


_ARRAY_TYPES: dict[str, Any] = {
    "user_id": postgresql.ARRAY(BigInteger), "kind": postgresql.ARRAY(String),
    "ref": postgresql.ARRAY(String), "due_at": postgresql.ARRAY(UTCDateTime),
}


async def _write_planned(store: Store, rows: Sequence[tuple[int, str, str, datetime]]) -> None:
    async with store.engine.begin() as conn:
        await _insert_planned(conn, rows)


async def plan(store: Store, now: datetime, *, horizon: timedelta = DEFAULT_HORIZON,
               batch: int = PLAN_BATCH) -> int:
    """Make sure every reachable, consenting user has their next check-ins planned.

    Set-based, ``batch`` users at a time (a short read, then a short write transaction);
    duplicates are ignored by the unique (user_id, kind, ref, due_at). On PostgreSQL a
    batch's write runs while the next batch is read and computed (at most one write in
    flight); SQLite has one writer, so there they take turns. Returns the number of rows
    proposed.
    """
    overlap = store.engine.dialect.name == "postgresql"
    after = -(2**63)
    proposed = 0
    planner = _Planner(now, horizon)
    writing: asyncio.Task[None] | None = None
    with off_the_loop():  # statements over thousands of rows
        try:
            while True:
                async with store.engine.begin() as conn:
                    found = await _read_batch(conn, now, horizon, after, batch)
                if found is None:
                    break
                rows = planner.rows(found)
                if writing is not None:
                    await writing
                    writing = None
                if rows:
                    if overlap:
                        writing = asyncio.create_task(_write_planned(store, rows))
                    else:
                        await _write_planned(store, rows)
                proposed += len(rows)
                after = found.users[-1].id
                if len(found.users) < batch:
                    break
            if writing is not None:
                await writing
        finally:
            if writing is not None and not writing.done():
                writing.cancel()
                await asyncio.gather(writing, return_exceptions=True)
    return proposed


async def replan(t: Turn, now: datetime, *, horizon: timedelta = DEFAULT_HORIZON) -> None:
    """Inside the user's turn, after their check-in time, time zone or quiet hours changed:
    the check-ins planned by the old profile (not yet claimed, and those cancelled ahead of
    time, say when they blocked the bot) go, and the next daily check-in is planned at once
    by the new one, so the change applies at once, as the bot says. The next :func:`plan`
    round plans reviews and exercises again (the rhythm is checked when a check-in starts,
    see ``_daily_verdict``)."""
    pc = PlannedCheckin
    await t.session.execute(
        delete(pc)
        .where(pc.user_id == t.user_id, pc.kind != CARE_KIND,  # care after a crisis stays
               or_(pc.status == "planned", and_(pc.status == "cancelled", pc.due_at > now)))
        .execution_options(synchronize_session=False))
    if _user_gone(t.user, now, "daily") or not await _has_active_goal(t.session, t.user_id):
        return
    due = planning.next_daily_from(profile_of(t.user), now, None, horizon)
    if due is not None:
        insert = (postgresql.insert if t.connection.dialect.name == "postgresql"
                  else sqlite.insert)
        await t.session.execute(insert(pc).values(
            user_id=t.user_id, kind="daily", ref="", due_at=due, status="planned")
            .on_conflict_do_nothing())


def schedule_of(user: UserView) -> tuple[Any, ...]:
    """What planning reads of a user: when it changes, :func:`replan`."""
    return (user.time_zone, user.checkin_hour, user.checkin_minute, user.quiet_start,
            user.quiet_end, user.paused_until, user.consent_at is not None, user.reachable)


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
    # A materialised CTE: as a plain ``IN (subquery)`` PostgreSQL may run the LIMIT …
    # SKIP LOCKED subquery again for every row it scans, each time skipping the rows it
    # has just locked, and so claim several batches at once.
    due = (
        select(PlannedCheckin.id)
        .where(PlannedCheckin.status == "planned", PlannedCheckin.due_at <= now)
        .order_by(PlannedCheckin.due_at, PlannedCheckin.id)
        .limit(batch)
        .with_for_update(skip_locked=True)
        .cte("due")
        .prefix_with("MATERIALIZED", dialect="postgresql")
    )
    pc = PlannedCheckin
    async with store.sessionmaker() as session, session.begin():
        rows = await session.execute(
            update(pc)
            .where(pc.id.in_(select(due.c.id)), pc.status == "planned")
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
    if row.kind == CARE_KIND:
        return Start(CARE_CHECKIN)
    if row.kind == "weekly":
        return Start(WEEKLY_REVIEW)
    if not row.ref.isdigit():
        return None
    assignment = await t.session.get(Assignment, int(row.ref))
    if assignment is None or not assignment.active or assignment.paused \
            or assignment.client_id != t.user_id:
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


def _user_gone(user: UserView, now: datetime, kind: str) -> bool:
    """Unreachable, no consent, or paused; the caring check-in after a crisis is never paused
    (it is what the crisis pause leads to)."""
    if not user.reachable or user.consent_at is None:
        return True
    if kind == CARE_KIND:
        return False
    paused = user.paused_until is not None and user.paused_until > now
    return paused or paused_by_crisis(user, now)


async def _decide(t: Turn, row: Claimed, dialogues: DialogueSet,
                  now: datetime) -> tuple[str, Start | None]:
    """(status, what to start) for a claimed row inside its user's turn."""
    profile = profile_of(t.user)
    if _user_gone(t.user, now, row.kind):
        return "cancelled", None
    if row.kind == CARE_KIND and planning.in_quiet(_local_minute(now, profile),
                                                   profile.quiet_start, profile.quiet_end):
        return "postponed", None
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


def _local_minute(instant: datetime, profile: Profile) -> int:
    local = instant.astimezone(profile.zone)
    return local.hour * 60 + local.minute


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
        enqueue_replies(t, outcome)
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
    # Several at a time: each waits on its own database round trips, and a hundred due at
    # once one after the other made the last ones late on a busy replica.
    at_once = asyncio.Semaphore(START_CONCURRENCY)

    async def start(row: Claimed) -> None:
        async def run(t: Turn) -> str:
            return await start_one(t, row, dialogues, now, worker_id)

        async with at_once:
            try:
                status = await store.run_turn(row.user_id, run, create=False)  # erased: gone
            except Exception as exc:  # ids and the error's kind, never its text
                log.error("check-in %s of user %s could not be started: %s", row.id,
                          row.user_id, describe_failure(exc))
                status = "error"  # stays claimed; the lease brings it back
        results[status or "lost"] += 1

    await asyncio.gather(*(start(row) for row in await claim(store, now, worker_id=worker_id,
                                                             batch=batch)))
    return results
