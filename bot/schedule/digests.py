"""Coaches hear about their clients in batches: one outbox message per coach per digest;
and the passes that feed them and the coach's messages: quiet clients noticed, messages that
waited for a client's quiet hours or crisis pause queued."""

from __future__ import annotations

from datetime import datetime

from bot.coaching.events import digest_text, due_digests
from bot.coaching.messages import deliver_waiting, release_after_pause
from bot.coaching.noticing import notice_silence
from bot.i18n import translator_for
from bot.store import Outbox, Store


async def send_digests(store: Store, now: datetime) -> int:
    """Queue the digests that are due, in the same transaction that marks their events."""
    async with store.sessionmaker() as session, session.begin():
        digests = await due_digests(session, now)
        for digest in digests:
            text = digest_text(digest, translator_for(digest.locale))
            session.add(Outbox(user_id=digest.coach_id, chat_id=digest.coach_id,
                               subject_user_id=digest.subject, payload={"text": text},
                               created_at=now, next_attempt_at=now))
    return len(digests)


async def deliver_coach_messages(store: Store, now: datetime) -> int:
    """Queue the coaches' messages whose clients may now be written to, and what others
    queued for a client during a crisis pause, now over. Returns how many."""
    async with store.sessionmaker() as session, session.begin():
        return await deliver_waiting(session, now) + await release_after_pause(session, now)


async def notice_quiet_clients(store: Store, now: datetime) -> int:
    """Record an alert for each client quiet for their coach's number of days."""
    async with store.sessionmaker() as session, session.begin():
        return await notice_silence(session, now)
