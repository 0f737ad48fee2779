"""Coaches, invites and consent, and the links between a coach and their clients.

Every function takes the caller's session and an explicit ``now`` and never commits: the
caller's turn does. A coach reaches a client only through an active link (consent given,
not unlinked), checked by every query (``active_link``, ``linked_since``).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, delete, exists, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bot.coaching.coach_errors import InviteError, InviteProblem, NotACoach, NotYourClient
from bot.coaching.exercise_checkins import stop_assignments_where
from bot.store import (
    Assignment,
    CoachEvent,
    CoachingSession,
    CoachLink,
    Invite,
    PlannedCheckin,
    SessionStatus,
    User,
    rowcount,
)
from bot.store.kinds import SESSION_KINDS, CheckinStatus

INVITE_TTL = timedelta(days=7)
INVITE_BYTES = 24  # 192 bits; token_urlsafe gives 32 characters of [A-Za-z0-9_-]


@dataclass(frozen=True)
class InviteCheck:
    """Whether an invite can be accepted; the coach is named only when it can."""

    problem: InviteProblem | None
    coach_id: int | None = None
    coach_name: str | None = None

    @property
    def valid(self) -> bool:
        return self.problem is None


@dataclass(frozen=True)
class LinkSummary:
    """The other person of an active link: a client (for a coach) or a coach (for a client)."""

    user_id: int
    first_name: str | None
    linked_at: datetime


ClientSummary = LinkSummary
CoachSummary = LinkSummary


# -- coaches ------------------------------------------------------------------------------


async def make_coach(session: AsyncSession, user_id: int) -> None:
    """Admin action: let a user coach (creating the user row if it is new)."""
    user = await session.get(User, user_id)
    if user is None:
        session.add(User(id=user_id, is_coach=True))
    else:
        user.is_coach = True
    await session.flush()


async def coach_locales(session: AsyncSession) -> list[tuple[int, str]]:
    """(id, locale) of every coach, for their command menus."""
    rows = await session.execute(
        select(User.id, User.locale).where(User.is_coach.is_(True)).order_by(User.id))
    return [(uid, locale) for uid, locale in rows]


async def is_coach(session: AsyncSession, user_id: int) -> bool:
    found = await session.scalar(select(User.is_coach).where(User.id == user_id))
    return bool(found)


def active_link(coach_id: Any, client_id: Any) -> ColumnElement[bool]:
    return and_(
        CoachLink.coach_id == coach_id,
        CoachLink.client_id == client_id,
        CoachLink.consent_at.is_not(None),
        CoachLink.unlinked_at.is_(None),
    )


async def is_linked(session: AsyncSession, coach_id: int, client_id: int) -> bool:
    """Whether this coach has an active link (consent given, not ended) to this client."""
    return bool(await session.scalar(select(exists().where(active_link(coach_id, client_id)))))


async def shares_briefs(session: AsyncSession, client_id: int) -> bool:
    """Whether a coach of this client gets their session preparation (they agreed to a
    brief with /brief, or when they linked)."""
    return bool(await session.scalar(select(exists().where(
        active_link(CoachLink.coach_id, client_id), CoachLink.brief_consent.is_(True)))))


async def linked_since(session: AsyncSession, coach_id: int, client_id: int) -> datetime:
    """When the client consented to this coach's active link, or NotYourClient."""
    since = await session.scalar(
        select(CoachLink.consent_at).where(active_link(coach_id, client_id))
    )
    if since is None:
        raise NotYourClient("no active link to this client")
    return since


# -- invites ------------------------------------------------------------------------------


def invite_hash(code: str) -> str:
    """What is stored of an invite code: its SHA-256 (a random 192-bit code needs no key)."""
    return hashlib.sha256(code.encode("utf-8")).hexdigest()


async def create_invite(
    session: AsyncSession, coach_id: int, now: datetime, ttl: timedelta = INVITE_TTL
) -> str:
    """A new single-use invite code, fit for a Telegram ``/start`` deep link."""
    if not await is_coach(session, coach_id):
        raise NotACoach("only coaches can invite clients")
    code = secrets.token_urlsafe(INVITE_BYTES)
    session.add(Invite(code_hash=invite_hash(code), coach_id=coach_id, created_at=now,
                       expires_at=now + ttl))
    await session.flush()
    return code


async def invite_status(
    session: AsyncSession, code: str, client_id: int, now: datetime
) -> InviteCheck:
    """Whether ``client_id`` may accept the invite, without using it up."""
    row = (
        await session.execute(
            select(Invite, User.first_name)
            .join(User, User.id == Invite.coach_id)
            .where(Invite.code_hash == invite_hash(code), User.is_coach.is_(True))
        )
    ).first()
    if row is None:
        return InviteCheck(InviteProblem.UNKNOWN)
    invite, name = row
    problem = await _invite_problem(session, invite, client_id, now)
    if problem is not None:
        return InviteCheck(problem)
    return InviteCheck(None, coach_id=invite.coach_id, coach_name=name)


async def _invite_problem(
    session: AsyncSession, invite: Invite, client_id: int, now: datetime
) -> InviteProblem | None:
    if invite.used_by is not None:
        return InviteProblem.USED
    if invite.expires_at <= now:
        return InviteProblem.EXPIRED
    if invite.coach_id == client_id:
        return InviteProblem.OWN
    linked = await session.scalar(select(exists().where(active_link(invite.coach_id, client_id))))
    return InviteProblem.ALREADY_LINKED if linked else None


async def accept_invite(session: AsyncSession, code: str, client_id: int, now: datetime) -> int:
    """Use the invite up and link the client to its coach, consent given now.

    Returns the coach's id. Race-safe: of two concurrent accepts exactly one wins.
    Raises InviteError (and changes nothing) for an unknown, expired, used or own invite,
    or when the client already has this coach.
    """
    check = await invite_status(session, code, client_id, now)
    if check.problem is not None or check.coach_id is None:
        raise InviteError(check.problem or InviteProblem.UNKNOWN)
    claimed = await session.execute(
        update(Invite)
        .where(
            Invite.code_hash == invite_hash(code),
            Invite.used_by.is_(None),
            Invite.expires_at > now,
            Invite.coach_id != client_id,
        )
        .values(used_by=client_id, used_at=now)
        .execution_options(synchronize_session=False)
    )
    if rowcount(claimed) != 1:  # someone else used it since we looked
        raise InviteError(InviteProblem.USED)
    session.add(
        CoachLink(coach_id=check.coach_id, client_id=client_id, created_at=now, consent_at=now)
    )
    await session.flush()
    return check.coach_id


# -- links --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Unlinked:
    coaches: list[int]  # the coaches unlinked
    sessions: list[CoachingSession]  # the one-to-one sessions to come that went, soonest first


async def unlink(
    session: AsyncSession, client_id: int, coach_id: int | None, now: datetime
) -> Unlinked:
    """End the client's link to one coach (or to every coach when ``coach_id`` is None).

    The coach loses access at once; their assignments for the client stop, planned
    exercise check-ins are cancelled, one-to-one sessions to come are cancelled and pending
    notifications about the client dropped (announcing the sessions is the caller's:
    link_end.announce_link_end).
    """
    links = select(CoachLink).where(
        CoachLink.client_id == client_id, CoachLink.unlinked_at.is_(None)
    )
    if coach_id is not None:
        links = links.where(CoachLink.coach_id == coach_id)
    coaches: list[int] = []
    for link in (await session.execute(links)).scalars():
        link.unlinked_at = now
        coaches.append(link.coach_id)
    cancelled: list[CoachingSession] = []
    if coaches:
        await stop_assignments(session, client_id, coaches)
        cancelled = await _cancel_sessions(session, client_id, coaches, now)
        await session.execute(
            delete(CoachEvent).where(
                CoachEvent.client_id == client_id,
                CoachEvent.coach_id.in_(coaches),
                CoachEvent.notified_at.is_(None),
            )
        )
    await session.flush()
    return Unlinked(coaches, cancelled)


async def _cancel_sessions(session: AsyncSession, client_id: int, coaches: list[int],
                           now: datetime) -> list[CoachingSession]:
    """One-to-one sessions still to come with these coaches end with the link, and so do
    their reminders, preparation and recap. A member's copies of a group's sessions go on:
    they come with the membership, not with this link."""
    coming = list((await session.execute(
        select(CoachingSession)
        .where(CoachingSession.client_id == client_id, CoachingSession.coach_id.in_(coaches),
               CoachingSession.group_session_id.is_(None),
               CoachingSession.status == SessionStatus.SCHEDULED,
               CoachingSession.starts_at > now)
        .order_by(CoachingSession.starts_at, CoachingSession.id))).scalars())
    if not coming:
        return []
    await session.execute(
        delete(PlannedCheckin)
        .where(PlannedCheckin.kind.in_(SESSION_KINDS),
               PlannedCheckin.ref.in_([str(cs.id) for cs in coming]),
               PlannedCheckin.status == CheckinStatus.PLANNED)
        .execution_options(synchronize_session=False))
    for cs in coming:
        cs.cancel(now)
    return coming


async def stop_assignments(session: AsyncSession, client_id: int, coaches: list[int]) -> None:
    # A group's assignments go on: they come with the membership, not with this link.
    await stop_assignments_where(session, client_id, Assignment.coach_id.in_(coaches),
                                 Assignment.group_assignment_id.is_(None))


async def _linked_people(
    session: AsyncSession, me: ColumnElement[bool], other: Any
) -> list[LinkSummary]:
    rows = await session.execute(
        select(User.id, User.first_name, CoachLink.consent_at)
        .join(CoachLink, other == User.id)
        .where(me, CoachLink.consent_at.is_not(None), CoachLink.unlinked_at.is_(None))
        .order_by(func.lower(User.first_name).asc().nulls_last(), User.id)
    )
    return [LinkSummary(uid, name, at) for uid, name, at in rows if at is not None]


async def clients_of(session: AsyncSession, coach_id: int) -> list[ClientSummary]:
    """The coach's clients with an active link, ordered by name."""
    return await _linked_people(session, CoachLink.coach_id == coach_id, CoachLink.client_id)


async def coaches_of(session: AsyncSession, client_id: int) -> list[CoachSummary]:
    """The client's coaches with an active link, ordered by name."""
    return await _linked_people(session, CoachLink.client_id == client_id, CoachLink.coach_id)


