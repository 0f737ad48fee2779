"""Nothing dies quietly: the background sender survives database errors and unreadable rows
(review C1, repros r17_sender_dies.py and r18_poison_row.py)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import telegram
from cryptography.fernet import Fernet
from sqlalchemy.exc import OperationalError

from bot.observability import REGISTRY, Heartbeats
from bot.store import Store
from bot.telegram.http import AiohttpRequest
from bot.telegram.sender import Sender
from tests.fakes import FakeBotApi
from tests.faults import fresh_postgresql, postgresql_restart, queue
from tests.store.store_helpers import raw


@pytest.fixture
async def bot(fake_bot_api: FakeBotApi) -> AsyncIterator[telegram.Bot]:
    async with telegram.Bot(fake_bot_api.token, base_url=fake_bot_api.base_url,
                            request=AiohttpRequest(connections=4)) as b:
        yield b


def texts(fake: FakeBotApi, chat: int) -> list[str]:
    return [m.text or "" for m in fake.messages_to(chat)]


def loop_errors(loop: str) -> float:
    return REGISTRY.get_sample_value("loop_errors_total", {"loop": loop}) or 0.0


@pytest.mark.fault
async def test_the_sender_survives_postgresql_refusing_connections(
        pg_database: str, bot: telegram.Bot, fake_bot_api: FakeBotApi,
        caplog: pytest.LogCaptureFixture) -> None:
    """r17: PostgreSQL refuses connections and drops the open ones for 3 s while the sender
    idles; a message queued afterwards is still delivered, by the same loop."""
    store = Store(await fresh_postgresql(pg_database))
    await store.start()
    heartbeats = Heartbeats()
    heartbeats.expect("sender", 5.0)
    sender = Sender(store, bot, rate=50, per_chat_interval=0, poll_interval=0.2,
                    loop_backoff=0.2, loop_max_backoff=1.0, heartbeats=heartbeats)
    errors_before = loop_errors("sender")
    task = sender.start()
    try:
        await queue(store, [(9951, {"text": "queued #1"})])
        await fake_bot_api.wait_for_messages(9951, 1, timeout=10)
        with caplog.at_level(logging.ERROR, logger="bot"):
            await postgresql_restart(pg_database, 3.0)
        assert loop_errors("sender") > errors_before  # it did fail, and said so
        await queue(store, [(9951, {"text": "queued #2"})])
        await fake_bot_api.wait_for_messages(9951, 2, timeout=15)
        assert texts(fake_bot_api, 9951) == ["queued #1", "queued #2"]
        assert not task.done()
        assert heartbeats.stale() == [] and heartbeats.age("sender") < 2
        failures = [r for r in caplog.records if "sender loop" in r.getMessage()]
        assert failures and all(r.exc_info is None and "SELECT" not in r.getMessage()
                                for r in failures)  # the type only, never SQL or words
    finally:
        await sender.stop()
        await task
        await store.close()


async def test_a_row_this_replica_cannot_decrypt_fails_alone(
        tmp_path: Path, bot: telegram.Bot, fake_bot_api: FakeBotApi,
        caplog: pytest.LogCaptureFixture) -> None:
    """r18: one row written with another key is marked failed with its reason; the other
    user's check-in still goes out, and the loop keeps running."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'p.db'}"
    old = Store(url, encryption_key=Fernet.generate_key().decode())
    await old.start()
    await queue(old, [(1, {"text": "written with the old key"})])
    await old.close()
    # Another key would be refused at start (tests/store/test_keys.py); past that check (the
    # key fingerprints lost, say), a row still cannot stop the sender.
    with contextlib.closing(sqlite3.connect(tmp_path / "p.db")) as db, db:
        db.execute("DELETE FROM key_fingerprints")
    new = Store(url, encryption_key=Fernet.generate_key().decode())
    await new.start()
    await queue(new, [(2, {"text": "another user's check-in"})])
    sender = Sender(new, bot, rate=50, per_chat_interval=0, poll_interval=0.1)
    task = sender.start()
    try:
        with caplog.at_level(logging.ERROR, logger="bot"):
            await fake_bot_api.wait_for_messages(2, 1, timeout=5)
            await asyncio.sleep(0.3)
        assert not task.done()
        assert texts(fake_bot_api, 2) == ["another user's check-in"]
        assert texts(fake_bot_api, 1) == []
        rows = await raw(new, "SELECT user_id, status, last_error FROM outbox ORDER BY id")
        assert [tuple(r) for r in rows] == [(1, "failed", "DecryptionError"),
                                            (2, "sent", None)]
        assert any("cannot be read here (DecryptionError)" in r.getMessage()
                   for r in caplog.records)
    finally:
        await sender.stop()
        await task
        await new.close()


async def test_any_error_in_a_round_is_logged_backed_off_and_survived(
        tmp_path: Path, bot: telegram.Bot, fake_bot_api: FakeBotApi,
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite locked, disk full, anything: the round fails, the loop waits longer each
    time (0.1, 0.2, 0.4 s …) and goes on once the database answers again."""
    store = Store(f"sqlite+aiosqlite:///{tmp_path / 'l.db'}")
    await store.start()
    await queue(store, [(5, {"text": "after the lock"})])
    sender = Sender(store, bot, rate=50, per_chat_interval=0, poll_interval=0.1,
                    loop_backoff=0.1, loop_max_backoff=0.4)
    real_claim = sender.claim
    tries: list[float] = []

    async def locked(limit: int, **options: Any) -> list[object]:
        tries.append(asyncio.get_running_loop().time())
        if len(tries) <= 4:
            raise OperationalError("BEGIN IMMEDIATE", {"secret": "SECRET-WORDS"},
                                   Exception("database or disk is full"))
        return await real_claim(limit, **options)  # type: ignore[return-value]

    monkeypatch.setattr(sender, "claim", locked)
    with caplog.at_level(logging.INFO, logger="bot"):
        task = sender.start()
        await fake_bot_api.wait_for_messages(5, 1, timeout=5)
        await sender.stop()
        await task
    gaps = [round(b - a, 1) for a, b in itertools.pairwise(tries[:5])]
    assert gaps == [0.1, 0.2, 0.4, 0.4]  # doubling, capped
    logged = [r.getMessage() for r in caplog.records if r.name.startswith("bot.")]
    assert sum("round failed (OperationalError" in m for m in logged) == 4
    assert any("working again after 4 failed rounds" in m for m in logged)
    assert not any("SECRET-WORDS" in m or "disk is full" in m for m in logged)
    await store.close()
