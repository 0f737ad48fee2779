"""Background loops are supervised and report their last round (/healthz, a gauge)."""

from __future__ import annotations

import asyncio
import itertools
import logging
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer
from telegram.ext import Application

from bot.config import Settings
from bot.loops import Supervisor, run_loop
from bot.observability import REGISTRY, Heartbeats
from bot.store import Store
from bot.telegram.app import HEALTH_PATH, webhook_app


@pytest.mark.timed
async def test_a_loop_survives_any_exception_backs_off_and_beats_when_it_works(
        caplog: pytest.LogCaptureFixture) -> None:
    heartbeats = Heartbeats()
    heartbeats.expect("digests", 10.0)
    stop = asyncio.Event()
    rounds: list[float] = []

    async def round_() -> None:
        rounds.append(asyncio.get_running_loop().time())
        if len(rounds) <= 3:
            raise KeyError("a client's words")  # anything at all
        if len(rounds) == 5:
            stop.set()

    with caplog.at_level(logging.INFO, logger="bot"):
        await asyncio.wait_for(run_loop("digests", round_, interval=0.01, stop=stop,
                                        heartbeats=heartbeats, backoff=0.05,
                                        max_backoff=0.1), 5)
    gaps = [b - a for a, b in itertools.pairwise(rounds)]
    # Doubling, capped at 0.1 s: a sleep never ends early, and a loaded machine makes it
    # late by milliseconds, far less than the 0.2 s an uncapped third wait would take.
    assert gaps[0] >= 0.05 and gaps[1] >= 0.1 and 0.1 <= gaps[2] < 0.19, gaps
    assert len(rounds) == 5 and heartbeats.age("digests") < 1
    logged = [r.getMessage() for r in caplog.records]
    assert sum("digests loop: round failed (KeyError" in m for m in logged) == 3
    assert not any("client's words" in m for m in logged)
    last = REGISTRY.get_sample_value("loop_last_round_timestamp_seconds", {"loop": "digests"})
    assert last is not None and last > 0


async def test_the_supervisor_starts_a_loop_that_ended_again() -> None:
    supervisor = Supervisor(restart_delay=0.01)
    runs: list[int] = []
    forever = asyncio.Event()

    async def loop() -> None:
        runs.append(1)
        if len(runs) == 1:
            raise RuntimeError("a bug past the loop's own guard")
        await forever.wait()

    supervisor.start("sender", loop)
    for _ in range(100):
        await asyncio.sleep(0.01)
        if len(runs) == 2:
            break
    assert len(runs) == 2 and supervisor.running("sender")
    assert supervisor.restarts == {"sender": 1}
    forever.set()
    await supervisor.stop()
    assert not supervisor.running("sender")


async def test_healthz_answers_503_when_a_loop_has_not_completed_a_round_lately(
        tmp_path: Path) -> None:
    clock = [100.0]
    heartbeats = Heartbeats(clock=lambda: clock[0])
    heartbeats.expect("sender", 60.0)
    heartbeats.expect("scheduler", 180.0)
    store = Store(f"sqlite+aiosqlite:///{tmp_path}/h.db")
    await store.start()
    application = Application.builder().token("1:" + "x" * 35).build()
    settings = Settings(webhook_url="http://127.0.0.1:1/telegram", webhook_secret="s")
    app = webhook_app(application, store, settings, heartbeats=heartbeats)
    async with TestClient(TestServer(app)) as client:
        assert (await client.get(HEALTH_PATH)).status == 200
        clock[0] += 61  # the sender's last round is 61 s old
        response = await client.get(HEALTH_PATH)
        assert response.status == 503
        assert await response.json() == {"status": "background loop stalled",
                                         "loops": ["sender"]}
        heartbeats.beat("sender")
        assert (await client.get(HEALTH_PATH)).status == 200
        clock[0] += 200
        assert (await (await client.get(HEALTH_PATH)).json())["loops"] == ["scheduler",
                                                                          "sender"]
    await store.close()
