"""Exactly what was promised (review L1, L9, L11): a long message resumes at the part that
failed, a send that waits keeps its lease (no second send), the splitter makes no more parts
than the text needs."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
import telegram
from telegram.error import NetworkError, RetryAfter

from bot.store import Store
from bot.telegram.http import AiohttpRequest
from bot.telegram.sender import Sender
from bot.telegram.shaping import MAX_TEXT, split_text, utf16_len
from tests.fakes import FakeBotApi
from tests.faults import queue
from tests.store.store_helpers import raw

LONG = "\n\n".join(["PART-ONE " + "a" * 3000, "PART-TWO " + "b" * 3000, "PART-3 " + "c" * 3000])


class ScriptedBot:
    """Fails the `fail_on`-th call with `error`; remembers what it accepted."""

    def __init__(self, fail_on: int, error: Exception) -> None:
        self.calls = 0
        self.accepted: list[str] = []
        self.fail_on, self.error = fail_on, error

    async def do_api_request(self, method: str, data: dict[str, Any]) -> bool:
        self.calls += 1
        if self.calls == self.fail_on:
            raise self.error
        self.accepted.append(str(data["text"])[:8])
        return True


@pytest.mark.parametrize("error", [RetryAfter(timedelta(seconds=0.2)),
                                   NetworkError("Bad Gateway")], ids=["429", "5xx"])
async def test_a_long_message_resumes_at_the_part_that_failed(store: Store,
                                                             error: Exception) -> None:
    """r9: a 429 or a 5xx on part 2 sent part 1 again."""
    bot = ScriptedBot(fail_on=2, error=error)
    sender = Sender(store, bot, per_chat_interval=0, backoff=0.05)  # type: ignore[arg-type]
    await queue(store, [(42, {"text": LONG})])
    for _ in range(20):
        await sender.drain()
        if len(bot.accepted) == 3:
            break
        await asyncio.sleep(0.05)
    assert bot.accepted == ["PART-ONE", "PART-TWO", "PART-3 c"]
    rows = await raw(store, "SELECT status, parts_sent FROM outbox")
    assert tuple(rows[0]) == ("sent", 2)


async def test_a_restarted_sender_resumes_a_half_sent_message(store: Store) -> None:
    """A kill after part 1: the row comes back after its lease, from part 2."""
    await queue(store, [(43, {"text": LONG})])
    async with store.engine.begin() as connection:
        await connection.exec_driver_sql("UPDATE outbox SET parts_sent = 1")
    bot = ScriptedBot(fail_on=0, error=RuntimeError())
    await Sender(store, bot).drain()  # type: ignore[arg-type]
    assert bot.accepted == ["PART-TWO", "PART-3 c"]


@pytest.fixture
async def bot(fake_bot_api: FakeBotApi) -> AsyncIterator[telegram.Bot]:
    async with telegram.Bot(fake_bot_api.token, base_url=fake_bot_api.base_url,
                            request=AiohttpRequest(connections=4)) as b:
        yield b


async def test_a_send_that_waits_past_its_lease_keeps_it_and_goes_once(
        store: Store, bot: telegram.Bot, fake_bot_api: FakeBotApi) -> None:
    """L9: a send stuck for three leases (a long 429 wait, a slow Telegram) is not taken
    over by another replica, whose loop releases expired leases all the while."""
    lease = timedelta(seconds=0.6)
    fake_bot_api.hang("sendMessage", 2.0, times=1)
    await queue(store, [(44, {"text": "only once"})])
    one = Sender(store, bot, lease=lease, per_chat_interval=0, poll_interval=0.05)
    other = Sender(store, bot, lease=lease, per_chat_interval=0, poll_interval=0.05,
                   release_every=0.05)
    first = one.start()
    await fake_bot_api.wait_for_calls("sendMessage", 1)
    second = other.start()
    await asyncio.sleep(2.5)
    for sender, task in ((one, first), (other, second)):
        await sender.stop()
        await task
    assert [m.text for m in fake_bot_api.messages_to(44)] == ["only once"]
    assert len(fake_bot_api.calls("sendMessage")) == 1


@pytest.mark.parametrize("text", [
    "x" + "\u0301" * 4999,  # one grapheme of 5,000 code points: was 905 messages
    "\u200d".join(["🙂"] * 1200),  # one ZWJ grapheme of 3,599 UTF-16 units
    ("x" + "\u0301" * 999 + " ") * 5,
    "a" * 9000,
], ids=["combining-5000", "zwj-emoji", "five-long-graphemes", "ascii"])
def test_the_splitter_never_makes_more_parts_than_the_text_needs(text: str) -> None:
    parts = split_text(text)
    assert all(utf16_len(p) <= MAX_TEXT for p in parts)
    needed = math.ceil(utf16_len(text) / MAX_TEXT)
    assert len(parts) <= needed + 1 and len(parts) <= 3
    assert "".join(parts).replace(" ", "") == text.replace(" ", "")  # nothing lost
