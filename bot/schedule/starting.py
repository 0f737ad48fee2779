"""Starting claimed rows: inside each user's turn, decide whether the row starts, is
postponed, missed or cancelled (``_decide``), start its dialogue into the outbox
(``start_one``), and the tick's whole pass (``claim_and_start``).

The rows' statuses and their lifecycle are described in :mod:`bot.schedule.claims`.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bot.coaching.checkins import has_active_goal
from bot.coaching.coach_dialogues import with_coach_dialogues
from bot.coaching.contracts import (
    CARE_CHECKIN,
    CHECKIN_MARKER,
    DAILY_CHECKIN,
    ENGAGEMENT_CLOSE,
    WEEKLY_REVIEW,
)
from bot.coaching.conversation import (
    Start,
    converse,
    custom_exercise_start,
    enqueue_replies,
)
from bot.coaching.engagements import closing_variables
from bot.coaching.groups import weekly_question_due
from bot.coaching.later import parse_ref
from bot.coaching.measures import measure_start
from bot.coaching.safety import CARE_KIND, HELD_FOR_THE_PAUSE, care_start, paused_by_crisis
from bot.coaching.sessions import Due, session_work
from bot.dialogue.model import DialogueSet
from bot.observability import describe_failure
from bot.schedule import claims, planning
from bot.schedule.claims import DEFAULT_LEASE, Claimed, release_expired
from bot.schedule.planner import RHYTHM_LOOKBACK, profile_of, user_gone
from bot.schedule.planning import Profile
from bot.schedule.sessions import GROUP_WORK
from bot.store import (
    Answer,
    Assignment,
    Conversation,
    Exercise,
    Measure,
    PlannedCheckin,
    Store,
    Turn,
)
from bot.store.kinds import SESSION_KINDS, CheckinKind, CheckinStatus

log = logging.getLogger(__name__)

BUSY_WINDOW = timedelta(minutes=30)
POSTPONE_BY = timedelta(minutes=30)
START_CONCURRENCY = 8  # check-ins started at once within a tick


class Outcome(StrEnum):
    """What became of a claimed row (the counts ``claim_and_start`` returns); the first
    three are also the row's new status."""

    STARTED = CheckinStatus.STARTED.value
    MISSED = CheckinStatus.MISSED.value
    CANCELLED = CheckinStatus.CANCELLED.value
    POSTPONED = "postponed"  # planned again, a little later
    HELD = "held"  # planned again for the end of the client's crisis pause
    LOST = "lost"  # another worker took it over after our lease ran out
    ERROR = "error"  # stays claimed; the lease brings it back


#: The dialogue each kind of planned row starts; an exercise's depends on its assignment.
STARTS: dict[CheckinKind, str] = {
    CheckinKind.DAILY: DAILY_CHECKIN,
    CheckinKind.WEEKLY: WEEKLY_REVIEW,
}


async def _still_mine(t: Turn, row: Claimed, worker_id: str) -> bool:
    current = (await t.session.execute(
        select(PlannedCheckin.status, PlannedCheckin.claimed_by)
        .where(PlannedCheckin.id == row.id).with_for_update()
    )).one_or_none()
    return current is not None and tuple(current) == (CheckinStatus.CLAIMED, worker_id)


async def _started_dailies(session: AsyncSession, user_id: int, now: datetime) -> list[datetime]:
    rows = await session.execute(
        select(PlannedCheckin.started_at)
        .where(PlannedCheckin.user_id == user_id, PlannedCheckin.kind == CheckinKind.DAILY,
               PlannedCheckin.status == CheckinStatus.STARTED,
               PlannedCheckin.started_at > now - RHYTHM_LOOKBACK)
        .order_by(PlannedCheckin.started_at))
    return [at for at in rows.scalars() if at is not None]


async def _last_checkin_answer(session: AsyncSession, user_id: int) -> datetime | None:
    at: datetime | None = (await session.execute(
        select(func.max(Answer.answered_at))
        .where(Answer.user_id == user_id, Answer.marker == CHECKIN_MARKER)
    )).scalar()
    return at


async def _daily_verdict(t: Turn, row: Claimed, profile: Profile,
                         now: datetime) -> Outcome | None:
    """Why a due daily check-in should not start (a status), or None to start it."""
    if not await has_active_goal(t.session, t.user_id):
        return Outcome.CANCELLED
    started = await _started_dailies(t.session, t.user_id, now)
    zone = profile.zone
    if any(planning.local_date(s, zone) == planning.local_date(row.due_at, zone)
           for s in started):
        return Outcome.CANCELLED  # one daily check-in per local day
    answered = await _last_checkin_answer(t.session, t.user_id)
    unanswered = sum(1 for s in started if answered is None or s > answered)
    last = started[-1] if started else None
    if not planning.daily_allowed_on(profile, row.due_at, last, unanswered):
        return Outcome.CANCELLED  # the gentler rhythm skips this one
    return None


async def _start_for(t: Turn, row: Claimed) -> Start | None:
    """What to start for this row: a check-in, a review, or an assigned exercise (a coach's
    own exercise runs in the custom exercise dialogue, filled with its title and text)."""
    dialogue = STARTS.get(CheckinKind(row.kind))
    if dialogue is not None:
        return Start(dialogue)
    if row.kind == CARE_KIND:
        return Start(CARE_CHECKIN, care_start(row.ref))
    if row.kind == CheckinKind.LATER:  # fresh from that step, as it asked
        where = parse_ref(row.ref)
        return None if where is None else Start(where[0], step=where[1])
    if row.kind == CheckinKind.ENGAGEMENT_CLOSE:
        closing = await closing_variables(t.session, t.user_id, row.ref)
        return None if closing is None else Start(ENGAGEMENT_CLOSE, closing)
    if not row.ref.isdigit():
        return None
    assignment = await t.session.get(Assignment, int(row.ref))
    if assignment is None or not assignment.active or assignment.paused \
            or assignment.client_id != t.user_id:
        return None
    if assignment.measure_id is not None:
        measure = await t.session.get(Measure, assignment.measure_id)
        return None if measure is None or measure.client_id != t.user_id else Start(
            *await measure_start(t.session, measure))
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


async def _decide(t: Turn, row: Claimed, dialogues: DialogueSet,
                  now: datetime) -> tuple[Outcome, Start | None]:
    """(status, what to start) for a claimed row inside its user's turn."""
    profile = profile_of(t.user)
    if user_gone(t.user, now, row.kind):
        return Outcome.CANCELLED, None
    if row.kind == CARE_KIND and planning.in_quiet(_local_minute(now, profile),
                                                   profile.quiet_start, profile.quiet_end):
        return Outcome.POSTPONED, None
    if not planning.same_local_day(row.due_at, now, profile.zone):
        return Outcome.MISSED, None
    if row.kind == CheckinKind.DAILY:
        verdict = await _daily_verdict(t, row, profile, now)
        if verdict is not None:
            return verdict, None
    action = await _start_for(t, row)
    if action is not None:  # a coach's own dialogue joins the set for its client's turn
        dialogues = await with_coach_dialogues(t, dialogues, [action.dialogue_id])
    if action is None or action.dialogue_id not in dialogues:
        log.warning("check-in %s (%s): nothing to start", row.id, row.kind)
        return Outcome.CANCELLED, None
    if await _busy(t, now):
        return Outcome.POSTPONED, None
    return Outcome.STARTED, action


def _local_minute(instant: datetime, profile: Profile) -> int:
    local = instant.astimezone(profile.zone)
    return local.hour * 60 + local.minute


async def _set_status(t: Turn, row: Claimed, status: Outcome, now: datetime) -> None:
    values: dict[str, Any]
    if status in (Outcome.POSTPONED, Outcome.HELD):
        later = t.user.crisis_pause_until if status == Outcome.HELD else None
        values = {"status": CheckinStatus.PLANNED, "due_at": later or now + POSTPONE_BY,
                  "claimed_by": None, "claimed_at": None}
    else:
        values = {"status": CheckinStatus(status.value)}
        if status == Outcome.STARTED:
            values["started_at"] = now
    await t.session.execute(
        update(PlannedCheckin).where(PlannedCheckin.id == row.id).values(**values)
        .execution_options(synchronize_session=False))


async def _session_work(t: Turn, row: Claimed, dialogues: DialogueSet,
                        now: datetime) -> tuple[Outcome, Start | None]:
    """(status, what to start) for a row of a coaching session; its messages (a reminder,
    the coach's prompt) are queued here. A coach, set up by an administrator, is never
    asked for consent; a client's pause and crisis pause hold theirs back: a reminder or a
    preparation due during a crisis pause waits for its end (``HELD_FOR_THE_PAUSE``)."""
    if row.kind in HELD_FOR_THE_PAUSE and not t.user.is_coach \
            and paused_by_crisis(t.user, now):
        return Outcome.HELD, None
    gone = False if row.kind == CheckinKind.GROUP_CHAT else not t.user.reachable \
        if t.user.is_coach else user_gone(t.user, now, row.kind)
    due = None if gone else await session_work(t, row.kind, row.ref, now)
    if due is None:
        return Outcome.CANCELLED, None
    if due.dialogue is None:
        _send(t, due)
        return Outcome.STARTED, None
    profile = profile_of(t.user)
    if not planning.same_local_day(row.due_at, now, profile.zone):
        return Outcome.MISSED, None
    if due.dialogue not in dialogues:
        return Outcome.CANCELLED, None
    if await _busy(t, now):
        return Outcome.POSTPONED, None
    _send(t, due)  # before the dialogue's first words
    return Outcome.STARTED, Start(due.dialogue)


def _send(t: Turn, due: Due) -> None:
    for message in due.messages:
        t.enqueue(due.chat_id or t.user_id, message, subject=due.subject)


async def start_one(t: Turn, row: Claimed, dialogues: DialogueSet, now: datetime,
                    worker_id: str) -> Outcome:
    """Inside the user's turn: start the row's dialogue into the outbox, or settle it."""
    if not await _still_mine(t, row, worker_id):
        return Outcome.LOST
    if row.kind in SESSION_KINDS or row.kind in GROUP_WORK:
        status, action = await _session_work(t, row, dialogues, now)
    elif row.kind == CheckinKind.GROUP_QUESTION:
        # For the group's chat, whether the coach can be written to does not matter.
        posted = await weekly_question_due(t, row.ref, now)
        status, action = (Outcome.STARTED if posted else Outcome.CANCELLED), None
    else:
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
        async def run(t: Turn) -> Outcome:
            return await start_one(t, row, dialogues, now, worker_id)

        async with at_once:
            try:
                status = await store.run_turn(row.user_id, run, create=False)  # erased: gone
            except Exception as exc:  # ids and the error's kind, never its text
                log.error("check-in %s of user %s could not be started: %s", row.id,
                          row.user_id, describe_failure(exc))
                status = Outcome.ERROR  # stays claimed; the lease brings it back
        results[status or Outcome.LOST] += 1

    await asyncio.gather(*(start(row) for row in await claims.claim(store, now, worker_id=worker_id,
                                                             batch=batch)))
    return results
