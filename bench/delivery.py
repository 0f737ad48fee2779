"""Delivery at Telegram's limit (issue 28): one budget for every replica, replies before bulk,
and planning a million users.

Each measure is printed with its target. The fake Bot API (tests/fakes) keeps Telegram's
limits (30 messages/s per bot over every connection, one a second per chat after a burst of
3: a 429 counts against a run); for the replicas it runs in this process, for the burst in
one of its own with the clients (``python -m bench.delivery fake``). The bots run in their
own processes on PostgreSQL (``COACHBOT_BENCH_PG_URL``), each against a fresh database.

* replicas: 1, 2 and 3 sender processes (``python -m bench.delivery replica …``: the real
  ``Sender`` with the shared budget, nothing else) drain ``BENCH_DUE`` (5,000) due
  check-ins' messages queued in the outbox, one per chat. Rate = messages ÷ the time from
  the first to the last arriving at the fake; the busiest one-second window [t, t + 1).
* burst: the whole bot (``bench/run_coachbot.py --paced``: production limits) while
  ``BENCH_BURST`` (20,000) check-ins' messages fall due over one minute and
  ``BENCH_CLIENTS`` (50) clients talk to it (``/start``, then answers), pausing about
  ``BENCH_THINK`` (15) seconds before each, as people typing do; replies go first, so the
  bulk's time is measured against (bulk + replies sent meanwhile) ÷ rate. Latency: from
  the fake enqueuing a client's update to the first reply arriving. The bulk must all
  arrive, in due order, and take no longer than 5 % over that.
* planning: ``plan()`` for ``BENCH_PLAN_USERS`` (1,000,000) users, in its own process
  (``python -m bench.delivery plan …``), timed, with its peak resident memory.

Sizes are environment variables so that a quick run is possible (``BENCH_DUE=600
BENCH_BURST=1500 BENCH_PLAN_USERS=100000 python -m bench bench.delivery``).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import json
import os
import random
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import telegram
from sqlalchemy import Table, insert, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from bench.common import machine, table
from bench.load import REPO, LoadFake, Wave
from bench.schedule import NOW, _copy, population
from bot.config import DEFAULT_SEND_RATE
from bot.schedule.planner import plan
from bot.store import Outbox, Store, User
from bot.telegram.app import settle_garbage_collection
from bot.telegram.http import AiohttpRequest
from bot.telegram.pacing import SharedBudget
from bot.telegram.sender import Sender

DUE = int(os.environ.get("BENCH_DUE", 5_000))
REPLICAS = tuple(int(n) for n in os.environ.get("BENCH_REPLICAS", "1,2,3").split(","))
BURST = int(os.environ.get("BENCH_BURST", 20_000))
CLIENTS = int(os.environ.get("BENCH_CLIENTS", 50))
THINK = float(os.environ.get("BENCH_THINK", 15.0))
PLAN_USERS = int(os.environ.get("BENCH_PLAN_USERS", 1_000_000))
RATE = DEFAULT_SEND_RATE
TELEGRAM_PER_BOT = 30
PG_ADMIN = os.environ.get("COACHBOT_BENCH_PG_URL",
                          "postgresql+asyncpg://postgres@127.0.0.1:5432/test")
FIRST_CHAT = 10_000_000  # bulk chats; the clients are 1,000,000 + …


# -- databases and processes --------------------------------------------------------------


async def _admin(sql: str) -> None:
    engine = create_async_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            await conn.execute(text(sql))
    finally:
        await engine.dispose()


@contextlib.asynccontextmanager
async def fresh_database() -> Any:
    name = f"coachbot_delivery_{uuid.uuid4().hex[:10]}"
    await _admin(f'CREATE DATABASE "{name}"')
    try:
        url = make_url(PG_ADMIN).set(database=name).render_as_string(hide_password=False)
        store = Store(url)
        await store.start()  # the schema, before any process starts
        await store.close()
        yield url
    finally:
        await _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def queue_bulk(url: str, count: int, *, due_over: float = 0.0) -> None:
    """``count`` check-ins' first messages, one per chat, due over ``due_over`` seconds
    from now in id order (as the scheduler queues them when they fall due)."""
    store = Store(url)
    await store.start()
    start = datetime.now(UTC)
    try:
        for base in range(0, count, 5_000):
            ids = range(base, min(count, base + 5_000))
            async with store.engine.begin() as conn:
                await conn.execute(insert(User), [
                    {"id": FIRST_CHAT + i, "created_at": start} for i in ids])
                await conn.execute(insert(Outbox), [
                    {"user_id": FIRST_CHAT + i, "chat_id": FIRST_CHAT + i,
                     "payload": {"text": f"Good morning! How are you today? ({i})"},
                     "created_at": start, "status": "pending", "attempts": 0,
                     "next_attempt_at": start + timedelta(seconds=due_over * i / count)}
                    for i in ids])
    finally:
        await store.close()


async def spawn(*args: str, stdin: bool = False) -> asyncio.subprocess.Process:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return await asyncio.create_subprocess_exec(
        sys.executable, *args, cwd=REPO, env=env, stdout=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.PIPE if stdin else None)


async def stop(process: asyncio.subprocess.Process) -> str:
    if process.returncode is None:
        process.terminate()
    out, _ = await process.communicate()
    return out.decode()


def busiest_second(times: list[float]) -> int:
    most = end = 0
    for start, at in enumerate(times):
        while end < len(times) and times[end] < at + 1.0:
            end += 1
        most = max(most, end - start)
    return most


def bulk_times(fake: LoadFake) -> list[tuple[float, int]]:
    return sorted((m.time, chat - FIRST_CHAT) for chat, messages in fake.sent.items()
                  if chat >= FIRST_CHAT for m in messages)


async def wait_for(predicate: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.2)
    return True


# -- 1. replicas sharing the budget ----------------------------------------------------------


async def replicas(count: int) -> dict[str, Any]:
    async with fresh_database() as url, LoadFake() as fake:
        fake.enforce_limits(per_bot=TELEGRAM_PER_BOT)
        await queue_bulk(url, DUE)
        processes = [await spawn("-m", "bench.delivery", "replica", fake.base_url, url,
                                 str(RATE)) for _ in range(count)]
        try:
            done = await wait_for(lambda: len(bulk_times(fake)) >= DUE,
                                  timeout=DUE / RATE * 1.5 + 60)
        finally:
            outputs = [await stop(p) for p in processes]
        times = [t for t, _ in bulk_times(fake)]
        said = [line.split() for out in outputs for line in out.splitlines()]
        leases = sum(int(v) for k, v in said if k == "leases")
        dropped = sum(int(v) for k, v in said if k == "dropped")
        spreads = [float(v) for k, v in said if k == "spread"]
        return {"replicas": count, "done": done, "sent": len(times),
                "rate": (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 else 0.0,
                "busiest": busiest_second(times), "429": fake.rate_limited,
                "429_by": dict(fake.rate_limited_by),
                "leases": leases, "dropped": dropped,
                "spread": f"{min(spreads, default=0):.0f}–{max(spreads, default=0):.0f} ms"}


async def _replica(api: str, url: str, rate: float) -> None:
    """One replica's sender until SIGTERM; prints its lease round trips."""
    import signal

    store = Store(url)
    await store.start()
    stopping = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)
    async with telegram.Bot("123456:TEST-TOKEN", base_url=api,
                            request=AiohttpRequest(connections=8)) as bot:
        sender = Sender(store, bot, rate=rate, shared=True, poll_interval=0.2)
        sender.start()
        await stopping.wait()
        await sender.stop()
    budget = sender.bucket.budget
    if isinstance(budget, SharedBudget):
        print(f"leases {budget.leases}\ndropped {budget.dropped}\n"
              f"spread {budget.own_spread * 1000:.1f}", flush=True)
    await store.close()


# -- 2. a burst of check-ins while clients talk ------------------------------------------------


async def burst() -> dict[str, Any]:
    """The bot and the fake each in a process of their own; this one seeds the database.
    The fake measures, so nothing else may run in its process: a pause there (seeding
    20,000 rows, sorting what arrived, a garbage collection over it) made it record the
    requests that had waited as one burst, answer 429 to some of them, and stamp them in
    the order it read them rather than the order they came."""
    async with fresh_database() as url:
        fake = await spawn("-m", "bench.delivery", "fake", stdin=True)
        assert fake.stdin is not None and fake.stdout is not None
        try:
            fake_url = (await fake.stdout.readline()).decode().split()[-1]
            bot = await spawn("-m", "bench.run_coachbot", fake_url, url, "--paced")
            try:
                if (await fake.stdout.readline()).strip() != b"talking":
                    raise RuntimeError("the fake's clients did not start")
                started = time.monotonic()  # (system-wide: the fake's clock too)
                await queue_bulk(url, BURST, due_over=60.0)
                fake.stdin.write(f"queued {started!r}\n".encode())
                await fake.stdin.drain()
                result: dict[str, Any] = json.loads(await fake.stdout.readline())
            finally:
                await stop(bot)
        finally:
            await stop(fake)
    return result


async def _fake() -> None:
    """The burst's fake Bot API and its clients (``python -m bench.delivery fake``): says
    its URL, then ``talking`` once the clients are in their dialogues, waits for
    ``queued <monotonic time the bulk started>`` and answers with the results as JSON."""
    # Nothing here may pause the server: its collector stays off (this process lives for
    # one run, and what it records lives as long).
    gc.disable()
    loop = asyncio.get_running_loop()
    commands = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(commands), sys.stdin)
    async with LoadFake() as fake:
        fake.enforce_limits(per_bot=TELEGRAM_PER_BOT)
        print("url", fake.url, flush=True)
        if not await wait_for(lambda: bool(fake.calls("getUpdates")), 60):
            raise RuntimeError("the bot did not start")
        wave = Wave(CLIENTS)
        talking = asyncio.Event()

        async def client(user_id: int) -> None:
            await asyncio.sleep(random.uniform(0, THINK))
            text = "/start"
            while not talking.is_set():
                await say(fake, user_id, text, wave)
                text = random.choice(ANSWERS)
                await asyncio.sleep(random.uniform(0.5 * THINK, 1.5 * THINK))

        clients = [asyncio.create_task(client(1_000_000 + i)) for i in range(CLIENTS)]
        await asyncio.sleep(THINK * 2)  # the clients are in their dialogues
        print("talking", flush=True)
        started = float((await commands.readline()).split()[1])
        done = await wait_for(lambda: sum(c >= FIRST_CHAT for c in fake.sent) >= BURST,
                              timeout=BURST / RATE * 1.5 + 120)
        finished = time.monotonic()
        talking.set()
        await asyncio.gather(*clients)
    arrived = bulk_times(fake)
    inversions = [(a, b, round(tb - ta, 4)) for (ta, a), (tb, b) in itertools.pairwise(arrived)
                  if b < a]
    replies = sum(1 for c, ms in fake.sent.items() if c < FIRST_CHAT for m in ms
                  if started <= m.time <= finished)
    print(json.dumps({
        "done": done, "bulk": len(arrived), "seconds": finished - started,
        "replies": replies, "out_of_order": len(inversions), "inversions": inversions[:5],
        "p50": wave.percentile(50), "p99": wave.percentile(99), "updates": wave.updates,
        "failures": wave.failures[:3], "429": fake.rate_limited,
        "429_by": dict(fake.rate_limited_by)}), flush=True)
    await commands.readline()  # until the bot is stopped and this process is told to end


# Never "no": declining consent erases the client, and the goodbye goes straight out.
ANSWERS = ("I am not sure yet", "Let me think", "I want to run a 10k", "Tell me more", "Hmm")


async def say(fake: LoadFake, user_id: int, text: str, wave: Wave, timeout: float = 30) -> None:
    """A client's message, and the time until the first reply to it arrives."""
    sent = fake.sent[user_id]
    arrived = fake.arrived(user_id)
    have = len(sent)
    arrived.clear()
    started = time.monotonic()
    fake.send_text(user_id, text)
    deadline = started + timeout
    while len(sent) <= have:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            wave.failures.append(f"user {user_id}: no reply to {text!r}")
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(arrived.wait(), remaining)
        arrived.clear()
    wave.latencies.append(sent[have].time - started)
    wave.updates += 1


# -- 3. planning a million users ---------------------------------------------------------------


def chunks(users: int, size: int = 100_000) -> Iterator[dict[Table, list[dict[str, Any]]]]:
    """bench.schedule's population, ``size`` users at a time (ids shifted per chunk)."""
    for base in range(0, users, size):
        rows = population(min(size, users - base))
        for target, records in rows.items():
            for record in records:
                for key in ("id", "user_id", "client_id") if target.name == "users" \
                        else ("user_id", "client_id"):
                    if key in record:
                        record[key] += base
        yield rows


async def planning() -> dict[str, Any]:
    async with fresh_database() as url:
        store = Store(url)
        await store.start()
        try:
            for rows in chunks(PLAN_USERS):
                async with store.engine.begin() as conn:
                    for target, records in rows.items():
                        if target.name == "answers":
                            await conn.execute(insert(target), records)
                        else:
                            await _copy(conn, target, records)
            async with store.engine.connect() as conn:
                conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
                await conn.execute(text("VACUUM ANALYZE"))
        finally:
            await store.close()
        process = await spawn("-m", "bench.delivery", "plan", url)
        out = await stop_when_done(process)
    values = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    return {"seconds": float(values["seconds"]), "rss": float(values["rss_mb"]),
            "rows": int(values["proposed"])}


async def stop_when_done(process: asyncio.subprocess.Process) -> str:
    out, _ = await process.communicate()
    return out.decode()


def peak_rss_mb() -> float:
    """This process's peak resident memory (VmHWM). Not ``getrusage``'s ``ru_maxrss``: on
    Linux it survives ``exec``, so a process started by this benchmark after it built a
    million users' rows reported the benchmark's memory, not its own (338 MB, measured
    before this was found, where planning itself peaked at far less)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")


async def _plan(url: str) -> None:
    store = Store(url)
    await store.start()
    # As in the bot, where planning runs (``coachbot run`` settles the collector once
    # started): with the default thresholds, full collections over everything start-up
    # loaded took 1.96 of planning's 4.28 s of CPU at 200,000 users.
    settle_garbage_collection()
    started = time.perf_counter()
    proposed = await plan(store, NOW)
    seconds = time.perf_counter() - started
    await store.close()
    rss = peak_rss_mb()
    print(f"seconds {seconds:.2f}\nrss_mb {rss:.1f}\nproposed {proposed}", flush=True)


# -- report -------------------------------------------------------------------------------------


def _met(ok: bool) -> str:
    return "yes" if ok else "NO"


async def _measure() -> list[list[object]]:
    rows: list[list[object]] = []
    for count in REPLICAS:
        r = await replicas(count)
        ok = r["done"] and r["rate"] >= 0.95 * RATE and r["busiest"] <= RATE and not r["429"]
        rows.append([f"{count} replica(s) drain {DUE:,} due check-ins (PostgreSQL)",
                     f"{r['rate']:.1f}/s ({r['rate'] / RATE:.1%}), busiest second "
                     f"{r['busiest']}, 429s {r['429']} {r['429_by'] or ''}, {r['sent']:,} sent, "
                     f"{r['leases']:,} lease round trips, {r['dropped']} release times "
                     f"left unused, spread {r['spread']}",
                     f"≥ {0.95 * RATE:.1f}/s, ≤ {RATE:.0f} in any second, no 429",
                     _met(ok)])
    b = await burst()
    expected = max(60.0, (b["bulk"] + b["replies"]) / RATE)  # due over a minute
    failures = "".join(f"; {f}" for f in b["failures"])
    rows.append([f"{CLIENTS} clients talking while {BURST:,} check-ins fall due in a minute: "
                 f"replies", f"p50 {b['p50'] * 1000:.0f} ms, p99 {b['p99'] * 1000:.0f} ms "
                 f"({b['updates']:,} updates{failures})",
                 "p99 < 1.5 s", _met(b["p99"] < 1.5 and not b["failures"])])
    rows.append(["... the check-ins", f"{b['bulk']:,} delivered in {b['seconds']:.1f} s "
                 f"({b['out_of_order']} out of due order {b['inversions'] or ''}; "
                 f"{b['replies']:,} replies meanwhile, "
                 f"(bulk + replies) ÷ rate = {expected:.1f} s; 429s {b['429']} {b['429_by']})",
                 "all, in order, ≤ 1.05 × max(60 s, (bulk + replies) ÷ rate)",
                 _met(b["done"] and not b["out_of_order"]
                      and b["seconds"] <= 1.05 * expected and not b["429"])])
    p = await planning()
    rows.append([f"plan {PLAN_USERS:,} users' next check-ins (PostgreSQL)",
                 f"{p['seconds']:.1f} s, peak RSS {p['rss']:.0f} MB, {p['rows']:,} rows",
                 "< 60 s, < 300 MB", _met(p["seconds"] < 60 and p["rss"] < 300)])
    return rows


def report() -> str:
    rows = asyncio.run(_measure())
    return table(f"Delivery at Telegram's limit, budget {RATE:.0f}/s ({machine()})",
                 ["measure", "coachbot", "target", "met"], rows)


if __name__ == "__main__":
    if sys.argv[1:2] == ["replica"]:
        asyncio.run(_replica(sys.argv[2], sys.argv[3], float(sys.argv[4])))
    elif sys.argv[1:2] == ["fake"]:
        asyncio.run(_fake())
    elif sys.argv[1:2] == ["plan"]:
        asyncio.run(_plan(sys.argv[2]))
    else:
        print(report())
