"""A client ends their link with a coach (/coach, a no when an engagement closes, or leaving
the group whose membership made it; or their coach removes them from that group): the
one-to-one sessions still to come go with it, each announced as any cancellation is (the
client's calendar file again, cancelled, with the same UIDs and a higher SEQUENCE; the coach
told which sessions went, in their language and zone), saying that the link ended. A coach
who had no session to lose is told that the client stopped sharing their progress."""

from __future__ import annotations

from datetime import datetime

from bot.coaching.contracts import ENGAGEMENT_CLOSE
from bot.coaching.engagements import COACH_ID, END, STAY
from bot.coaching.links import Unlinked, unlink
from bot.coaching.sessions import SessionChange, announce
from bot.engine import Outcome
from bot.i18n import translator_for
from bot.store import Turn as StoreTurn
from bot.store import User


async def announce_link_end(t: StoreTurn, ended: Unlinked, now: datetime,
                            change: SessionChange = SessionChange.LINK_ENDED, *,
                            coach_told: bool = False) -> None:
    """Announce the one-to-one sessions that went with the link: as the client's doing,
    or (``SessionChange.CANCELLED``) the coach's. When it was the client's doing, a coach
    whom no cancelled session tells (and ``coach_told`` did not) hears that the link ended."""
    if change is SessionChange.LINK_ENDED and not coach_told:
        told_by_sessions = {cs.coach_id for cs in ended.sessions}
        for coach_id in ended.coaches:
            if coach_id not in told_by_sessions:
                await _tell_coach_sharing_stopped(t, coach_id)
    if ended.sessions:
        await announce(t, ended.sessions, change, now)


async def _tell_coach_sharing_stopped(t: StoreTurn, coach_id: int) -> None:
    coach = await t.session.get(User, coach_id)
    if coach is None:
        return
    tr = translator_for(coach.locale)
    text = tr.gettext("{person} has stopped sharing their progress with you: you no longer "
                      "see it, and the exercises you assigned them have stopped.")
    t.enqueue(coach_id, {"text": text.format(
        person=tr.person(t.user.first_name, t.user_id))}, subject=t.user_id)


async def apply_closing(t: StoreTurn, outcome: Outcome, now: datetime) -> list[str]:
    """When the look back ends: a no, confirmed, ends the link (as /coaches does) and the
    coach is told; staying is told to the coach too. Returns nothing more for the client
    (the dialogue said it)."""
    variables = outcome.state.variables
    coach_id, asked = variables.get(COACH_ID), variables.get(STAY)
    if ENGAGEMENT_CLOSE not in outcome.finished or not isinstance(coach_id, int) \
            or not isinstance(asked, bool):
        return []
    stay = asked or variables.get(END) is not True
    coach = await t.session.get(User, coach_id)
    if coach is None:
        return []
    ended = None if stay else await unlink(t.session, t.user_id, coach_id, now)
    if ended is not None and not ended.coaches:
        return []
    tr = translator_for(coach.locale)
    name = tr.person(t.user.first_name, t.user_id)
    text = tr.gettext("{person} looked back on your sessions together and chose to keep "
                      "sharing their progress with you.") if stay else tr.gettext(
        "{person} looked back on your sessions together and chose to stop sharing their "
        "progress with you.")
    t.enqueue(coach_id, {"text": text.format(person=name)}, subject=t.user_id)
    if ended is not None:
        await announce_link_end(t, ended, now, coach_told=True)
    return []
