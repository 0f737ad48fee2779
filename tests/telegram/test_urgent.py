"""An urgent outbox row (``Turn.enqueue(..., urgent=True)``) goes out ahead of anything still
queued for its chat, at once; what was queued before it and not in flight is held back."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
import telegram

from bot.store import SUPERSEDED_BY_URGENT, Store
from bot.store import Turn as StoreTurn
from bot.telegram.http import AiohttpRequest
from bot.telegram.sender import Sender
from tests.fakes import FakeBotApi
from tests.faults import queue
from tests.store.store_helpers import raw


@pytest.fixture
async def bot(fake_bot_api: FakeBotApi) -> AsyncIterator[telegram.Bot]:
    async with telegram.Bot(fake_bot_api.token, base_url=fake_bot_api.base_url,
                            request=AiohttpRequest(connections=4)) as b:
        yield b


async def urgent_turn(store: Store, user: int, texts: list[tuple[str, bool]],
                      update_id: int) -> StoreTurn:
    committed: list[StoreTurn] = []

    async def fn(t: StoreTurn) -> None:
        for text, urgent in texts:
            t.enqueue(t.user_id, {"text": text}, urgent=urgent)
        committed[:] = [t]

    await store.run_turn(user, fn, update_id=update_id, hold_for=timedelta(minutes=2))
    return committed[0]


@pytest.mark.timed
async def test_an_urgent_row_overtakes_a_burst_of_30_and_holds_them_back(
        store: Store, bot: telegram.Bot, fake_bot_api: FakeBotApi) -> None:
    chat = 500
    await queue(store, [(chat, {"text": f"queued {i}"}) for i in range(30)])
    sender = Sender(store, bot, rate=50, per_chat_interval=1.0, poll_interval=0.1)
    task = sender.start()
    try:
        await fake_bot_api.wait_for_messages(chat, 1, timeout=5)  # the burst is going out
        asked = time.monotonic()
        t = await urgent_turn(store, chat, [("HELP LINES", True)], update_id=1)
        assert [h.urgent for h in t.held] == [True]
        await sender.deliver_turn(t)
        delivered = [m.text for m in fake_bot_api.messages_to(chat)]
        took = next(m.time for m in fake_bot_api.calls("sendMessage")
                    if m.params.get("text") == "HELP LINES") - asked
        assert took < 1.0, took
        await asyncio.sleep(1.5)  # the background loop would have sent one more by now
        after = [m.text for m in fake_bot_api.messages_to(chat)]
        assert after == delivered  # nothing of the burst after the urgent row
        assert after[-1] == "HELP LINES" and 1 <= len(after) - 1 <= 4
        assert after[:-1] == [f"queued {i}" for i in range(len(after) - 1)]
        rows = await raw(store, "SELECT status, last_error FROM outbox WHERE chat_id = :c "
                         "ORDER BY id", c=chat)
        statuses = [r[0] for r in rows]
        assert statuses[-1] == "sent"
        held_back = [r for r in rows[:-1] if r[0] != "sent"]
        assert len(held_back) == 31 - len(after)
        assert all(r == ("cancelled", SUPERSEDED_BY_URGENT) for r in held_back)
    finally:
        await sender.stop()
        await task


async def test_urgent_goes_first_within_its_turn_and_later_replies_follow(
        store: Store, bot: telegram.Bot, fake_bot_api: FakeBotApi) -> None:
    t = await urgent_turn(store, 501, [("not any more", False), ("HELP LINES", True),
                                       ("after it", False)], update_id=2)
    sender = Sender(store, bot, rate=50)
    await sender.deliver_turn(t)
    await sender.drain()
    assert [m.text for m in fake_bot_api.messages_to(501)] == ["HELP LINES", "after it"]
    rows = await raw(store, "SELECT status, kind FROM outbox ORDER BY id")
    assert [tuple(r) for r in rows] == [("cancelled", "reply"), ("sent", "urgent"),
                                        ("sent", "reply")]


@pytest.mark.timed
async def test_an_urgent_row_skips_the_chats_pace(
        store: Store, bot: telegram.Bot, fake_bot_api: FakeBotApi) -> None:
    """Three replies use up the chat's burst; the urgent one does not wait for the pace."""
    sender = Sender(store, bot, rate=50, per_chat_interval=5.0)
    t = await urgent_turn(store, 502, [("a", False), ("b", False), ("c", False)], 3)
    assert await sender.deliver_turn(t) == 3
    t = await urgent_turn(store, 502, [("HELP LINES", True)], 4)
    started = time.monotonic()
    assert await sender.deliver_turn(t) == 1
    assert time.monotonic() - started < 1.0
    assert [m.text for m in fake_bot_api.messages_to(502)] == ["a", "b", "c", "HELP LINES"]


async def test_an_urgent_row_that_holds_nothing_back_goes_first_and_the_queue_follows(
        store: Store, bot: telegram.Bot, fake_bot_api: FakeBotApi) -> None:
    """/sos: the help lines go ahead of a check-in question still queued, which follows
    them (the conversation stays where it is, the question is not lost)."""
    chat = 503
    await queue(store, [(chat, {"text": "How are you feeling, 1 to 10?"})])
    committed: list[StoreTurn] = []

    async def sos(t: StoreTurn) -> None:
        t.enqueue(t.user_id, {"text": "HELP LINES"}, urgent=True, hold_back=False)
        committed[:] = [t]

    await store.run_turn(chat, sos, update_id=4, hold_for=timedelta(minutes=2))
    assert [h.urgent for h in committed[0].held] == [True]
    sender = Sender(store, bot, rate=50, per_chat_interval=0.0, poll_interval=0.1)
    await sender.deliver_turn(committed[0])
    await sender.drain()
    assert [m.text for m in fake_bot_api.messages_to(chat)] == [
        "HELP LINES", "How are you feeling, 1 to 10?"]
    assert [r[0] for r in await raw(store, "SELECT status FROM outbox WHERE chat_id = :c",
                                    c=chat)] == ["sent", "sent"]
