"""A dialogue that comes back later on its own (a ``later`` step, see the engine): planned
as a row of kind ``later`` whose ref names the dialogue and the step it comes back at; the
scheduler starts it there (``bot/schedule/starting.py``)."""

from __future__ import annotations

import logging

from sqlalchemy import select, update

from bot.coaching.checkins import user_zone
from bot.engine import Later
from bot.schedule.planning import wall_to_utc
from bot.store import PlannedCheckin
from bot.store import Turn as StoreTurn
from bot.store.kinds import CheckinKind, CheckinStatus

log = logging.getLogger(__name__)

_REF_SEPARATOR = ":"
#: ``planned_checkins.ref`` is a String(64).
MAX_REF = 64
_WAITING = (CheckinStatus.PLANNED, CheckinStatus.CLAIMED)


def later_ref(dialogue_id: str, step_id: str) -> str:
    return f"{dialogue_id}{_REF_SEPARATOR}{step_id}"


def parse_ref(ref: str) -> tuple[str, str] | None:
    """(dialogue id, step id) of a ``later`` row, or None for a ref that names none."""
    dialogue_id, separator, step_id = ref.partition(_REF_SEPARATOR)
    return (dialogue_id, step_id) if separator and dialogue_id and step_id else None


async def plan_later(t: StoreTurn, later: Later) -> bool:
    """Plan the dialogue's coming back, in the user's zone. One at a time per dialogue and
    step: running it again before it came back moves it to the new time. Returns whether
    it was planned."""
    ref = later_ref(later.dialogue, later.step)
    if len(ref) > MAX_REF:  # ids only, never what anyone wrote
        log.warning("a later step's reference is %d characters long (at most %d): not "
                    "planned", len(ref), MAX_REF)
        return False
    due = wall_to_utc(later.on, later.at.hour * 60 + later.at.minute, user_zone(t.user))
    mine = (PlannedCheckin.user_id == t.user_id, PlannedCheckin.kind == CheckinKind.LATER,
            PlannedCheckin.ref == ref)
    await t.session.execute(
        update(PlannedCheckin).where(*mine, PlannedCheckin.due_at != due,
                                     PlannedCheckin.status.in_(_WAITING))
        .values(status=CheckinStatus.CANCELLED)
        .execution_options(synchronize_session=False))
    same = (await t.session.execute(
        select(PlannedCheckin).where(*mine, PlannedCheckin.due_at == due))).scalar_one_or_none()
    if same is None:
        t.session.add(PlannedCheckin(user_id=t.user_id, kind=CheckinKind.LATER, ref=ref,
                                     due_at=due))
    elif same.status not in _WAITING:
        same.status, same.claimed_by, same.claimed_at = CheckinStatus.PLANNED, None, None
    await t.session.flush()
    return True
