"""Soak: two real `coachbot run` replicas behind a round-robin webhook proxy, a few hundred users
setting goals at the same time while daily check-ins fall due, one replica SIGKILLed in the middle
of it all and restarted on the same port. Afterwards every answer, check-in and message is
accounted for, against the database and against what the fake Telegram received.

The pieces, all on 127.0.0.1:

    fake Telegram ──POST update──▶ proxy (round robin) ──▶ replica a │ b ──▶ PostgreSQL (own db)
        ▲                       (502 when the replica is down:       │
        └──────── sendMessage / answerCallbackQuery ─────────────────┘  the fake posts it again)

Bounded: about three to three and a half minutes on a two-core machine. The longest wait is by
design: a message the killed replica was sending stays ``sending`` until the sender's lease (two
minutes) gives it back, so the users whose message that was, and the end of the test, wait for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import math
import os
import random
import re
import signal
import socket
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import aiohttp
import pytest
from aiohttp import web
from cryptography.fernet import Fernet
from sqlalchemy import func, insert, select, update
from sqlalchemy.engine import make_url

from bot.dialogue import load_dialogues
from bot.engine import ConversationState, step_token
from bot.store import Answer, Conversation, Goal, Outbox, PlannedCheckin, Store, Turn, User
from bot.store.store import SUPERSEDED_BY_REPLY
from bot.telegram.app import HEALTH_PATH, SECRET_HEADER
from tests.conftest import PG_DEFAULT, _pg_admin
from tests.e2e.conftest import REPO
from tests.fakes.bot_api import FakeBotApi, SentMessage, WebhookDelivery

pytestmark = pytest.mark.soak  # minutes: run by .ci/run, not by the day-to-day command

# 300 users x 16 or 18 updates and about 5,800 messages: at the default send rate (25 messages/s
# per replica, as compose.yaml runs two) that is about two minutes and a half of chatting.
USERS = int(os.environ.get("COACHBOT_SOAK_USERS", "300"))
CHECKIN_USERS = int(os.environ.get("COACHBOT_SOAK_CHECKINS", "120"))
CHATTER_IDS = 700_000_000
SEEDED_IDS = 800_000_000
SECRET = "soak-secret_0123456789"
WEBHOOK_PATH = "/telegram"
DIALOGUES = load_dialogues(REPO / "dialogues")

# Time zones with whole, half and three-quarter hour offsets (none has daylight saving time), so
# quiet hours must end on odd local minutes for the check-in to be due at one UTC instant.
ZONES = ("UTC", "Asia/Kolkata", "Asia/Kathmandu", "America/Sao_Paulo", "Australia/Eucla")
CHECKIN_LEAD = 25.0  # seconds at least between seeding and the check-ins' due time
# The kill: once the chatting is past the lower fraction, while the victim holds claimed check-ins
# (it is starting them) or KILL_WINDOW seconds after they fell due, whichever comes first; at the
# upper fraction at the latest.
KILL_WINDOW = 12.0
KILL_PROGRESS = (0.2, 0.45)
RESTART_AFTER = 3.0  # seconds the killed replica stays down (one replica serves meanwhile)

STARTUP_TIMEOUT = 60.0
# A step waits at most this long for the bot: the killed replica's in-flight message comes back
# after the sender's lease (2 minutes) plus its release interval (10 s).
STEP_TIMEOUT = 180.0
QUIET_TIMEOUT = 200.0  # from the kill: everything delivered, nothing pending
STOP_TIMEOUT = 30.0
POLL = 0.1
DATE = object()  # expected answer: some ISO date (the user typed "tomorrow")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def wait_for(predicate: Any, timeout: float, what: str, interval: float = POLL) -> None:
    """Poll `predicate` (sync or async) until it holds; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        await asyncio.sleep(interval)


# -- processes --------------------------------------------------------------------------------


@dataclass
class Replica:
    """One `coachbot run` process; each run's output goes to a file of its own."""

    name: str
    port: int
    env: dict[str, str]
    logs: Path
    process: asyncio.subprocess.Process | None = None
    runs: list[Path] = field(default_factory=list)

    async def start(self) -> None:
        log = self.logs / f"{self.name}-{len(self.runs) + 1}.log"
        self.runs.append(log)
        with log.open("wb") as out:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "bot.cli", "run", "--host", "127.0.0.1",
                "--port", str(self.port), cwd=REPO, env=self.env,
                stdin=asyncio.subprocess.DEVNULL, stdout=out, stderr=asyncio.subprocess.STDOUT)

    @property
    def worker_id(self) -> str:  # as bot.schedule.claims.default_worker_id() names it
        assert self.process is not None
        return f"{socket.gethostname()}:{self.process.pid}"

    def tail(self) -> str:
        return self.runs[-1].read_text(errors="replace")[-3000:] if self.runs else ""

    async def wait_healthy(self, session: aiohttp.ClientSession) -> None:
        url = f"http://127.0.0.1:{self.port}{HEALTH_PATH}"

        async def healthy() -> bool:
            assert self.process is not None
            if self.process.returncode is not None:
                raise AssertionError(f"replica {self.name} exited with {self.process.returncode}"
                                     f":\n{self.tail()}")
            try:
                async with session.get(url, timeout=aiohttp.ClientTimeout(total=2)) as response:
                    return response.status == 200
            except (aiohttp.ClientError, TimeoutError):
                return False

        await wait_for(healthy, STARTUP_TIMEOUT, f"replica {self.name} to be healthy", 0.2)

    async def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        await asyncio.wait_for(self.process.wait(), STOP_TIMEOUT)

    async def stop(self) -> int:
        """SIGTERM, as an orchestrator stops it: it finishes what is in flight and exits."""
        assert self.process is not None
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        return await asyncio.wait_for(self.process.wait(), STOP_TIMEOUT)

    def ensure_dead(self) -> None:
        if self.process is not None and self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()


class RoundRobinProxy:
    """Forwards each webhook POST to the next replica in turn and answers with its status; a
    replica that does not answer makes it a 502, so the fake Telegram delivers the update again."""

    def __init__(self, ports: list[int]) -> None:
        self.ports = ports
        self.targets = [f"http://127.0.0.1:{port}{WEBHOOK_PATH}" for port in ports]
        self.outcomes: Counter[tuple[int, int]] = Counter()  # (replica index, status)
        self._turn = itertools.count()
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self.url = ""

    async def start(self) -> None:
        self._session = aiohttp.ClientSession()
        app = web.Application()
        app.router.add_post(WEBHOOK_PATH, self._forward)
        self._runner = web.AppRunner(app, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}{WEBHOOK_PATH}"

    async def stop(self) -> None:
        if self._session is not None:
            await self._session.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _forward(self, request: web.Request) -> web.Response:
        assert self._session is not None
        body = await request.read()
        index = next(self._turn) % len(self.targets)
        headers = {name: request.headers[name] for name in (SECRET_HEADER, "Content-Type")
                   if name in request.headers}
        try:
            async with self._session.post(self.targets[index], data=body, headers=headers,
                                          timeout=aiohttp.ClientTimeout(total=30)) as response:
                answer, status = await response.read(), response.status
        except (aiohttp.ClientError, TimeoutError):
            answer, status = b"replica unavailable", 502
        self.outcomes[(index, status)] += 1
        return web.Response(status=status, body=answer)


class TelegramLikeFake(FakeBotApi):
    """The fake Bot API, delivering webhook updates the way Telegram does: over up to
    `connections` connections at once (setWebhook's max_connections, 40 unless set), one chat's
    updates one after the other, each retried until the webhook answers 2xx.

    (FakeBotApi posts one update at a time: with it, a single update would be in flight in the
    whole system and the two replicas would never work at the same time.)
    """

    connections = 40

    async def _deliver_to_webhook(self) -> None:
        posting: dict[int, asyncio.Task[None]] = {}  # id(entry) -> its delivery
        busy: set[Any] = set()  # chats with an update being posted

        def following() -> Any:
            """The first queued update that is not posted and has no earlier one of its chat."""
            if not self.webhook_url or not self._has_deliverable():
                return None
            held = set(busy)
            for entry in self._queue:
                chat = chat_of(entry.update)
                if id(entry) not in posting and chat not in held:
                    return entry
                held.add(chat)
            return None

        async def post(entry: Any, chat: Any) -> None:
            try:
                while True:
                    status = await self._post_update(entry.update)
                    self.webhook_deliveries.append(
                        WebhookDelivery(entry.update["update_id"], status, time.monotonic()))
                    if status is not None and 200 <= status < 300:
                        self._queue = [queued for queued in self._queue if queued is not entry]
                        return
                    reason = f"Wrong response from the webhook: {status}" if status \
                        else "No response"
                    self._webhook_last_error = (int(time.time()), reason)
                    await asyncio.sleep(self.webhook_retry_delay)
            finally:
                busy.discard(chat)
                posting.pop(id(entry), None)
                self._notify()

        try:
            while True:
                await self._wait_until(
                    lambda: len(posting) < self.connections and following() is not None, None)
                entry = following()
                chat = chat_of(entry.update)
                busy.add(chat)
                posting[id(entry)] = asyncio.create_task(post(entry, chat))
        finally:
            deliveries = list(posting.values())
            for task in deliveries:
                task.cancel()
            await asyncio.gather(*deliveries, return_exceptions=True)


def chat_of(update: dict[str, Any]) -> Any:
    if "callback_query" in update:
        query = update["callback_query"]
        return (query.get("message") or {}).get("chat", {}).get("id", query["from"]["id"])
    for kind in ("message", "edited_message"):
        if kind in update:
            return update[kind]["chat"]["id"]
    return None


# -- users ------------------------------------------------------------------------------------


@dataclass
class Chatter:
    """A user who sends /goal and answers the goal setting to its end, as a person would."""

    user_id: int
    given: list[tuple[str, Any]] = field(default_factory=list)  # (step, value as stored)
    seen: int = 0  # messages from the bot when this user last sent something
    done: bool = False

    @property
    def first_name(self) -> str:
        return f"Chatter{self.user_id - CHATTER_IDS}"

    @property
    def title(self) -> str:
        return f"Walk {self.user_id % 17 + 3} km every day (user {self.user_id})"

    @property
    def commitment(self) -> int:
        return 5 + (self.user_id - CHATTER_IDS) % 5  # under 7 asks commitment_lift, change_step

    @property
    def path_length(self) -> int:
        """How many questions the goal setting asks this user."""
        return 15 + 2 * (self.commitment < 7)

    def answer(self, step: str, ask_type: str) -> tuple[str, Any]:
        """(what to send or the button's value, the value the bot should store)."""
        number = self.user_id - CHATTER_IDS
        if ask_type == "scale":
            baseline = 1 + number % 5  # 1 takes the notice_start branch
            value = {"baseline": baseline, "target": min(10, baseline + 3 + number % 2),
                     "commitment": self.commitment}[step]
            return str(value), value
        if ask_type == "yes_no":
            return "no", False  # change_step: keep the first step
        if ask_type == "date":
            return "tomorrow", DATE
        if ask_type == "text":
            said = self.title if step == "goal" else f"{step} for user {self.user_id}, in my words"
            return said, said
        raise AssertionError(f"the soak user cannot answer a {ask_type} question ({step})")


@dataclass
class Deliveries:
    """Which updates a replica accepted (2xx), read incrementally from the fake's record."""

    fake: FakeBotApi
    ok: set[int] = field(default_factory=set)
    _read: int = 0

    def refresh(self) -> None:
        new = self.fake.webhook_deliveries[self._read:]
        self._read += len(new)
        self.ok.update(d.update_id for d in new if d.status is not None and 200 <= d.status < 300)

    def accepted(self, update_id: int) -> bool:
        self.refresh()
        return update_id in self.ok


def checkin_profile(due: datetime, zone: str) -> tuple[int, int | None, int | None]:
    """(checkin_hour, quiet_start, quiet_end) making the daily check-in due at `due`: the
    check-in hour falls in quiet hours that end at `due`'s local minute."""
    local = due.astimezone(ZoneInfo(zone))
    if local.minute == 0:
        return local.hour, None, None
    return local.hour, local.hour * 60, local.hour * 60 + local.minute


def shape(texts: list[tuple[str, tuple[str, ...]]]) -> list[str]:
    return [f"{text[:40]!r}{list(buttons)[:2]}" for text, buttons in texts]


def message_key(message: SentMessage) -> tuple[str, tuple[str, ...]]:
    rows = (message.reply_markup or {}).get("inline_keyboard", [])
    return message.text or "", tuple(str(b.get("callback_data")) for row in rows for b in row)


def payload_key(payload: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    return str(payload["text"]), tuple(str(b["data"]) for b in payload.get("buttons", ()))


# -- the soak ---------------------------------------------------------------------------------


@dataclass
class Soak:
    fake: FakeBotApi
    store: Store
    replicas: list[Replica]
    proxy: RoundRobinProxy
    due: datetime
    chatters: list[Chatter]
    deliveries: Deliveries
    began: float = field(default_factory=time.monotonic)
    phases: dict[str, float] = field(default_factory=dict)
    killed_at: float | None = None
    duplicates: dict[int, int] = field(default_factory=dict)
    timeline: list[tuple[int, float, int]] = field(default_factory=list)
    kill_progress: float = 0.0
    in_flight_at_kill: set[int] = field(default_factory=set)
    claims_aged: int = 0
    delivered_at_kill: int = 0

    # ---- driving one user

    async def state_of(self, user_id: int) -> ConversationState:
        async with self.store.sessionmaker() as session:
            state = await session.scalar(
                select(Conversation.state).where(Conversation.user_id == user_id))
        return ConversationState.from_dict(state)

    async def accepted(self, update_id: int) -> None:
        await wait_for(lambda: self.deliveries.accepted(update_id), STEP_TIMEOUT,
                       f"update {update_id} to be accepted by a replica")

    async def question(self, user: Chatter, dialogue: str, step: str) -> None:
        """Wait for the message that asks ``step``'s question, as a person reads before
        answering: a turn may send more than one message ("/goal": the introduction, then the
        first question), and answering after the first would supersede the next one while it
        waits for the chat's pace."""
        say = DIALOGUES[dialogue].steps[step].say
        literal = max(re.split(r"\{[^}]*\}", say if isinstance(say, str) else ""), key=len)

        def asked() -> bool:
            new = self.fake.sent.get(user.user_id, ())[user.seen:]
            return any(literal.strip() in (message.text or "") for message in new)

        await wait_for(asked, STEP_TIMEOUT, f"the bot to ask user {user.user_id} {step}")

    async def button(self, user: Chatter, data: str) -> SentMessage:
        """The message carrying the button `data`, once it arrived."""
        found: list[SentMessage] = []

        def arrived() -> bool:
            for message in reversed(self.fake.sent.get(user.user_id, ())):
                if data in message_key(message)[1]:
                    found.append(message)
                    return True
            return False

        await wait_for(arrived, STEP_TIMEOUT, f"button {data} for user {user.user_id}")
        return found[0]

    async def chat(self, user: Chatter) -> None:
        await asyncio.sleep(random.uniform(0, 3))  # people do not all start at the same instant
        user.seen = len(self.fake.sent.get(user.user_id, ()))
        update_id = self.fake.send_text(user.user_id, "/goal", first_name=user.first_name)
        await self.accepted(update_id)
        for _ in range(40):
            state = await self.state_of(user.user_id)
            if not state.active:
                user.done = True
                return
            frame = state.stack[-1]
            assert frame.dialogue == "goal_setting", (user.user_id, frame)
            ask = DIALOGUES[frame.dialogue].steps[frame.step].ask
            said, stored = user.answer(frame.step, ask.type)
            if ask.type in ("scale", "yes_no"):
                data = f"{step_token(frame.dialogue, frame.step)}:{said}"
                message = await self.button(user, data)
                user.seen = len(self.fake.sent.get(user.user_id, ()))
                update_id = self.fake.press_button(user.user_id, message.message_id, data)
            else:
                await self.question(user, frame.dialogue, frame.step)
                user.seen = len(self.fake.sent.get(user.user_id, ()))
                update_id = self.fake.send_text(user.user_id, said, first_name=user.first_name)
            user.given.append((frame.step, stored))
            await self.accepted(update_id)
        raise AssertionError(f"user {user.user_id}: the goal setting did not end")

    def elapsed(self) -> float:
        return round(time.monotonic() - self.began, 1)

    async def watch(self) -> None:
        """Every 10 s: (seconds, fraction of answers given, updates accepted), for the report."""
        while True:
            self.deliveries.refresh()
            self.timeline.append((round(self.elapsed()), round(self.progress(), 2),
                                  len(self.deliveries.ok)))
            await asyncio.sleep(10)

    def report(self) -> dict[str, Any]:
        self.deliveries.refresh()
        deliveries = self.fake.webhook_deliveries
        return {
            "users": len(self.chatters), "checkin_users": CHECKIN_USERS,
            "done": sum(user.done for user in self.chatters), "phases_s": self.phases,
            "due_s": round(self.due.timestamp() - time.time() + self.elapsed(), 1),
            "updates_accepted": len(self.deliveries.ok),
            "accepted_after_kill": len(self.deliveries.ok) - self.delivered_at_kill,
            "webhook_attempts": len(deliveries),
            "webhook_failures": Counter(str(d.status) for d in deliveries if d.status != 200),
            "proxy": {f"{'ab'[i]}:{status}": n for (i, status), n in
                      sorted(self.proxy.outcomes.items())},
            "messages": sum(len(messages) for messages in self.fake.sent.values()),
            "kill_progress": round(self.kill_progress, 2),
            "in_flight_at_kill": sorted(self.in_flight_at_kill),
            "claims_aged": self.claims_aged, "duplicates": self.duplicates,
            "timeline": self.timeline,
        }

    # ---- the kill

    def progress(self) -> float:
        answered = sum(len(user.given) for user in self.chatters)
        return answered / sum(user.path_length for user in self.chatters)

    async def claims_of(self, worker: str) -> int:
        async with self.store.sessionmaker() as db:
            return int(await db.scalar(select(func.count()).where(
                PlannedCheckin.status == "claimed", PlannedCheckin.claimed_by == worker)) or 0)

    async def kill_and_restart(self, session: aiohttp.ClientSession) -> None:
        victim = self.replicas[0]
        worker = victim.worker_id
        low, high = KILL_PROGRESS
        due = self.due.timestamp()

        async def moment() -> bool:
            progress, now = self.progress(), time.time()
            if progress >= high or (progress >= low and now >= due + KILL_WINDOW):
                return True
            return progress >= low and now >= due and await self.claims_of(worker) > 0

        await wait_for(moment, STEP_TIMEOUT, "the middle of the run", 0.05)
        self.kill_progress = self.progress()
        self.deliveries.refresh()
        self.delivered_at_kill = len(self.deliveries.ok)
        await victim.kill()
        self.killed_at = time.monotonic()
        self.phases["killed"] = self.elapsed()
        async with self.store.sessionmaker() as db, db.begin():
            # What the dead replica may have been sending: the only rows that may arrive twice.
            self.in_flight_at_kill = set((await db.execute(
                select(Outbox.id).where(Outbox.status == "sending"))).scalars())
            # Its claimed check-ins come back after the claim lease (5 minutes): age the claims
            # rather than wait, so that the lease expiry path runs within the test.
            aged = await db.execute(
                update(PlannedCheckin)
                .where(PlannedCheckin.status == "claimed", PlannedCheckin.claimed_by == worker)
                .values(claimed_at=datetime.now(UTC) - timedelta(hours=1))
                .execution_options(synchronize_session=False))
            self.claims_aged = int(getattr(aged, "rowcount", 0) or 0)
        await asyncio.sleep(RESTART_AFTER)  # the other replica serves alone meanwhile
        await victim.start()
        await victim.wait_healthy(session)
        self.phases["restarted"] = self.elapsed()

    # ---- the end

    async def undelivered(self) -> int:
        async with self.store.sessionmaker() as db:
            return int(await db.scalar(select(func.count()).where(
                Outbox.status.in_(("pending", "sending")))) or 0)

    async def open_checkins(self) -> int:
        async with self.store.sessionmaker() as db:
            return int(await db.scalar(select(func.count()).where(
                PlannedCheckin.due_at <= self.due,
                PlannedCheckin.status.in_(("planned", "claimed")))) or 0)

    async def wait_quiet(self) -> None:
        assert self.killed_at is not None
        remaining = QUIET_TIMEOUT - (time.monotonic() - self.killed_at)
        await wait_for(lambda: self.fake.pending_updates == 0, remaining,
                       "every update to be delivered")

        async def quiet() -> bool:
            return not await self.open_checkins() and not await self.undelivered()

        remaining = QUIET_TIMEOUT - (time.monotonic() - self.killed_at)
        await wait_for(quiet, remaining, "the outbox to drain and the check-ins to start", 0.5)


async def agreed(t: Turn) -> None:
    """A chatter agreed that their answers are kept, and paused check-ins: the seeded users
    are the ones the scheduler serves."""
    t.user.consent_at = t.user.consent_at or t.now
    t.user.paused_until = t.now + timedelta(days=30)


async def seed_checkin_users(store: Store, due: datetime) -> None:
    """Users who consented, have an active goal and a daily check-in due at `due` (written
    straight into the database: the replicas' ticks must plan and start them)."""
    before = due - timedelta(days=1)
    users, goals = [], []
    for number in range(CHECKIN_USERS):
        zone = ZONES[number % len(ZONES)]
        hour, quiet_start, quiet_end = checkin_profile(due, zone)
        users.append({"id": SEEDED_IDS + number, "first_name": f"Seed{number}", "locale": "en",
                      "time_zone": zone, "checkin_hour": hour, "quiet_start": quiet_start,
                      "quiet_end": quiet_end, "reachable": True, "consent_at": before,
                      "is_coach": False, "created_at": before})
        goals.append({"user_id": SEEDED_IDS + number, "title": f"Seeded goal {number}",
                      "baseline": 3, "current": 3, "target": 8, "status": "active",
                      "created_at": before})
    async with store.engine.begin() as connection:
        await connection.execute(insert(User.__table__), users)
        await connection.execute(insert(Goal.__table__), goals)


def replica_env(fake: FakeBotApi, database_url: str, webhook_url: str,
                key: str) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("COACHBOT_", "TELEGRAM_"))}
    env.update({
        "TELEGRAM_BOT_TOKEN": fake.token,
        "TELEGRAM_API_BASE_URL": fake.url,
        "COACHBOT_DATABASE_URL": database_url,
        "COACHBOT_WEBHOOK_URL": webhook_url,
        "COACHBOT_WEBHOOK_SECRET": SECRET,
        "COACHBOT_DIALOGUES": str(REPO / "dialogues"),
        "COACHBOT_ENCRYPTION_KEY": key,
        "COACHBOT_LOG_FORMAT": "json",
        "PYTHONPATH": str(REPO),
        "PYTHONUNBUFFERED": "1",
    })
    return env


async def test_soak_two_replicas_a_kill_and_check_ins(tmp_path: Path) -> None:
    admin = os.environ.get("COACHBOT_TEST_PG_URL", PG_DEFAULT)
    database = f"coachbot_soak_{uuid.uuid4().hex[:12]}"
    database_url = make_url(admin).set(database=database).render_as_string(hide_password=False)
    key = Fernet.generate_key().decode()
    await _pg_admin(admin, f'CREATE DATABASE "{database}"')
    fake = TelegramLikeFake()
    proxy = RoundRobinProxy([free_port(), free_port()])
    replicas: list[Replica] = []
    store = Store(database_url, encryption_key=key)
    session = aiohttp.ClientSession()
    soak: Soak | None = None
    try:
        await fake.start()
        await proxy.start()
        await store.start()  # the schema, before the replicas and the seeding
        due = datetime.fromtimestamp(
            math.ceil((datetime.now(UTC).timestamp() + CHECKIN_LEAD) / 60) * 60, UTC)
        await seed_checkin_users(store, due)
        env = replica_env(fake, database_url, proxy.url, key)
        replicas = [Replica(name, port, env, tmp_path)
                    for name, port in zip("ab", proxy.ports, strict=True)]
        chatters = [Chatter(CHATTER_IDS + number) for number in range(USERS)]
        for chatter in chatters:  # they agreed that their answers are kept, earlier
            await store.run_turn(chatter.user_id, agreed)
        soak = Soak(fake, store, replicas, proxy, due, chatters, Deliveries(fake))
        await asyncio.gather(*(replica.start() for replica in replicas))
        await asyncio.gather(*(replica.wait_healthy(session) for replica in replicas))
        soak.phases["healthy"] = soak.elapsed()
        assert datetime.now(UTC) < due, "the replicas started after the check-ins were due"

        chats = asyncio.gather(*(soak.chat(user) for user in chatters))
        killer = asyncio.create_task(soak.kill_and_restart(session))
        watcher = asyncio.create_task(soak.watch())
        try:
            await asyncio.wait_for(asyncio.shield(killer), STEP_TIMEOUT)
            await asyncio.wait_for(chats, STEP_TIMEOUT + 30)
        finally:
            for task in (killer, chats, watcher):
                task.cancel()
            await asyncio.gather(killer, chats, watcher, return_exceptions=True)
        soak.phases["chatted"] = soak.elapsed()
        await soak.wait_quiet()
        soak.phases["quiet"] = soak.elapsed()
        codes = [await replica.stop() for replica in replicas]
        assert codes == [0, 0], [replica.tail() for replica in replicas]
        soak.phases["stopped"] = soak.elapsed()
        await check_everything(soak)
    finally:
        if soak is not None:
            print("\nsoak:", json.dumps(soak.report(), default=str))
        for replica in replicas:
            replica.ensure_dead()
        for replica in replicas:
            if replica.process is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(replica.process.wait(), STOP_TIMEOUT)
        await session.close()
        await store.close()
        await proxy.stop()
        await fake.stop()
        await _pg_admin(admin, f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


async def check_everything(soak: Soak) -> None:
    store, fake = soak.store, soak.fake
    assert all(user.done for user in soak.chatters)
    async with store.sessionmaker() as db:
        answers: dict[int, list[tuple[str, Any]]] = {}
        for row in await db.execute(select(Answer.user_id, Answer.step_id, Answer.value)
                                    .order_by(Answer.id)):
            answers.setdefault(row.user_id, []).append((row.step_id, row.value))
        goals: dict[int, list[str]] = {}
        for row in await db.execute(select(Goal.user_id, Goal.title).order_by(Goal.id)):
            goals.setdefault(row.user_id, []).append(row.title)
        checkins = (await db.execute(select(
            PlannedCheckin.user_id, PlannedCheckin.status, PlannedCheckin.due_at,
            PlannedCheckin.kind))).all()
        outbox = (await db.execute(select(
            Outbox.id, Outbox.chat_id, Outbox.status, Outbox.attempts, Outbox.payload,
            Outbox.last_error)
            .order_by(Outbox.id))).all()

    # Every answer each user gave is stored, once, in order, with what they typed or pressed.
    for user in soak.chatters:
        stored = answers.get(user.user_id, [])
        assert len(user.given) == user.path_length, (user.user_id, user.given)
        assert len(stored) == len(user.given), (user.user_id, stored, user.given)
        for (step, value), (expected_step, expected) in zip(stored, user.given, strict=True):
            assert step == expected_step, (user.user_id, stored, user.given)
            if expected is DATE:
                date.fromisoformat(value)
            else:
                assert value == expected, (user.user_id, step, value, expected)
        assert goals.get(user.user_id) == [user.title], (user.user_id, goals.get(user.user_id))

    # Every due check-in was started exactly once, and nobody else got one.
    seeded = {SEEDED_IDS + number for number in range(CHECKIN_USERS)}
    today = Counter(row.user_id for row in checkins if row.due_at <= soak.due)
    started = Counter(row.user_id for row in checkins if row.status == "started")
    assert all(row.kind == "daily" and row.user_id in seeded for row in checkins)
    assert today == Counter(seeded) == started, (today, started)
    assert {row.due_at for row in checkins if row.status == "started"} == {soak.due}

    # The outbox is empty; nothing failed; a retried row is one the dead replica was sending.
    # Such a row, put back in the queue when its lease ran out, may have reached the chat
    # before the replica died: the user's next message then supersedes it (cancelled), which
    # is right; no other row may end unsent.
    superseded = {row.id for row in outbox if row.status == "cancelled"
                  and row.last_error == SUPERSEDED_BY_REPLY}
    assert superseded <= soak.in_flight_at_kill, (superseded, soak.in_flight_at_kill)
    assert Counter(row.status for row in outbox if row.id not in superseded) == Counter(
        {"sent": len(outbox) - len(superseded)})
    retried = {row.id for row in outbox if row.attempts > 1}
    assert retried <= soak.in_flight_at_kill, (retried, soak.in_flight_at_kill)

    # Each chat got exactly its outbox rows, in order; at most one message per chat twice, and
    # only a row that the killed replica had in flight (sent, then sent again after the lease).
    rows_of: dict[int, list[Any]] = {}
    for row in outbox:
        rows_of.setdefault(row.chat_id, []).append(row)
    assert set(fake.sent) <= set(rows_of), set(fake.sent) - set(rows_of)
    duplicates: dict[int, int] = {}
    for chat_id, rows in rows_of.items():
        received = [message_key(m) for m in fake.sent.get(chat_id, [])]
        expected = [payload_key(row.payload) for row in rows]
        if received == expected:
            continue
        assert len(received) == len(expected) + 1, (chat_id, shape(received), shape(expected))
        twice = [row.id for index, row in enumerate(rows)
                 if expected[:index + 1] + expected[index:] == received]
        assert twice and set(twice) & retried, (chat_id, shape(received), shape(expected))
        duplicates[chat_id] = next(iter(set(twice) & retried))
    assert len(duplicates) <= len(retried)
    soak.duplicates = duplicates

    # Each seeded user got the check-in's first question once (twice only as allowed above).
    for user_id in seeded:
        first = (f"Hello \u2068Seed{user_id - SEEDED_IDS}\u2069. How are you feeling today, "
                 "from 1 (very low) to 10 (very good)?")
        count = sum(1 for message in fake.sent.get(user_id, []) if message.text == first)
        assert count == 1 + (user_id in duplicates), (user_id, count)

    # No replica printed a traceback or logged an error (a SIGKILL prints nothing).
    for replica in soak.replicas:
        for log in replica.runs:
            content = log.read_text(errors="replace")
            assert "Traceback" not in content, f"{log.name}:\n{content[-5000:]}"
            errors = [line for line in content.splitlines()
                      if line.startswith("{") and json.loads(line).get("level") in (
                          "ERROR", "CRITICAL")]
            assert not errors, f"{log.name}:\n" + "\n".join(errors[:20])
