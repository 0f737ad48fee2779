"""Nothing lost in an outage (review M1, M4, M5): turns wait out the database, the webhook
makes Telegram redeliver, the sender retries for hours, an unblocked user is back."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import telegram
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

import bot.store.store as store_module
from bot.store import Store
from bot.store import Turn as StoreTurn
from bot.telegram.http import AiohttpRequest
from bot.telegram.sender import Sender
from tests.e2e.conftest import RunningBot, bot_running, settings_for
from tests.e2e.test_webhook import SECRET, free_port
from tests.fakes import FakeBotApi
from tests.faults import fresh_postgresql, kill_backends, postgresql_away, queue
from tests.schedule.helpers import add_users
from tests.store.store_helpers import count, raw


@pytest.fixture
async def bot(fake_bot_api: FakeBotApi) -> AsyncIterator[telegram.Bot]:
    async with telegram.Bot(fake_bot_api.token, base_url=fake_bot_api.base_url,
                            request=AiohttpRequest(connections=4)) as b:
        yield b


def disk_full() -> OperationalError:
    return OperationalError("INSERT INTO answers …", {"value": "SECRET-WORDS"},
                            Exception("database or disk is full"))


async def answer(t: StoreTurn) -> str:
    """A goal-setting answer and the next question."""
    t.record_answer("goal_setting", "goal", "goal.title", "Run a marathon")
    t.enqueue(t.user_id, {"text": "Why does it matter?"})
    return "done"


@pytest.mark.fault
async def test_a_turn_waits_out_a_postgresql_restart(pg_database: str) -> None:
    """M1: the database refuses connections and drops the open ones for 2 s while an
    update's turn runs: it is retried until the database is back, and counts once."""
    store = Store(await fresh_postgresql(pg_database))
    await store.start()

    try:
        await store.run_turn(61, answer, update_id=1)  # the user exists, connections pooled
        async with postgresql_away(pg_database):
            turn = asyncio.create_task(store.run_turn(61, answer, update_id=2))
            await asyncio.sleep(2.0)
            assert not turn.done()  # waiting, not failed
        # "done", or None when its commit went through just as a connection was dropped
        # and the retry found the update processed: either way it counted once.
        assert await asyncio.wait_for(turn, 15) in ("done", None)
        assert await count(store, "processed_updates", "update_id = 2") == 1
        assert await count(store, "answers") == 2
    finally:
        await store.close()


@pytest.mark.fault
async def test_dropped_connections_cost_a_turn_one_try_and_other_work_nothing(
        pg_database: str, caplog: pytest.LogCaptureFixture) -> None:
    """A turn takes a pooled connection without pinging it first (three round trips on
    asyncpg): one the database dropped fails a try, and the turn runs again on a fresh one.
    Other work, which is not run again, is still pinged and never sees a dropped one."""
    store = Store(await fresh_postgresql(pg_database))
    await store.start()

    try:
        await store.run_turn(63, answer, update_id=1)
        await kill_backends(pg_database)
        assert await store.run_turn(63, answer, update_id=2) == "done"
        retried = [r.message for r in caplog.records if "database away" in r.message]
        assert len(retried) == 1 and "turn of user 63" in retried[0] and "try 2" in retried[0]
        await kill_backends(pg_database)
        async with store.sessionmaker() as session:
            assert await session.scalar(text("SELECT count(*) FROM answers")) == 2
    finally:
        await store.close()


async def test_a_turn_gives_up_after_the_outage_limit_and_keeps_nothing(store: Store) -> None:
    calls: list[float] = []

    async def full(t: StoreTurn) -> None:
        calls.append(asyncio.get_running_loop().time())
        t.record_answer("d", "s", "v", "SECRET-WORDS")
        raise disk_full()

    started = asyncio.get_running_loop().time()
    with pytest.raises(OperationalError):
        await store.run_turn(62, full, update_id=7, outage_retry=timedelta(seconds=1))
    took = asyncio.get_running_loop().time() - started
    assert 4 <= len(calls) <= 12 and 0.4 <= took <= 1.5  # retried with a back-off, bounded
    assert await count(store, "answers") == 0
    assert await count(store, "processed_updates") == 0  # so a redelivery is processed


class FailingTurns:
    """The first `times` turns of `user` fail as on a full disk."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, user: int, times: int) -> None:
        self.left = times
        original = Store.turn

        def turn(store: Store, user_id: int, **kwargs: Any) -> Any:
            if user_id == user and self.left > 0:
                self.left -= 1
                raise disk_full()
            return original(store, user_id, **kwargs)

        monkeypatch.setattr(Store, "turn", turn)
        monkeypatch.setattr(store_module, "OUTAGE_RETRY", timedelta(seconds=0.3))


async def test_in_webhook_mode_a_database_outage_makes_telegram_redeliver(
        fake_bot_api: FakeBotApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """M1: past the turn's own retries the webhook answers 503; Telegram sends the update
    again and it is answered once, with no apology (nothing was lost)."""
    port = free_port()
    settings = settings_for(fake_bot_api, tmp_path,
                            webhook_url=f"http://127.0.0.1:{port}/telegram",
                            webhook_secret=SECRET)
    async with bot_running(fake_bot_api, settings, listen=("127.0.0.1", port)) as running:
        await running.agree(301)
        failing = FailingTurns(monkeypatch, 301, times=8)
        ana = running.user(301)
        replies = await ana.send("/goal")
        assert failing.left == 0
        texts = [r.text or "" for r in replies]
        assert texts[0].startswith("Let us give your goal some shape") and len(texts) == 2
        assert not any("Sorry" in text for text in texts)
        statuses = [d.status for d in fake_bot_api.webhook_deliveries]
        assert 503 in statuses and statuses[-1] == 200
        assert await count(running.store, "processed_updates") == 1


async def test_in_webhook_mode_an_outage_past_three_redeliveries_is_told_to_the_user(
        fake_bot_api: FakeBotApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    FailingTurns(monkeypatch, 304, times=1000)
    port = free_port()
    settings = settings_for(fake_bot_api, tmp_path,
                            webhook_url=f"http://127.0.0.1:{port}/telegram",
                            webhook_secret=SECRET)
    async with bot_running(fake_bot_api, settings, listen=("127.0.0.1", port)) as running:
        replies = await running.user(304).send("Run a marathon")
        assert [r.text for r in replies] == [
            "Sorry, something went wrong on my side and your last message did not reach me. "
            "Please send it again in a moment."]
        assert [d.status for d in fake_bot_api.webhook_deliveries] == [503, 503, 503, 200]


async def test_in_polling_mode_the_user_is_told_to_send_it_again(
        running_bot: RunningBot, monkeypatch: pytest.MonkeyPatch) -> None:
    FailingTurns(monkeypatch, 302, times=1000)
    ana = running_bot.user(302)
    replies = await ana.send("Run a marathon")
    assert [r.text for r in replies] == [
        "Sorry, something went wrong on my side and your last message did not reach me. "
        "Please send it again in a moment."]


async def test_outbox_rows_are_retried_through_a_long_telegram_outage(
        sqlite_store_url: str, bot: telegram.Bot, fake_bot_api: FakeBotApi) -> None:
    """M5: Telegram answers 502 for longer than five attempts used to last; nothing fails
    before `give_up_after`, and everything goes out, once, when Telegram is back."""
    store = Store(sqlite_store_url)
    await store.start()
    fake_bot_api.fail_next("sendMessage", status=502, times=10_000)
    await queue(store, [(400 + i, {"text": f"check-in {i}"}) for i in range(5)])
    sender = Sender(store, bot, rate=50, per_chat_interval=0, backoff=0.05, max_backoff=0.2,
                    poll_interval=0.05, give_up_after=timedelta(minutes=10))
    task = sender.start()
    try:
        await asyncio.sleep(2.0)  # 5 rows x about 12 attempts each
        assert await count(store, "outbox", "status = 'failed'") == 0
        attempts = [r[0] for r in await raw(store, "SELECT attempts FROM outbox")]
        assert min(attempts) > 5  # the old limit
        fake_bot_api.clear_failures()
        for i in range(5):
            await fake_bot_api.wait_for_messages(400 + i, 1, timeout=5)
        await asyncio.sleep(0.3)
        assert await count(store, "outbox", "status = 'sent'") == 5
        assert all(len(fake_bot_api.messages_to(400 + i)) == 1 for i in range(5))
    finally:
        await sender.stop()
        await task
        await store.close()


async def test_an_outbox_row_fails_only_after_the_give_up_limit(
        sqlite_store_url: str, bot: telegram.Bot, fake_bot_api: FakeBotApi) -> None:
    store = Store(sqlite_store_url)
    await store.start()
    fake_bot_api.fail_next("sendMessage", status=502, times=10_000)
    await queue(store, [(410, {"text": "never accepted"})])
    sender = Sender(store, bot, rate=50, per_chat_interval=0, backoff=0.05, max_backoff=0.1,
                    poll_interval=0.05, give_up_after=timedelta(seconds=1))
    task = sender.start()
    try:
        await asyncio.sleep(0.7)
        assert await count(store, "outbox", "status = 'failed'") == 0
        await asyncio.sleep(0.8)
        assert await count(store, "outbox", "status = 'failed'") == 1
    finally:
        await sender.stop()
        await task
        await store.close()


async def test_a_user_who_unblocks_the_bot_and_writes_is_reachable_again(
        running_bot: RunningBot) -> None:
    """M4: one 403 no longer means unreachable for ever; their check-ins are planned again
    at once."""
    await add_users(running_bot.store, [303], now=datetime.now(UTC))
    ana = running_bot.user(303)
    await ana.send("/help")
    running_bot.fake.block(303)
    running_bot.fake.send_text(303, "/help")
    await running_bot.idle(303)
    user = await running_bot.store.get_user(303)
    assert user is not None and not user.reachable
    running_bot.fake.unblock(303)
    replies = await ana.send("/help")
    assert "/checkin" in (replies[-1].text or "")
    user = await running_bot.store.get_user(303)
    assert user is not None and user.reachable
    assert await count(running_bot.store, "planned_checkins",
                       "user_id = 303 AND kind = 'daily' AND status = 'planned'") == 1


@pytest.fixture
def sqlite_store_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'o.db'}"
