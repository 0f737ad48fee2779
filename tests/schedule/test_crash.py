"""SIGKILL a bot process in the middle of its work; a fresh process resumes from the rows.

The first process (tests/schedule/crash_worker.py) ticks against the fake Bot API server and
kills itself (a) after claiming due check-ins, before starting any, or (b) right after the
fake accepted the k-th message, before the sender recorded it. A second process, with short
leases, finishes. Every due check-in's first message reaches the fake; none twice, except
— the documented bound of the sender — the one message per chat whose send was in flight
when the process died: the rows left ``sending`` whose message the fake had already taken.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.store import Store
from tests.fakes import FakeBotApi
from tests.schedule.helpers import add_due, add_users, noon_zone, now_utc
from tests.store.store_helpers import count, raw

pytestmark = pytest.mark.fault  # a replica killed mid-send (and mid-claim)

WORKER = Path(__file__).parent / "crash_worker.py"
ROOT = Path(__file__).resolve().parents[2]
FIRST = "How are you feeling today, from 1 to 10?"
LEASE = 1.0  # seconds, for check-in claims and outbox sends alike


async def run_worker(fake: FakeBotApi, url: str, *, kill: str | None, worker: str,
                     batch: int = 100, timeout: float = 60) -> int:
    config: dict[str, Any] = {
        "url": url, "base_url": fake.base_url, "token": fake.token, "kill": kill,
        "worker": worker, "lease": LEASE, "rate": 100, "batch": batch, "timeout": timeout}
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(WORKER), json.dumps(config), cwd=ROOT, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), timeout + 30)
    assert process.returncode is not None
    if process.returncode not in (0, -signal.SIGKILL):
        pytest.fail(f"worker exited {process.returncode}:\n{out.decode()}\n{err.decode()}")
    return process.returncode


def first_messages(fake: FakeBotApi) -> Counter[int]:
    return Counter({chat: sum(1 for m in messages if m.text == FIRST)
                    for chat, messages in fake.sent.items()})


async def seed(store: Store, users: int) -> None:
    now = now_utc()
    await add_users(store, range(1, users + 1), now=now, zone=noon_zone(now))
    await add_due(store, range(1, users + 1), now - timedelta(minutes=1))


async def check_finished(store: Store, users: int) -> None:
    assert await count(store, "planned_checkins", "status = 'started'") == users
    assert await count(store, "planned_checkins", "status = 'claimed'") == 0
    rows = await raw(store, "SELECT user_id, status FROM outbox")
    assert sorted(r[0] for r in rows) == list(range(1, users + 1))  # started once each
    assert {r[1] for r in rows} == {"sent"}


async def test_killed_after_claiming_before_starting(store: Store, db_url: str,
                                                     fake_bot_api: FakeBotApi) -> None:
    users = 30
    await seed(store, users)
    code = await run_worker(fake_bot_api, db_url, kill="claimed", worker="first", batch=10)
    assert code == -signal.SIGKILL
    assert await count(store, "planned_checkins", "status = 'claimed'") == 10
    assert await count(store, "outbox") == 0 and not fake_bot_api.sent

    assert await run_worker(fake_bot_api, db_url, kill=None, worker="second", batch=10) == 0
    await check_finished(store, users)
    sent = first_messages(fake_bot_api)
    assert sent == Counter({chat: 1 for chat in range(1, users + 1)})  # none lost, none twice


async def test_killed_while_sending(store: Store, db_url: str,
                                    fake_bot_api: FakeBotApi) -> None:
    users, k = 40, 15
    await seed(store, users)
    code = await run_worker(fake_bot_api, db_url, kill=f"accepted:{k}", worker="first")
    assert code == -signal.SIGKILL
    await asyncio.sleep(0.2)  # let the fake finish any request the dead process had made
    before = first_messages(fake_bot_api)
    assert k <= sum(before.values()) < users  # killed in the middle of sending
    in_flight = {r[0] for r in await raw(store, "SELECT chat_id FROM outbox "
                                                "WHERE status = 'sending'")}
    # Accepted by Telegram but not recorded as sent (the k-th at least): sent again.
    repeated = {chat for chat in in_flight if before[chat]}
    assert repeated

    assert await run_worker(fake_bot_api, db_url, kill=None, worker="second") == 0
    await check_finished(store, users)
    sent = first_messages(fake_bot_api)
    assert set(sent) == set(range(1, users + 1))  # every due check-in's first message
    assert {chat: n for chat, n in sent.items() if n != 1} == dict.fromkeys(repeated, 2)
