"""Driving a bot process with many simulated users over the fake Bot API (shared by
`bench.messages` and `bench.memory`). Everything runs on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import random
import signal
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fakes.bot_api import FakeBotApi, SentMessage

REPO = Path(__file__).parents[1]

# The goal-setting conversation, as a user who answers at once: (kind, value, messages the
# bot sends back). One wrong answer on the first scale exercises validation.
SCRIPT: tuple[tuple[str, str, int], ...] = (
    ("text", "/goal", 2),                       # intro + the goal question
    ("text", "Run a 10k race", 1),              # why
    ("text", "To feel strong again", 1),        # picture
    ("text", "I cross the finish line and smile", 1),  # baseline (scale keyboard)
    ("text", "eleven", 1),                      # hint + the keyboard again
    ("button", "3", 1),                         # notice
    ("text", "I already run twice a week", 1),  # tried
    ("text", "A plan from a magazine", 1),      # target (scale keyboard)
    ("button", "8", 1),                         # due
    ("text", "2027-06-30", 1),                  # obstacles
    ("text", "Rain and long work days", 1),     # resources
    ("text", "A friend who runs", 1),           # options
    ("text", "A club, new shoes, a coach", 1),  # more_options
    ("text", "/skip", 1),                       # first_step
    ("text", "Join the Saturday club run", 1),  # first_step_date
    ("text", "tomorrow", 1),                    # commitment (scale keyboard)
    ("button", "9", 2),                         # wrap-up + closing
)
UPDATES_PER_CONVERSATION = len(SCRIPT)
MESSAGES_PER_CONVERSATION = sum(expected for _, _, expected in SCRIPT)
ANSWERS_PER_CONVERSATION = 15  # goal_setting variables saved on this path (/skip saves None)


class LoadFake(FakeBotApi):
    """The fake Bot API, waking exactly the user whose chat got a message (the base class
    wakes every waiter on every change, which would cost the driver O(users) per message)."""

    def __init__(self) -> None:
        super().__init__()
        self._arrived: dict[int, asyncio.Event] = {}

    def arrived(self, chat_id: int) -> asyncio.Event:
        return self._arrived.setdefault(chat_id, asyncio.Event())

    def _store_bot_message(self, chat_id: int, content: Any, params: Any, **kwargs: Any) -> Any:
        message = super()._store_bot_message(chat_id, content, params, **kwargs)
        event = self._arrived.get(chat_id)
        if event is not None:
            event.set()
        return message


@dataclass
class Wave:
    users: int
    updates: int = 0
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    completed: int = 0  # conversations whose every expected reply arrived
    failures: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.updates / self.seconds if self.seconds else 0.0

    def percentile(self, p: float) -> float:
        ordered = sorted(self.latencies)
        if not ordered:
            return float("nan")
        return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def _button(messages: list[SentMessage], label: str) -> tuple[int, str]:
    for message in reversed(messages):
        for row in (message.reply_markup or {}).get("inline_keyboard", []):
            for button in row:
                if button["text"] == label:
                    return message.message_id, button["callback_data"]
    raise AssertionError(f"no button {label!r}")


async def converse(fake: LoadFake, user_id: int, wave: Wave, *, steps: int | None = None,
                   think: float = 0.0, timeout: float = 30.0) -> bool:
    """One user through the first `steps` turns of SCRIPT (all by default), each answer
    sent once the bot's replies to the previous one have arrived and the user has thought
    for about `think` seconds (0.5 to 1.5 times it, at random; the first answer after 0 to
    1 times it, so users do not start in step). Latency: from the fake enqueuing the update
    to the bot's first reply to it arriving at the fake."""
    sent = fake.sent[user_id]
    arrived = fake.arrived(user_id)
    pause = random.uniform(0.0, think)
    for kind, value, expected in SCRIPT[:steps]:
        if pause:
            await asyncio.sleep(pause)
        pause = random.uniform(0.5 * think, 1.5 * think)
        have = len(sent)
        arrived.clear()
        if kind == "text":
            started = time.monotonic()
            fake.send_text(user_id, value)
        else:
            message_id, data = _button(sent, value)
            started = time.monotonic()
            fake.press_button(user_id, message_id, data)
        deadline = started + timeout
        while len(sent) < have + expected:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                wave.failures.append(f"user {user_id}: no reply to {value!r}")
                return False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(arrived.wait(), remaining)
            arrived.clear()
        wave.latencies.append(sent[have].time - started)
        wave.updates += 1
    return True


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The driver's own garbage collection kept out of the latencies it measures: the fake
    keeps every request of the run, and a full collection of them mid-wave (80 to 85 ms,
    measured) held up every reply the driver was waiting for, whichever bot it drove."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


async def run_wave(fake: LoadFake, user_ids: range, *, steps: int | None = None,
                   think: float = 0.0) -> Wave:
    wave = Wave(len(user_ids))
    started = time.monotonic()
    with collector_paused():
        done = await asyncio.gather(*(converse(fake, uid, wave, steps=steps, think=think)
                                      for uid in user_ids))
    wave.seconds = time.monotonic() - started
    wave.completed = sum(done)
    return wave


async def run_one_by_one(fake: LoadFake, user_ids: range) -> Wave:
    """The users' conversations one after another: latencies without queueing."""
    wave = Wave(1)
    started = time.monotonic()
    with collector_paused():
        for user_id in user_ids:
            wave.completed += await converse(fake, user_id, wave)
    wave.seconds = time.monotonic() - started
    return wave


ISOLATES = str.maketrans("", "", "\u2068\u2069")


def transcript(fake: FakeBotApi, user_id: int) -> list[tuple[str | None, list[str]]]:
    """What one user was sent: each text with its button labels as sent (aiogram-dialog
    takes the keyboard off a question once the next one is sent). Without the isolates
    coachbot puts around the user's own words (right-to-left languages need them)."""
    return [(str(call.params.get("text")).translate(ISOLATES),
             [b["text"] for row in (call.params.get("reply_markup") or {}).get(
                 "inline_keyboard", []) for b in row])
            for call in fake.calls("sendMessage")
            if call.status == 200 and call.params.get("chat_id") == user_id]


async def quiet(fake: FakeBotApi, seconds: float = 0.25, timeout: float = 10.0) -> None:
    """Wait until the bot has made no request but long polls for `seconds`: its last
    update's work is done (aiogram's polling does not wait for it when stopped)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        last = next((r.time for r in reversed(fake.requests) if r.method != "getUpdates"), 0.0)
        if time.monotonic() - last >= seconds:
            return
        await asyncio.sleep(seconds)


# -- the bot process ------------------------------------------------------------------------


class BotProcess:
    """A bot in a subprocess (`python -m MODULE ARGS...`), stopped with SIGTERM."""

    def __init__(self, module: str, *args: str) -> None:
        self.command = [sys.executable, "-m", module, *args]
        self.process: asyncio.subprocess.Process | None = None

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    async def start(self, fake: FakeBotApi, timeout: float = 60.0) -> None:
        polls = len(fake.calls("getUpdates"))
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self.process = await asyncio.create_subprocess_exec(*self.command, cwd=REPO, env=env)
        deadline = time.monotonic() + timeout
        while len(fake.calls("getUpdates")) <= polls:
            if self.process.returncode is not None:
                raise RuntimeError(f"{self.command} exited with {self.process.returncode}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.command} did not start polling")
            await asyncio.sleep(0.05)

    async def stop(self, timeout: float = 30.0) -> int | None:
        if self.process is None or self.process.returncode is not None:
            return None if self.process is None else self.process.returncode
        self.process.send_signal(signal.SIGTERM)
        try:
            return await asyncio.wait_for(self.process.wait(), timeout)
        except TimeoutError:
            self.process.kill()
            return await self.process.wait()

    def cpu_seconds(self) -> float:
        """User + system CPU time the process used so far."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS")


def per_chat_counts(fake: FakeBotApi, user_ids: range) -> dict[int, int]:
    counts: defaultdict[int, int] = defaultdict(int)
    for uid in user_ids:
        counts[len(fake.messages_to(uid))] += 1
    return dict(counts)
