"""A client's progress, as they (and, with their consent, their coach) see it."""

from __future__ import annotations

from datetime import date

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.coaching.checkins import checkin_dates, user_zone
from bot.coaching.streaks import best_run, previous_chosen, run_through, streak
from bot.engine import Context
from bot.store import Goal, UserView
from bot.store.kinds import GoalStatus


def current_streak(days: list[date], today: date,
                   chosen: int | None = None) -> tuple[int, int]:
    """(current, best) outside a check-in: today counts only once it has one; until then
    the run up to the last chosen day before it (``chosen``: the client's check-in days)."""
    if today in days:
        return streak(days, today, chosen)
    return run_through(set(days), previous_chosen(today, chosen), chosen), best_run(days, chosen)


async def progress_text(session: AsyncSession, user: UserView, ctx: Context) -> str:
    tr = ctx.translator
    goals = list((await session.execute(
        select(Goal).where(Goal.user_id == user.id).order_by(Goal.created_at, Goal.id)
    )).scalars())
    active = [g for g in goals if g.status == GoalStatus.ACTIVE]
    done = [g for g in goals if g.status == GoalStatus.DONE]
    lines: list[str] = []
    if not active:
        lines.append(tr.gettext("You have no goal in progress. Send /goal to set one."))
    for goal in active:
        lines.append(f"• {tr.words(goal.title)}")
        if goal.baseline is not None and goal.target is not None:
            lines.append("  " + tr.gettext(
                "Started at {baseline}, now at {current}, aiming for {target} "
                "(on a scale of 1 to 10).").format(
                baseline=tr.number(goal.baseline),
                current=tr.number(goal.current if goal.current is not None else goal.baseline),
                target=tr.number(goal.target)))
    if done:
        lines.append(tr.ngettext("You have reached {count} goal so far.",
                                 "You have reached {count} goals so far.",
                                 len(done)).format(count=tr.number(len(done))))
    days = await checkin_dates(session, user, user_zone(user))
    current, best = current_streak(days, ctx.today, user.checkin_days)
    if current:
        lines.append(tr.ngettext("Check-ins in a row: {count} day.",
                                 "Check-ins in a row: {count} days.",
                                 current).format(count=tr.number(current)))
    if best > current:
        lines.append(tr.ngettext("Your longest run so far: {count} day.",
                                 "Your longest run so far: {count} days.",
                                 best).format(count=tr.number(best)))
    return "\n".join(lines)
