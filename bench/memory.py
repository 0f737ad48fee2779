"""Resident memory of a running bot: is anything held per user?

Coachbot (the real `serve()` in a subprocess, SQLite) with 100,000 users and their
conversations bulk-inserted beforehand, then 100 and 1,000 users mid-dialogue, against the
same process idle with an empty database. Beside it, the baseline bot (bench/baseline,
the usual way) with the same 100,000 users' answers in its pickle file, which
PicklePersistence loads into memory at start.
"""

from __future__ import annotations

import asyncio
import pickle
import tempfile
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import insert

from bench.common import machine, table
from bench.load import BotProcess, LoadFake, Wave, converse
from bot.dialogue import load_dialogues
from bot.engine import ConversationState
from bot.store import Conversation, Store, User

REPO = Path(__file__).parents[1]
STORED_USERS = 100_000
ACTIVE = (100, 1_000)
MID_DIALOGUE = 2  # the first turns of the goal-setting script: /goal, then the goal itself
SETTLE = 1.0  # seconds before reading VmRSS
TARGET_MB = 200
ANSWERS = {"goal.title": "Run a 10k race", "goal.why": "To feel strong again",
           "goal.picture": "I cross the finish line", "goal.baseline": 3,
           "goal.reality": "I already run twice a week", "goal.tried": None, "goal.target": 8,
           "goal.due": "2027-06-30", "goal.obstacles": "Rain", "goal.resources": "A friend",
           "goal.options": "A club", "goal.more_options": None,
           "goal.first_step": "Join the Saturday run", "goal.first_step_date": "2026-12-03",
           "goal.commitment": 9}


def _chunks(total: int, size: int, make: Callable[[int], dict[str, Any]]
            ) -> Iterator[list[dict[str, Any]]]:
    for start in range(1, total + 1, size):
        yield [make(uid) for uid in range(start, min(total, start + size - 1) + 1)]


async def populate(database_url: str, users: int) -> None:
    """The schema, then `users` users who each finished goal setting (Core bulk inserts)."""
    store = Store(database_url)
    await store.start()
    now = datetime.now(UTC)
    state = ConversationState((), ANSWERS).to_dict()
    try:
        async with store.engine.begin() as connection:
            for rows in _chunks(users, 10_000, lambda uid: {
                    "id": uid, "first_name": "Ana", "locale": "en", "created_at": now,
                    "consent_at": now}):  # else /goal meets the consent question first
                await connection.execute(insert(User.__table__), rows)
            for rows in _chunks(users, 10_000, lambda uid: {
                    "user_id": uid, "state": state, "version": 16, "updated_at": now}):
                await connection.execute(insert(Conversation.__table__), rows)
    finally:
        await store.close()


def baseline_pickle(path: Path, users: int) -> None:
    """PicklePersistence's single file with `users` users who finished goal setting."""
    answers = {key.removeprefix("goal."): value for key, value in ANSWERS.items()}
    data = {"user_data": {uid: {"goal": dict(answers), "goals": [dict(answers)]}
                          for uid in range(1, users + 1)},
            "chat_data": {}, "bot_data": {}, "callback_data": None,
            "conversations": {"goal_setting": {}}}
    with path.open("wb") as f:
        pickle.dump(data, f)


async def measure(module: str, args: Callable[[str], list[str]],
                  active_counts: tuple[int, ...] = ACTIVE) -> list[float | str]:
    """RSS (MB) idle, then with 100 and with 1,000 users mid-dialogue."""
    readings: list[float | str] = []
    async with LoadFake() as fake:
        bot = BotProcess(module, *args(fake.url))
        await bot.start(fake)
        try:
            await asyncio.sleep(SETTLE)
            readings.append(bot.rss_mb())
            active = 0
            for count in active_counts:
                wave = Wave(count - active)
                done = await asyncio.gather(*(converse(fake, uid, wave, steps=MID_DIALOGUE,
                                                       timeout=90)
                                              for uid in range(active + 1, count + 1)))
                active = count
                await asyncio.sleep(SETTLE)
                readings.append(bot.rss_mb() if all(done) else
                                f"incomplete ({wave.failures[:1]})")
        finally:
            await bot.stop()
    return readings


async def measure_all() -> dict[str, list[float | str]]:
    load_dialogues(REPO / "dialogues")  # fail early on a broken dialogue set
    results: dict[str, list[float | str]] = {}
    with tempfile.TemporaryDirectory(prefix="coachbot-memory-") as tmp:
        empty = f"sqlite+aiosqlite:///{tmp}/empty.db"
        full = f"sqlite+aiosqlite:///{tmp}/full.db"
        await populate(empty, 0)
        await populate(full, STORED_USERS)
        results["coachbot, empty database"] = await measure(
            "bench.run_coachbot", lambda url: [url, empty], ())
        results[f"coachbot, {STORED_USERS:,} users stored"] = await measure(
            "bench.run_coachbot", lambda url: [url, full])
        baseline_empty, baseline_full = Path(tmp) / "empty.pickle", Path(tmp) / "full.pickle"
        results["baseline, empty pickle"] = await measure(
            "bench.baseline", lambda url: [url, str(baseline_empty)])
        baseline_pickle(baseline_full, STORED_USERS)
        results[f"baseline, {STORED_USERS:,} users pickled"] = await measure(
            "bench.baseline", lambda url: [url, str(baseline_full)])
    return results


def _mb(value: float | str) -> str:
    return f"{value:.1f} MB" if isinstance(value, float) else value


def report() -> str:
    results = asyncio.run(measure_all())
    rows: list[list[str]] = []
    for name, (idle, *active) in results.items():
        few, many = active or ("-", "-")
        per_user = ((many - few) * 1024 / (ACTIVE[1] - ACTIVE[0])
                    if isinstance(many, float) and isinstance(few, float) else float("nan"))
        rows.append([name, _mb(idle), _mb(few), _mb(many),
                     "-" if per_user != per_user else f"{per_user:.1f} KB"])
    coach_empty = results["coachbot, empty database"][0]
    coach_full = results[f"coachbot, {STORED_USERS:,} users stored"]
    peak = coach_full[-1]
    verdict = []
    if isinstance(peak, float) and isinstance(coach_empty, float):
        verdict.append(f"coachbot with {STORED_USERS:,} users and {ACTIVE[1]:,} active: "
                       f"{peak:.1f} MB, {peak / coach_empty:.2f}× the idle empty process; "
                       f"target < {TARGET_MB} MB: {'yes' if peak < TARGET_MB else 'NO'}.")
    verdict.append(f"VmRSS from /proc/PID/status, {SETTLE:.0f} s after each step; active = "
                   f"the first {MID_DIALOGUE} turns of goal setting done, mid-dialogue.")
    return table(f"Resident memory ({machine()})",
                 ["bot", "idle", f"{ACTIVE[0]:,} active", f"{ACTIVE[1]:,} active",
                  f"per active user ({ACTIVE[0]:,} → {ACTIVE[1]:,})"], rows) \
        + "\n" + "\n".join(verdict) + "\n"


if __name__ == "__main__":
    print(report())
