"""Coaches hear about their clients in batches: one outbox message per coach per digest."""

from __future__ import annotations

from datetime import datetime

from bot.coaching.events import digest_text, due_digests
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
