"""Messages between a coach and a client, both ways.

A coach writes in the ``message_client`` dialogue; the message is kept (encrypted) and goes
to the client through the outbox, marked as from their coach, at once when the client may be
written to, else by the scheduler's next pass once their quiet hours or a crisis pause are
over. It carries a "Reply to my coach" button: the client answers in ``reply_to_coach``, a
dialogue like any other, so their words meet the crisis check of every message they send;
only a reply they confirm, after that check, reaches the coach. The coach's words are not
kept as answers nor left in the conversation (``conversation.CARRIED``): the message row is
the record,
and it belongs to the client's data (their export, their erasure).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import and_, delete, exists, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from bot.coaching.coach_errors import NotYourClient
from bot.coaching.links import is_linked
from bot.coaching.safety import paused_by_crisis, release_held
from bot.engine import Outcome, Reply
from bot.engine.state import Button
from bot.i18n import translator_for
from bot.schedule.planning import in_quiet, zone_of
from bot.store import CoachLink, CoachMessage, Outbox, User, UserView, rowcount
from bot.store import Turn as StoreTurn
from bot.store.kinds import OutboxStatus

MESSAGE_CLIENT = "message_client"  # the coach writes to a client
REPLY_TO_COACH = "reply_to_coach"  # the client answers their coach
TO_CLIENT, TO_CLIENT_NAME, MESSAGE_TEXT = "message.client", "message.client_name", "message.text"
TO_CLIENT_PAUSED = "message.client_paused"  # in a crisis pause: the message waits for its end
TO_COACH, TO_COACH_NAME = "reply.coach", "reply.coach_name"
REPLY_TEXT, REPLY_SEND = "reply.text", "reply.send"
REPLY_BUTTON = "coachreply"  # coachreply:<coach id>
ANSWER_BUTTON = "message"  # message:<client id>: the coach answers a client's reply
DELIVER_BATCH = 200


def may_write_now(client: UserView, now: datetime) -> bool:
    """Whether a coach's message may go to the client now: not in their quiet hours (their
    local time), not during a crisis pause, and only while they can be reached."""
    return client.reachable and _after_pause_and_quiet(client, now)


def _after_pause_and_quiet(client: UserView, now: datetime) -> bool:
    if paused_by_crisis(client, now):
        return False
    local = now.astimezone(zone_of(client.time_zone))
    return not in_quiet(local.hour * 60 + local.minute, client.quiet_start, client.quiet_end)


def to_client_payload(coach_id: int, coach_name: str | None, text: str,
                      locale: str) -> dict[str, object]:
    tr = translator_for(locale)
    header = tr.gettext("A message from your coach {coach}:").format(
        coach=tr.words(coach_name or ""))
    return Reply(f"{header}\n\n{tr.words(text)}", (
        Button(tr.gettext("Reply to my coach"), f"{REPLY_BUTTON}:{coach_id}"),)).to_payload()


def to_coach_payload(client_id: int, client_name: str | None, text: str,
                     locale: str) -> dict[str, object]:
    tr = translator_for(locale)
    header = tr.gettext("{client} replied:").format(
        client=tr.person(client_name, client_id))
    return Reply(f"{header}\n\n{tr.words(text)}", (
        Button(tr.gettext("Answer"), f"{ANSWER_BUTTON}:{client_id}"),)).to_payload()


async def send_to_client(t: StoreTurn, client_id: int, text: str, now: datetime) -> bool:
    """Keep the coach's (``t``'s user) message to their client and queue it when the client
    may be written to now; returns whether it was queued now (else it waits for the
    scheduler). NotYourClient without an active link."""
    if not await is_linked(t.session, t.user_id, client_id):
        raise NotYourClient("no active link to this client")
    client = await t.session.get(User, client_id)
    if client is None:
        raise NotYourClient("no active link to this client")
    now_ok = may_write_now(client, now)
    t.session.add(CoachMessage(coach_id=t.user_id, client_id=client_id, from_coach=True,
                               text=text, created_at=now,
                               delivered_at=now if now_ok else None))
    if now_ok:
        t.enqueue(client_id, to_client_payload(t.user_id, t.user.first_name, text,
                                               client.locale), subject=client_id)
    await t.session.flush()
    return now_ok


async def deliver_waiting(session: AsyncSession, now: datetime,
                          batch: int = DELIVER_BATCH) -> int:
    """The scheduler's pass: queue the coaches' messages whose clients may now be written
    to; drop those whose link has ended. Returns how many were queued. Each message is
    queued once: it is marked delivered in the same transaction, conditionally."""
    linked = exists().where(and_(
        CoachLink.coach_id == CoachMessage.coach_id, CoachLink.client_id == CoachMessage.client_id,
        CoachLink.consent_at.is_not(None), CoachLink.unlinked_at.is_(None)))
    await session.execute(delete(CoachMessage).where(
        CoachMessage.delivered_at.is_(None), ~linked))
    coach = aliased(User)
    rows = (await session.execute(
        select(CoachMessage, User, coach.first_name)
        .join(User, User.id == CoachMessage.client_id)
        .join(coach, coach.id == CoachMessage.coach_id)
        .where(CoachMessage.delivered_at.is_(None))
        .order_by(CoachMessage.created_at, CoachMessage.id).limit(batch))).all()
    queued = 0
    for message, client, coach_name in rows:
        if not may_write_now(client, now):
            continue
        claimed = await session.execute(
            update(CoachMessage)
            .where(CoachMessage.id == message.id, CoachMessage.delivered_at.is_(None))
            .values(delivered_at=now).execution_options(synchronize_session=False))
        if rowcount(claimed) != 1:
            continue
        session.add(Outbox(user_id=message.coach_id, chat_id=client.id,
                           subject_user_id=client.id, created_at=now, next_attempt_at=now,
                           payload=to_client_payload(message.coach_id, coach_name,
                                                     message.text, client.locale)))
        queued += 1
    await session.flush()
    return queued


async def release_after_pause(session: AsyncSession, now: datetime,
                              batch: int = DELIVER_BATCH) -> int:
    """The scheduler's pass: what others queued for a client during a crisis pause
    (``held``) goes out once the pause is over and their quiet hours too. Returns how many
    messages."""
    clients = (await session.scalars(
        select(User).where(User.id.in_(
            select(Outbox.chat_id).where(Outbox.status == OutboxStatus.HELD).distinct()
            .limit(batch))))).all()
    released = 0
    for client in clients:
        if _after_pause_and_quiet(client, now):
            released += await release_held(session, client.id, now)
    return released


async def apply_messages(t: StoreTurn, outcome: Outcome, now: datetime) -> list[Reply]:
    """What the two dialogues mean once finished: the coach's message sent, or the client's
    confirmed reply delivered to their coach. Returns what to tell the user after the
    dialogue's own replies (why it did not go, in the rare case)."""
    variables = outcome.state.variables
    told: list[Reply] = []
    if MESSAGE_CLIENT in outcome.finished:
        client, text = variables.get(TO_CLIENT), variables.get(MESSAGE_TEXT)
        if isinstance(client, int) and isinstance(text, str) and t.user.is_coach:
            try:
                await send_to_client(t, client, text, now)
            except NotYourClient:
                tr = translator_for(t.user.locale)
                told.append(Reply(tr.gettext(
                    "That client no longer shares their progress with you: the message was "
                    "not sent.")))
    if REPLY_TO_COACH in outcome.finished and variables.get(REPLY_SEND) is True \
            and not outcome.crisis and outcome.signal is None:
        told += await _reply_to_coach(t, variables.get(TO_COACH), variables.get(REPLY_TEXT),
                                      now)
    return told


async def _reply_to_coach(t: StoreTurn, coach_id: object, text: object,
                          now: datetime) -> list[Reply]:
    tr = translator_for(t.user.locale)
    coach = await t.session.get(User, coach_id) if isinstance(coach_id, int) else None
    if coach is None or not isinstance(text, str) \
            or not await is_linked(t.session, coach.id, t.user_id):
        return [Reply(tr.gettext(
            "You no longer share your progress with that coach, so I could not pass your "
            "reply on."))]
    t.session.add(CoachMessage(coach_id=coach.id, client_id=t.user_id, from_coach=False,
                               text=text, created_at=now, delivered_at=now))
    t.enqueue(coach.id, to_coach_payload(t.user_id, t.user.first_name, text, coach.locale),
              subject=t.user_id)
    await t.session.flush()
    return []


async def last_reply_at(session: AsyncSession, coach_id: int,
                        client_id: int) -> datetime | None:
    """When the client last wrote to this coach."""
    return await session.scalar(
        select(CoachMessage.created_at).where(
            CoachMessage.coach_id == coach_id, CoachMessage.client_id == client_id,
            CoachMessage.from_coach.is_(False))
        .order_by(CoachMessage.created_at.desc()).limit(1))
