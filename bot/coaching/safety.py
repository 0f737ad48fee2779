"""What a crisis changes beyond the reply: coaching pauses, and a caring check-in follows.

After an urgent crisis nothing scheduled starts for the client for a day (check-ins,
exercises, reviews), unless they write first; what was already due is cancelled in the same
transaction as the help lines; the next day a gentle check-in asks how they are, with no
coaching in it. What they wrote is never stored or logged here: only that it happened.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from sqlalchemy import update

from bot.engine import Outcome
from bot.engine.crisis import CrisisSignal
from bot.observability import CRISIS_SIGNALS
from bot.store import PlannedCheckin, TurnUser, UserView
from bot.store import Turn as StoreTurn
from bot.store.kinds import CheckinKind, CheckinStatus

log = logging.getLogger(__name__)

CRISIS_PAUSE = timedelta(hours=24)
CARE_KIND = CheckinKind.CARE
# Planned rows that have not started yet (see bot/schedule/claims.py for the statuses).
_NOT_STARTED = (CheckinStatus.PLANNED, CheckinStatus.CLAIMED)


def record_signal(signal: CrisisSignal | None) -> None:
    """Count the detector's verdict and log what fired: never the words."""
    if signal is None:
        return
    CRISIS_SIGNALS.labels(signal.level.value, signal.category.value).inc()
    log.info("crisis signal: %s", signal.audit())


async def pause_after_crisis(t: StoreTurn, now: datetime) -> None:
    """Pause what was scheduled for the next day and plan the caring check-in after it.
    Nothing is scheduled for, or kept of, someone who has not agreed to anything yet."""
    if t.user.consent_at is None:
        return
    until = now + CRISIS_PAUSE
    t.user.crisis_pause_until = until
    await t.session.execute(
        update(PlannedCheckin)
        .where(PlannedCheckin.user_id == t.user_id, PlannedCheckin.status.in_(_NOT_STARTED),
               PlannedCheckin.kind != CARE_KIND, PlannedCheckin.due_at < until)
        .values(status=CheckinStatus.CANCELLED, claimed_by=None, claimed_at=None)
        .execution_options(synchronize_session=False))
    await t.session.execute(
        update(PlannedCheckin)
        .where(PlannedCheckin.user_id == t.user_id, PlannedCheckin.kind == CARE_KIND,
               PlannedCheckin.status.in_(_NOT_STARTED))
        .values(status=CheckinStatus.CANCELLED)
        .execution_options(synchronize_session=False))
    t.session.add(PlannedCheckin(user_id=t.user_id, kind=CARE_KIND, ref="", due_at=until))
    await t.session.flush()


def end_pause_when_client_writes(user: TurnUser, outcome: Outcome | None,
                                 now: datetime) -> None:
    """A client who writes again (not in crisis) takes the pause off: they came back."""
    crisis = outcome is not None and outcome.crisis
    if not crisis and user.crisis_pause_until is not None and user.crisis_pause_until > now:
        user.crisis_pause_until = None


def paused_by_crisis(user: UserView, now: datetime) -> bool:
    return user.crisis_pause_until is not None and user.crisis_pause_until > now
