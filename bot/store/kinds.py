"""The statuses and kinds stored in the database, one enum each; the tables' CHECK constraints
are built from them (``one_of``), so a value cannot be added in one place only.

"Kind" means different things in different tables, so each has its own enum. They are
``StrEnum``: a member is its string (``OutboxStatus.SENT == "sent"``), in rows, in JSON and
in SQL, so rows written before these enums read back unchanged.
"""

from __future__ import annotations

from enum import StrEnum


class GoalStatus(StrEnum):
    ACTIVE = "active"
    DONE = "done"
    DROPPED = "dropped"


class CheckinKind(StrEnum):
    """What a planned row starts when it falls due."""

    DAILY = "daily"  # the daily check-in
    WEEKLY = "weekly"  # the weekly review
    EXERCISE = "exercise"  # an exercise a coach assigned (ref: the assignment)
    CARE = "care"  # the caring check-in the day after a crisis
    # Around a coaching session (ref: the session; the row's user is who hears of it).
    SESSION_REMINDER = "session_reminder"  # to each of the two, before it
    SESSION_PREP = "session_prep"  # the client's preparation, the day before
    SESSION_RECAP = "session_recap"  # the client's recap, when it is over
    SESSION_OUTCOME = "session_outcome"  # the coach's held-or-missed prompt, when it is over
    SESSION_BRIEF = "session_brief"  # the coach's brief, when their reminder comes earlier
    # The client's look back when the agreed sessions are all held (ref: the coach).
    ENGAGEMENT_CLOSE = "engagement_close"
    # Around a group session (ref: ``g<group session id>``; the row's user: the coach).
    GROUP_SESSION = "group_session"  # the coach's reminder, before it
    GROUP_CHAT = "group_chat"  # the reminder in the group's linked chat, naming no one
    # The week's question in a group's linked chat (ref: the group; the row's user: the coach).
    GROUP_QUESTION = "group_question"
    # A dialogue coming back on its own, as a ``later`` step of it asked (a day-long
    # exercise asks in the evening how it went). ref: ``<dialogue id>:<step id>``.
    LATER = "later"


#: The kinds of the rows a coaching session plans: the ``SESSION_`` members above.
SESSION_KINDS: tuple[CheckinKind, ...] = tuple(
    kind for kind in CheckinKind if kind.name.startswith("SESSION_"))


class CheckinStatus(StrEnum):
    PLANNED = "planned"
    CLAIMED = "claimed"  # a scheduler took it (leased)
    STARTED = "started"  # its dialogue's first message is in the outbox
    MISSED = "missed"
    CANCELLED = "cancelled"


class OutboxStatus(StrEnum):
    PENDING = "pending"  # waiting
    SENDING = "sending"  # claimed, leased
    SENT = "sent"
    FAILED = "failed"  # gave up
    CANCELLED = "cancelled"  # held back, never sent: superseded by a later or urgent message
    # Queued for a person in a crisis pause by someone else (a coach's action): waits, not
    # undelivered yet, until the pause is over (``bot/coaching/safety.py``).
    HELD = "held"


class OutboxKind(StrEnum):
    MESSAGE = "message"  # scheduled, from a coach, a digest
    REPLY = "reply"  # to the user's own message: a later reply supersedes it while unsent
    URGENT = "urgent"  # goes ahead of anything queued for the chat


class CoachEventKind(StrEnum):
    """What a coach is told about, in batches; never the content of what the client wrote.
    Stored encrypted (a row must not tell that a client had a crisis), so no CHECK: the code
    that records an event checks it (``bot/coaching/events.py``)."""

    EXERCISE_DONE = "exercise_done"
    EXERCISE_PARTLY = "exercise_partly"
    EXERCISE_SKIPPED = "exercise_skipped"
    CRISIS = "crisis"
    SILENT = "silent"  # no answer for the link's ``silent_days``
    SKIPPED_TWICE = "skipped_twice"  # the same exercise skipped twice in a row
    GOAL_DONE = "goal_done"


class NoteMedia(StrEnum):
    """What a client's note for their session is, when it is not only words: kept by its
    Telegram file id, passed on to the coach with copyMessage."""

    VOICE = "voice"
    AUDIO = "audio"
    PHOTO = "photo"
    DOCUMENT = "document"
    VIDEO = "video"
    VIDEO_NOTE = "video_note"


class NoteShare(StrEnum):
    """Who a client's note is for, as the client said for that note."""

    PRIVATE = "private"  # the client only
    BRIEF = "brief"  # the coach, with the brief before the next session
    SENT = "sent"  # the coach, at once (sent when the client said so)


class ScheduleKind(StrEnum):
    """How an assignment repeats (its ``schedule`` JSON's ``kind``)."""

    DAILY = "daily"  # every day, for ``days`` days
    WEEKDAYS = "weekdays"  # on ``weekdays`` (Monday = 0)
    EVERY = "every"  # every ``every`` days from the start


class MeasureKind(StrEnum):
    """What a coach's measure asks for."""

    SCALE = "scale"  # 1 to 10
    NUMBER = "number"  # any number (kilometres, hours of sleep, pages)


class ProgrammeStatus(StrEnum):
    ACTIVE = "active"
    PAUSED = "paused"
    CANCELLED = "cancelled"


class GroupKind(StrEnum):
    TEAM = "team"  # a team coached towards a shared result
    COHORT = "cohort"  # people with similar goals going through a programme together


class Visibility(StrEnum):
    """What a group's member lets its coach see of their own progress."""

    FIGURES = "figures"  # only counted in the group's figures (at least three people)
    PROGRESS = "progress"  # also their own progress, as a one-to-one client's


class AddressForm(StrEnum):
    """How a client chose to be addressed where their language marks grammatical gender (the
    gettext context of a text's variant, ``bot.i18n.ADDRESS_CONTEXTS``); neutral is the
    default everyone sees until they choose."""

    NEUTRAL = "neutral"
    FEMININE = "feminine"
    MASCULINE = "masculine"


def one_of(column: str, values: type[StrEnum]) -> str:
    """The CHECK constraint's SQL: ``column IN ('a', 'b')``, in the enum's order."""
    return f"{column} IN (" + ", ".join(f"'{member.value}'" for member in values) + ")"
