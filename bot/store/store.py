"""The Store: one database transaction per incoming update, plus export and erase.

Nothing is cached between updates; every turn reads the conversation from the
database and writes it back, so any number of bot processes can serve the same users.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import random
import time as monotonic_time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, fields
from datetime import date, datetime, time, timedelta
from functools import lru_cache
from typing import Any, TypeAlias, TypeVar, cast

from sqlalchemy import (
    String,
    Table,
    bindparam,
    delete,
    func,
    insert,
    or_,
    select,
    union,
    update,
)
from sqlalchemy import cast as sql_cast
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, async_sessionmaker

from .engine import make_engine, unpinged
from .keys import check_keys
from .kinds import CheckinKind, CheckinStatus, OutboxKind, OutboxStatus
from .migrate import upgrade_engine
from .models import (
    USER_COLUMNS,
    Answer,
    Assignment,
    Base,
    CoachEvent,
    CoachingSession,
    CoachLink,
    Conversation,
    Exercise,
    Goal,
    Group,
    GroupMember,
    Invite,
    Outbox,
    PlannedCheckin,
    ProcessedUpdate,
    User,
    undelivered,
)
from .types import utcnow

T = TypeVar("T")
log = logging.getLogger(__name__)

#: Rows an export converts before it lets other tasks run (about a millisecond's work).
_EXPORT_BATCH = 200
#: PostgreSQL SQLSTATEs worth retrying a whole turn for.
_RETRY_SQLSTATES = frozenset({"40001", "40P01", "55P03"})  # serialization, deadlock, lock n/a
#: PostgreSQL SQLSTATEs (and classes) of a database that is away: restarting, refusing
#: connections, out of connections or of disk. Worth waiting for.
_OUTAGE_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "55000", "53000", "53100",
                               "53300", "58000", "58030"})
_OUTAGE_CLASSES = ("08",)  # connection exceptions
#: SQLite errors of a database that is busy or full for a while.
_SQLITE_OUTAGES = ("database is locked", "database or disk is full", "disk i/o error",
                   "unable to open database")
#: How long a turn hit by a database outage is retried before it fails for good.
OUTAGE_RETRY = timedelta(seconds=60)
OUTAGE_BACKOFF = 0.1  # seconds, doubling up to OUTAGE_MAX_BACKOFF
OUTAGE_MAX_BACKOFF = 5.0
#: Why a held-back outbox row was never sent (``last_error`` of a ``cancelled`` row).
SUPERSEDED_BY_REPLY = "superseded by a later reply"
SUPERSEDED_BY_URGENT = "superseded by an urgent message"
#: How stale ``users.last_seen_at`` may get before a client's message updates it (one write
#: a day, rather than one per message).
_SEEN_PRECISION = timedelta(days=1)


def _insert(dialect: str, table: Any) -> Any:
    if dialect == "postgresql":
        return postgresql.insert(table)
    if dialect == "sqlite":
        return sqlite.insert(table)
    raise NotImplementedError(f"unsupported database {dialect!r}")


@dataclass(slots=True, eq=False)
class TurnUser:
    """The turn's user: the columns of their ``users`` row, plain attributes. The columns a
    turn changes are written when it commits, and only those (a plain row, not the ORM's
    User: loading and tracking that cost more than the rest of the turn's reads)."""

    id: int
    first_name: str | None
    locale: str
    time_zone: str
    checkin_hour: int
    checkin_minute: int
    quiet_start: int | None
    quiet_end: int | None
    checkin_days: int | None
    paused_until: datetime | None
    crisis_pause_until: datetime | None
    reachable: bool
    consent_at: datetime | None
    is_coach: bool
    created_at: datetime
    exported_at: datetime | None
    last_seen_at: datetime | None
    address: str | None
    session_reminder_minutes: int


#: What is read of a user: an ORM :class:`User` or a turn's :class:`TurnUser`.
UserView: TypeAlias = User | TurnUser

_USERS = cast(Table, User.__table__)
_USER_FIELDS = tuple(f.name for f in fields(TurnUser))


def _columns(user: TurnUser) -> dict[str, Any]:
    return {name: getattr(user, name) for name in _USER_FIELDS}


_ANSWERS = cast(Table, Answer.__table__)
_OUTBOX = cast(Table, Outbox.__table__)
_CONVERSATIONS = cast(Table, Conversation.__table__)
# Whether a chat still has messages waiting or in flight (which must go out first). On the
# table, not the ORM class: Core statements skip the ORM's execution path.
_CHAT_BUSY = (select(_OUTBOX.c.id)
              .where(_OUTBOX.c.chat_id == bindparam("chat_id"), undelivered(_OUTBOX.c.status))
              .limit(1))
# Replies to the user's earlier messages still waiting (not in flight): a new message from
# the chat supersedes them (a flood gets the answer to its last message, not to each).
_SUPERSEDE_REPLIES = (update(_OUTBOX)
                      .where(_OUTBOX.c.chat_id == bindparam("of_chat"),
                             _OUTBOX.c.status == OutboxStatus.PENDING,
                             _OUTBOX.c.kind == OutboxKind.REPLY)
                      .values(status=OutboxStatus.CANCELLED, last_error=SUPERSEDED_BY_REPLY))
# An urgent message holds back everything queued for its chat that is not in flight yet
# (earlier urgent messages excepted).
_HOLD_BACK_FOR_URGENT = (update(_OUTBOX)
                         .where(_OUTBOX.c.chat_id == bindparam("of_chat"),
                                _OUTBOX.c.status == OutboxStatus.PENDING,
                                _OUTBOX.c.kind != OutboxKind.URGENT)
                         .values(status=OutboxStatus.CANCELLED, last_error=SUPERSEDED_BY_URGENT))
# What a turn queued for someone else (a coach's session count, a group's notice) waits
# while that person's crisis pause lasts: held, neither sent nor blocking their chat, until
# the pause is over (``bot/coaching/safety.py`` puts it back in the queue).
_HOLD_FOR_CRISIS_PAUSE = (
    update(_OUTBOX)
    .where(_OUTBOX.c.user_id == bindparam("of_user"),
           _OUTBOX.c.chat_id.in_(bindparam("chats", expanding=True)),
           _OUTBOX.c.status == OutboxStatus.PENDING, _OUTBOX.c.kind != OutboxKind.URGENT,
           _OUTBOX.c.chat_id.in_(select(_USERS.c.id).where(_USERS.c.crisis_pause_until > bindparam(
               "now", type_=_USERS.c.crisis_pause_until.type))))
    .values(status=OutboxStatus.HELD))
_INSERT_ANSWERS = insert(_ANSWERS)
_INSERT_OUTBOX = insert(_OUTBOX).returning(_OUTBOX.c.id, sort_by_parameter_order=True)
_WRITE_STATE = (update(_CONVERSATIONS)
                .where(_CONVERSATIONS.c.user_id == bindparam("user"),
                       _CONVERSATIONS.c.version == bindparam("version"))
                .values(state=bindparam("state"), version=bindparam("new_version"),
                        updated_at=bindparam("updated_at")))
# The user with their conversation, locked (on SQLite the turn's BEGIN IMMEDIATE locks).
# Both rows are locked: after waiting for a lock PostgreSQL reads again only the rows it
# locks, the others as they were before the wait, before the turn it waited for wrote them.
# NO KEY: rows that only refer to the user (its messages, answers) are not held up.
# Prepared once: building the statement costs more than running it.
_LOCK_USER = (select(*(_USERS.c[name] for name in _USER_FIELDS),
                     _CONVERSATIONS.c.state, _CONVERSATIONS.c.version)
              .join(_CONVERSATIONS, _CONVERSATIONS.c.user_id == _USERS.c.id)
              .where(_USERS.c.id == bindparam("user_id"))
              .with_for_update(of=(_CONVERSATIONS, _USERS), key_share=True))


@lru_cache(maxsize=256)  # a few shapes in practice; the user's columns vary most
def _write_turn(answer: bool, user_columns: tuple[str, ...]) -> Any:
    """PostgreSQL: the state, one message, ``answer`` or not and the user's changed
    ``user_columns`` in one statement, returning the message's id and how many states it
    wrote (none: someone else wrote it first). Parameters: the message's columns prefixed
    ``message_``, the answer's ``answer_``, the user's ``user_``, and :data:`_WRITE_STATE`'s.
    (One row each: SQLAlchemy caches no multi-row VALUES, and compiling this anew costs more
    than the round trips it saves.)"""
    state = _WRITE_STATE.returning(_CONVERSATIONS.c.version).cte("written_state")
    written = select(func.count()).select_from(state).scalar_subquery().label("states")
    statement = insert(_OUTBOX).values({
        **{c: bindparam(f"message_{c.name}") for c in _OUTBOX.c if c.name in _MESSAGE_COLUMNS},
        _OUTBOX.c.parts_sent: 0})  # (its default is not filled in beside a CTE's INSERT)
    if answer:
        statement = statement.add_cte(insert(_ANSWERS).values(
            {c: bindparam(f"answer_{c.name}") for c in _ANSWERS.c if c.name in _ANSWER_COLUMNS}
        ).cte("written_answer"))
    if user_columns:
        statement = statement.add_cte(
            update(_USERS).where(_USERS.c.id == bindparam("user"))
            .values({name: bindparam(f"user_{name}") for name in user_columns})
            .cte("written_user"))
    return statement.add_cte(state).returning(_OUTBOX.c.id, written)


_MESSAGE_COLUMNS = ("user_id", "chat_id", "subject_user_id", "payload", "created_at", "status",
                    "attempts", "kind", "last_error", "next_attempt_at")  # Turn.enqueue's
_ANSWER_COLUMNS = ("user_id", "dialogue_id", "step_id", "variable", "value", "marker",
                   "answered_at")  # Turn.record_answer's
_DIALECTS = ("sqlite", "postgresql")
_CREATE_USER = {d: _insert(d, User.__table__).on_conflict_do_nothing(index_elements=["id"])
                for d in _DIALECTS}
_CREATE_CONVERSATION = {
    d: _insert(d, _CONVERSATIONS).values(state=None, version=0)
    .on_conflict_do_nothing(index_elements=["user_id"]) for d in _DIALECTS}
# Marks the update processed and, in the same round trip, says whether the chat is busy;
# no row back: the update was processed already. (Not merged into _LOCK_USER: on
# PostgreSQL that statement's snapshot predates the lock it may wait for.)
_MARK_PROCESSED = {
    d: _insert(d, ProcessedUpdate.__table__).on_conflict_do_nothing(index_elements=["update_id"])
    .returning(_CHAT_BUSY.exists().label("chat_busy"))
    for d in _DIALECTS}


@dataclass(frozen=True)
class Retention:
    """How long each kind of row outlives its use (docs/privacy.md)."""

    #: Messages delivered, given up on or held back: copies of what was said, reports and
    #: charts too.
    sent_messages: timedelta = timedelta(days=1)
    #: What coaches were told about (kind and time only), once told.
    coach_events: timedelta = timedelta(days=30)
    #: Check-ins and exercises that are over (started, missed, cancelled); the gentler rhythm
    #: looks 60 days back.
    finished_checkins: timedelta = timedelta(days=60)
    #: Invitations used or expired.
    invites: timedelta = timedelta(days=7)
    #: Links to a coach that ended; the group figures look up to 5 weeks back and must know
    #: who was the coach's client then.
    ended_links: timedelta = timedelta(days=35)
    #: A client's own history (profile, goals, answers, everything about them), counted from
    #: when they last wrote or answered, or a coach's link with them ended, whichever is
    #: later; never while a coach's link with them is active. Then they are erased.
    client_history: timedelta = timedelta(days=365)
    #: Memberships of a group that ended; the group's figures look 4 weeks back.
    left_groups: timedelta = timedelta(days=60)


@dataclass(frozen=True)
class HeldMessage:
    """A message a turn committed already claimed, for its caller to send."""

    id: int
    chat_id: int
    payload: dict[str, Any]
    urgent: bool = False


class UserGone(LookupError):
    """A turn that may not create its user found none: the user was erased."""


class ConflictError(RuntimeError):
    """The conversation was written by someone else since this turn read it."""


class Turn:
    """One transaction for one incoming update. Build it with :meth:`Store.turn`.

    ``duplicate`` is True when the update was already processed; the caller then does
    nothing and the turn commits nothing. ``state`` is a private copy of the committed
    conversation state: change it with :meth:`set_state`. ``user`` is the user's row:
    assign its attributes, they are written at the commit. ``session``, an ORM session
    in the turn's transaction, is opened the first time it is used.

    With ``hold_until`` set, the messages this turn queues for the user's own chat are
    committed already claimed (``sending``, leased until then) and listed in ``held``, for
    the caller to send right after the commit without claiming them again; when the chat
    has messages in flight or waiting (``chat_busy``) only urgent ones are held.

    ``replying``: the turn answers the user's own message; its messages to the user's chat
    are replies (``kind='reply'``), which a later message of the chat supersedes while they
    wait (see :meth:`Store.turn`).
    """

    def __init__(
        self,
        connection: AsyncConnection,
        user: TurnUser,
        *,
        state: dict[str, Any] | None,
        version: int,
        duplicate: bool,
        now: datetime,
        hold_until: datetime | None = None,
        chat_busy: bool = False,
        replying: bool = False,
    ) -> None:
        self.connection = connection
        self.user = user
        self.state = state
        self.duplicate = duplicate
        self.now = now
        self._session: AsyncSession | None = None
        self._user_as_stored = _columns(user)
        self._version = version
        self._new_state: dict[str, Any] | None = None
        self._state_set = False
        self._hold_until = hold_until
        self._chat_busy = chat_busy
        self._replying = replying
        self._urgent_chats: set[int] = set()
        self._answers: list[dict[str, Any]] = []
        self._messages: list[dict[str, Any]] = []
        self.held: list[HeldMessage] = []  # after the commit
        self.waiting = 0  # messages queued for a sender to claim, after the commit

    @property
    def user_id(self) -> int:
        return self.user.id

    @property
    def session(self) -> AsyncSession:
        """An ORM session in this turn's transaction (flushed, not committed, by the turn)."""
        if self._session is None:
            self._session = AsyncSession(bind=self.connection, expire_on_commit=False)
        return self._session

    def _writable(self) -> None:
        if self.duplicate:
            raise RuntimeError("this update was already processed; a duplicate turn writes nothing")

    def set_state(self, state: dict[str, Any] | None) -> None:
        """Replace the conversation state, written when the turn commits (a copy of it:
        changing ``state`` or ``t.state`` afterwards changes nothing written)."""
        self._writable()
        self._new_state = copy.deepcopy(state)
        self._state_set = True
        self.state = state

    def record_answer(self, dialogue_id: str, step_id: str, variable: str, value: Any, *,
                      marker: str | None = None) -> None:
        """Append an answer to the user's history; ``marker``: the variable's name in plain
        text, for the few the platform looks answers up by (``bot/coaching/markers.py``)."""
        self._writable()
        self._answers.append({"user_id": self.user.id, "dialogue_id": dialogue_id,
                              "step_id": step_id, "variable": variable, "value": value,
                              "marker": marker, "answered_at": self.now})

    def enqueue(self, chat_id: int, payload: dict[str, Any], *, urgent: bool = False,
                hold_back: bool = True, subject: int | None = None) -> None:
        """Queue a message; a sender delivers it after this turn commits.

        ``urgent``: the message goes out ahead of anything still queued for the chat: the
        turn's own delivery sends it at once, past the chat's pace, even when the chat has
        messages in flight. The one exception to "a chat's messages never overtake each
        other". With ``hold_back`` (the default), the chat's messages queued before it that
        are not in flight yet (of earlier turns and of this one) are held back for good
        (``cancelled``, ``last_error`` saying why); without it they follow it.

        A message for someone else's chat while that person's crisis pause lasts waits
        (``held``) until it is over.

        ``subject``: the user the message is about when that is someone else (a client, in
        a coach's report), so that their export shows it and their erasure deletes it."""
        self._writable()
        own = chat_id == self.user.id
        if urgent and hold_back:
            self._urgent_chats.add(chat_id)
            for earlier in self._messages:
                if earlier["chat_id"] == chat_id and earlier["kind"] != OutboxKind.URGENT:
                    earlier.update(status=OutboxStatus.CANCELLED, last_error=SUPERSEDED_BY_URGENT,
                                   attempts=0, next_attempt_at=self.now)
        if urgent:
            held = self._hold_until is not None and own
        else:
            held = self._hold_until is not None and own and not self._chat_busy
        kind = OutboxKind.URGENT if urgent else OutboxKind.REPLY if self._replying and own \
            else OutboxKind.MESSAGE
        self._messages.append({
            "user_id": self.user.id, "chat_id": chat_id, "subject_user_id": subject,
            "payload": payload, "created_at": self.now,
            "status": OutboxStatus.SENDING if held else OutboxStatus.PENDING,
            "attempts": 1 if held else 0, "kind": kind, "last_error": None,
            "next_attempt_at": self._hold_until if held else self.now})

    async def erase_user(self) -> None:
        """Erase the turn's user, in this turn's transaction: what it queued or would write
        is dropped too, so the erasure commits with the rest of the turn or not at all."""
        self._writable()
        self._answers, self._messages, self._state_set = [], [], False
        await erase(self.session, self.user.id)
        self._user_as_stored = _columns(self.user)  # nothing left to update

    async def flush(self) -> None:
        """Send the pending writes to the database, still uncommitted (e.g. to get ids)."""
        await self.connection.run_sync(self._write)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    def _write_and_commit(self, connection: Connection) -> None:
        self._write(connection)
        connection.commit()

    def _write(self, connection: Connection) -> None:
        """The session's changes, then answers and messages in one multi-row INSERT each
        (the ORM's unit of work cost more than the rest of a turn's writes), the user's
        changed columns and the state. On PostgreSQL a turn's usual writes (the state, one
        message, at most one answer, the user's changes) go in one statement: one round trip
        instead of three or four."""
        if self._session is not None:
            self._session.sync_session.flush()
        others = sorted({m["chat_id"] for m in self._messages if m["chat_id"] != self.user.id})
        if connection.dialect.name == "postgresql" and self._state_set \
                and len(self._messages) == 1 and len(self._answers) <= 1 \
                and not self._urgent_chats:
            self._write_in_one(connection)
        if self._answers:
            connection.execute(_INSERT_ANSWERS, self._answers)
            self._answers = []
        for chat_id in sorted(self._urgent_chats):  # before this turn's rows are inserted
            connection.execute(_HOLD_BACK_FOR_URGENT, {"of_chat": chat_id})
        self._urgent_chats.clear()
        if self._messages:
            self._queued(connection.execute(_INSERT_OUTBOX, self._messages).scalars().all())
        if others:
            connection.execute(_HOLD_FOR_CRISIS_PAUSE,
                               {"of_user": self.user.id, "chats": others, "now": self.now})
        changed = self._user_changes()
        if changed:
            connection.execute(update(_USERS).where(_USERS.c.id == self.user.id)
                               .values(changed))
            self._user_as_stored.update(changed)
        if self._state_set:
            self._state_written(rowcount(connection.execute(_WRITE_STATE, self._state_params())))

    def _write_in_one(self, connection: Connection) -> None:
        """PostgreSQL: the state, the message, the answer and the user's changes in one
        statement (see :func:`_write_turn`)."""
        changed = self._user_changes()
        row = connection.execute(_write_turn(bool(self._answers), tuple(changed)), {
            **{f"message_{k}": v for k, v in self._messages[0].items()},
            **{f"answer_{k}": v for answer in self._answers for k, v in answer.items()},
            **{f"user_{k}": v for k, v in changed.items()},
            **self._state_params()}).one()
        self._answers = []
        self._user_as_stored.update(changed)
        self._queued([row.id])
        self._state_written(row.states)

    def _user_changes(self) -> dict[str, Any]:
        """The user's columns this turn changed, with their new values."""
        return {name: value for name, value in _columns(self.user).items()
                if value != self._user_as_stored[name]}

    def _queued(self, ids: Sequence[int]) -> None:
        """The turn's messages were inserted as rows ``ids``."""
        for row_id, row in zip(ids, self._messages, strict=True):
            if row["status"] == OutboxStatus.SENDING:
                self.held.append(HeldMessage(row_id, row["chat_id"], row["payload"],
                                             urgent=row["kind"] == OutboxKind.URGENT))
            elif row["status"] == OutboxStatus.PENDING:
                self.waiting += 1
        self._messages = []

    def _state_params(self) -> dict[str, Any]:
        return {"user": self.user.id, "version": self._version, "state": self._new_state,
                "new_version": self._version + 1, "updated_at": self.now}

    def _state_written(self, rows: int) -> None:
        if rows != 1:
            raise ConflictError(f"conversation of user {self.user.id} changed concurrently")
        self._version += 1
        self._state_set = False


class Store:
    """Persistence for coachbot. ``await start()`` before use, ``await close()`` after."""

    def __init__(self, url: str, *, encryption_key: str | None = None) -> None:
        self.url = url
        self._encryption_key = encryption_key
        self._engine: AsyncEngine | None = None
        self._sessions: async_sessionmaker[AsyncSession] | None = None
        self._own_engines: list[AsyncEngine] = []

    def __repr__(self) -> str:  # never show the key
        encrypted = "on" if self._encryption_key else "off"
        return f"Store({self.engine_url_for_logs()!r}, encryption={encrypted})"

    def engine_url_for_logs(self) -> str:
        return make_url(self.url).render_as_string(hide_password=True)

    @property
    def engine(self) -> AsyncEngine:
        if self._engine is None:
            raise RuntimeError("Store.start() has not been called")
        return self._engine

    @property
    def sessionmaker(self) -> async_sessionmaker[AsyncSession]:
        if self._sessions is None:
            raise RuntimeError("Store.start() has not been called")
        return self._sessions

    async def start(self) -> None:
        """Create or upgrade the schema, check that this replica's keys can read the data
        (:class:`~bot.store.keys.KeyMismatchError` if not), then get ready to serve turns.
        Idempotent."""
        if self._engine is not None:
            return
        engine = make_engine(self.url, encryption_key=self._encryption_key)
        try:
            await upgrade_engine(engine)
            await check_keys(engine, self._encryption_key)
        except BaseException:
            await engine.dispose()
            raise
        self._engine = engine
        self._sessions = async_sessionmaker(engine, expire_on_commit=False)

    def own_engine(self) -> AsyncEngine:
        """An engine with one connection of its own, apart from the pool every turn draws
        on (the send budget's leases: a busy pool must not keep the sends waiting). Closed
        with the store. Its connection is not pinged before each use (a round trip per
        lease): a dropped one fails one lease, which is tried again."""
        engine = make_engine(self.url, encryption_key=self._encryption_key, connections=1,
                             pre_ping=False)
        self._own_engines.append(engine)
        return engine

    async def close(self) -> None:
        for own in self._own_engines:
            await own.dispose()
        self._own_engines.clear()
        if self._engine is not None:
            await self._engine.dispose()
        self._engine = None
        self._sessions = None

    # -- turns ---------------------------------------------------------------------

    @asynccontextmanager
    async def turn(self, user_id: int, *, update_id: int | None = None,
                   hold_for: timedelta | None = None,
                   create: bool = True) -> AsyncIterator[Turn]:
        """One transaction for one incoming update of ``user_id``.

        Turns of the same user are serialised (row lock on PostgreSQL, the database
        write lock on SQLite). On clean exit the state, answers, outbox rows and the
        processed update id are committed together; on an exception nothing is.
        ``hold_for``: the caller will send the turn's messages itself right after the
        commit, and holds them this long (see :class:`Turn`); only when nothing earlier
        to the chat is still undelivered, so its messages keep their order (urgent ones
        always).

        A turn for an incoming update (``update_id``) first supersedes the replies to the
        chat's earlier messages that are still waiting (not in flight): they are
        ``cancelled``, and this turn's answer is what the user sees next.
        ``create=False``: a user without a row (erased) is not created; :class:`UserGone`
        is raised instead (the scheduler's turns: an erased user stays erased).
        """
        committed = False
        try:
            async with self.engine.connect() as connection:
                t: Turn | None = None
                try:
                    t = await connection.run_sync(self._open_turn, connection, user_id,
                                                  update_id, hold_for, create)
                    if t.duplicate:
                        await connection.rollback()
                        yield t
                        return
                    yield t
                    await connection.run_sync(t._write_and_commit)
                    committed = True
                except BaseException:
                    # Don't let a failing rollback (e.g. a dead connection) hide the real
                    # error; closing the connection releases it either way.
                    with contextlib.suppress(Exception):
                        await connection.rollback()
                    raise
                finally:
                    if t is not None:
                        await t.close()
        except Exception:
            # Committed, and then the connection broke while it was given back (say, the
            # database restarting): the turn happened; running it again would find its
            # update processed and do nothing.
            if not committed:
                raise

    async def run_turn(
        self,
        user_id: int,
        fn: Callable[[Turn], Awaitable[T]],
        *,
        update_id: int | None = None,
        hold_for: timedelta | None = None,
        attempts: int = 5,
        outage_retry: timedelta | None = None,
        create: bool = True,
    ) -> T | None:
        """Run ``fn`` inside a turn, retrying the whole turn on a version conflict,
        serialisation failure or deadlock (up to ``attempts`` times), and through a
        database outage (a dropped or refused connection, a restart, SQLite locked or full:
        see :func:`is_outage`) with a back-off, for up to ``outage_retry`` (default
        :data:`OUTAGE_RETRY`).

        ``fn`` must therefore have no side effects outside the turn (send messages
        with :meth:`Turn.enqueue`). Returns ``fn``'s result, or None for a duplicate
        update, or with ``create=False`` a user without a row; ``fn`` is then not called).
        """
        attempt = outages = 0
        retry_for = (outage_retry or OUTAGE_RETRY).total_seconds()
        gave_up_at = monotonic_time.monotonic() + retry_for
        while True:
            try:
                # A connection gone stale fails this try, which is run again below.
                with unpinged():
                    async with self.turn(user_id, update_id=update_id, hold_for=hold_for,
                                         create=create) as t:
                        if t.duplicate:
                            return None
                        return await fn(t)
            except UserGone:
                return None
            except Exception as exc:
                if is_outage(exc):
                    outages += 1
                    wait = min(OUTAGE_MAX_BACKOFF, OUTAGE_BACKOFF * 2 ** (outages - 1))
                    if monotonic_time.monotonic() + wait > gave_up_at:
                        log.error("turn of user %s: database away (%s), gave up after %d "
                                  "tries", user_id, type(exc).__name__, outages)
                        raise
                    log.warning("turn of user %s: database away (%s), try %d again in %.1fs",
                                user_id, type(exc).__name__, outages + 1, wait)
                    await asyncio.sleep(random.uniform(wait / 2, wait))
                    continue
                attempt += 1
                if attempt >= attempts or not is_retryable(exc):
                    raise
                await asyncio.sleep(random.uniform(0, 0.02 * 2**attempt))

    def _open_turn(self, sync: Connection, connection: AsyncConnection, user_id: int,
                   update_id: int | None, hold_for: timedelta | None,
                   create: bool = True) -> Turn:
        """The turn's first statements, run in one go by ``connection.run_sync``."""
        now = utcnow()
        dialect = self.engine.dialect.name
        found = sync.execute(_LOCK_USER, {"user_id": user_id}).one_or_none()
        if found is None:  # first contact: create both rows, race-safe, then lock
            if create:
                sync.execute(_CREATE_USER[dialect], {"id": user_id, "created_at": now})
            elif sync.execute(select(_USERS.c.id).where(_USERS.c.id == user_id)).first() is None:
                raise UserGone(user_id)
            sync.execute(_CREATE_CONVERSATION[dialect], {"user_id": user_id, "updated_at": now})
            found = sync.execute(_LOCK_USER, {"user_id": user_id}).one()
        *columns, state, version = found
        user = TurnUser(*columns)
        chat_busy: bool | None = None
        if update_id is not None:
            marked = sync.execute(_MARK_PROCESSED[dialect], {
                "update_id": update_id, "user_id": user_id, "processed_at": now,
                "chat_id": user_id}).first()
            if marked is None:
                return Turn(connection, user, state=None, version=0, duplicate=True, now=now)
            chat_busy = marked.chat_busy
            if chat_busy and rowcount(sync.execute(_SUPERSEDE_REPLIES, {"of_chat": user_id})):
                chat_busy = None  # look again: what was waiting may all be superseded
        hold_until = None
        if hold_for is not None:
            if chat_busy is None:
                chat_busy = sync.execute(_CHAT_BUSY, {"chat_id": user_id}).first() is not None
            hold_until = now + hold_for
        turn = Turn(connection, user, state=state, version=version, duplicate=False, now=now,
                    hold_until=hold_until, chat_busy=bool(chat_busy),
                    replying=update_id is not None)
        if update_id is not None and user.consent_at is not None and (
                user.last_seen_at is None or user.last_seen_at < now - _SEEN_PRECISION):
            user.last_seen_at = now  # a change: written with the turn's others
        return turn

    async def prune_processed_updates(self, before: datetime) -> int:
        """Forget processed update ids older than ``before`` (Telegram stops redelivering
        after a day). Returns how many were deleted."""
        async with self.sessionmaker() as session, session.begin():
            result = await session.execute(
                delete(ProcessedUpdate)
                .where(ProcessedUpdate.processed_at < before)
                .execution_options(synchronize_session=False)
            )
            return rowcount(result)

    async def prune(self, now: datetime, retention: Retention, *,
                    batch: int = 100) -> dict[str, int]:
        """Delete rows past their lifetime (see :class:`Retention`); how many, by kind (for
        ``client_history``, how many clients were erased, at most ``batch``)."""
        done: dict[str, int] = {}
        links_end = now - retention.ended_links
        async with self.sessionmaker() as session, session.begin():
            # A link about to go still counts for its client's history: its end is kept.
            ended = (select(func.max(CoachLink.unlinked_at))
                     .where(CoachLink.client_id == User.id, CoachLink.unlinked_at < links_end)
                     .scalar_subquery())
            await session.execute(
                update(User)
                .where(ended.is_not(None),
                       or_(User.last_seen_at.is_(None), User.last_seen_at < ended))
                .values(last_seen_at=ended)
                .execution_options(synchronize_session=False))
            # What shows that a client had a crisis goes once it has served (review M7): a
            # pause that is over (above: the caring check-in once it is over).
            await session.execute(
                update(User).where(User.crisis_pause_until < now).values(crisis_pause_until=None)
                .execution_options(synchronize_session=False))
            for kind, statement in (
                ("sent_messages", delete(Outbox).where(
                    Outbox.status.in_((OutboxStatus.SENT, OutboxStatus.FAILED,
                                       OutboxStatus.CANCELLED)),
                    Outbox.created_at < now - retention.sent_messages)),
                ("coach_events", delete(CoachEvent).where(
                    CoachEvent.notified_at < now - retention.coach_events)),
                ("finished_checkins", delete(PlannedCheckin).where(
                    PlannedCheckin.status.in_((CheckinStatus.STARTED, CheckinStatus.MISSED,
                                               CheckinStatus.CANCELLED)),
                    or_(PlannedCheckin.due_at < now - retention.finished_checkins,
                        PlannedCheckin.kind == CheckinKind.CARE))),
                ("invites", delete(Invite).where(or_(
                    Invite.used_at < now - retention.invites,
                    Invite.expires_at < now - retention.invites))),
                ("ended_links", delete(CoachLink).where(CoachLink.unlinked_at < links_end)),
                ("left_groups", delete(GroupMember).where(
                    GroupMember.left_at < now - retention.left_groups)),
            ):
                result = await session.execute(
                    statement.execution_options(synchronize_session=False))
                done[kind] = rowcount(result)
        done["client_history"] = await self._erase_departed(now - retention.client_history,
                                                            batch)
        return done

    async def _erase_departed(self, before: datetime, batch: int) -> int:
        """Erase up to ``batch`` clients who agreed, and whose last message, answer and
        coaching engagement are all older than ``before`` (coaches are not clients here)."""
        engaged = select(CoachLink.id).where(
            CoachLink.client_id == User.id,
            or_(CoachLink.unlinked_at.is_(None), CoachLink.unlinked_at >= before))
        answered = select(Answer.id).where(Answer.user_id == User.id,
                                           Answer.answered_at >= before)
        departed = (select(User.id).where(
            User.consent_at < before, User.is_coach.is_(False),
            or_(User.last_seen_at.is_(None), User.last_seen_at < before),
            ~engaged.exists(), ~answered.exists()))
        async with self.sessionmaker() as session:
            ids = list((await session.execute(departed.order_by(User.id).limit(batch)))
                       .scalars())
        for user_id in ids:
            async with self.sessionmaker() as session, session.begin():
                # Checked again under the erase's transaction: they may have written since.
                if await session.scalar(departed.where(User.id == user_id)) is not None:
                    await erase(session, user_id)
        return len(ids)

    async def purge_unconsented(self, before: datetime, *, batch: int = 100) -> int:
        """Erase up to ``batch`` users who first wrote before ``before`` and never agreed
        that their answers are kept (coaches, set up by an administrator, are not asked).
        Returns how many were erased."""
        async with self.sessionmaker() as session:
            ids = list((await session.execute(
                select(User.id).where(User.consent_at.is_(None), User.is_coach.is_(False),
                                      User.created_at < before)
                .order_by(User.created_at).limit(batch))).scalars())
        for user_id in ids:
            async with self.sessionmaker() as session, session.begin():
                # Checked again under the erase's transaction: they may have agreed since.
                if await session.scalar(select(User.id).where(
                        User.id == user_id, User.consent_at.is_(None))) is not None:
                    await erase(session, user_id)
        return len(ids)

    # -- users -----------------------------------------------------------------------

    async def get_user(self, user_id: int) -> User | None:
        """The user, detached from any session (attributes loaded), or None."""
        async with self.sessionmaker() as session:
            user = await session.get(User, user_id)
            if user is not None:
                session.expunge(user)
            return user

    async def claim_export(self, user_id: int, now: datetime,
                           every: timedelta) -> datetime | None:
        """Record an export of ``user_id``'s data now, unless they had one within ``every``:
        then return when the next one is allowed. A user without a row may always export
        (there is nothing to build)."""
        async with self.sessionmaker() as session, session.begin():
            result = await session.execute(
                update(User)
                .where(User.id == user_id,
                       or_(User.exported_at.is_(None), User.exported_at <= now - every))
                .values(exported_at=now)
                .execution_options(synchronize_session=False))
            if rowcount(result):
                return None
            last = await session.scalar(select(User.exported_at).where(User.id == user_id))
            return None if last is None else last + every

    async def export_user(self, user_id: int) -> dict[str, Any]:
        """Everything stored about one user, as JSON-serialisable data.

        Keys are table names; ``users`` holds at most the one user row, the other
        lists hold every row that refers to the user in any role (client or coach).
        """
        tables = _user_tables()
        out: dict[str, Any] = {"user_id": user_id, "exported_at": utcnow().isoformat()}
        async with self.sessionmaker() as session:
            for name, table in tables.items():
                cols = [table.c[c] for t, c in USER_COLUMNS if t == name]
                rows = await session.execute(
                    select(table)
                    .where(or_(*(col == user_id for col in cols)))
                    .order_by(*table.primary_key.columns)
                )
                out[name] = found = []
                for row in rows:  # decrypted row by row: let other tasks in now and then
                    found.append({k: _jsonable(v) for k, v in row._mapping.items()})
                    if len(found) % _EXPORT_BATCH == 0:
                        await asyncio.sleep(0)
        return out

    async def erase_user(self, user_id: int) -> None:
        """Delete every row about the user, as client and as coach, in one transaction.

        Processed update ids are kept with the user reference cleared, so a late
        redelivery of an old update is still recognised and not replayed.
        """
        async with self.sessionmaker() as session, session.begin():
            await erase(session, user_id)


#: References erase clears rather than deletes: processed update ids (not personal, and
#: needed to recognise a late redelivery) and the user's own row, deleted last.
_KEPT_WITHOUT_USER = frozenset({("processed_updates", "user_id")})


async def erase(session: AsyncSession, user_id: int) -> None:
    """Delete every row about the user, as client and as coach, in ``session``'s
    transaction (see :meth:`Store.erase_user`)."""
    involved = or_(Assignment.coach_id == user_id, Assignment.client_id == user_id)
    own_exercises = select(Exercise.id).where(Exercise.coach_id == user_id)
    assignment_ids = select(sql_cast(Assignment.id, String)).where(
        or_(involved, Assignment.exercise_id.in_(own_exercises))
    )
    # Other people's exercise check-ins that depended on those assignments.
    await session.execute(
        update(PlannedCheckin)
        .where(
            PlannedCheckin.kind == "exercise",
            PlannedCheckin.status.in_((CheckinStatus.PLANNED, CheckinStatus.CLAIMED)),
            PlannedCheckin.ref.in_(assignment_ids),
        )
        .values(status=CheckinStatus.CANCELLED)
        .execution_options(synchronize_session=False)
    )
    # What their coaching sessions planned for the other person (a reminder, a prompt).
    session_ids = select(sql_cast(CoachingSession.id, String)).where(or_(
        CoachingSession.coach_id == user_id, CoachingSession.client_id == user_id))
    await session.execute(delete(PlannedCheckin).where(
        PlannedCheckin.kind.like("session_%"), PlannedCheckin.ref.in_(session_ids)))
    for model in (Answer, Conversation, PlannedCheckin):
        await session.execute(delete(model).where(model.user_id == user_id))
    # Messages to them, and messages to others about them (a coach's reports,
    # charts and crisis digests), sent or not; and the delivered history of everyone
    # they were ever linked with, whose lists of clients or coaches named them.
    await session.execute(delete(Outbox).where(or_(
        Outbox.user_id == user_id, Outbox.chat_id == user_id,
        Outbox.subject_user_id == user_id)))
    counterparts = union(
        select(CoachLink.client_id).where(CoachLink.coach_id == user_id),
        select(CoachLink.coach_id).where(CoachLink.client_id == user_id),
        select(Group.coach_id).join(GroupMember, GroupMember.group_id == Group.id)
        .where(GroupMember.user_id == user_id))  # and their groups' member lists
    await session.execute(delete(Outbox).where(
        Outbox.user_id.in_(counterparts),
        Outbox.status.in_((OutboxStatus.SENT, OutboxStatus.FAILED))))
    await session.execute(delete(Goal).where(Goal.user_id == user_id))
    await session.execute(
        delete(Assignment).where(or_(involved, Assignment.exercise_id.in_(own_exercises)))
    )
    await session.execute(delete(Exercise).where(Exercise.coach_id == user_id))
    await session.execute(
        delete(CoachLink).where(
            or_(CoachLink.coach_id == user_id, CoachLink.client_id == user_id)
        )
    )
    await session.execute(
        delete(CoachEvent).where(
            or_(CoachEvent.coach_id == user_id, CoachEvent.client_id == user_id)
        )
    )
    await session.execute(
        delete(Invite).where(or_(Invite.coach_id == user_id, Invite.used_by == user_id))
    )
    # Their data leaves their groups' figures; the weeks that counted them are withheld
    # from now on, so figures before and after cannot be compared (group_figures.py).
    await session.execute(
        update(Group)
        .where(Group.id.in_(select(GroupMember.group_id).where(GroupMember.user_id == user_id)))
        .values(withheld_before=utcnow())
        .execution_options(synchronize_session=False)
    )
    await session.execute(
        update(ProcessedUpdate)
        .where(ProcessedUpdate.user_id == user_id)
        .values(user_id=None)
        .execution_options(synchronize_session=False)
    )
    # Whatever else refers to them (a table added later, say) goes too.
    for name, column in USER_COLUMNS:
        if (name, column) not in _KEPT_WITHOUT_USER:
            table = Base.metadata.tables[name]
            await session.execute(delete(table).where(table.c[column] == user_id))


def is_retryable(exc: BaseException) -> bool:
    """Whether a failed turn may succeed if run again from the start (at once)."""
    if isinstance(exc, ConflictError):
        return True
    if is_outage(exc):
        return True
    if isinstance(exc, DBAPIError):
        code = getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None)
        return code in _RETRY_SQLSTATES
    return False


def is_outage(exc: BaseException) -> bool:
    """Whether ``exc`` says the database is away for a while (not that the turn is wrong):
    a connection dropped, refused or invalidated, PostgreSQL restarting, refusing
    connections or out of them or of disk, SQLite locked or full. Worth waiting for."""
    seen: set[int] = set()
    error: BaseException | None = exc
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, PoolTimeoutError):  # every connection busy waiting for it
            return True
        if isinstance(error, DBAPIError) and (error.connection_invalidated
                                              or isinstance(error, InterfaceError)):
            return True
        if isinstance(error, OperationalError) and any(
                text in str(error.orig).lower() for text in _SQLITE_OUTAGES):
            return True
        code = getattr(error, "sqlstate", None) or getattr(error, "pgcode", None)
        if isinstance(code, str) and (code in _OUTAGE_SQLSTATES
                                      or code.startswith(_OUTAGE_CLASSES)):
            return True
        if isinstance(error, OSError | ConnectionError) or type(error).__name__ in (
                "ConnectionDoesNotExistError", "InternalClientError", "InterfaceError"):
            return True
        error = getattr(error, "orig", None) or error.__cause__ or error.__context__
    return False


def rowcount(result: Any) -> int:
    """How many rows an UPDATE, INSERT or DELETE changed."""
    count: int = result.rowcount
    return count


def _user_tables() -> dict[str, Table]:
    names = dict.fromkeys(t for t, _ in USER_COLUMNS)
    return {name: Base.metadata.tables[name] for name in names}


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    return value
