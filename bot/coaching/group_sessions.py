"""Sessions of a whole group, on the one-to-one session machinery: a ``GroupSession`` per
occurrence (the coach's reminder and the linked chat's hang on it) and, for each current
member, their own copy (a ``CoachingSession`` with ``group_session_id``): reminded at their
own local time in their language, with their own calendar file and their own "I can't make
it" (bot/coaching/sessions.py). A move (of one, or of the rest of a series) carries every
copy with it and tells each member again. Whoever joins later gets copies of the sessions to
come; whoever leaves (or is removed) has theirs cancelled (``groups.leave``) and gets the
calendar's cancellation here.

Every function takes the caller's session (or turn) and an explicit ``now``; the coach
reaches a group only through ``groups.coach_group``.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.coaching import groups
from bot.coaching.coach_errors import NotYourGroup
from bot.coaching.sessions import (
    PLACE_DIALOGUE,
    UID_DOMAIN,
    NewSessions,
    SessionChange,
    SessionNotFound,
    calendar_payload,
    chosen_sessions,
    plan_group_rows,
    plan_rows,
    session_lines,
    wall_clock_in,
)
from bot.engine import Outcome
from bot.i18n import Translator, translator_for
from bot.schedule.sessions import Repeat, moved_series, series, start_utc
from bot.store import CoachingSession, Group, GroupSession, SessionStatus, User
from bot.store import Turn as StoreTurn


def _copy(gs: GroupSession, member_id: int, now: datetime) -> CoachingSession:
    return CoachingSession(
        uid=f"{secrets.token_hex(12)}@{UID_DOMAIN}", series=gs.series, coach_id=gs.coach_id,
        client_id=member_id, local_start=gs.local_start, zone=gs.zone, starts_at=gs.starts_at,
        minutes=gs.minutes, mode=gs.mode, place=gs.place, created_at=now, updated_at=now,
        group_session_id=gs.id)


async def schedule_group_sessions(session: AsyncSession, coach_id: int, chosen: NewSessions,
                                  now: datetime) -> tuple[list[GroupSession],
                                                          list[CoachingSession]]:
    """The session or series for the coach's group (``chosen.group_id``): each current
    member gets their own copy, planned in their own zone. Returns the group sessions and
    the copies."""
    assert chosen.group_id is not None
    members = await groups.session_attendees(session, coach_id, chosen.group_id)
    tag = secrets.token_hex(8) if chosen.repeat is not Repeat.ONCE else None
    created: list[GroupSession] = []
    for local in series(chosen.first, chosen.repeat, chosen.count):
        starts_at = start_utc(local, chosen.zone)
        if starts_at <= now:
            continue
        gs = GroupSession(group_id=chosen.group_id, coach_id=coach_id, series=tag,
                          local_start=local, zone=chosen.zone, starts_at=starts_at,
                          minutes=chosen.minutes, mode=chosen.mode, place=chosen.place,
                          created_at=now)
        session.add(gs)
        created.append(gs)
    await session.flush()
    copies = [_copy(gs, member, now) for gs in created for member in members]
    session.add_all(copies)
    await session.flush()
    for gs in created:
        await plan_group_rows(session, gs, now)
    for cs in copies:
        await plan_rows(session, cs, now)
    return created, copies


async def to_come(session: AsyncSession, group_id: int, now: datetime) -> list[GroupSession]:
    return list((await session.execute(
        select(GroupSession).where(GroupSession.group_id == group_id,
                                   GroupSession.status == SessionStatus.SCHEDULED,
                                   GroupSession.starts_at > now)
        .order_by(GroupSession.starts_at))).scalars())


async def copies_for_joiner(session: AsyncSession, group_id: int, member_id: int,
                            now: datetime) -> list[CoachingSession]:
    """A member who joins gets a copy of each of the group's sessions to come that they
    have no copy of yet (someone who left and came back gets new ones)."""
    have = set((await session.execute(
        select(CoachingSession.group_session_id).where(
            groups.member_sessions(member_id, group_id),
            CoachingSession.status == SessionStatus.SCHEDULED))).scalars())
    copies = [_copy(gs, member_id, now) for gs in await to_come(session, group_id, now)
              if gs.id not in have]
    session.add_all(copies)
    await session.flush()
    for cs in copies:
        await plan_rows(session, cs, now)
    return copies


async def member_copies(session: AsyncSession, member_id: int, group_id: int,
                        now: datetime) -> list[CoachingSession]:
    """The member's copies of the group's sessions to come (before they leave)."""
    return list((await session.execute(
        select(CoachingSession).where(groups.member_sessions(member_id, group_id),
                                      CoachingSession.status == SessionStatus.SCHEDULED,
                                      CoachingSession.starts_at > now)
        .order_by(CoachingSession.starts_at))).scalars())


async def coach_group_session(session: AsyncSession, coach_id: int, gs_id: int,
                              now: datetime) -> GroupSession:
    """One of the coach's group sessions still to come."""
    gs = await session.get(GroupSession, gs_id)
    if gs is None or gs.coach_id != coach_id or gs.status != SessionStatus.SCHEDULED \
            or gs.starts_at <= now:
        raise SessionNotFound("no such group session to come")
    return gs


async def _chosen(session: AsyncSession, gs: GroupSession, rest_of_series: bool
                  ) -> tuple[list[GroupSession], list[CoachingSession]]:
    """The group session (or it and the rest of its series still scheduled) with every
    member's copy still scheduled."""
    chosen = [gs]
    if rest_of_series and gs.series is not None:
        chosen = list((await session.execute(
            select(GroupSession).where(GroupSession.series == gs.series,
                                       GroupSession.group_id == gs.group_id,
                                       GroupSession.status == SessionStatus.SCHEDULED,
                                       GroupSession.starts_at >= gs.starts_at)
            .order_by(GroupSession.starts_at))).scalars())
    copies = list((await session.execute(
        select(CoachingSession).where(
            CoachingSession.group_session_id.in_([each.id for each in chosen]),
            CoachingSession.status == SessionStatus.SCHEDULED)
        .order_by(CoachingSession.client_id, CoachingSession.starts_at))).scalars())
    return chosen, copies


async def cancel_group_sessions(session: AsyncSession, coach_id: int, gs_id: int,
                                now: datetime, *, rest_of_series: bool = False
                                ) -> tuple[list[GroupSession], list[CoachingSession]]:
    """Cancel one of the coach's group sessions to come (or it and the rest of its
    series) with every member's copy."""
    gs = await coach_group_session(session, coach_id, gs_id, now)
    chosen, copies = await _chosen(session, gs, rest_of_series)
    for each in chosen:
        each.status = SessionStatus.CANCELLED
        await plan_group_rows(session, each, now)
    for cs in copies:
        cs.cancel(now)
        await plan_rows(session, cs, now)
    await session.flush()
    return chosen, copies


async def move_group_sessions(session: AsyncSession, coach_id: int, gs_id: int,
                              new_local: datetime, zone: str, now: datetime, *,
                              rest_of_series: bool = False
                              ) -> tuple[list[GroupSession], list[CoachingSession]]:
    """Move one of the coach's group sessions to a wall-clock time of ``zone`` (the
    mover's), or it and each later one of its series by the same change of day and time in
    the zone it was set in; every member's copy follows, planned again in their zone."""
    gs = await coach_group_session(session, coach_id, gs_id, now)
    chosen, copies = await _chosen(session, gs, rest_of_series)
    starts = moved_series([each.local_start for each in chosen], gs.local_start,
                          wall_clock_in(new_local, zone, gs.zone))
    instants = [start_utc(local, each.zone) for each, local in zip(chosen, starts, strict=True)]
    if min(instants) <= now:
        raise ValueError("a session cannot move to the past")
    moved = {}
    for each, local, starts_at in zip(chosen, starts, instants, strict=True):
        each.local_start, each.starts_at = local, starts_at
        moved[each.id] = each
        await plan_group_rows(session, each, now)
    for cs in copies:
        assert cs.group_session_id is not None
        of = moved[cs.group_session_id]
        cs.local_start, cs.zone, cs.starts_at = of.local_start, of.zone, of.starts_at
        cs.revise(now)
        await plan_rows(session, cs, now)
    await session.flush()
    return chosen, copies


# -- telling people -------------------------------------------------------------------------


def _summary(group: Group, tr: Translator) -> str:
    return tr.gettext("Group session: {group}").format(group=group.name)


async def tell_members(t: StoreTurn, group: Group, copies: Sequence[CoachingSession],
                       now: datetime, change: SessionChange = SessionChange.NEW) -> int:
    """Each member hears of their copies in their own zone and language, with the calendar
    file (a cancellation when cancelled). Returns how many members were told."""
    by_member: dict[int, list[CoachingSession]] = {}
    for cs in copies:
        by_member.setdefault(cs.client_id, []).append(cs)
    for member_id, theirs in by_member.items():
        member = await t.session.get(User, member_id)
        if member is None:
            continue
        tr = translator_for(member.locale)
        if change is SessionChange.CANCELLED:
            heading = tr.ngettext(
                "This session of your group “{group}” is cancelled:",
                "These {count} sessions of your group “{group}” are cancelled:", len(theirs))
        elif change is SessionChange.MOVED:
            heading = tr.ngettext(
                "This session of your group “{group}” has moved:",
                "These {count} sessions of your group “{group}” have moved:", len(theirs))
        else:
            heading = tr.ngettext(
                "Your group “{group}” has a session planned:",
                "Your group “{group}” has {count} sessions planned:", len(theirs))
        text = heading.format(group=tr.words(group.name),
                              count=tr.isolate(tr.number(len(theirs))))
        t.enqueue(member_id, {"text": text + "\n" + session_lines(theirs, member.time_zone, tr)})
        t.enqueue(member_id, calendar_payload(theirs, tr, now, _summary(group, tr)))
    return len(by_member)


async def apply_new_group_sessions(t: StoreTurn, outcome: Outcome, now: datetime) -> list[str]:
    """A coach who finished choosing a group's sessions (the place dialogue, with
    ``session.client`` = ``g<group>``) gets them; each member is told in private. Returns
    what to tell the coach."""
    if PLACE_DIALOGUE not in outcome.finished or not t.user.is_coach:
        return []
    chosen = chosen_sessions(outcome.state.variables, t.user.time_zone)
    if chosen is None or chosen.group_id is None:
        return []
    tr = translator_for(t.user.locale)
    try:
        group = await groups.coach_group(t.session, t.user_id, chosen.group_id)
        created, copies = await schedule_group_sessions(t.session, t.user_id, chosen, now)
    except NotYourGroup:
        return [tr.gettext("I cannot find that group among yours. Send /groups to see them.")]
    if not created:
        return [tr.gettext("That time has already passed. Send /schedule to choose another "
                           "one.")]
    told = await tell_members(t, group, copies, now)
    return [tr.ngettext("Session scheduled with the group “{group}”:",
                        "{count} sessions scheduled with the group “{group}”:", len(created))
            .format(group=tr.words(group.name), count=tr.isolate(tr.number(len(created))))
            + "\n" + session_lines(created, t.user.time_zone, tr) + "\n"
            + tr.ngettext("{count} member got it, with the calendar file, in their own time "
                          "zone; whoever joins later gets it too.",
                          "{count} members got it, with the calendar file, in their own time "
                          "zone; whoever joins later gets it too.", told)
            .format(count=tr.isolate(tr.number(told)))]


async def cancel_from_button(t: StoreTurn, rest: str) -> None:
    """``cancel:<id>`` or ``rest:<id>``: the coach cancels a group session (or the rest of
    its series); the members get the calendar's cancellation."""
    tr = translator_for(t.user.locale)
    what, _, raw = rest.partition(":")
    gs_id = int(raw) if raw.isascii() and raw.isdigit() else None
    try:
        if what not in ("cancel", "rest") or gs_id is None:
            raise SessionNotFound("invalid button")
        gone, copies = await cancel_group_sessions(t.session, t.user_id, gs_id, t.now,
                                                   rest_of_series=what == "rest")
    except SessionNotFound:
        t.enqueue(t.user_id, {"text": tr.gettext("This session is not planned any more.")})
        return
    await announce(t, gone, copies, SessionChange.CANCELLED)


async def announce(t: StoreTurn, changed: Sequence[GroupSession],
                   copies: Sequence[CoachingSession], change: SessionChange) -> None:
    """The members hear of their copies moved or cancelled (with the calendar file), and
    the coach (the turn's user) of the group sessions."""
    group = await t.session.get(Group, changed[0].group_id)
    assert group is not None
    await tell_members(t, group, copies, t.now, change)
    tr = translator_for(t.user.locale)
    heading = tr.ngettext(
        "Session with the group “{group}” moved:",
        "{count} sessions with the group “{group}” moved:", len(changed)) \
        if change is SessionChange.MOVED else tr.ngettext(
        "Session with the group “{group}” cancelled:",
        "{count} sessions with the group “{group}” cancelled:", len(changed))
    t.enqueue(t.user_id, {"text": heading.format(
        group=tr.words(group.name), count=tr.isolate(tr.number(len(changed))))
        + "\n" + session_lines(changed, t.user.time_zone, tr)})
