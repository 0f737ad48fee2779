"""Planning due work as rows: ``plan`` (every plannable user, in batches) and ``replan``
(one user, inside their turn), applying the pure rules of :mod:`bot.schedule.planning`.

The rows' statuses and their lifecycle are described in :mod:`bot.schedule.claims`.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import (
    BigInteger,
    DateTime,
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
    text,
    union_all,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.coaching.checkins import has_active_goal
from bot.coaching.contracts import CHECKIN_MARKER
from bot.coaching.safety import CARE_KIND, paused_by_crisis
from bot.coaching.sessions import replan_sessions
from bot.schedule import planning
from bot.schedule.planning import Profile
from bot.store import (
    Answer,
    Assignment,
    Goal,
    PlannedCheckin,
    Store,
    Turn,
    User,
    UserView,
    off_the_loop,
)
from bot.store.kinds import CheckinKind, CheckinStatus, GoalStatus

DEFAULT_HORIZON = timedelta(days=2)
#: How far back started check-ins are looked at for the gentler rhythm (≥ 6 weekly ones).
RHYTHM_LOOKBACK = timedelta(days=60)
PLAN_BATCH = 5000

OPEN = (CheckinStatus.PLANNED, CheckinStatus.CLAIMED)


def profile_of(row: Any) -> Profile:
    return Profile(row.time_zone, row.checkin_hour, row.quiet_start, row.quiet_end,
                   row.paused_until, row.checkin_minute, row.checkin_days)

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
        .where(pc.kind == CheckinKind.DAILY, pc.user_id.between(first, last),
               or_(pc.status.in_(OPEN), pc.started_at > since)),
        select(Answer.user_id, answer, Answer.answered_at)
        .where(Answer.marker == CHECKIN_MARKER, Answer.user_id.between(first, last),
               Answer.answered_at > since),
    ).subquery()
    rows = select(
        both.c.user_id, both.c.status, both.c.at,
        func.max(case((both.c.status == answer, both.c.at)))
        .over(partition_by=both.c.user_id).label("last_answer"),
    ).subquery()
    started = rows.c.status == CheckinStatus.STARTED
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
               User.paused_until, User.checkin_minute, User.checkin_days)
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
        .where(Goal.status == GoalStatus.ACTIVE, Goal.user_id.between(first, last))
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


_DAILY, _WEEKLY, _EXERCISE = (CheckinKind.DAILY.value, CheckinKind.WEEKLY.value,
                              CheckinKind.EXERCISE.value)


class _Planner:
    """The rows to propose for a batch of users, at one ``now``. Users who share a profile
    (zone, hour, quiet hours, pause, days) and the same question share the answer: it is computed
    once per plan() run. What is left per user is looking the answers up (and a goal's
    local creation date), so a million users cost a few seconds of Python."""

    def __init__(self, now: datetime, horizon: timedelta) -> None:
        self.now = now
        self.horizon = horizon
        self._profiles: dict[tuple[Any, ...], tuple[int, Profile, ZoneInfo]] = {}
        self._dailies: dict[tuple[int, date | None], datetime | None] = {}
        self._reviews: dict[tuple[int, date], list[datetime]] = {}
        self._exercises: dict[tuple[int, str, date, date | None], list[datetime]] = {}

    def daily(self, key: int, profile: Profile, rhythm: Rhythm | None) -> datetime | None:
        earliest = None
        if rhythm is not None:
            rhythm = planning_rhythm(rhythm, self.now, profile)
            earliest = planning.earliest_daily_day(profile, rhythm.last_started,
                                                   rhythm.unanswered)
        try:
            return self._dailies[key, earliest]
        except KeyError:
            due = planning.next_daily_from(profile, self.now, earliest, self.horizon)
            self._dailies[key, earliest] = due
            return due

    def reviews(self, key: int, profile: Profile, created_on: date) -> list[datetime]:
        """The weekly reviews of a goal created on local day ``created_on``."""
        try:
            return self._reviews[key, created_on]
        except KeyError:
            dues = planning.weekly_reviews_from(profile, created_on, self.now, self.horizon)
            self._reviews[key, created_on] = dues
            return dues

    def exercises(self, key: int, profile: Profile, assignment: Any) -> list[datetime]:
        schedule = assignment.schedule if isinstance(assignment.schedule, dict) else {}
        question = (key, json.dumps(schedule, sort_keys=True), assignment.starts_on,
                    assignment.ends_on)
        try:
            return self._exercises[question]
        except KeyError:
            dues = planning.exercises(profile, schedule, assignment.starts_on,
                                      assignment.ends_on, self.now, self.horizon)
            self._exercises[question] = dues
            return dues

    def rows(self, batch: _Batch) -> list[tuple[int, str, str, datetime]]:
        rows: list[tuple[int, str, str, datetime]] = []
        profiles = self._profiles
        for uid, zone, hour, quiet_start, quiet_end, paused_until, minute, days in batch.users:
            goals = batch.goals.get(uid)
            assignments = batch.assignments.get(uid)
            if not goals and not assignments:
                continue
            profile_key = (zone, hour, quiet_start, quiet_end, paused_until, minute, days)
            known = profiles.get(profile_key)
            if known is None:
                profile = Profile(*profile_key)
                known = profiles[profile_key] = (len(profiles), profile, profile.zone)
            key, profile, local = known
            if goals:
                if uid not in batch.open_daily:
                    due = self.daily(key, profile, batch.recent.get(uid))
                    if due is not None:
                        rows.append((uid, _DAILY, "", due))
                for goal_id, created in goals:
                    ref = str(goal_id)
                    rows.extend((uid, _WEEKLY, ref, due) for due in self.reviews(
                        key, profile, created.astimezone(local).date()))
            for a in assignments or ():
                ref = str(a.id)
                rows.extend((uid, _EXERCISE, ref, due)
                            for due in self.exercises(key, profile, a))
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
                compiled.string,
                [(u, k, r, due(d), CheckinStatus.PLANNED.value) for u, k, r, d in chunk])


_ARRAY_TYPES: dict[str, Any] = {
    "user_id": postgresql.ARRAY(BigInteger), "kind": postgresql.ARRAY(String),
    # Plain timestamptz: the planned times are aware UTC already (planning's rules return
    # nothing else), and the column type's processing per element cost as much as asyncpg's
    # encoding of the whole array.
    "ref": postgresql.ARRAY(String), "due_at": postgresql.ARRAY(DateTime(timezone=True)),
}


async def _write_planned(store: Store, rows: Sequence[tuple[int, str, str, datetime]]) -> None:
    async with store.engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            # Planned rows are derived: one lost in a crash is planned again by the next
            # round, so the commit need not wait for the disk.
            await conn.execute(text("SET LOCAL synchronous_commit = off"))
        await _insert_planned(conn, rows)


#: Batches being written at once on PostgreSQL while the next is read and computed: the
#: inserts (three indexes and the foreign key's check per row) cost the database more than
#: the reading and computing cost here, and two connections share that work. SQLite has one
#: writer, so there reading and writing take turns.
POSTGRES_WRITERS = 2


async def plan(store: Store, now: datetime, *, horizon: timedelta = DEFAULT_HORIZON,
               batch: int = PLAN_BATCH) -> int:
    """Make sure every reachable, consenting user has their next check-ins planned.

    Set-based, ``batch`` users at a time (a short read, then a short write transaction);
    duplicates are ignored by the unique (user_id, kind, ref, due_at). On PostgreSQL the
    batches' writes run while the next batches are read and computed (``POSTGRES_WRITERS``
    at most); on SQLite they take turns. Returns the number of rows proposed.
    """
    writers = POSTGRES_WRITERS if store.engine.dialect.name == "postgresql" else 0
    after = -(2**63)
    proposed = 0
    planner = _Planner(now, horizon)
    writing: deque[asyncio.Task[None]] = deque()
    with off_the_loop():  # statements over thousands of rows
        try:
            while True:
                async with store.engine.begin() as conn:
                    found = await _read_batch(conn, now, horizon, after, batch)
                if found is None:
                    break
                rows = planner.rows(found)
                if rows and writers:
                    while len(writing) >= writers:
                        await writing.popleft()
                    writing.append(asyncio.create_task(_write_planned(store, rows)))
                elif rows:
                    await _write_planned(store, rows)
                proposed += len(rows)
                after = found.users[-1].id
                if len(found.users) < batch:
                    break
            while writing:
                await writing.popleft()
        finally:
            for task in writing:
                task.cancel()
            await asyncio.gather(*writing, return_exceptions=True)
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
               pc.kind.not_like("session_%"),  # replanned by their sessions, below
               pc.kind != CheckinKind.ENGAGEMENT_CLOSE,  # due once, as soon as it may be
               pc.kind.not_like("group_%"),  # a group's rows: replanned below, or weekly
               or_(pc.status == CheckinStatus.PLANNED,
                   and_(pc.status == CheckinStatus.CANCELLED, pc.due_at > now)))
        .execution_options(synchronize_session=False))
    await replan_sessions(t.session, t.user_id, now)
    if user_gone(t.user, now, CheckinKind.DAILY) or not await has_active_goal(t.session, t.user_id):
        return
    due = planning.next_daily_from(profile_of(t.user), now, None, horizon)
    if due is not None:
        insert = (postgresql.insert if t.connection.dialect.name == "postgresql"
                  else sqlite.insert)
        await t.session.execute(insert(pc).values(
            user_id=t.user_id, kind=CheckinKind.DAILY, ref="", due_at=due,
            status=CheckinStatus.PLANNED)
            .on_conflict_do_nothing())


def schedule_of(user: UserView) -> tuple[Any, ...]:
    """What planning reads of a user: when it changes, :func:`replan`."""
    return (user.time_zone, user.checkin_hour, user.checkin_minute, user.checkin_days,
            user.quiet_start, user.quiet_end, user.paused_until, user.consent_at is not None,
            user.reachable)


def user_gone(user: UserView, now: datetime, kind: str) -> bool:
    """Unreachable, no consent, or paused; the caring check-in after a crisis is never paused
    (it is what the crisis pause leads to)."""
    if not user.reachable or user.consent_at is None:
        return True
    if kind == CARE_KIND:
        return False
    paused = user.paused_until is not None and user.paused_until > now
    return paused or paused_by_crisis(user, now)
