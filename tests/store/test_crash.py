"""A process killed in the middle of a turn leaves nothing half-written."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from bot.store import Store
from tests.store.store_helpers import count

pytestmark = pytest.mark.fault  # a process SIGKILLed mid-turn

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
import asyncio, os, signal, sys
from bot.store import Store

async def main(url):
    store = Store(url)
    await store.start()
    async with store.turn(41, update_id=2) as t:
        t.set_state({"n": 2})
        t.record_answer("d", "s", "d.x", "half")
        t.enqueue(41, {"text": "never sent"})
        t.user.first_name = "half"
        await t.flush()  # the rows are in the database, uncommitted
        print("FLUSHED", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

asyncio.run(main(sys.argv[1]))
"""


async def test_sigkill_mid_turn_leaves_nothing(store: Store, db_url: str) -> None:
    async with store.turn(41, update_id=1) as t:
        t.set_state({"n": 1})
        t.record_answer("d", "s", "d.x", "whole")
        t.enqueue(41, {"text": "sent"})

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        SCRIPT,
        db_url,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=REPO,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=30)
    assert proc.returncode == -signal.SIGKILL, err.decode()
    assert b"FLUSHED" in out

    # The next turn gets the lock (released by the dead process) and sees the old state.
    async with store.turn(41, update_id=3) as t:
        assert t.state == {"n": 1}
        assert t.user.first_name is None
    assert await count(store, "answers") == 1
    assert await count(store, "outbox") == 1
    assert await count(store, "processed_updates", "update_id = 2") == 0
    assert await count(store, "conversations", "version = 1") == 1
    # Telegram redelivers update 2; it is processed as new.
    async with store.turn(41, update_id=2) as t:
        assert not t.duplicate
