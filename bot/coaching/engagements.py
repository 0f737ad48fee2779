"""The end of an engagement: when the last of the sessions a coach and a client agreed on is
marked held or missed, the client is invited (a planned row, outside their quiet hours) to
look back from their first goal to now, and chooses whether to stay linked with the coach. A
no ends the link as /coaches does, and the coach is told (link_end.apply_closing)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.coaching.links import active_link
from bot.dialogue.expr import Value
from bot.schedule.planning import Profile, out_of_quiet, wall_to_utc, zone_of
from bot.store import CoachLink, CommitmentAction, Goal, PlannedCheckin, User
from bot.store.kinds import CheckinKind, CheckinStatus

#: The variables the closing starts with (carried: never kept as answers).
PREFIX = "closing."
COACH_ID, STAY, END = "closing.coach_id", "closing.stay", "closing.end"  # END: "no", confirmed


def _due(now: datetime, client: Profile) -> datetime:
    """Now, or when the client's quiet hours end."""
    local = now.astimezone(client.zone)
    day, minute = out_of_quiet(local.date(), local.hour * 60 + local.minute, client)
    if (day, minute) == (local.date(), local.hour * 60 + local.minute):
        return now
    return wall_to_utc(day, minute, client.zone)


async def plan_closing(session: AsyncSession, coach_id: int, client_id: int, client: Profile,
                       now: datetime) -> bool:
    """Plan the client's look back with this coach, unless one is already planned."""
    planned = (await session.execute(select(PlannedCheckin.id).where(
        PlannedCheckin.user_id == client_id, PlannedCheckin.kind == CheckinKind.ENGAGEMENT_CLOSE,
        PlannedCheckin.ref == str(coach_id),
        PlannedCheckin.status.in_((CheckinStatus.PLANNED, CheckinStatus.CLAIMED)))
    )).first()
    if planned is not None:
        return False
    session.add(PlannedCheckin(user_id=client_id, kind=CheckinKind.ENGAGEMENT_CLOSE,
                               ref=str(coach_id), due_at=_due(now, client),
                               status=CheckinStatus.PLANNED))
    await session.flush()
    return True


async def closing_variables(session: AsyncSession, client_id: int,
                            coach_ref: str) -> dict[str, Value] | None:
    """What the look back starts with, or None when the link has ended meanwhile: the
    coach, the client's first goal in their words, where they placed themselves on it then
    and at their latest rating of that same goal (and on which local day, when known), the
    goal they have now if it is another one (its words only: its numbers are on another
    goal's scale), and how many of their actions they did since the link."""
    if not coach_ref.isdigit():
        return None
    coach_id = int(coach_ref)
    link = (await session.execute(select(CoachLink).where(
        active_link(coach_id, client_id)))).scalar_one_or_none()
    coach, client = await session.get(User, coach_id), await session.get(User, client_id)
    if link is None or coach is None or client is None:
        return None
    goals = list((await session.execute(select(Goal).where(Goal.user_id == client_id)
                                        .order_by(Goal.created_at, Goal.id))).scalars())
    first = goals[0] if goals else None
    latest = goals[-1] if goals else None
    done = await session.scalar(select(func.count()).select_from(CommitmentAction).where(
        CommitmentAction.user_id == client_id, CommitmentAction.status == "done",
        CommitmentAction.created_at >= link.created_at))
    variables: dict[str, Value] = {
        "closing.coach": coach.first_name or "", COACH_ID: coach_id,
        "closing.actions_done": int(done or 0),
        "closing.first_goal": None if first is None else first.title,
        "closing.baseline": None if first is None else first.baseline,
        "closing.current": None if first is None else first.current,
        "closing.current_on": None if first is None or first.current_at is None
        else first.current_at.astimezone(zone_of(client.time_zone)).date().isoformat(),
        "closing.later_goal": None if latest is None or latest is first else latest.title}
    return variables
