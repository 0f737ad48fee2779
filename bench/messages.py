"""Message handling with many users: the real bot process against the fake Bot API.

USERS simulated users go through the goal-setting conversation at the same time, each
sending the next answer once the bot's replies to the previous one have arrived. Latency
is from the fake enqueuing an update to the bot's first reply to it arriving at the fake;
updates/s is all updates of a wave over the wave's wall time. Each configuration runs in
its own subprocess (its CPU time is its own), warms up, then the best of RUNS waves of
fresh users counts. A run only counts when every conversation completed, every message
arrived and (coachbot) every answer is in the database / (baseline) in the pickle file.

Two peers, the same conversation written the usual ways: with python-telegram-bot
(bench/baseline/bot.py: ConversationHandler, PicklePersistence, reply_text), which keeps
state in memory and pickles it every 60 s; and with aiogram 3 + aiogram-dialog
(bench/baseline/aiogram_peer.py: Redis storage, every answer committed to PostgreSQL before
the next question). Coachbot's ratios are against the better of the two on each measure.
Coachbot runs unpaced (see bench/run_coachbot.py): Telegram's send limits are not the bot.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
from sqlalchemy import func, insert, select

from bench.baseline.records import REDIS_URL, forget, redis_down, stored
from bench.common import machine, table
from bench.load import (
    ANSWERS_PER_CONVERSATION,
    MESSAGES_PER_CONVERSATION,
    UPDATES_PER_CONVERSATION,
    BotProcess,
    LoadFake,
    Wave,
    quiet,
    run_one_by_one,
    run_wave,
    transcript,
)
from bot.store import Answer, Conversation, Goal, Store, User

USERS = int(os.environ.get("BENCH_USERS", 100))
RUNS = int(os.environ.get("BENCH_RUNS", 1))
# The paced wave: fresh users, each pausing about USERS / PACED_OFFER seconds before an
# answer. Users who start and finish at different times leave the wave's edges thin, so
# what arrives over the whole wave is about 300 updates/s, the target's rate.
PACED_OFFER = 360
PACED_TARGET = 300
WARMUP_USERS = 20
ALONE_USERS = 6  # one after another, after the warm-up
FIRST_USER = 1_000_000
# Every user of a run: the ones alone, the warm-up, RUNS waves and the paced one.
EVERYONE = range(FIRST_USER, FIRST_USER + ALONE_USERS + WARMUP_USERS + (RUNS + 1) * USERS)
PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/test"
PG_DATABASE = "coachbot_bench"
PG_PEER_DATABASE = "coachbot_bench_peer"  # the aiogram peer's (SQLite when there is none)
PEERS = 2  # measure_all's first results


@dataclass
class Result:
    name: str
    best: Wave | None = None
    alone: Wave | None = None  # one user alone: the latency without queueing
    paced: Wave | None = None  # users who pause between answers: about PACED_TARGET/s
    cpu_per_update: float = 0.0
    checked: str = ""
    problems: list[str] = field(default_factory=list)
    transcript: list[tuple[str | None, list[str]]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.best is not None and not self.problems


async def fresh_postgres(name: str = PG_DATABASE) -> str | None:
    """An empty database `name` on the local PostgreSQL; None if there is none."""
    try:
        admin = await asyncpg.connect(PG_ADMIN, timeout=5)
    except (OSError, asyncpg.PostgresError):
        return None
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    return f"postgresql+asyncpg://postgres@127.0.0.1:5432/{name}"


async def drive(name: str, module: str, args: Callable[[str], list[str]],
                verify: Callable[[range], Awaitable[str]]) -> Result:
    """Start the bot, warm up, run RUNS waves; `verify(user_ids)` runs after it stopped."""
    result = Result(name)
    async with LoadFake() as fake:
        bot = BotProcess(module, *args(fake.url))
        await bot.start(fake)
        first = FIRST_USER
        try:
            warm = await run_wave(fake, range(first + ALONE_USERS,
                                              first + ALONE_USERS + WARMUP_USERS))
            result.alone = await run_one_by_one(fake, range(first, first + ALONE_USERS))
            result.problems += result.alone.failures[:1] + warm.failures[:3]
            first += ALONE_USERS + WARMUP_USERS
            for _ in range(RUNS):
                users = range(first, first + USERS)
                first += USERS
                cpu = bot.cpu_seconds()
                wave = await run_wave(fake, users)
                spent = bot.cpu_seconds() - cpu
                result.problems += wave.failures[:3]
                if wave.completed != USERS:
                    result.problems.append(f"{USERS - wave.completed} conversations incomplete")
                if result.best is None or wave.rate > result.best.rate:
                    result.best, result.cpu_per_update = wave, spent / max(wave.updates, 1)
            users = range(first, first + USERS)
            first += USERS
            result.paced = await run_wave(fake, users, think=USERS / PACED_OFFER)
            result.problems += result.paced.failures[:3]
            if result.paced.completed != USERS:
                result.problems.append(
                    f"{USERS - result.paced.completed} paced conversations incomplete")
            await quiet(fake)
        finally:
            code = await bot.stop()
        if code not in (0, None):
            result.problems.append(f"the bot exited with {code}")
        everyone = range(FIRST_USER, first)
        short = [uid for uid in everyone
                 if len(fake.messages_to(uid)) != MESSAGES_PER_CONVERSATION]
        if short:
            result.problems.append(f"{len(short)} users got a wrong number of messages")
        result.transcript = transcript(fake, FIRST_USER)
    result.checked = await verify(everyone)
    expected = f"{len(everyone)} goals, {len(everyone) * ANSWERS_PER_CONVERSATION} answers"
    if result.checked != expected:
        result.problems.append(f"stored {result.checked}, expected {expected}")
    return result


async def consented(database_url: str, users: range) -> None:
    """Coachbot asks a new client's consent before anything else, once (the peers do not
    ask): the run's users have given it, so every bot holds the same conversation. They are
    left as the onboarding's turns leave a client who agreed: their row and their
    conversation's (without it, each first update paid for creating it, which no client who
    agreed ever does)."""
    store = Store(database_url)
    await store.start()
    try:
        now = datetime.now(UTC)
        async with store.engine.begin() as connection:
            await connection.execute(insert(User), [
                {"id": uid, "consent_at": now, "created_at": now} for uid in users])
            await connection.execute(insert(Conversation), [
                {"user_id": uid, "state": None, "version": 0, "updated_at": now}
                for uid in users])
    finally:
        await store.close()


async def coachbot(name: str, database_url: str) -> Result:
    async def verify(users: range) -> str:
        store = Store(database_url)
        await store.start()
        try:
            async with store.sessionmaker() as session:
                goals = await session.scalar(select(func.count()).select_from(Goal).where(
                    Goal.user_id.between(users.start, users.stop - 1)))
                answers = await session.scalar(select(func.count()).select_from(Answer).where(
                    Answer.dialogue_id == "goal_setting",
                    Answer.user_id.between(users.start, users.stop - 1)))
        finally:
            await store.close()
        return f"{goals} goals, {answers} answers"

    await consented(database_url, EVERYONE)
    return await drive(name, "bench.run_coachbot", lambda url: [url, database_url], verify)


async def baseline(data_file: Path) -> Result:
    async def verify(users: range) -> str:
        with data_file.open("rb") as f:
            data = pickle.load(f)
        user_data = data.get("user_data", {})
        goals = [g for uid in users for g in user_data.get(uid, {}).get("goals", [])]
        return f"{len(goals)} goals, {sum(len(g) for g in goals)} answers"

    return await drive("PTB peer", "bench.baseline", lambda url: [url, str(data_file)], verify)


async def aiogram_peer(database_url: str) -> Result:
    reason = await redis_down()
    if reason is not None:
        return Result("aiogram peer", problems=[reason])

    async def verify(users: range) -> str:
        goals, answers = await stored(database_url, users)
        return f"{goals} goals, {answers} answers"

    prefix = f"coachbot-bench-{uuid.uuid4().hex}"
    try:
        return await drive("aiogram peer", "bench.baseline.aiogram_peer",
                           lambda url: [url, database_url, REDIS_URL, prefix], verify)
    finally:
        await forget(REDIS_URL, prefix)


async def measure_all() -> list[Result]:
    """The peers first (PEERS of them), then coachbot."""
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="coachbot-bench-") as tmp:
        results.append(await baseline(Path(tmp) / "baseline.pickle"))
        peer_database = (await fresh_postgres(PG_PEER_DATABASE)
                         or f"sqlite+aiosqlite:///{tmp}/peer.db")
        results.append(await aiogram_peer(peer_database))
        results.append(await coachbot("coachbot SQLite",
                                      f"sqlite+aiosqlite:///{tmp}/coachbot.db"))
        postgres = await fresh_postgres()
        if postgres is not None:
            results.append(await coachbot("coachbot PostgreSQL", postgres))
        else:
            results.append(Result("coachbot PostgreSQL", problems=["no PostgreSQL"]))
    return results


def _verdict(results: list[Result], met: Callable[[Result], bool]) -> str:
    """"yes" or "NO" for all of them, else each database's own."""
    verdicts = [met(r) for r in results]
    if results and all(verdicts):
        return "yes"
    if not any(verdicts):
        return "NO"
    return ", ".join(f"{r.name.removeprefix('coachbot ')} {'yes' if ok else 'NO'}"
                     for r, ok in zip(results, verdicts, strict=True))


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def report() -> str:
    results = asyncio.run(measure_all())
    peers, bots = results[:PEERS], results[PEERS:]
    header = ["measure", *(r.name for r in results),
              *(f"{r.name.removeprefix('coachbot ')}/best peer" for r in bots),
              "target", "met"]

    def row(label: str, value: Callable[[Result], float], show: Callable[[float], str],
            target: str, met: Callable[[Result, float], bool] | None, *,
            lower_is_better: bool = False) -> list[str]:
        """`met(bot, the best peer's value)`; the ratios are against the best peer's."""
        cells = [show(value(r)) if r.ok else "failed" for r in results]
        measured = [value(r) for r in peers if r.ok]
        best = (min if lower_is_better else max)(measured, default=0.0)
        ratios = [f"{value(r) / best:.2f}" if r.ok and best else "" for r in bots]
        coach = [r for r in bots if r.ok]
        verdict = "" if met is None else _verdict(coach, lambda r: met(r, best))
        return [label, *cells, *ratios, target, verdict]

    def rate(r: Result) -> float:
        return r.best.rate if r.best else 0.0

    def p50(r: Result) -> float:
        return r.best.percentile(50) if r.best else 0.0

    def p99(r: Result) -> float:
        return r.best.percentile(99) if r.best else 0.0

    def paced(r: Result, value: Callable[[Wave], float]) -> float:
        return value(r.paced) if r.paced else 0.0

    rows = [
        row("updates/s", rate, lambda v: f"{v:,.0f}", "≥ best peer",
            lambda r, best: rate(r) >= best),
        row("updates/s (absolute)", rate, lambda v: f"{v:,.0f}", "≥ 300 on SQLite",
            lambda r, _: rate(r) >= 300 or "SQLite" not in r.name),
        row("latency p50", p50, _ms, "", None, lower_is_better=True),
        row("latency p99", p99, _ms, "", None, lower_is_better=True),
        row("paced: updates/s", lambda r: paced(r, lambda w: w.rate), lambda v: f"{v:,.0f}",
            f"≥ {PACED_TARGET} on SQLite",
            lambda r, _: paced(r, lambda w: w.rate) >= PACED_TARGET or "SQLite" not in r.name),
        row("paced: latency p50", lambda r: paced(r, lambda w: w.percentile(50)), _ms, "", None,
            lower_is_better=True),
        row("paced: latency p99", lambda r: paced(r, lambda w: w.percentile(99)), _ms,
            "< 50 ms", lambda r, _: r.paced is not None and r.paced.percentile(99) < 0.05,
            lower_is_better=True),
        row("latency p50, one user alone", lambda r: r.alone.percentile(50) if r.alone
            else 0.0, _ms, "", None, lower_is_better=True),
        row("latency p99, one user alone", lambda r: r.alone.percentile(99) if r.alone
            else 0.0, _ms, "< 50 ms", lambda r, _: r.alone is not None
            and r.alone.percentile(99) < 0.05, lower_is_better=True),
        row("bot CPU per update", lambda r: r.cpu_per_update, _ms, "≤ best peer",
            lambda r, best: r.cpu_per_update <= best, lower_is_better=True),
    ]
    rows.append(["stored after the run", *(r.checked or "-" for r in results),
                 *[""] * len(bots), "all", "yes" if all(r.ok for r in results) else "NO"])
    ptb = results[0]
    same = all(r.transcript == ptb.transcript for r in results[1:] if r.ok)
    notes = [f"{USERS} users × {UPDATES_PER_CONVERSATION} updates "
             f"({MESSAGES_PER_CONVERSATION} replies) each, best of {RUNS} waves after a "
             f"{WARMUP_USERS}-user warm-up; each bot in its own process.",
             "best peer: the better of the two peers' figures on each row. "
             f"Transcripts (texts and buttons as sent) identical to the PTB peer's: "
             f"{'yes' if same else 'NO'}.",
             "In the waves above users answer at once (closed loop), so latency ≈ users ÷ "
             "updates/s (Little's law): p99 < 50 ms with this many users would need thousands "
             f"of updates/s. 'paced': {USERS} fresh users who pause {USERS / PACED_OFFER / 2:.2f}"
             f" to {USERS * 1.5 / PACED_OFFER:.2f} s before each answer (the load of the "
             f"{PACED_TARGET} updates/s target, well under what the bots can take); "
             "'one user alone': the latency without queueing, "
             f"{ALONE_USERS} users one after another after the warm-up "
             f"({ALONE_USERS * UPDATES_PER_CONVERSATION} updates)."]
    notes += [f"{r.name}: {p}" for r in results for p in r.problems]
    return table(f"Messages, {USERS} concurrent users ({machine()})", header, rows) \
        + "\n" + "\n".join(notes) + "\n"


if __name__ == "__main__":
    print(report())
