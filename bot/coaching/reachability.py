"""A client who blocked the bot: what changes for them (the sender reports it here).

They are unreachable until they write again (``bot/telegram/handlers.py`` sets them
reachable): nothing more is planned or sent to them meanwhile.
"""

from __future__ import annotations

from sqlalchemy import update

from bot.store import Outbox, PlannedCheckin, Store, User, undelivered

# Planned rows that have not started yet (see bot/schedule/claims.py for the statuses).
_NOT_STARTED = ("planned", "claimed")


async def blocked_the_bot(store: Store, *, user_id: int, chat_id: int, outbox_id: int,
                          error: str) -> None:
    """Telegram refused a message to ``chat_id`` because the user blocked the bot: they
    are unreachable, their planned check-ins are cancelled, and that message and every
    other still queued for the chat fail with ``error``."""
    async with store.sessionmaker() as session, session.begin():
        # A group chat that removed the bot (a post its coach or a member queued) stops only
        # its own messages: whoever queued them did not block the bot.
        if chat_id == user_id:
            await session.execute(update(User).where(User.id == user_id)
                                  .values(reachable=False))
            await session.execute(
                update(PlannedCheckin)
                .where(PlannedCheckin.user_id == user_id,
                       PlannedCheckin.status.in_(_NOT_STARTED))
                .values(status="cancelled").execution_options(synchronize_session=False))
        await session.execute(
            update(Outbox)
            .where(Outbox.chat_id == chat_id,
                   undelivered(Outbox.status) | (Outbox.id == outbox_id))
            .values(status="failed", last_error=error)
            .execution_options(synchronize_session=False))
