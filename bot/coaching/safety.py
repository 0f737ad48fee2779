"""What a crisis changes beyond the reply: coaching pauses, and a caring check-in follows.

After an urgent crisis nothing scheduled starts for the client for a day (check-ins,
exercises, reviews, session reminders), and nothing others queue for them goes out (a
coach's relayed message, session count, notice or celebration), unless they come back
first; the next day a gentle check-in asks how they are, with no coaching in it. What they
wrote is never stored or logged here: only that it happened.

A pause, not a loss:

* At the crisis moment, only what was already claimed to start is cancelled (no "How are
  you feeling?" minutes after the help lines). The rest stays planned: what falls due
  during the pause is skipped when it does (``planner.user_gone``: a check-in of hours ago
  is not sent late), except a session's reminder or preparation, which waits for the end of
  the pause (``HELD_FOR_THE_PAUSE``) and goes out then if the session is still to come.
* What others queue for the client waits in the outbox (``held``), as do their messages
  already queued at the crisis moment, and goes out once the pause is over
  (:func:`release_held`; the scheduler's pass also waits for the client's quiet hours).
* The client comes back (:func:`end_pause_when_client_comes_back`) with a message or a
  button of a dialogue that shows no sign of crisis: the pause ends at once, what is still
  planned comes at its own time, the held session reminders now, the held messages too.
  /sos, a message that only raised the safety question, a "no" to that question, a
  command, a message offered or kept as a note (the offer says the pause holds and offers
  no check-in), do not end it: the client has not come back to coaching.

The care check-in's answer acts (:func:`apply_care_answer`):

* "Better": nothing more to do. The pause is over by then, so everything planned comes back
  at its usual time, and the dialogue says so.
* "Worse" is first followed by the safety question (``safety_on`` in the dialogue): "yes" is
  a crisis again, "no" goes on as below.
* "About the same" or "Worse": the day after a crisis, "the same" means as bad as the day
  the help lines were needed, so both are still in need. The dialogue shows the help lines
  themselves, and the pause is extended by another day, with another care check-in at its
  end. Coming back first still ends it, as after the crisis itself.
* This happens at most ``MAX_CARE_CHECKINS`` days in a row (the round travels in the planned
  row's ``ref`` and comes to the dialogue as ``care.round``; ``care.last`` tells the dialogue
  it is the last). At the last one, a hard answer still gets the help lines, but the pause
  simply ends: the dialogue says that this was the last of these questions and that the
  check-ins, weekly reviews, exercises and session reminders start again unless the client
  asks there for a pause of their own (1 to 60 days, as /reminders sets), and that /sos is
  always there.
  Why stop asking: a bot that asks "how are you" every day for longer starts to stand in for
  the people who can really help, which it must not do (it is not a crisis service); a pause
  that went on by itself would also hold back the coach's messages (``may_write_now``) and
  keep the sign of a crisis on record longer than it serves. The client keeps the choice,
  and is told how to use it.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from enum import StrEnum

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from bot.coaching.contracts import CARE_ANSWER, SESSION_NOTE
from bot.dialogue.expr import Value
from bot.engine import Outcome, Turn
from bot.engine.crisis import CrisisSignal
from bot.observability import CRISIS_SIGNALS
from bot.store import Outbox, PlannedCheckin, UserView, rowcount
from bot.store import Turn as StoreTurn
from bot.store.kinds import CheckinKind, CheckinStatus, OutboxKind, OutboxStatus

log = logging.getLogger(__name__)

CRISIS_PAUSE = timedelta(hours=24)
CARE_KIND = CheckinKind.CARE
MAX_CARE_CHECKINS = 3  # care check-ins in a row after one crisis, at most
CARE_ROUND = "care.round"  # which care check-in in a row this is, from 1
CARE_LAST = "care.last"  # no other care check-in follows this one, whatever the answer
# Planned rows that have not started yet (see bot/schedule/claims.py for the statuses).
_NOT_STARTED = (CheckinStatus.PLANNED, CheckinStatus.CLAIMED)
#: Due during the pause, these wait for its end (planned again then), rather than being
#: skipped: a reminder of a session still to come is wanted whenever the client is back.
HELD_FOR_THE_PAUSE = frozenset({CheckinKind.SESSION_REMINDER, CheckinKind.SESSION_PREP})


class CareAnswer(StrEnum):
    """The answers of the care check-in (``CARE_ANSWER``, its option keys)."""

    BETTER = "better"
    SAME = "same"
    HARD = "hard"


STILL_IN_NEED = frozenset({CareAnswer.SAME, CareAnswer.HARD})


def record_signal(signal: CrisisSignal | None) -> None:
    """Count the detector's verdict and log what fired: never the words."""
    if signal is None:
        return
    CRISIS_SIGNALS.labels(signal.level.value, signal.category.value).inc()
    log.info("crisis signal: %s", signal.audit())


async def pause_after_crisis(t: StoreTurn, now: datetime) -> None:
    """Pause what was scheduled for the next day and plan the caring check-in after it."""
    await _pause_with_care(t, now, 1)


async def _pause_with_care(t: StoreTurn, now: datetime, care_round: int) -> None:
    """Pause what was scheduled for the next day and plan care check-in ``care_round`` at
    its end (instead of any other still planned). Nothing is scheduled for, or kept of,
    someone who has not agreed to anything yet."""
    if t.user.consent_at is None:
        return
    until = now + CRISIS_PAUSE
    t.user.crisis_pause_until = until
    claimed = (PlannedCheckin.user_id == t.user_id,
               PlannedCheckin.status == CheckinStatus.CLAIMED, PlannedCheckin.kind != CARE_KIND)
    await t.session.execute(  # a session's reminder about to go: for the pause's end
        update(PlannedCheckin).where(*claimed, PlannedCheckin.kind.in_(HELD_FOR_THE_PAUSE))
        .values(status=CheckinStatus.PLANNED, due_at=until, claimed_by=None, claimed_at=None)
        .execution_options(synchronize_session=False))
    await t.session.execute(  # a check-in about to start: never minutes after the help lines
        update(PlannedCheckin).where(*claimed)
        .values(status=CheckinStatus.CANCELLED, claimed_by=None, claimed_at=None)
        .execution_options(synchronize_session=False))
    await t.session.execute(  # others' messages already queued wait (before any hold-back)
        update(Outbox)
        .where(Outbox.chat_id == t.user_id, Outbox.user_id != t.user_id,
               Outbox.status == OutboxStatus.PENDING, Outbox.kind != OutboxKind.URGENT)
        .values(status=OutboxStatus.HELD)
        .execution_options(synchronize_session=False))
    await t.session.execute(
        update(PlannedCheckin)
        .where(PlannedCheckin.user_id == t.user_id, PlannedCheckin.kind == CARE_KIND,
               PlannedCheckin.status.in_(_NOT_STARTED))
        .values(status=CheckinStatus.CANCELLED)
        .execution_options(synchronize_session=False))
    t.session.add(PlannedCheckin(user_id=t.user_id, kind=CARE_KIND,
                                 ref="" if care_round == 1 else str(care_round), due_at=until))
    await t.session.flush()


def care_start(ref: str) -> dict[str, Value]:
    """What the care check-in planned with ``ref`` starts with: its round, and whether it is
    the last one."""
    care_round = int(ref) if ref.isdigit() else 1
    return {CARE_ROUND: care_round, CARE_LAST: care_round >= MAX_CARE_CHECKINS}


def still_in_need(outcome: Outcome) -> bool:
    """The client answered the care check-in with "about the same" or "worse"."""
    return any(a.variable == CARE_ANSWER and a.value in STILL_IN_NEED for a in outcome.saved)


async def apply_care_answer(t: StoreTurn, outcome: Outcome, now: datetime) -> None:
    """Still in need: another day of pause and another care check-in, unless this was the
    last one (see the module's docstring)."""
    if not still_in_need(outcome):
        return
    care_round = outcome.state.variables.get(CARE_ROUND)
    if not isinstance(care_round, int) or isinstance(care_round, bool):
        care_round = 1  # started before rounds were counted
    if care_round < MAX_CARE_CHECKINS:
        await _pause_with_care(t, now, care_round + 1)


def comes_back(action: object) -> bool:
    """The client's own message or press of a dialogue's button: not a command, /sos, a
    caption or an edit (``answers`` False), which do not show they are back to coaching."""
    return isinstance(action, Turn) and action.answers and action.command is None \
        and (action.text is not None or action.button is not None)


def keeps_the_pause(outcome: Outcome | None) -> bool:
    """What the client sent does not show they came back: a crisis, a possible one (they
    were just asked the safety question, answered it "no" or wrote past it, or were pointed
    to help for someone else), the care check-in answered "still in need" (which extends
    the pause), a note offered or kept ("ok, thanks" after the help lines is no return to
    coaching), or nothing a dialogue took."""
    return outcome is None or outcome.crisis or outcome.signal is not None \
        or outcome.safety_answered or still_in_need(outcome) or _about_a_note(outcome)


def _about_a_note(outcome: Outcome) -> bool:
    stack = outcome.state.stack
    return SESSION_NOTE in outcome.finished or (bool(stack) and stack[-1].dialogue == SESSION_NOTE)


async def end_pause_when_client_comes_back(t: StoreTurn, outcome: Outcome | None,
                                           now: datetime) -> None:
    """A client who writes again, or presses a dialogue's button (the caller knows which),
    showing no sign of crisis, takes the pause off: they came back. What is still planned
    comes at its own time; the session reminders held for the pause's end come now, and so
    do the messages others queued meanwhile."""
    until = t.user.crisis_pause_until
    if keeps_the_pause(outcome) or until is None or until <= now:
        return
    t.user.crisis_pause_until = None
    await t.session.execute(
        update(PlannedCheckin)
        .where(PlannedCheckin.user_id == t.user_id, PlannedCheckin.kind.in_(HELD_FOR_THE_PAUSE),
               PlannedCheckin.status == CheckinStatus.PLANNED, PlannedCheckin.due_at == until)
        .values(due_at=now)
        .execution_options(synchronize_session=False))
    await release_held(t.session, t.user_id, now)


async def release_held(session: AsyncSession, user_id: int, now: datetime) -> int:
    """What others queued for the client during their pause goes out (behind anything
    already queued for their chat). Returns how many."""
    released = await session.execute(
        update(Outbox).where(Outbox.chat_id == user_id, Outbox.status == OutboxStatus.HELD)
        .values(status=OutboxStatus.PENDING, next_attempt_at=now)
        .execution_options(synchronize_session=False))
    return rowcount(released)


def paused_by_crisis(user: UserView, now: datetime) -> bool:
    return user.crisis_pause_until is not None and user.crisis_pause_until > now
