"""The outbox sender against the fake Bot API server: rate, order, 429, 403, 5xx, splits."""

from __future__ import annotations

import asyncio
import logging
import shutil
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import telegram
from sqlalchemy import insert, select, update
from sqlalchemy.dialects import postgresql

from bot.store import Outbox, PlannedCheckin, Store, User
from bot.store import Turn as StoreTurn
from bot.telegram.http import AiohttpRequest
from bot.telegram.pacing import TokenBucket
from bot.telegram.sender import Sender
from bot.telegram.shaping import MAX_TEXT, keyboard, split_text, utf16_len
from tests.fakes import FakeBotApi
from tests.store.store_helpers import count, raw


@pytest.fixture
async def sqlite_store(tmp_path: Path, sqlite_template: Path) -> AsyncIterator[Store]:
    shutil.copyfile(sqlite_template, tmp_path / "coachbot.db")
    s = Store(f"sqlite+aiosqlite:///{tmp_path / 'coachbot.db'}")
    await s.start()
    yield s
    await s.close()


@pytest.fixture
async def bot(fake_bot_api: FakeBotApi) -> AsyncIterator[telegram.Bot]:
    request = AiohttpRequest(connections=4)
    async with telegram.Bot(fake_bot_api.token, base_url=fake_bot_api.base_url,
                            request=request) as b:
        yield b


def now() -> datetime:
    return datetime.now(UTC)


async def enqueue(store: Store, messages: list[tuple[int, dict[str, Any]]]) -> None:
    users = sorted({chat for chat, _ in messages})
    async with store.sessionmaker() as session, session.begin():
        ignore = (postgresql.insert(User).on_conflict_do_nothing()
                  if store.engine.dialect.name == "postgresql"
                  else insert(User).prefix_with("OR IGNORE"))
        await session.execute(ignore, [{"id": u, "created_at": now()} for u in users])
        session.add_all(Outbox(user_id=chat, chat_id=chat, payload=payload, created_at=now(),
                               next_attempt_at=now()) for chat, payload in messages)


def send_times(fake: FakeBotApi) -> list[float]:
    return [r.time for r in fake.calls("sendMessage")]


def busiest_second(times: list[float]) -> int:
    """The most requests in any one-second window [t, t + 1)."""
    most = end = 0
    for start, at in enumerate(times):
        while end < len(times) and times[end] < at + 1.0:
            end += 1
        most = max(most, end - start)
    return most


def achieved_rate(times: list[float]) -> float:
    return (len(times) - 1) / (times[-1] - times[0])


# In-process, the fake server, the HTTP client, the sender and SQLite share one Python
# thread: about 5 ms of CPU per message, so 200/s would need the whole CPU and measured
# 166/s here. These tests use 100/s, which this setup holds (bench.schedule measures more).
RATE = 100.0
# The bucket releases at most RATE + 1 sends in any second (test_the_bucket_never_bursts);
# at the fake they arrive a little later, each by its own delay (a commit or a garbage
# collection between the release and the write), so one second may see a few more: sends
# held up 40 ms by a stall arrive together with the next ones (a loaded run counted 103 at
# 100/s). A real burst (the bucket letting a backlog through at once) is far beyond this.
ARRIVAL_JITTER = 5


@pytest.mark.timed
async def test_the_bucket_never_bursts_not_even_after_a_stall() -> None:
    bucket = TokenBucket(RATE)
    releases: list[float] = []
    for index in range(300):
        await bucket.acquire()
        releases.append(time.monotonic())
        if index in (100, 200):
            time.sleep(0.3)  # the event loop stalls: the missed sends must not burst after
    assert busiest_second(releases) <= RATE + 1
    assert abs(achieved_rate(releases[:100]) - RATE) / RATE <= 0.05


@pytest.mark.timed
async def test_2000_chats_at_the_configured_rate(
        sqlite_store: Store, bot: telegram.Bot, fake_bot_api: FakeBotApi,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)  # debug logs of every request would skew the timing
    await enqueue(sqlite_store, [(1000 + i, {"text": f"Hello {i}"}) for i in range(2000)])
    sender = Sender(sqlite_store, bot, rate=RATE)
    assert await sender.drain() == 2000
    times = send_times(fake_bot_api)
    assert len(times) == 2000
    assert 0.9 * RATE <= achieved_rate(times) <= 1.05 * RATE, achieved_rate(times)
    assert busiest_second(times) <= RATE + ARRIVAL_JITTER  # no burst
    assert await count(sqlite_store, "outbox", "status = 'sent'") == 2000
    assert {c.params["chat_id"] for c in fake_bot_api.calls("sendMessage")} == set(
        range(1000, 3000))


@pytest.mark.timed
async def test_429_in_the_middle_of_2000_nothing_reaches_telegram_during_retry_after(
        sqlite_store: Store, bot: telegram.Bot, fake_bot_api: FakeBotApi,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    await enqueue(sqlite_store, [(1000 + i, {"text": f"Hello {i}"}) for i in range(2000)])
    sender = Sender(sqlite_store, bot, rate=RATE)
    draining = asyncio.create_task(sender.drain())
    await fake_bot_api.wait_for_calls("sendMessage", 1000, timeout=30)
    fake_bot_api.fail_next("sendMessage", status=429, retry_after=1)
    assert await draining == 2000
    calls = fake_bot_api.calls("sendMessage")
    assert len(calls) == 2001 and [c.status for c in calls].count(429) == 1
    at = next(i for i, c in enumerate(calls) if c.status == 429)
    refused = calls[at]
    assert calls[at + 1].time - refused.time >= 1.0  # nothing during retry_after
    assert calls[at + 1].params["chat_id"] == refused.params["chat_id"]  # that row first
    before = [c.time for c in calls[:at + 1]]
    after = [c.time for c in calls[at + 1:]]
    for times in (before, after):
        # Never faster than the rate; slower only by what a loaded machine takes (a 2-core CI
        # run measured 93.9/s before the 429 once), as the shared budget's tests allow.
        # How close it comes is the benchmarks' to say (bench.delivery), not a timed test's.
        assert 0.9 * RATE <= achieved_rate(times) <= 1.05 * RATE, achieved_rate(times)
    assert busiest_second([c.time for c in calls]) <= RATE + ARRIVAL_JITTER
    assert await count(sqlite_store, "outbox", "status = 'sent'") == 2000


@pytest.mark.timed
async def test_a_chats_messages_keep_their_order_one_per_second(
        sqlite_store: Store, bot: telegram.Bot, fake_bot_api: FakeBotApi) -> None:
    await enqueue(sqlite_store, [(7, {"text": f"part {i}"}) for i in range(5)]
                  + [(8, {"text": "other chat"})])
    sender = Sender(sqlite_store, bot, rate=100)
    task = sender.start()
    messages = await fake_bot_api.wait_for_messages(7, 5, timeout=8)
    await sender.stop()
    await task
    assert [m.text for m in messages] == [f"part {i}" for i in range(5)]
    # One turn's few replies arrive together (a burst of 3); beyond that, one a second:
    # the (3 + k)-th message comes no sooner than k seconds after the first.
    start = messages[0].time
    assert messages[2].time - start < 0.5
    for k, message in enumerate(messages[3:], start=1):
        assert message.time - start >= 0.98 * k, [m.time - start for m in messages]
    assert [m.text for m in fake_bot_api.messages_to(8)] == ["other chat"]


async def test_429_pauses_every_send_for_retry_after(sqlite_store: Store, bot: telegram.Bot,
                                                     fake_bot_api: FakeBotApi) -> None:
    fake_bot_api.fail_next("sendMessage", status=429, retry_after=1)
    await enqueue(sqlite_store, [(100 + i, {"text": f"m{i}"}) for i in range(10)])
    sender = Sender(sqlite_store, bot, rate=50, concurrency=1)
    sender.start()
    for i in range(10):
        await fake_bot_api.wait_for_messages(100 + i, 1, timeout=5)
    await sender.stop()
    calls = fake_bot_api.calls("sendMessage")
    refused = next(c for c in calls if c.status == 429)
    after = [c.time for c in calls if c.time > refused.time]
    assert after and min(after) - refused.time >= 0.99
    assert calls[1].params["chat_id"] == refused.params["chat_id"]  # that row first
    assert await count(sqlite_store, "outbox", "status = 'sent'") == 10


async def test_blocked_user_is_unreachable_and_their_checkins_cancelled(
        sqlite_store: Store, bot: telegram.Bot, fake_bot_api: FakeBotApi) -> None:
    fake_bot_api.block(5)
    await enqueue(sqlite_store, [(5, {"text": "hi"}), (5, {"text": "again"}),
                                 (6, {"text": "fine"})])
    async with sqlite_store.sessionmaker() as session, session.begin():
        session.add(PlannedCheckin(user_id=5, kind="daily", due_at=now() + timedelta(hours=3)))
        session.add(PlannedCheckin(user_id=6, kind="daily", due_at=now() + timedelta(hours=3)))
    sender = Sender(sqlite_store, bot, rate=50)
    await sender.drain()
    user = await sqlite_store.get_user(5)
    assert user is not None and user.reachable is False
    assert [tuple(r) for r in await raw(sqlite_store, "SELECT user_id, status FROM "
                                        "planned_checkins ORDER BY user_id")] == [
        (5, "cancelled"), (6, "planned")]
    rows = await raw(sqlite_store, "SELECT chat_id, status, last_error FROM outbox ORDER BY id")
    assert [(r[0], r[1]) for r in rows] == [(5, "failed"), (5, "failed"), (6, "sent")]
    assert "Forbidden" in rows[0][2]
    assert len(fake_bot_api.calls("sendMessage")) == 2  # the second one was never tried


async def test_5xx_is_retried_with_backoff_then_succeeds(
        sqlite_store: Store, bot: telegram.Bot, fake_bot_api: FakeBotApi) -> None:
    fake_bot_api.fail_next("sendMessage", status=500, times=2)
    await enqueue(sqlite_store, [(9, {"text": "persist"})])
    sender = Sender(sqlite_store, bot, rate=50, backoff=0.1, per_chat_interval=0)
    sender.start()
    await fake_bot_api.wait_for_messages(9, 1, timeout=5)
    await sender.stop()
    calls = fake_bot_api.calls("sendMessage")
    assert [c.status for c in calls] == [500, 500, 200]
    assert calls[2].time - calls[1].time >= 0.19  # the second wait doubled
    rows = await raw(sqlite_store, "SELECT status, attempts FROM outbox")
    assert tuple(rows[0]) == ("sent", 3)


async def test_5xx_forever_fails_after_max_attempts_without_logging_the_text(
        sqlite_store: Store, bot: telegram.Bot, fake_bot_api: FakeBotApi,
        caplog: pytest.LogCaptureFixture) -> None:
    fake_bot_api.fail_next("sendMessage", status=502, times=100)
    await enqueue(sqlite_store, [(9, {"text": "SECRET-WORDS"})])
    sender = Sender(sqlite_store, bot, rate=50, backoff=0.02, max_attempts=3,
                    per_chat_interval=0)
    with caplog.at_level(logging.DEBUG, logger="bot"):
        for _ in range(50):
            await sender.drain()
            if await count(sqlite_store, "outbox", "status = 'failed'"):
                break
            await asyncio.sleep(0.03)
    rows = await raw(sqlite_store, "SELECT status, attempts, last_error FROM outbox")
    assert rows[0][0] == "failed" and rows[0][1] == 3 and "Bad Gateway" in rows[0][2]
    assert len(fake_bot_api.calls("sendMessage")) == 3
    ours = [r.getMessage() for r in caplog.records if r.name.startswith("bot.")]
    assert any("giving up" in m for m in ours), ours
    assert not any("SECRET-WORDS" in m for m in ours)


async def test_stuck_sending_rows_return_after_the_lease(
        sqlite_store: Store, bot: telegram.Bot, fake_bot_api: FakeBotApi) -> None:
    await enqueue(sqlite_store, [(3, {"text": "was in flight"})])
    async with sqlite_store.sessionmaker() as session, session.begin():
        await session.execute(update(Outbox).values(status="sending", attempts=1,
                                                    next_attempt_at=now() - timedelta(1)))
    sender = Sender(sqlite_store, bot, rate=50)
    assert await sender.deliver_now(3) == 1
    assert [m.text for m in fake_bot_api.messages_to(3)] == ["was in flight"]


async def test_stop_finishes_the_send_in_flight(
        sqlite_store: Store, bot: telegram.Bot, fake_bot_api: FakeBotApi) -> None:
    fake_bot_api.hang("sendMessage", 0.3, times=1)
    await enqueue(sqlite_store, [(4, {"text": "slow"})])
    sender = Sender(sqlite_store, bot, rate=50)
    sender.start()
    await fake_bot_api.wait_for_calls("sendMessage", 1)
    await sender.stop()
    assert await count(sqlite_store, "outbox", "status = 'sent'") == 1


def test_split_keeps_paragraphs_words_and_graphemes() -> None:
    paragraph = "word " * 600  # 3,000 characters
    text = paragraph.strip() + "\n\n" + paragraph.strip()
    parts = split_text(text)
    assert parts == [paragraph.strip(), paragraph.strip()]
    emoji = "👍🏽" * 3000  # a skin-tone emoji is one grapheme, 4 UTF-16 units
    parts = split_text(emoji)
    assert "".join(parts) == emoji
    assert all(utf16_len(p) <= MAX_TEXT and len(p) % 2 == 0 for p in parts)
    flags = "🇮🇹" * 1500  # regional-indicator pairs must stay together
    assert all(len(p) % 2 == 0 for p in split_text(flags))
    accents = "e\u0301" * 5000  # e + combining acute
    assert all(not p.startswith("\u0301") for p in split_text(accents))
    assert split_text("short") == ["short"]
    lines = "\n".join(["x" * 100] * 60)
    assert all(not p.startswith("\n") and utf16_len(p) <= MAX_TEXT for p in split_text(lines))


async def test_long_text_is_sent_in_parts_with_the_keyboard_last(
        sqlite_store: Store, bot: telegram.Bot, fake_bot_api: FakeBotApi) -> None:
    text = ("Sentence with words. " * 250).strip()  # about 5,250 characters
    buttons = [{"label": "Yes", "data": "y"}, {"label": "No", "data": "n"}]
    await enqueue(sqlite_store, [(11, {"text": text, "buttons": buttons})])
    sender = Sender(sqlite_store, bot, rate=50, per_chat_interval=0.05)
    assert await sender.deliver_now(11) == 1
    sent = fake_bot_api.messages_to(11)
    assert len(sent) == 2 and sent[0].reply_markup is None
    assert sent[1].reply_markup == {"inline_keyboard": [[
        {"text": "Yes", "callback_data": "y"}, {"text": "No", "callback_data": "n"}]]}
    assert " ".join(m.text or "" for m in sent) == text


def test_keyboard_layout() -> None:
    short = [{"label": str(i), "data": f"d{i}"} for i in range(1, 11)]
    markup = keyboard(short)
    assert markup is not None and [len(r) for r in markup["inline_keyboard"]] == [5, 5]
    long = [{"label": "I did it, and it was lovely", "data": "a"}, {"label": "No", "data": "b"}]
    markup = keyboard(long)
    assert markup is not None and [len(r) for r in markup["inline_keyboard"]] == [1, 1]
    assert keyboard([]) is None


async def test_deliver_now_only_sends_that_user(
        sqlite_store: Store, bot: telegram.Bot, fake_bot_api: FakeBotApi) -> None:
    await enqueue(sqlite_store, [(21, {"text": "mine"}), (22, {"text": "theirs"})])
    sender = Sender(sqlite_store, bot, rate=50)
    assert await sender.deliver_now(21) == 1
    assert fake_bot_api.messages_to(22) == []
    async with sqlite_store.sessionmaker() as session:
        pending = (await session.execute(select(Outbox.chat_id)
                                          .where(Outbox.status == "pending"))).scalars().all()
    assert pending == [22]


async def test_claim_takes_at_most_limit_rows(store: Store, bot: telegram.Bot) -> None:
    """Outbox claims never overshoot ``limit`` (on PostgreSQL too, see claims.claim)."""
    await enqueue(store, [(500 + i, {"text": f"m{i}"}) for i in range(30)])
    sender = Sender(store, bot, rate=50)
    rows = await sender.claim(10)
    assert len(rows) == 10
    assert await count(store, "outbox", "status = 'sending'") == 10


async def held_turn(store: Store, user_id: int, texts: list[str],
                    update_id: int | None = None) -> StoreTurn:
    """A committed turn that queued `texts` to the user, held for the caller to send."""
    committed: list[StoreTurn] = []

    async def queue(t: StoreTurn) -> None:
        for text in texts:
            t.enqueue(t.user_id, {"text": text})
        committed[:] = [t]

    await store.run_turn(user_id, queue, update_id=update_id, hold_for=timedelta(minutes=2))
    return committed[0]


# An incoming update's turn learns whether the chat is busy as it marks the update processed.
@pytest.mark.parametrize("update_id", [None, 9001])
async def test_a_turns_replies_are_sent_without_claiming_them_again(
        store: Store, bot: telegram.Bot, fake_bot_api: FakeBotApi, update_id: int | None) -> None:
    t = await held_turn(store, 31, ["one", "two", "three"], update_id)
    assert len(t.held) == 3 and t.waiting == 0
    assert [tuple(r) for r in await raw(store, "SELECT status, attempts FROM outbox")] == [
        ("sending", 1)] * 3  # committed already claimed: no other sender takes them
    sender = Sender(store, bot, rate=50)
    assert await sender.claim(10) == []
    assert await sender.deliver_turn(t) == 3
    assert [m.text for m in fake_bot_api.messages_to(31)] == ["one", "two", "three"]
    assert await count(store, "outbox", "status = 'sent'") == 3


@pytest.mark.parametrize("update_id", [None, 9002])
async def test_a_turn_behind_undelivered_messages_queues_its_own_behind_them(
        store: Store, bot: telegram.Bot, fake_bot_api: FakeBotApi, update_id: int | None) -> None:
    await enqueue(store, [(32, {"text": "earlier"})])
    t = await held_turn(store, 32, ["later"], update_id)
    assert t.held == [] and t.waiting == 1
    sender = Sender(store, bot, rate=50, per_chat_interval=0)
    assert await sender.deliver_turn(t) == 0
    await sender.drain()
    assert [m.text for m in fake_bot_api.messages_to(32)] == ["earlier", "later"]


async def test_a_held_reply_telegram_refuses_sends_the_rest_back_in_order(
        store: Store, bot: telegram.Bot, fake_bot_api: FakeBotApi) -> None:
    fake_bot_api.fail_next("sendMessage", status=502)
    t = await held_turn(store, 33, ["first", "second"])
    sender = Sender(store, bot, rate=50, backoff=0.05, per_chat_interval=0)
    assert await sender.deliver_turn(t) == 0
    assert [tuple(r) for r in await raw(store, "SELECT status, attempts FROM outbox "
                                        "ORDER BY id")] == [("pending", 1), ("pending", 0)]
    for _ in range(50):
        await sender.drain()
        if len(fake_bot_api.messages_to(33)) == 2:
            break
        await asyncio.sleep(0.02)
    assert [m.text for m in fake_bot_api.messages_to(33)] == ["first", "second"]


async def test_a_held_reply_to_a_user_who_blocked_the_bot_fails_the_rest(
        store: Store, bot: telegram.Bot, fake_bot_api: FakeBotApi) -> None:
    fake_bot_api.block(34)
    t = await held_turn(store, 34, ["first", "second"])
    sender = Sender(store, bot, rate=50)
    assert await sender.deliver_turn(t) == 0
    assert [r[0] for r in await raw(store, "SELECT status FROM outbox")] == ["failed"] * 2
    assert len(fake_bot_api.calls("sendMessage")) == 1


async def test_held_replies_beyond_the_chats_pace_go_back_to_the_queue(
        store: Store, bot: telegram.Bot, fake_bot_api: FakeBotApi) -> None:
    t = await held_turn(store, 35, [f"part {i}" for i in range(5)])
    sender = Sender(store, bot, rate=50)  # one a second per chat, a burst of 3
    assert await sender.deliver_turn(t) == 3  # the update's handler does not wait for 4 and 5
    assert [tuple(r) for r in await raw(store, "SELECT status, attempts FROM outbox "
                                        "ORDER BY id")][3:] == [("pending", 0)] * 2
    sender.start()
    await fake_bot_api.wait_for_messages(35, 5, timeout=5)
    await sender.stop()
    assert [m.text for m in fake_bot_api.messages_to(35)] == [f"part {i}" for i in range(5)]
