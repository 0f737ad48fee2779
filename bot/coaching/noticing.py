"""Noticing for the coach: who went quiet, who skipped the same exercise twice, who reached a
goal, and per client what needs attention (``/clients``).

Alerts are coach events (kind and time, never content) and reach the coach in the digest,
which names the clients: they agreed that this coach follows their progress.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, ScalarSelect, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.coaching.actions import open_actions
from bot.coaching.assignments import STATUS_VARIABLE
from bot.coaching.checkins import user_zone
from bot.coaching.coach_errors import NotYourClient
from bot.coaching.links import is_linked
from bot.coaching.safety import paused_by_crisis
from bot.store import Answer, Assignment, CoachEvent, CoachLink, CoachMessage, User
from bot.store.kinds import CoachEventKind

__all__ = ["ClientOverview", "NotYourClient", "goal_completed", "notice_silence", "overview",
           "set_silent_days", "silent_days", "skipped_again"]

DEFAULT_SILENT_DAYS = 4
MAX_SILENT_DAYS = 60
SKIPPED = "skipped"
SKIPPED_SHOWN_DAYS = 14  # /clients shows "skipped the same exercise twice" this long


def _active_links() -> tuple[ColumnElement[bool], ...]:
    return CoachLink.consent_at.is_not(None), CoachLink.unlinked_at.is_(None)


async def skipped_again(session: AsyncSession, client_id: int, dialogue_id: str,
                        status: object) -> bool:
    """Whether this ``skipped`` follows a ``skipped`` of the same exercise (the answer of
    this turn is not written yet, so the latest stored one is the previous time)."""
    if status != SKIPPED:
        return False
    previous = await session.scalar(
        select(Answer.value).where(Answer.user_id == client_id,
                                   Answer.dialogue_id == dialogue_id,
                                   Answer.variable == STATUS_VARIABLE)
        .order_by(Answer.answered_at.desc(), Answer.id.desc()).limit(1))
    return bool(previous == SKIPPED)


async def goal_completed(session: AsyncSession, client_id: int, goal_created: datetime,
                         now: datetime) -> int:
    """Tell the client's coaches that a goal was reached: only those linked when the goal
    was set (the others never saw it). Returns how many."""
    coaches = (await session.execute(
        select(CoachLink.coach_id).where(CoachLink.client_id == client_id, *_active_links(),
                                         CoachLink.consent_at <= goal_created))).scalars().all()
    for coach in coaches:
        session.add(CoachEvent(coach_id=coach, client_id=client_id,
                               kind=CoachEventKind.GOAL_DONE.value, created_at=now))
    await session.flush()
    return len(coaches)


def _last_answer() -> ScalarSelect[Any]:
    return (select(func.max(Answer.answered_at)).where(Answer.user_id == CoachLink.client_id)
            .correlate(CoachLink).scalar_subquery())


async def notice_silence(session: AsyncSession, now: datetime) -> int:
    """Alert each coach whose client has not answered anything for the link's
    ``silent_days`` (counted from consent when they never answered since): once per silence,
    and not while the client has paused their reminders or is in a crisis pause (a crisis
    has its own notice). Returns how many alerts were recorded."""
    rows = await session.execute(
        select(CoachLink.coach_id, CoachLink.client_id, CoachLink.consent_at,
               CoachLink.silent_days, _last_answer().label("last"), User)
        .join(User, User.id == CoachLink.client_id)
        .where(*_active_links(), User.reachable.is_(True)))
    recorded = 0
    for coach_id, client_id, consent_at, silent_days, last, client in rows:
        assert consent_at is not None  # an active link
        since = max(consent_at, last) if last is not None else consent_at
        if now - since < timedelta(days=silent_days) or paused_by_crisis(client, now) \
                or (client.paused_until is not None and client.paused_until > now):
            continue
        if CoachEventKind.SILENT in await _kinds_since(session, coach_id, client_id, since):
            continue
        session.add(CoachEvent(coach_id=coach_id, client_id=client_id,
                               kind=CoachEventKind.SILENT.value, created_at=now))
        recorded += 1
    await session.flush()
    return recorded


async def silent_days(session: AsyncSession, coach_id: int, client_id: int) -> int:
    """After how many quiet days this coach hears about this client (NotYourClient)."""
    days = await session.scalar(select(CoachLink.silent_days).where(
        CoachLink.coach_id == coach_id, CoachLink.client_id == client_id, *_active_links()))
    if days is None:
        raise NotYourClient("no active link to this client")
    return int(days)


async def _kinds_since(session: AsyncSession, coach_id: int, client_id: int,
                       since: datetime) -> set[str]:
    """The kinds of this coach's events about this client since then. The kind is encrypted
    (a row must not tell that a client had a crisis), so it is compared here, not in SQL."""
    kinds = await session.scalars(select(CoachEvent.kind).where(
        CoachEvent.coach_id == coach_id, CoachEvent.client_id == client_id,
        CoachEvent.created_at > since))
    return set(kinds)


async def set_silent_days(session: AsyncSession, coach_id: int, client_id: int,
                          days: int) -> None:
    """The coach's choice of how many quiet days make an alert, for one client."""
    if not 1 <= days <= MAX_SILENT_DAYS:
        raise ValueError(f"days must be from 1 to {MAX_SILENT_DAYS}")
    if not await is_linked(session, coach_id, client_id):
        raise NotYourClient("no active link to this client")
    link = await session.scalar(select(CoachLink).where(
        CoachLink.coach_id == coach_id, CoachLink.client_id == client_id, *_active_links()))
    assert link is not None
    link.silent_days = days
    await session.flush()


@dataclass(frozen=True)
class ClientOverview:
    """One line of ``/clients``: what the coach may see of a client at a glance."""

    client_id: int
    first_name: str | None
    last_activity: datetime | None  # the client's last answer or reply since consent
    assignments: int  # active, not paused
    paused_assignments: int
    silent_days: int
    in_crisis_pause: bool
    skipped_twice: bool  # lately (since the last notice was read)
    open_actions: int = 0  # the client's commitments still open …
    overdue_actions: int = 0  # … and of those, the ones past their date (client's day)

    def quiet_for(self, now: datetime, linked_at: datetime) -> int:
        since = self.last_activity or linked_at
        return max(0, (now - since).days)


async def overview(session: AsyncSession, coach_id: int, now: datetime) -> list[
        tuple[ClientOverview, datetime]]:
    """Per client of this coach (by name): their overview and when they linked."""
    links = (await session.execute(
        select(CoachLink, User).join(User, User.id == CoachLink.client_id)
        .where(CoachLink.coach_id == coach_id, *_active_links())
        .order_by(func.lower(User.first_name).asc().nulls_last(), User.id))).all()
    found: list[tuple[ClientOverview, datetime]] = []
    for link, client in links:
        assert link.consent_at is not None
        answered = await session.scalar(select(func.max(Answer.answered_at)).where(
            Answer.user_id == client.id, Answer.answered_at >= link.consent_at))
        replied = await session.scalar(select(func.max(CoachMessage.created_at)).where(
            CoachMessage.client_id == client.id, CoachMessage.coach_id == coach_id,
            CoachMessage.from_coach.is_(False)))
        last = max((d for d in (answered, replied) if d is not None), default=None)
        counts = dict((await session.execute(
            select(Assignment.paused, func.count()).where(
                Assignment.coach_id == coach_id, Assignment.client_id == client.id,
                Assignment.active.is_(True)).group_by(Assignment.paused))).all())
        skipped = CoachEventKind.SKIPPED_TWICE in await _kinds_since(
            session, coach_id, client.id, now - timedelta(days=SKIPPED_SHOWN_DAYS))
        pending = await open_actions(session, client.id)
        today = now.astimezone(user_zone(client)).date()
        found.append((ClientOverview(
            client.id, client.first_name, last, int(counts.get(False, 0)),
            int(counts.get(True, 0)), link.silent_days, paused_by_crisis(client, now),
            bool(skipped), len(pending), sum(a.due_on < today for a in pending)),
            link.consent_at))
    return found
