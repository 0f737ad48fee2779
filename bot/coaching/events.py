"""Coach events (never any content) and their batched notifications: digests and their text."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import delete, exists, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bot.coaching.assignments import EXERCISE_STATUSES
from bot.coaching.links import active_link, coaches_of
from bot.i18n import N_, Translator
from bot.store import CoachEvent, User
from bot.store.models import COACH_EVENT_KINDS

CRISIS = "crisis"


@dataclass(frozen=True)
class Digest:
    """One message for one coach: either a prompt crisis notice or the batched news.

    ``names_by_kind``: per event kind, the names (or ids) of the clients it happened to,
    never anything a client wrote (they agreed that this coach follows their progress).
    A crisis notice names one client, ``subject``, so that it goes with that client's data
    (their export, their erasure).
    """

    coach_id: int
    locale: str
    crisis: bool
    names_by_kind: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    crisis_clients: tuple[str, ...] = ()
    subject: int | None = None


# -- notifications ------------------------------------------------------------------------


def event_for_status(status: object) -> str | None:
    """The coach event kind for an ``exercise.status`` answer."""
    return f"exercise_{status}" if status in EXERCISE_STATUSES else None


async def record_event(
    session: AsyncSession, coach_id: int, client_id: int, kind: str, now: datetime
) -> bool:
    """Note that something happened (no content, ever). Only for an active link; returns
    whether it was recorded."""
    if kind not in COACH_EVENT_KINDS:
        raise ValueError(f"unknown coach event kind {kind!r}")
    linked = await session.scalar(select(exists().where(active_link(coach_id, client_id))))
    if not linked:
        return False
    session.add(CoachEvent(coach_id=coach_id, client_id=client_id, kind=kind, created_at=now))
    await session.flush()
    return True


async def notify_coaches(session: AsyncSession, client_id: int, kind: str, now: datetime) -> int:
    """Record an event for every coach the client is actively linked to; returns how many."""
    coaches = await coaches_of(session, client_id)
    for coach in coaches:
        await record_event(session, coach.user_id, client_id, kind, now)
    return len(coaches)


async def _last_regular_digest(session: AsyncSession, coach_id: int) -> datetime | None:
    # Every event still there once notified is a regular one (crisis events go when told).
    return await session.scalar(
        select(func.max(CoachEvent.notified_at)).where(CoachEvent.coach_id == coach_id)
    )


async def _claim(
    session: AsyncSession, coach_id: int, crisis: bool, now: datetime
) -> list[tuple[int, str]]:
    """Claim the coach's pending events of active links, crisis ones or the others;
    (client, kind) of each. Of two concurrent ticks only one gets each event. Events of ended
    links are dropped.

    The kind is encrypted (a row must not say that a client had a crisis), so the pending
    events are told apart here; a regular event is marked notified, a crisis event deleted:
    the notice to the coach is what remains of it, and only for a day (retention)."""
    await session.execute(
        delete(CoachEvent).where(
            CoachEvent.coach_id == coach_id,
            CoachEvent.notified_at.is_(None),
            ~exists().where(active_link(CoachEvent.coach_id, CoachEvent.client_id)),
        )
    )
    pending = await session.execute(
        select(CoachEvent.id, CoachEvent.kind).where(
            CoachEvent.coach_id == coach_id, CoachEvent.notified_at.is_(None)
        )
    )
    ids = [event_id for event_id, kind in pending if (kind == CRISIS) == crisis]
    if not ids:
        return []
    unclaimed = (CoachEvent.id.in_(ids), CoachEvent.notified_at.is_(None))
    claim = delete(CoachEvent).where(*unclaimed) if crisis else \
        update(CoachEvent).where(*unclaimed).values(notified_at=now)
    rows = await session.execute(
        claim.returning(CoachEvent.client_id, CoachEvent.kind)
        .execution_options(synchronize_session=False)
    )
    return [(client, k) for client, k in rows]


async def _crisis_digests(
    session: AsyncSession, coach: User, events: list[tuple[int, str]]
) -> list[Digest]:
    """One notice per client in crisis: each is that client's data as well as the coach's."""
    clients = sorted({client for client, _ in events})
    names = await session.execute(select(User.id, User.first_name).where(User.id.in_(clients)))
    by_id = {uid: name for uid, name in names}
    return [Digest(coach.id, coach.locale, crisis=True, crisis_clients=(by_id.get(c) or str(c),),
                   subject=c) for c in clients]


async def _regular_digest(session: AsyncSession, coach: User,
                          events: list[tuple[int, str]]) -> Digest:
    clients: dict[str, set[int]] = {}
    for client, kind in events:
        clients.setdefault(kind, set()).add(client)
    ids = {client for client, _ in events}
    names = dict((await session.execute(
        select(User.id, User.first_name).where(User.id.in_(ids)))).all())
    by_kind = {kind: tuple(sorted((names.get(c) or str(c) for c in found), key=str.casefold))
               for kind, found in clients.items()}
    return Digest(coach.id, coach.locale, crisis=False, names_by_kind=by_kind)


async def due_digests(
    session: AsyncSession, now: datetime, min_interval: timedelta = timedelta(hours=1)
) -> list[Digest]:
    """The digests to send now, their events marked as notified.

    A crisis is reported at once in its own digest; other events wait until the coach's
    last digest is at least ``min_interval`` old, then go out together.
    """
    pending = await session.execute(
        select(CoachEvent.coach_id).where(CoachEvent.notified_at.is_(None)).distinct()
    )
    digests: list[Digest] = []
    for coach_id in sorted(pending.scalars()):
        coach = await session.get(User, coach_id)
        if coach is None:
            continue
        crisis = await _claim(session, coach_id, crisis=True, now=now)
        if crisis:
            digests.extend(await _crisis_digests(session, coach, crisis))
        last = await _last_regular_digest(session, coach_id)
        if last is None or now - last >= min_interval:
            events = await _claim(session, coach_id, crisis=False, now=now)
            if events:
                digests.append(await _regular_digest(session, coach, events))
    return digests


#: What each kind of news says, before the names of the clients it is about (a label
#: first: no verb to agree with a name's gender or number in any language).
NEWS = {
    "exercise_done": N_("Completed an exercise: {names}"),
    "exercise_partly": N_("Did part of an exercise: {names}"),
    "exercise_skipped": N_("Skipped an exercise: {names}"),
    "skipped_twice": N_("Skipped the same exercise twice in a row: {names}"),
    "goal_done": N_("Reached a goal: {names}"),
    "silent": N_("No answer for a few days: {names}"),
}


def digest_text(digest: Digest, tr: Translator) -> str:
    """The message for a digest, in the coach's language; never any client content."""
    if digest.crisis:
        names = ", ".join(tr.words(n) for n in digest.crisis_clients)
        # TRANSLATORS: {names} is one client's name or a list of names. Where your language's
        # first plural form also serves 21, 31 … (Croatian), word it so a list reads right.
        return tr.ngettext(
            "Please reach {names} as soon as you can, in the way you have agreed on with them "
            "(by phone if you have agreed on none): I noticed signs that they may be in "
            "crisis. They know that I told you, without any of their words.\n\n"
            "When you reach them, first ask whether they can talk freely where they are. Then "
            "check that they are safe and encourage them to use the help lines I gave them "
            "(/sos shows them the lines again); you are not expected to counsel or treat them. "
            "If you believe they are in immediate danger, call the emergency services.\n\n"
            "Their coaching is paused for a day, and for up to three days if they tell me they "
            "are still struggling; it resumes sooner if they come back to coaching themselves "
            "and show no sign of crisis. Messages you send through me wait until it resumes. "
            "Nothing they wrote is shared here.",
            "Please reach these clients as soon as you can, each in the way you have agreed on "
            "with them (by phone if you have agreed on none): {names}. I noticed signs that "
            "they may be in crisis. They know that I told you, without any of their words.\n\n"
            "When you reach them, first ask whether they can talk freely where they are. Then "
            "check that they are safe and encourage them to use the help lines I gave them "
            "(/sos shows them the lines again); you are not expected to counsel or treat them. "
            "If you believe one of them is in immediate danger, call the emergency services."
            "\n\n"
            "Their coaching is paused for a day, and for up to three days if they tell me they "
            "are still struggling; it resumes sooner if they come back to coaching themselves "
            "and show no sign of crisis. Messages you send through me wait until it resumes. "
            "Nothing they wrote is shared here.",
            len(digest.crisis_clients),
        ).format(names=names)
    lines = [tr.gettext("News from your clients:")]
    for kind, text in NEWS.items():
        clients = digest.names_by_kind.get(kind, ())
        if clients:
            lines.append("• " + tr.gettext(text).format(
                names=", ".join(tr.words(n) for n in clients)))
    return "\n".join(lines)
