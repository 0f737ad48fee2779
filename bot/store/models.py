"""ORM models. The Alembic migrations under ``bot/store/migrations`` create the schema;
a drift test keeps the two in step."""

from __future__ import annotations

from datetime import date, datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    ColumnElement,
    Date,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    or_,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, QueryableAttribute, mapped_column

from .kinds import (
    AddressForm,
    CheckinKind,
    CheckinStatus,
    CoachEventKind,
    GoalStatus,
    GroupKind,
    MeasureKind,
    NoteMedia,
    NoteShare,
    OutboxKind,
    OutboxStatus,
    ProgrammeStatus,
    Visibility,
    one_of,
)
from .types import EncryptedInt, EncryptedJSON, EncryptedText, UTCDateTime, utcnow

# SQLite only auto-increments an INTEGER PRIMARY KEY, so big surrogate keys are
# INTEGER there and BIGINT elsewhere.
BigId = BigInteger().with_variant(Integer(), "sqlite")

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


def _user_fk(ondelete: str = "CASCADE") -> ForeignKey:
    return ForeignKey("users.id", ondelete=ondelete)


class User(Base):
    __tablename__ = "users"

    # The Telegram user id; the terminal chat uses 0.
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    # A real name: encrypted at rest like what the client writes.
    first_name: Mapped[str | None] = mapped_column(EncryptedText)
    locale: Mapped[str] = mapped_column(String(35), default="en", server_default="en")
    time_zone: Mapped[str] = mapped_column(String(64), default="UTC", server_default="UTC")
    checkin_hour: Mapped[int] = mapped_column(Integer, default=9, server_default="9")
    # The minutes of the check-in time (07:30 is hour 7, minute 30).
    checkin_minute: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # Quiet hours in minutes after local midnight (0..1439); the window may wrap midnight.
    quiet_start: Mapped[int | None] = mapped_column(Integer)
    quiet_end: Mapped[int | None] = mapped_column(Integer)
    # The weekdays of the daily check-in, a mask with Monday as bit 0; None (or 127): every day.
    checkin_days: Mapped[int | None] = mapped_column(Integer)
    paused_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # After an urgent crisis nothing scheduled starts before this, unless they write first.
    crisis_pause_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    reachable: Mapped[bool] = mapped_column(Boolean, default=True, server_default=text("true"))
    consent_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    is_coach: Mapped[bool] = mapped_column(Boolean, default=False, server_default=text("false"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # When the user last asked for a copy of their data (/export is limited per user).
    exported_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # When a client who agreed last wrote (to the day), or a coach's link with them ended:
    # the retention of their history counts from there (Store.prune).
    last_seen_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # How they chose to be addressed (an AddressForm), asked only after their consent;
    # None until they answer, which reads as neutral.
    address: Mapped[str | None] = mapped_column(String(16))
    # A coach's choice: how long before each of their sessions the reminders come (theirs
    # and the client's or the members').
    session_reminder_minutes: Mapped[int] = mapped_column(Integer, default=60,
                                                          server_default="60")

    __table_args__ = (
        CheckConstraint("checkin_hour BETWEEN 0 AND 23", name="checkin_hour"),
        CheckConstraint("session_reminder_minutes BETWEEN 5 AND 2880",
                        name="session_reminder_minutes"),
        CheckConstraint(one_of("address", AddressForm), name="address"),
        CheckConstraint("checkin_minute BETWEEN 0 AND 59", name="checkin_minute"),
        CheckConstraint("quiet_start BETWEEN 0 AND 1439", name="quiet_start"),
        CheckConstraint("quiet_end BETWEEN 0 AND 1439", name="quiet_end"),
        CheckConstraint("checkin_days BETWEEN 1 AND 127", name="checkin_days"),
    )


class Goal(Base):
    __tablename__ = "goals"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    user_id: Mapped[int] = mapped_column(BigInteger, _user_fk())
    title: Mapped[str] = mapped_column(EncryptedText)
    why: Mapped[str | None] = mapped_column(EncryptedText)
    # The client's own ratings on the goal's 1-10 scale, encrypted like the answers they
    # repeat (the scale answer type keeps them in range).
    baseline: Mapped[int | None] = mapped_column(EncryptedInt)
    current: Mapped[int | None] = mapped_column(EncryptedInt)
    # When ``current`` was given (None for ratings given before this was kept).
    current_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    target: Mapped[int | None] = mapped_column(EncryptedInt)
    status: Mapped[str] = mapped_column(String(16), default=GoalStatus.ACTIVE,
                                        server_default=GoalStatus.ACTIVE.value)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    due_on: Mapped[date | None] = mapped_column(Date)
    completed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # The client chose to hold the goal at its target (goal setting's or a weekly review's
    # "to hold steady?"): reaching the target then is holding it, not completing it.
    holding: Mapped[bool] = mapped_column(Boolean, default=False, server_default=text("false"))

    __table_args__ = (
        CheckConstraint(one_of("status", GoalStatus), name="status"),
        Index(None, "user_id", "status"),
    )


class Answer(Base):
    """Append-only history of every answer a user gave.

    Which question it answered is encrypted like the answer: a step or variable asked only
    after some answers gives them away. ``marker`` keeps in plain text the name of the few
    variables the platform looks answers up by, each asked on every path of its dialogue
    (``bot/coaching/markers.py``); NULL for every other answer."""

    __tablename__ = "answers"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    user_id: Mapped[int] = mapped_column(BigInteger, _user_fk())
    dialogue_id: Mapped[str] = mapped_column(EncryptedText)
    step_id: Mapped[str] = mapped_column(EncryptedText)
    variable: Mapped[str] = mapped_column(EncryptedText)  # dotted, e.g. "checkin.mood"
    value: Mapped[Any] = mapped_column(EncryptedJSON, nullable=True)  # NULL: skipped
    marker: Mapped[str | None] = mapped_column(String(64))
    answered_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    __table_args__ = (
        Index(None, "user_id", "answered_at"),
        Index(None, "user_id", "marker", "answered_at"),
    )


class Conversation(Base):
    __tablename__ = "conversations"

    user_id: Mapped[int] = mapped_column(BigInteger, _user_fk(), primary_key=True)
    state: Mapped[dict[str, Any] | None] = mapped_column(EncryptedJSON)
    version: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ProcessedUpdate(Base):
    __tablename__ = "processed_updates"

    update_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    user_id: Mapped[int | None] = mapped_column(BigInteger, _user_fk("SET NULL"), index=True)
    processed_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)


class CoachLink(Base):
    __tablename__ = "coach_links"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    coach_id: Mapped[int] = mapped_column(BigInteger, _user_fk(), index=True)
    client_id: Mapped[int] = mapped_column(BigInteger, _user_fk(), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    consent_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    unlinked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # Whether the coach gets the client's preparation an hour before a session (None: not
    # asked yet, which counts as no).
    brief_consent: Mapped[bool | None] = mapped_column(Boolean)
    # The coach is alerted after this many days without an answer from the client.
    silent_days: Mapped[int] = mapped_column(Integer, default=4, server_default="4")
    # The number of sessions the coach and the client agreed on (None: not set; the
    # sessions scheduled count instead).
    sessions_agreed: Mapped[int | None] = mapped_column(Integer)

    __table_args__ = (
        # At most one active link per (coach, client); unlinked history may repeat.
        Index(
            "uq_coach_links_active",
            "coach_id",
            "client_id",
            unique=True,
            sqlite_where=text("unlinked_at IS NULL"),
            postgresql_where=text("unlinked_at IS NULL"),
        ),
    )


class Invite(Base):
    __tablename__ = "invites"

    # The SHA-256 of the code (hex): the code itself is a bearer token, shown once to the
    # coach and never stored (bot/coaching/links.py).
    code_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    coach_id: Mapped[int] = mapped_column(BigInteger, _user_fk(), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    used_by: Mapped[int | None] = mapped_column(BigInteger, _user_fk("SET NULL"), index=True)
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class Exercise(Base):
    __tablename__ = "exercises"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    # NULL: a library exercise, identified by its slug.
    coach_id: Mapped[int | None] = mapped_column(BigInteger, _user_fk())
    slug: Mapped[str] = mapped_column(String(64))
    # A coach's own words, which may mention a client: encrypted at rest.
    title: Mapped[str] = mapped_column(EncryptedText)
    instructions: Mapped[str] = mapped_column(EncryptedText, default="",
                                              server_default=text("''"))
    questions: Mapped[list[Any]] = mapped_column(JSON, default=list)

    __table_args__ = (
        UniqueConstraint("coach_id", "slug"),
        Index(
            "uq_exercises_library_slug",
            "slug",
            unique=True,
            sqlite_where=text("coach_id IS NULL"),
            postgresql_where=text("coach_id IS NULL"),
        ),
    )


class Assignment(Base):
    __tablename__ = "assignments"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    coach_id: Mapped[int] = mapped_column(BigInteger, _user_fk(), index=True)
    client_id: Mapped[int] = mapped_column(BigInteger, _user_fk())
    exercise_slug: Mapped[str | None] = mapped_column(String(64))
    exercise_id: Mapped[int | None] = mapped_column(
        BigId, ForeignKey("exercises.id", ondelete="CASCADE"), index=True
    )
    # {"kind": "daily", "hour": 8, "days": 14} or
    # {"kind": "weekdays", "hour": 8, "weekdays": [0, 2, 4]}
    schedule: Mapped[dict[str, Any]] = mapped_column(JSON)
    starts_on: Mapped[date] = mapped_column(Date)
    ends_on: Mapped[date | None] = mapped_column(Date)
    active: Mapped[bool] = mapped_column(Boolean, default=True, server_default=text("true"))
    # Paused by the coach: nothing is planned until resumed (``active`` stays true).
    paused: Mapped[bool] = mapped_column(Boolean, default=False, server_default=text("false"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # A member's copy of a group assignment (group_assignments.id); NULL: one to one.
    group_assignment_id: Mapped[int | None] = mapped_column(BigInteger, index=True)
    # A coach's measure this assignment asks for (measures.id; the slug is the
    # measure_checkin dialogue); NULL: an exercise.
    measure_id: Mapped[int | None] = mapped_column(BigInteger, index=True)
    # One step of a programme given to the client (programme_runs.id); NULL: on its own.
    programme_run_id: Mapped[int | None] = mapped_column(BigInteger, index=True)
    # A programme step the client reported done (or partly): the next step may start.
    done_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    __table_args__ = (
        CheckConstraint(
            "exercise_slug IS NOT NULL OR exercise_id IS NOT NULL", name="exercise_ref"
        ),
        Index(None, "client_id", "active"),
    )


class Group(Base):
    """A coach's team or cohort. Its figures for windows that start before
    ``withheld_before`` are not shown (a member's data was erased since: see
    bot/coaching/group_figures.py)."""

    __tablename__ = "groups"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    coach_id: Mapped[int] = mapped_column(BigInteger, _user_fk(), index=True)
    name: Mapped[str] = mapped_column(EncryptedText)
    kind: Mapped[str] = mapped_column(String(16))
    # The SHA-256 of the join link's code (hex): shown once to the coach, never stored; a
    # new link replaces it (the old one is revoked). It works until ``code_expires_at``.
    code_hash: Mapped[str] = mapped_column(String(64), unique=True)
    code_expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # The week's question goes to the linked chat by itself (the coach can turn it off).
    weekly_question: Mapped[bool] = mapped_column(Boolean, default=True,
                                                  server_default=text("true"))
    # The group's own Telegram chat, linked by its coach; its language.
    chat_id: Mapped[int | None] = mapped_column(BigInteger, unique=True)
    chat_locale: Mapped[str] = mapped_column(String(35), default="en", server_default="en")
    withheld_before: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # A team's goal, set by the coach with the team (group_goal dialogue); when reached.
    shared_goal: Mapped[str | None] = mapped_column(EncryptedText)
    goal_reached_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    __table_args__ = (CheckConstraint(one_of("kind", GroupKind), name="kind"),)


class GroupMember(Base):
    """A person's membership of a group, joined by their own consent in private."""

    __tablename__ = "group_members"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    group_id: Mapped[int] = mapped_column(BigId, ForeignKey("groups.id", ondelete="CASCADE"),
                                          index=True)
    user_id: Mapped[int] = mapped_column(BigInteger, _user_fk(), index=True)
    visibility: Mapped[str] = mapped_column(String(16))
    joined_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    left_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # The coach link this membership made (Visibility.PROGRESS), ended when they leave.
    link_id: Mapped[int | None] = mapped_column(BigInteger)

    __table_args__ = (
        CheckConstraint(one_of("visibility", Visibility), name="visibility"),
        Index("uq_group_members_active", "group_id", "user_id", unique=True,
              sqlite_where=text("left_at IS NULL"), postgresql_where=text("left_at IS NULL")),
    )


class GroupContribution(Base):
    """A member's own contribution and commitment to their team's shared goal, said in
    private; the coach sees it only when ``shared``."""

    __tablename__ = "group_contributions"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    group_id: Mapped[int] = mapped_column(BigId, ForeignKey("groups.id", ondelete="CASCADE"),
                                          index=True)
    user_id: Mapped[int] = mapped_column(BigInteger, _user_fk(), index=True)
    contribution: Mapped[str] = mapped_column(EncryptedText)
    commitment: Mapped[str] = mapped_column(EncryptedText)
    # The date the member chose for their commitment (None before it was asked as a date).
    due_on: Mapped[date | None] = mapped_column(Date)
    shared: Mapped[bool] = mapped_column(Boolean, default=False, server_default=text("false"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class GroupAssignment(Base):
    """An exercise assigned to a whole group: each member gets their own copy (an
    ``Assignment``), planned in their own zone; a member who joins later gets one too."""

    __tablename__ = "group_assignments"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    group_id: Mapped[int] = mapped_column(BigId, ForeignKey("groups.id", ondelete="CASCADE"),
                                          index=True)
    exercise_slug: Mapped[str] = mapped_column(String(64))
    exercise_id: Mapped[int | None] = mapped_column(
        BigId, ForeignKey("exercises.id", ondelete="CASCADE"))
    schedule: Mapped[dict[str, Any]] = mapped_column(JSON)
    starts_on: Mapped[date] = mapped_column(Date)
    ends_on: Mapped[date | None] = mapped_column(Date)
    active: Mapped[bool] = mapped_column(Boolean, default=True, server_default=text("true"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class PlannedCheckin(Base):
    __tablename__ = "planned_checkins"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    user_id: Mapped[int] = mapped_column(BigInteger, _user_fk())
    kind: Mapped[str] = mapped_column(String(16))
    # "" rather than NULL when there is no reference: NULLs never collide in a
    # unique constraint, and the same check-in must never be planned twice.
    ref: Mapped[str] = mapped_column(String(64), default="", server_default=text("''"))
    due_at: Mapped[datetime] = mapped_column(UTCDateTime)
    status: Mapped[str] = mapped_column(String(16), default=CheckinStatus.PLANNED,
                                        server_default=CheckinStatus.PLANNED.value)
    claimed_by: Mapped[str | None] = mapped_column(String(128))
    claimed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # When its dialogue was started, i.e. its first message was put in the outbox.
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    __table_args__ = (
        CheckConstraint(one_of("kind", CheckinKind), name="kind"),
        CheckConstraint(one_of("status", CheckinStatus), name="status"),
        UniqueConstraint("user_id", "kind", "ref", "due_at"),
        Index(None, "status", "due_at"),
    )




class Outbox(Base):
    __tablename__ = "outbox"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    user_id: Mapped[int] = mapped_column(BigInteger, _user_fk(), index=True)
    chat_id: Mapped[int] = mapped_column(BigInteger)
    # A message to someone about another user (a coach's /progress report and chart, a
    # crisis digest): that user. Their export includes it and their erasure deletes it.
    subject_user_id: Mapped[int | None] = mapped_column(BigInteger, _user_fk(), index=True)
    # May echo the client's own words, so it is encrypted like answers.
    payload: Mapped[dict[str, Any]] = mapped_column(EncryptedJSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    status: Mapped[str] = mapped_column(String(16), default=OutboxStatus.PENDING,
                                        server_default=OutboxStatus.PENDING.value)
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_error: Mapped[str | None] = mapped_column(Text)
    # message (scheduled, coach, digest), reply (to the user's own message: a later reply
    # supersedes it while unsent) or urgent (goes ahead of anything queued for the chat).
    kind: Mapped[str] = mapped_column(String(16), default=OutboxKind.MESSAGE,
                                      server_default=OutboxKind.MESSAGE.value)
    # Parts of a long text Telegram accepted: a retry resumes at the next one.
    parts_sent: Mapped[int] = mapped_column(Integer, default=0, server_default="0")

    __table_args__ = (
        CheckConstraint(one_of("status", OutboxStatus), name="status"),
        CheckConstraint(one_of("kind", OutboxKind), name="kind"),
        Index(None, "status", "next_attempt_at"),
        # The sender claims only the oldest undelivered row of each chat.
        Index(None, "chat_id", "status", "id"),
        # ... and first of the chats with a reply waiting (few: an index-only lookup).
        Index(None, "kind", "status", "chat_id"),
    )


def undelivered(status: ColumnElement[str] | QueryableAttribute[str]) -> ColumnElement[bool]:
    """Outbox rows waiting to be sent or being sent. Two comparisons rather than an IN of a
    literal tuple, which SQLAlchemy renders again on every execution (a fifth of a lookup's
    CPU)."""
    return or_(status == OutboxStatus.PENDING, status == OutboxStatus.SENDING)


class SendBudget(Base):
    """The bot's send budget, shared by its replicas (``bot/telegram/pacing.py``): the first
    release time no replica has leased yet, and the spread of arrival times the release
    times are spaced for (the largest a replica reported lately). Nothing about a person."""

    __tablename__ = "send_budget"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    next_slot: Mapped[datetime] = mapped_column(UTCDateTime)
    spread: Mapped[float] = mapped_column(Float, server_default="0")
    spread_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


#: What a coach is told about (bot/coaching/events.py checks it: the column is encrypted).
COACH_EVENT_KINDS = tuple(CoachEventKind)


class CoachEvent(Base):
    """Something a coach should hear about: only the kind and when, never any content. The
    kind is encrypted (one of :data:`COACH_EVENT_KINDS`, checked by the code that records
    it): a row must not tell that a client had a crisis."""

    __tablename__ = "coach_events"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    coach_id: Mapped[int] = mapped_column(BigInteger, _user_fk())
    client_id: Mapped[int] = mapped_column(BigInteger, _user_fk(), index=True)
    kind: Mapped[str] = mapped_column(EncryptedText)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    notified_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    __table_args__ = (Index(None, "coach_id", "notified_at"),)


class KeyFingerprint(Base):
    """An encryption key the database's encrypted values may be under: its fingerprint
    (:func:`bot.store.types.fingerprint`), never the key. A replica whose keys include none
    of these cannot read the data and refuses to start (``bot/store/keys.py``)."""

    __tablename__ = "key_fingerprints"

    fingerprint: Mapped[str] = mapped_column(String(64), primary_key=True)
    recorded_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ActionStatus(StrEnum):
    OPEN = "open"
    DONE = "done"
    PARTLY = "partly"
    DROPPED = "dropped"


class ActionSource(StrEnum):
    """Which dialogue collected the commitment."""

    DAILY = "daily"  # the daily check-in's "one thing today"
    WEEKLY = "weekly"  # the weekly review's action for the coming week
    FIRST_STEP = "first_step"  # a new goal's first step
    SESSION = "session"  # a session recap


class CommitmentAction(Base):
    """Something the client committed to do, in their own words, and what became of it."""

    __tablename__ = "actions"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    user_id: Mapped[int] = mapped_column(BigInteger, _user_fk())
    words: Mapped[str] = mapped_column(EncryptedText)
    source: Mapped[ActionSource] = mapped_column(String(16))
    due_on: Mapped[date] = mapped_column(Date)
    status: Mapped[ActionStatus] = mapped_column(String(16), default=ActionStatus.OPEN,
                                                 server_default="open")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # When its status last changed away from open.
    closed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    __table_args__ = (
        CheckConstraint(one_of("status", ActionStatus), name="status"),
        CheckConstraint(one_of("source", ActionSource), name="source"),
        Index(None, "user_id", "status", "due_on"),
    )


class SessionMode(StrEnum):
    IN_PERSON = "in_person"
    PHONE = "phone"
    VIDEO = "video"


class SessionStatus(StrEnum):
    SCHEDULED = "scheduled"
    CANCELLED = "cancelled"
    HELD = "held"
    MISSED = "missed"


class SessionTime:
    """When, how long, how and where a session happens, and its status: the columns a
    one-to-one session and a group's share. Its time is kept as the wall clock of whoever
    set it plus their IANA zone (a weekly 18:00 stays 18:00 across daylight saving);
    ``starts_at`` is that instant in UTC, for planning and ordering."""

    local_start: Mapped[datetime] = mapped_column(DateTime(timezone=False))
    zone: Mapped[str] = mapped_column(String(64))
    starts_at: Mapped[datetime] = mapped_column(UTCDateTime)
    minutes: Mapped[int] = mapped_column(Integer, default=60, server_default="60")
    mode: Mapped[SessionMode] = mapped_column(String(16))
    # A place, a phone number or a video link: may identify the client, so encrypted.
    place: Mapped[str | None] = mapped_column(EncryptedText)
    status: Mapped[SessionStatus] = mapped_column(
        String(16), default=SessionStatus.SCHEDULED, server_default="scheduled")

    @staticmethod
    def constraints() -> tuple[Any, ...]:
        return (
            CheckConstraint(one_of("mode", SessionMode), name="mode"),
            CheckConstraint(one_of("status", SessionStatus), name="status"),
            CheckConstraint("minutes BETWEEN 5 AND 600", name="minutes"),
            Index(None, "status", "starts_at"),
        )


class CoachingSession(SessionTime, Base):
    """One agreed session between a coach and a client (or a member's copy of a group's)."""

    __tablename__ = "coaching_sessions"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    # The calendar UID: the same for every version of the session sent to the client.
    uid: Mapped[str] = mapped_column(String(64), unique=True)
    # Sessions of one weekly or fortnightly series share it.
    series: Mapped[str | None] = mapped_column(String(32), index=True)
    coach_id: Mapped[int] = mapped_column(BigInteger, _user_fk(), index=True)
    client_id: Mapped[int] = mapped_column(BigInteger, _user_fk(), index=True)
    # The calendar SEQUENCE: raised by every change sent to the client.
    sequence: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # A member's copy of a group session; NULL: one to one.
    group_session_id: Mapped[int | None] = mapped_column(
        BigId, ForeignKey("group_sessions.id", ondelete="CASCADE"), index=True)

    __table_args__ = SessionTime.constraints()

    def revise(self, now: datetime) -> None:
        """A change the client's calendar must take: the same UID, a higher SEQUENCE."""
        self.sequence += 1
        self.updated_at = now

    def cancel(self, now: datetime) -> None:
        self.status = SessionStatus.CANCELLED
        self.revise(now)


class GroupSession(SessionTime, Base):
    """A session of a whole group (one of a series, maybe). Each member has their own copy
    (a ``CoachingSession`` with ``group_session_id``), planned and reminded in their own
    zone and language; this row carries the coach's reminder and the linked chat's."""

    __tablename__ = "group_sessions"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    group_id: Mapped[int] = mapped_column(BigId, ForeignKey("groups.id", ondelete="CASCADE"),
                                          index=True)
    coach_id: Mapped[int] = mapped_column(BigInteger, _user_fk(), index=True)
    series: Mapped[str | None] = mapped_column(String(32), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    __table_args__ = SessionTime.constraints()


class CoachMessage(Base):
    """A message between a coach and a client, either way: the coach's words to the client
    (delivered outside the client's quiet hours and crisis pause) or the client's reply."""

    __tablename__ = "coach_messages"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    coach_id: Mapped[int] = mapped_column(BigInteger, _user_fk(), index=True)
    client_id: Mapped[int] = mapped_column(BigInteger, _user_fk(), index=True)
    from_coach: Mapped[bool] = mapped_column(Boolean)
    text: Mapped[str] = mapped_column(EncryptedText)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # NULL: waiting for a moment the client may be written to.
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    __table_args__ = (Index(None, "delivered_at", "created_at"),)


class CoachNote(Base):
    """A coach's private note about a client: shown in the coach's report only."""

    __tablename__ = "coach_notes"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    coach_id: Mapped[int] = mapped_column(BigInteger, _user_fk(), index=True)
    client_id: Mapped[int] = mapped_column(BigInteger, _user_fk(), index=True)
    text: Mapped[str] = mapped_column(EncryptedText)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class SessionNote(Base):
    """Something a client kept for their next session: their words, or a voice message,
    photo, document or video kept by its Telegram file id (and the message's id, to copy it
    to the coach). Stored only once the client chose to keep it."""

    __tablename__ = "session_notes"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    user_id: Mapped[int] = mapped_column(BigInteger, _user_fk(), index=True)
    words: Mapped[str | None] = mapped_column(EncryptedText)  # the text, or a caption
    media: Mapped[NoteMedia | None] = mapped_column(String(16))
    file_id: Mapped[str | None] = mapped_column(EncryptedText)
    # The message in the client's private chat (its chat id is the client's id).
    message_id: Mapped[int | None] = mapped_column(BigInteger)
    share: Mapped[NoteShare] = mapped_column(String(16), default=NoteShare.PRIVATE,
                                             server_default="private")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # When it reached the coach (at once, or with a brief).
    shared_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    __table_args__ = (
        CheckConstraint(one_of("share", NoteShare), name="share"),
        CheckConstraint(one_of("media", NoteMedia), name="media"),  # NULL passes: words
    )


class Measure(Base):
    """Something a coach asks a client to rate or count on a schedule (the assignment that
    asks it points here). Its name and target are the coach's words about the client."""

    __tablename__ = "measures"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    coach_id: Mapped[int] = mapped_column(BigInteger, _user_fk(), index=True)
    client_id: Mapped[int] = mapped_column(BigInteger, _user_fk(), index=True)
    name: Mapped[str] = mapped_column(EncryptedText)
    kind: Mapped[str] = mapped_column(String(16))
    target: Mapped[Any] = mapped_column(EncryptedJSON, nullable=True)
    # A start-versus-now summary goes to both every this many weeks (0: never).
    summary_weeks: Mapped[int] = mapped_column(Integer, default=4, server_default="4")
    last_summary_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    __table_args__ = (
        CheckConstraint(one_of("kind", MeasureKind), name="kind"),
        CheckConstraint("summary_weeks BETWEEN 0 AND 52", name="summary_weeks"),
    )


class MeasureValue(Base):
    """One of a client's own ratings or counts: of a coach's measure, or a score an exercise
    asked for (the wheel of life's areas, how their life fits their first value), under
    ``key``. Encrypted like every other answer: which scale it is tells something too."""

    __tablename__ = "measure_values"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    client_id: Mapped[int] = mapped_column(BigInteger, _user_fk(), index=True)
    measure_id: Mapped[int | None] = mapped_column(
        BigId, ForeignKey("measures.id", ondelete="CASCADE"), index=True)
    key: Mapped[str] = mapped_column(EncryptedText)
    value: Mapped[Any] = mapped_column(EncryptedJSON)
    answered_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ProgrammeRun(Base):
    """A programme (a sequence of exercises over weeks, ``dialogues/programmes/``) given to
    a client: each step is an assignment pointing here, planned from ``starts_on`` in the
    client's zone."""

    __tablename__ = "programme_runs"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    coach_id: Mapped[int] = mapped_column(BigInteger, _user_fk(), index=True)
    client_id: Mapped[int] = mapped_column(BigInteger, _user_fk(), index=True)
    programme: Mapped[str] = mapped_column(String(64))
    starts_on: Mapped[date] = mapped_column(Date)
    status: Mapped[str] = mapped_column(String(16), default=ProgrammeStatus.ACTIVE,
                                        server_default=ProgrammeStatus.ACTIVE.value)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    __table_args__ = (CheckConstraint(one_of("status", ProgrammeStatus), name="status"),)


class CoachDialogue(Base):
    """A dialogue a coach uploaded as YAML: only their clients who speak its language can be
    given it. The source is the coach's own writing, encrypted at rest."""

    __tablename__ = "coach_dialogues"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    coach_id: Mapped[int] = mapped_column(BigInteger, _user_fk(), index=True)
    dialogue_id: Mapped[str] = mapped_column(String(64))
    locale: Mapped[str] = mapped_column(String(35))
    title: Mapped[str] = mapped_column(EncryptedText)
    source: Mapped[str] = mapped_column(EncryptedText)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    __table_args__ = (UniqueConstraint("coach_id", "dialogue_id"),)


#: Columns that address a user without a foreign key: a private chat's id is its user's id,
#: so a message to that chat is about them whoever queued it.
ADDRESS_COLUMNS: tuple[tuple[str, str], ...] = (("outbox", "chat_id"),)

#: Every (table, column) that refers to a user, used by export and erase.
USER_COLUMNS: tuple[tuple[str, str], ...] = (
    ("users", "id"),
    ("goals", "user_id"),
    ("answers", "user_id"),
    ("conversations", "user_id"),
    ("processed_updates", "user_id"),
    ("coach_links", "coach_id"),
    ("coach_links", "client_id"),
    ("invites", "coach_id"),
    ("invites", "used_by"),
    ("exercises", "coach_id"),
    ("assignments", "coach_id"),
    ("assignments", "client_id"),
    ("planned_checkins", "user_id"),
    ("outbox", "user_id"),
    ("outbox", "subject_user_id"),
    ("outbox", "chat_id"),
    ("coach_events", "coach_id"),
    ("coach_events", "client_id"),
    ("actions", "user_id"),
    ("coaching_sessions", "coach_id"),
    ("coaching_sessions", "client_id"),
    ("coach_messages", "coach_id"),
    ("coach_messages", "client_id"),
    ("coach_notes", "coach_id"),
    ("coach_notes", "client_id"),
    ("groups", "coach_id"),
    ("group_members", "user_id"),
    ("group_contributions", "user_id"),
    ("session_notes", "user_id"),
    ("group_sessions", "coach_id"),
    ("measures", "coach_id"),
    ("measures", "client_id"),
    ("measure_values", "client_id"),
    ("programme_runs", "coach_id"),
    ("programme_runs", "client_id"),
    ("coach_dialogues", "coach_id"),
)
