"""One send budget for the whole bot, shared by its replicas; replies ahead of bulk.

Against the fake Bot API with Telegram's limits enforced (a 429 would show a breach)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from datetime import timedelta

import pytest
import telegram

from bot.store import Store
from bot.store import Turn as StoreTurn
from bot.telegram.http import AiohttpRequest
from bot.telegram.pacing import SharedBudget
from bot.telegram.sender import Sender
from tests.fakes import FakeBotApi
from tests.faults import queue
from tests.telegram.test_sender import achieved_rate, busiest_second, send_times

RATE = 20.0  # the bot's budget in these tests: low enough for a shared, busy machine


def new_bot(fake: FakeBotApi) -> telegram.Bot:
    return telegram.Bot(fake.token, base_url=fake.base_url,
                        request=AiohttpRequest(connections=4))


async def kill(sender: Sender) -> None:
    """As SIGKILL would: the loop and its sends stop where they are, nothing recorded."""
    tasks = [t for t in (sender._runner, *sender._inflight) if t is not None]
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(BaseException):
            await task


@pytest.mark.timed
async def test_two_replicas_share_one_budget_and_a_dead_ones_share_returns(
        pg_url: str, fake_bot_api: FakeBotApi) -> None:
    fake_bot_api.enforce_limits(per_bot=RATE + 1, chat_burst=3)
    stores = [Store(pg_url), Store(pg_url)]
    for s in stores:
        await s.start()
    await queue(stores[0], [(1000 + i, {"text": f"check-in {i}"}) for i in range(400)])
    bots = [new_bot(fake_bot_api), new_bot(fake_bot_api)]
    for b in bots:
        await b.initialize()
    a, b = (Sender(s, bot, rate=RATE, shared=True, lease=timedelta(seconds=30),
                   poll_interval=0.1, release_every=0.5) for s, bot in zip(stores, bots,
                                                                             strict=True))
    try:
        a.start()
        b.start()
        await asyncio.sleep(5)
        killed_at = time.monotonic()
        sent_by_a = a.sent_count
        await kill(a)
        await asyncio.sleep(5)
        await b.stop()
        times = send_times(fake_bot_api)
        together = [t for t in times if t < killed_at]
        alone = [t for t in times if t > killed_at + 1.0]  # its share back within a second
        assert fake_bot_api.rate_limited == 0
        # Every one-second window as the sends arrived: one send the machine held up can
        # share a window with the next RATE on time (the fake refuses beyond RATE + 1).
        assert busiest_second(times) <= RATE + 1
        assert sent_by_a >= 10 and b.sent_count - len(alone) >= 10  # both sent, together
        assert achieved_rate(together[5:]) >= 0.9 * RATE, achieved_rate(together[5:])
        assert achieved_rate(alone) >= 0.9 * RATE, achieved_rate(alone)
        budget = b.bucket.budget
        assert isinstance(budget, SharedBudget)
        assert budget.leases <= b.sent_count / 3  # slices, not a round trip per message
    finally:
        for bot in bots:
            await bot.shutdown()
        for s in stores:
            await s.close()


async def reply_turn(store: Store, user: int, texts: list[str], update_id: int) -> StoreTurn:
    """A client's message and the bot's replies to it, committed as a handler does."""
    committed: list[StoreTurn] = []

    async def fn(t: StoreTurn) -> None:
        for text in texts:
            t.enqueue(t.user_id, {"text": text})
        committed[:] = [t]

    await store.run_turn(user, fn, update_id=update_id, hold_for=timedelta(minutes=2))
    return committed[0]


@pytest.mark.timed
async def test_replies_go_ahead_of_bulk_and_a_chat_keeps_its_order(
        store: Store, fake_bot_api: FakeBotApi) -> None:
    fake_bot_api.enforce_limits(per_bot=RATE + 1, chat_burst=3)
    await queue(store, [(1000 + i, {"text": f"check-in {i}"}) for i in range(300)])
    bot = new_bot(fake_bot_api)
    await bot.initialize()
    sender = Sender(store, bot, rate=RATE, shared=True, poll_interval=0.1)
    task = sender.start()
    try:
        await fake_bot_api.wait_for_messages(1000, 1, timeout=5)
        await asyncio.sleep(1.0)  # the bulk is going out, a queue in flight behind it
        asked = time.monotonic()
        t = await reply_turn(store, 5000, ["reply 1", "reply 2"], update_id=1)
        assert len(t.held) == 2
        await sender.deliver_turn(t)
        replies = fake_bot_api.messages_to(5000)
        assert [m.text for m in replies] == ["reply 1", "reply 2"]
        assert replies[-1].time - asked < 0.5, replies[-1].time - asked

        # A client whose check-in is still queued writes: their reply waits behind it (a
        # chat's messages never overtake each other), and both go ahead of the bulk.
        asked = time.monotonic()
        t = await reply_turn(store, 1299, ["your answer"], update_id=2)
        assert t.held == [] and t.waiting == 1
        sender.nudge()
        await fake_bot_api.wait_for_messages(1299, 2, timeout=3)
        took = fake_bot_api.messages_to(1299)[-1].time - asked
        assert took < 1.0, took
        assert [m.text for m in fake_bot_api.messages_to(1299)] == ["check-in 299",
                                                                    "your answer"]
        bulk_sent = sum(1 for m in fake_bot_api.calls("sendMessage")
                        if str(m.params.get("text", "")).startswith("check-in"))
        assert bulk_sent < 150  # most of the bulk still waits
        assert fake_bot_api.rate_limited == 0
    finally:
        await sender.stop()
        await task
        await bot.shutdown()


async def test_what_is_said_at_once_keeps_to_the_budget_and_the_chats_pace(
        store: Store, fake_bot_api: FakeBotApi) -> None:
    """A goodbye after an erase, an answer in a group: no outbox row, the same limits."""
    fake_bot_api.enforce_limits(per_bot=RATE + 1, chat_burst=3)
    bot = new_bot(fake_bot_api)
    await bot.initialize()
    sender = Sender(store, bot, rate=RATE)
    try:
        sender.bucket.pause(1.0)  # as after a 429
        asked = time.monotonic()
        await sender.say_now(77, "Done. Everything you shared with me is deleted.")
        assert fake_bot_api.messages_to(77)[0].time - asked >= 0.99
        for i in range(3):
            await sender.say_now(78, f"line {i}")
        await sender.say_now(78, "one more")  # past the chat's burst of 3
        lines = fake_bot_api.messages_to(78)
        assert lines[3].time - lines[0].time >= 0.98, [m.time for m in lines]
        assert fake_bot_api.rate_limited == 0
    finally:
        await bot.shutdown()


async def test_replicas_space_their_release_times_for_the_largest_spread(pg_url: str) -> None:
    """A replica whose sends vary more must not have its late arrivals crowd the release
    times of one whose vary less: every replica uses the largest spread reported lately."""
    store = Store(pg_url)
    await store.start()
    try:
        calm = SharedBudget(store.own_engine(), RATE)
        jittery = SharedBudget(store.own_engine(), RATE)
        for _ in range(64):
            calm.observe(0.002)
            jittery.observe(0.002 if len(jittery.spread._samples) % 2 else 0.062)
        assert jittery.own_spread > calm.own_spread + 0.05
        await jittery.next_release(5)
        await calm.next_release(5)
        assert calm.interval == pytest.approx(jittery.interval)
        assert calm.interval >= (1 + 0.06) / RATE > (1 + calm.own_spread) / RATE
        first = calm._leased[0][0]
        # The slices do not overlap (each put on the local clock as late as its lease's
        # round trip allows: the other's may be later by up to its uncertainty).
        assert first - jittery._leased[-1][0] >= calm.interval - jittery._offset()[1] - 1e-6
    finally:
        await store.close()


async def test_a_replica_alone_uses_every_release_time_it_leases(pg_url: str) -> None:
    """One replica's consecutive slices are one grid. A newer reading of the clocks (a
    faster round trip) used to place the next slice a little earlier than the last one's
    end allowed, and a spread that grew between two slices made the interval a little
    longer than the grid's; either way a release used on time moved the slice's later ones
    on, and the last passed its slice's end and was dropped: about one lease in two during
    the burst (issue 28)."""
    store = Store(pg_url)
    await store.start()
    try:
        budget = SharedBudget(store.own_engine(), RATE)
        read = budget._offset
        # Every lease reads the database's clock as 1 ms further ahead than the last did.
        budget._offset = (  # type: ignore[method-assign]
            lambda: (read()[0] + 0.001 * budget.leases, read()[1]))
        used = []
        for i in range(80):
            budget.observe(0.001 * i)  # the sends' spread grows
            release = await budget.next_release(100)
            if budget._leasing is not None:  # the next slice comes back meanwhile
                await asyncio.wait({budget._leasing})
            budget.take(release)  # on time
            used.append(release)
            if i == 0:
                first_interval = budget.interval
        assert budget.leases >= 10
        assert budget.dropped == 0
        assert budget.interval > first_interval
        gaps = [b - a for a, b in itertools.pairwise(used)]
        assert min(gaps) >= first_interval - 1e-6
    finally:
        await store.close()
