"""Delivering the outbox to Telegram: claiming rows, sending them, retrying, recording.

Shaping a message (long texts in parts, buttons in rows) is ``bot/telegram/shaping.py``;
pacing (the bot's send budget, shared by the replicas on PostgreSQL, and each chat's pace)
is ``bot/telegram/pacing.py``; what a user who blocked the bot changes is
``bot/coaching/reachability.py``.

Outbox statuses: ``pending`` (waiting, not before ``next_attempt_at``), ``sending`` (claimed
by a sender; ``next_attempt_at`` is then the claim's lease expiry, renewed while a send
waits), ``sent`` (Telegram accepted it), ``failed`` (gave up: blocked by the user, rejected,
unreadable with this replica's key, or still failing after ``give_up_after``),
``cancelled`` (held back: superseded by a later reply or an urgent message; never sent),
``held`` (queued by someone else for a person in a crisis pause: not claimed, and not in the
way of their chat's other messages, until the pause is over and it is ``pending`` again).

Order and limits: only the oldest undelivered row of a chat can be claimed, so a chat's
messages never overtake each other and a chat has at most one message in flight. The replies
of an update skip the claim: its turn commits them already ``sending`` when the chat has
nothing undelivered, and the handler sends them one after the other (:meth:`deliver_turn`).
Sends are paced by the bot's budget (``rate`` messages/s in all, no burst) and about one
message per second per chat. Replies to a client's own message go ahead of scheduled bulk:
the claim takes first the chats where a reply waits (and the rows it waits behind), and the
budget serves them first. A 429 pauses every send for ``retry_after`` and retries the row.
An urgent row (``Turn.enqueue(..., urgent=True)``) skips the chat's pace and goes first
(holding back what was queued before it, unless ``hold_back=False``: /sos).

Outages: a 5xx, a timeout or a network error retries the row with a back-off doubling up
to ``max_backoff``, for as long as ``give_up_after`` (hours by default: a Telegram or network
outage of minutes loses nothing). The background loop survives any exception (a database
restart, SQLite locked or full), logging its type and backing off; a row that cannot be
decrypted is marked failed on its own and never blocks the others.

Delivery bounds: a row is marked ``sent`` only after Telegram accepted it, so nothing is
lost (at least once). If the process dies between Telegram's answer and that write, the
row's lease expires and it is sent again: at most the one message per chat whose send was
in flight may be repeated, never more. A long text goes out in parts, and the parts
Telegram accepted are recorded (``parts_sent``): a retry resumes at the part that failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from sqlalchemy import Row, Table, Text, Update, bindparam, or_, select, type_coerce, update
from telegram import Bot
from telegram.error import BadRequest, Forbidden, NetworkError, RetryAfter, TelegramError
from telegram.warnings import PTBUserWarning

from bot.coaching.reachability import blocked_the_bot
from bot.loops import backoff_delay, loop_failed
from bot.observability import Heartbeats, record_send
from bot.store import Outbox, Store, is_outage, rowcount, undelivered
from bot.store import Turn as StoreTurn
from bot.store.engine import unpinged
from bot.store.kinds import OutboxKind
from bot.telegram.pacing import PAID_BUDGET, ChatPacer, Priority, SharedBudget, TokenBucket
from bot.telegram.shaping import keyboard, split_text

log = logging.getLogger(__name__)

MAX_INLINE_RETRY_AFTER = 3
REPLY_RESERVE = 8  # sends in flight beyond ``concurrency`` for chats with a reply waiting
PAID_BROADCAST_RATE = 1000.0  # messages/s Telegram allows paid broadcasts
# Rows the background loop sent wait this long for others to join their "sent" commit. A
# reply sent by its update's handler is recorded at once: the chat's next update waits for it.
RECORD_DELAY = 0.02  # seconds


@dataclass(slots=True)
class Claimed:
    id: int
    user_id: int
    chat_id: int
    payload: dict[str, Any]
    attempts: int
    created_at: datetime | None = None  # None: just now
    parts_sent: int = 0  # of a long text, accepted by Telegram (updated as they are)
    urgent: bool = False
    priority: Priority = Priority.BULK  # in the bucket (FIRST when urgent)


def utcnow() -> datetime:
    return datetime.now(UTC)


_OUTBOX = cast(Table, Outbox.__table__)
_EARLIER = _OUTBOX.alias("earlier")
_REPLYING = _OUTBOX.alias("replying")


def _claim_statement(*, of_one_user: bool = False, replying: bool = False) -> Update:
    """Claim up to :limit due rows (of :user_id; of chats with a reply waiting, when
    ``replying``), each the oldest undelivered of its chat.

    Built once, in Core with bound parameters: building it per call (an ORM alias, the
    subqueries, their cache key) and running it through the ORM cost more CPU than the
    rest of a turn's delivery (see docs/performance.md)."""
    t, earlier = _OUTBOX.c, _EARLIER.c
    blocked = (select(earlier.id)
               .where(earlier.chat_id == t.chat_id, earlier.id < t.id,
                      undelivered(earlier.status)).exists())
    due = (select(t.id)
           .where(t.status == "pending", t.next_attempt_at <= bindparam("due_by"), ~blocked)
           .order_by(t.id).limit(bindparam("at_most")).with_for_update(skip_locked=True))
    if of_one_user:
        due = due.where(t.user_id == bindparam("of_user"))
    if replying:  # a reply (or an urgent message) waits in the chat, maybe behind this row
        r = _REPLYING.c
        due = due.where(t.chat_id.in_(
            select(r.chat_id).where(or_(r.kind == OutboxKind.REPLY, r.kind == OutboxKind.URGENT),
                                    undelivered(r.status))))
    # Materialised: as a plain ``IN (subquery)`` PostgreSQL may rerun the LIMIT … SKIP
    # LOCKED subquery per scanned row and claim more than ``at_most`` rows.
    chosen = due.cte("due").prefix_with("MATERIALIZED", dialect="postgresql")
    return (update(_OUTBOX)
            .where(t.id.in_(select(chosen.c.id)), t.status == "pending")
            .values(status="sending",
                    next_attempt_at=bindparam("lease_until", type_=t.next_attempt_at.type),
                    attempts=t.attempts + 1)
            # The payload as stored: decrypted row by row after the claim, so one row this
            # replica cannot read fails alone instead of failing every claim.
            .returning(t.id, t.user_id, t.chat_id, type_coerce(t.payload, Text).label("raw"),
                       t.attempts, t.created_at, t.parts_sent, t.kind))


_CLAIM_ANY = _claim_statement()
_CLAIM_REPLYING = _claim_statement(replying=True)
_CLAIM_OF_USER = _claim_statement(of_one_user=True)
# Run once per row (executemany): an expanding IN is compiled again on every execution.
_RECORD_SENT = (update(_OUTBOX)
                .where(_OUTBOX.c.id == bindparam("row_id"))
                .values(status="sent", sent_at=bindparam("accepted_at",
                                                         type_=_OUTBOX.c.sent_at.type),
                        last_error=None))
_RECORD_PARTS = (update(_OUTBOX).where(_OUTBOX.c.id == bindparam("row_id"))
                 .values(parts_sent=bindparam("parts")))
# A send still waiting (a long 429, a slow pace) keeps its claim: no other sender takes it.
_RENEW_LEASE = (update(_OUTBOX)
                .where(_OUTBOX.c.id == bindparam("row_id"), _OUTBOX.c.status == "sending")
                .values(next_attempt_at=bindparam("lease_until",
                                                  type_=_OUTBOX.c.next_attempt_at.type)))
_UNREADABLE = (update(_OUTBOX).where(_OUTBOX.c.id.in_(bindparam("ids", expanding=True)))
               .values(status="failed", last_error=bindparam("error")))


def _retry_seconds(exc: RetryAfter) -> float:
    value = exc.retry_after
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


class Sender:
    """Drains the outbox with a ``telegram.Bot`` built by the caller."""

    def __init__(
        self,
        store: Store,
        bot: Bot,
        *,
        rate: float = 28.0,
        shared: bool = False,
        paid_broadcast: bool = False,
        per_chat_interval: float = 1.0,
        max_attempts: int | None = None,
        give_up_after: timedelta = timedelta(hours=12),
        backoff: float = 1.0,
        max_backoff: float = 300.0,
        lease: timedelta = timedelta(minutes=2),
        concurrency: int = 64,
        poll_interval: float = 1.0,
        release_every: float = 10.0,
        heartbeats: Heartbeats | None = None,
        loop_backoff: float = 1.0,
        loop_max_backoff: float = 30.0,
    ) -> None:
        """``give_up_after``: a row whose sends keep failing (5xx, network) is retried with
        a back-off up to ``max_backoff`` for this long after it was queued, then marked
        failed (``max_attempts``, when given, also caps the attempts). ``heartbeats``:
        the background loop beats ``"sender"`` after every round. ``loop_backoff`` …
        ``loop_max_backoff``: its wait after a failed round (say, the database away).

        ``rate``: the bot's messages per second in all; ``shared``: on PostgreSQL every
        replica shares it (:class:`SharedBudget`), otherwise this process has it alone.
        ``paid_broadcast``: scheduled bulk goes out as Telegram's paid broadcasts (up to
        1,000/s, for a fee), outside ``rate``, which is then left to replies."""
        # `_deliver` asks for sendMessage through `do_api_request` on purpose, which PTB
        # answers with a hint to use `send_message`: only that hint is silenced (here rather
        # than at import, which a test runner's own warning filters would undo).
        warnings.filterwarnings("ignore", message=r"Please use 'Bot\.sendMessage'",
                                category=PTBUserWarning)
        self.store = store
        self.bot = bot
        # The sender's writes are one statement each, atomic without a transaction around.
        self._writer = store.engine.execution_options(isolation_level="AUTOCOMMIT") \
            if store.engine.dialect.name == "postgresql" else store.engine
        share = shared and store.engine.dialect.name == "postgresql"
        budget_engine = store.own_engine() if share else None
        self.bucket = TokenBucket(rate, budget=SharedBudget(budget_engine, rate)
                                  if budget_engine is not None else None)
        self.paid_bucket = None if not paid_broadcast else TokenBucket(
            PAID_BROADCAST_RATE,
            budget=SharedBudget(budget_engine, PAID_BROADCAST_RATE, key=PAID_BUDGET)
            if budget_engine is not None else None)
        self.chats = ChatPacer(per_chat_interval, spread=self.bucket.budget.spread)
        self.max_attempts = max_attempts
        self.give_up_after = give_up_after
        self.heartbeats = heartbeats
        self.loop_backoff = loop_backoff
        self.loop_max_backoff = loop_max_backoff
        self.failed_rounds = 0
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.lease = lease
        self.concurrency = concurrency
        self.poll_interval = poll_interval
        self.release_every = release_every
        self._released_at = -float("inf")
        self._wake = asyncio.Event()
        self._stopping = False
        self._inflight: set[asyncio.Task[int]] = set()
        self._runner: asyncio.Task[None] | None = None
        self._accepted: list[tuple[int, asyncio.Future[None]]] = []
        self._recorder: asyncio.Task[None] | None = None
        self._record_now = asyncio.Event()
        self.sent_count = 0

    # ---- public API

    def nudge(self) -> None:
        """New rows may be waiting: look now rather than at the next poll."""
        self._wake.set()

    async def deliver_now(self, user_id: int, *, patient: bool = False) -> int:
        """Send this user's due outbox rows now (after their turn committed), in order, as
        far as the chat's pace allows; the background loop sends the rest. `patient` waits
        for the pace instead (before the user's rows are erased, say). Returns how many
        were sent."""
        sent = 0
        while not self._stopping:
            if not patient and not self.chats.ready(user_id):
                self.nudge()  # the chat's pace is used up: the background loop sends the rest
                return sent
            rows = await self.claim(1, user_id=user_id)
            if not rows:
                return sent
            sent += await self._send(rows[0])
        return sent

    async def say_now(self, chat_id: int, text: str) -> None:
        """Send ``text`` to ``chat_id`` at once, not through the outbox, within the bot's
        budget (as a reply) and the chat's pace: for what has no row to live in (the
        goodbye to a client just erased, an answer in a group, "send it again" after a
        turn failed). Telegram's errors are the caller's."""
        await self.chats.wait(chat_id)
        await self.bucket.acquire(Priority.REPLY)
        released = time.monotonic()
        self.chats.sent(chat_id)
        try:
            await self.bot.do_api_request("sendMessage", {"chat_id": chat_id, "text": text})
        finally:
            self.bucket.observe(time.monotonic() - released)

    async def deliver_turn(self, t: StoreTurn, *, patient: bool = False) -> int:
        """After the turn `t` committed: send the messages it held for us (see
        :meth:`Store.turn`) in order, as far as the chat's pace allows (`patient`: all of
        them, waiting for the pace), and leave the rest, and any it queued instead, to the
        background loop. A message Telegram does not accept sends the rest of the turn's
        back to the queue behind it. Returns how many were sent."""
        for index, row in enumerate(t.held):
            if not patient and not row.urgent and not self.chats.ready(row.chat_id):
                await self._requeue([later.id for later in t.held[index:]])
                return index
            claimed = Claimed(row.id, t.user_id, row.chat_id, row.payload, attempts=1,
                              created_at=t.now, urgent=row.urgent, priority=Priority.REPLY)
            if not await self._send(claimed, prompt=True):
                await self._requeue([later.id for later in t.held[index + 1:]])
                return index
        if t.waiting:
            self.nudge()
        return len(t.held)

    async def drain(self) -> int:
        """Send everything that is due now (respecting the limits); for tests and tools."""
        before = self.sent_count
        await self._pump(until_idle=True)
        return self.sent_count - before

    async def run(self) -> None:
        """Deliver until :meth:`stop`; started sends always finish."""
        await self._pump(until_idle=False)

    async def _pump(self, *, until_idle: bool) -> None:
        """Claim and start sends until stopped (or, `until_idle`, until nothing is due).
        A round that fails (the database away, locked, full …) is logged by its type, and
        the loop waits ``loop_backoff`` (doubling up to ``loop_max_backoff``) and goes on;
        every completed round beats the ``sender`` heart."""
        while not self._stopping:
            try:
                free = self.concurrency - len(self._inflight)
                worth_it = free >= max(1, self.concurrency // 4) or not self._inflight
                # Rows a reply waits behind need not wait for room: they go ahead of the
                # bulk already in flight (TokenBucket takes them first).
                rows = await self.claim(free if worth_it else 0,
                                        replying=max(free, 0) + REPLY_RESERVE)
            except Exception as exc:
                self.failed_rounds += 1
                if until_idle:
                    raise
                delay = backoff_delay(self.failed_rounds, first=self.loop_backoff,
                                      cap=self.loop_max_backoff)
                loop_failed("sender", exc, self.failed_rounds, delay)
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), delay)
                continue
            if self.failed_rounds:
                log.info("sender loop: working again after %d failed rounds",
                         self.failed_rounds)
                self.failed_rounds = 0
            if self.heartbeats is not None:
                self.heartbeats.beat("sender")
            for row in rows:
                task = asyncio.create_task(self._send(row))
                self._inflight.add(task)
                task.add_done_callback(self._finished)
            if rows or (self._inflight and (until_idle or not worth_it)):
                if self._inflight:
                    self._wake.clear()
                    waker = asyncio.ensure_future(self._wake.wait())
                    await asyncio.wait([*self._inflight, waker], timeout=self.poll_interval,
                                       return_when=asyncio.FIRST_COMPLETED)
                    waker.cancel()
                continue
            if until_idle:
                return
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.poll_interval)

    def start(self) -> asyncio.Task[None]:
        self._runner = asyncio.create_task(self.run())
        return self._runner

    async def stop(self) -> None:
        """Stop claiming, and wait for the sends in flight to finish and be recorded."""
        self._stopping = True
        self._wake.set()
        if self._runner is not None:
            await self._runner
        if self._inflight:
            await asyncio.wait(self._inflight)

    # ---- claiming

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._inflight.discard(task)
        self._wake.set()
        if not task.cancelled() and task.exception() is not None:
            # Its type only: a database error's text carries SQL parameters. The row stays
            # 'sending' and its lease brings it back.
            log.error("outbox send task failed: %s", type(task.exception()).__name__)

    async def release_expired(self) -> int:
        """Rows left ``sending`` by a dead process go back to ``pending``."""
        async with self.store.sessionmaker() as session, session.begin():
            result = await session.execute(
                update(Outbox)
                .where(Outbox.status == "sending", Outbox.next_attempt_at <= utcnow())
                .values(status="pending")
                .execution_options(synchronize_session=False))
            return rowcount(result)

    async def claim(self, limit: int, *, user_id: int | None = None,
                    replying: int | None = None) -> list[Claimed]:
        """Claim up to ``limit`` due rows, each the oldest undelivered row of its chat:
        first of the chats with a reply waiting (up to ``replying`` of them, by default
        ``limit``; they count towards ``limit``), then any. ``user_id``: only theirs."""
        replying = limit if replying is None else replying
        if limit <= 0 and replying <= 0:
            return []
        if time.monotonic() - self._released_at >= self.release_every:
            self._released_at = time.monotonic()
            await self.release_expired()
        now = utcnow()
        params: dict[str, Any] = {"due_by": now, "lease_until": now + self.lease}
        claimed: list[Claimed] = []
        unreadable: dict[str, list[int]] = {}
        async with self.store.engine.begin() as connection:
            if user_id is not None:
                rounds = [(_CLAIM_OF_USER, limit, Priority.REPLY)]
                params["of_user"] = user_id
            else:
                rounds = [(_CLAIM_REPLYING, replying, Priority.REPLY),
                          (_CLAIM_ANY, limit, Priority.BULK)]
            for statement, at_most, priority in rounds:
                if priority is Priority.BULK:
                    at_most = min(at_most, limit - len(claimed))
                if at_most <= 0:
                    continue
                rows = (await connection.execute(statement, {**params, "at_most": at_most}))
                self._read_claimed(rows.all(), priority, claimed, unreadable)
            for error, ids in unreadable.items():
                log.error("outbox %s: cannot be read here (%s), marked failed",
                          ", ".join(map(str, ids)), error)
                await connection.execute(_UNREADABLE, {"ids": ids, "error": error})
        return sorted(claimed, key=lambda c: (c.priority, c.id))

    def _read_claimed(self, rows: Sequence[Row[Any]], priority: Priority,
                      claimed: list[Claimed], unreadable: dict[str, list[int]]) -> None:
        decode = Outbox.payload.type.process_result_value
        dialect = self.store.engine.dialect
        for r in rows:
            try:
                payload = decode(r.raw, dialect)
                if not isinstance(payload, dict):
                    raise TypeError("an outbox payload is a JSON object")
            except Exception as exc:  # another replica's key, a damaged row …
                unreadable.setdefault(type(exc).__name__, []).append(r.id)
                continue
            urgent = r.kind == OutboxKind.URGENT
            claimed.append(Claimed(
                r.id, r.user_id, r.chat_id, payload, r.attempts, r.created_at, r.parts_sent,
                urgent, Priority.FIRST if urgent else
                Priority.REPLY if r.kind == OutboxKind.REPLY else priority))

    # ---- sending

    async def _send(self, row: Claimed, *, prompt: bool = False) -> int:
        """Send one claimed row and record the result; 1 if Telegram accepted it. `prompt`:
        record it as sent without waiting for company (see RECORD_DELAY)."""
        keepers: list[asyncio.Task[None]] = []  # only for a send that takes a while
        timer = asyncio.get_running_loop().call_later(
            self.lease.total_seconds() / 3,
            lambda: keepers.append(asyncio.ensure_future(self._keep_leased(row.id))))
        try:
            await self._deliver_through_429(row)
        except RetryAfter as exc:
            record_send("429")
            await self._retry(row, _retry_seconds(exc), count_attempt=False, error="RetryAfter")
        except Forbidden as exc:
            record_send("403")
            log.info("outbox %s: chat %s blocked the bot", row.id, row.chat_id)
            await blocked_the_bot(self.store, user_id=row.user_id, chat_id=row.chat_id,
                                  outbox_id=row.id, error=_describe(exc))
        except BadRequest as exc:
            record_send("error")
            log.error("outbox %s: rejected by Telegram: %s", row.id, _describe(exc))
            await self._fail(row, _describe(exc))
        except (NetworkError, TelegramError) as exc:  # 5xx, timeouts, connection errors
            record_send("error")
            await self._after_error(row, _describe(exc))
        else:
            record_send("ok")
            await self._mark_sent(row, prompt=prompt)
            return 1
        finally:
            timer.cancel()
            for keeper in keepers:
                keeper.cancel()
        return 0

    async def _keep_leased(self, row_id: int) -> None:
        """While a send waits (a long 429, a slow pace), renew its claim's lease so no
        other sender takes the row over and sends it a second time."""
        every = self.lease.total_seconds() / 3
        while True:
            try:
                async with self.store.engine.begin() as connection:
                    await connection.execute(_RENEW_LEASE, {
                        "row_id": row_id, "lease_until": utcnow() + self.lease})
            except Exception as exc:
                log.warning("outbox %s: lease not renewed (%s)", row_id, type(exc).__name__)
            await asyncio.sleep(every)

    async def _deliver_through_429(self, row: Claimed) -> None:
        """On a 429 every send waits ``retry_after``; then this row goes first."""
        retry = False
        for _ in range(MAX_INLINE_RETRY_AFTER):
            try:
                await self._deliver(row, retry=retry)
                return
            except RetryAfter as exc:
                seconds = _retry_seconds(exc)
                for bucket in (self.bucket, self.paid_bucket):
                    if bucket is not None:
                        bucket.pause(seconds)
                log.warning("outbox %s: 429, every send waits %.1fs", row.id, seconds)
                if seconds > self.lease.total_seconds() / 4:
                    raise
                retry = True
        await self._deliver(row, retry=True)

    async def _deliver(self, row: Claimed, *, retry: bool = False) -> None:
        payload = row.payload
        priority = Priority.FIRST if retry or row.urgent else row.priority
        paid = self.paid_bucket is not None and row.priority is Priority.BULK
        bucket = self.paid_bucket if paid and self.paid_bucket is not None else self.bucket
        if "copy" in payload:  # a client's note (a voice message, a photo …), passed on
            source = payload["copy"]
            assert isinstance(source, dict)
            if not row.urgent:
                await self.chats.wait(row.chat_id)
            await bucket.acquire(priority)
            self.chats.sent(row.chat_id)
            await self.bot.copy_message(row.chat_id, int(source["from_chat"]),
                                        int(source["message_id"]),
                                        allow_paid_broadcast=paid or None)
            return
        if "photo" in payload or "document" in payload:  # bytes, hex-encoded to stay JSON
            if not row.urgent:
                await self.chats.wait(row.chat_id)
            await bucket.acquire(priority)
            released = time.monotonic()
            self.chats.sent(row.chat_id)  # as it leaves: Telegram counts its arrival
            caption = str(payload.get("caption") or "")[:1024]
            try:
                if "photo" in payload:  # a chart
                    await self.bot.send_photo(
                        row.chat_id, bytes.fromhex(str(payload["photo"])), caption=caption,
                        allow_paid_broadcast=paid or None)
                else:  # a calendar file
                    await self.bot.send_document(
                        row.chat_id, bytes.fromhex(str(payload["document"])),
                        filename=str(payload.get("filename") or "file"), caption=caption,
                        allow_paid_broadcast=paid or None)
            finally:
                bucket.observe(time.monotonic() - released)
            return
        parts = split_text(str(payload.get("text", "")))
        markup = keyboard(payload.get("buttons") or ())
        for index in range(min(row.parts_sent, len(parts) - 1), len(parts)):
            if not row.urgent:
                await self.chats.wait(row.chat_id)
            await bucket.acquire(priority)
            released = time.monotonic()
            last = index == len(parts) - 1
            self.chats.sent(row.chat_id)  # as it leaves: Telegram counts its arrival
            # PTB's send_message parses Telegram's answer into a Message, which nothing
            # here reads: 10% of the bot's CPU under load. The same request, unparsed
            # (PTB's public raw call: the same errors, 429 with retry_after, 403 …).
            try:
                await self.bot.do_api_request("sendMessage", {
                    "chat_id": row.chat_id, "text": parts[index],
                    "reply_markup": markup if last else None,
                    "allow_paid_broadcast": paid or None})
            finally:
                # How long it took tells the budget how far apart sends may arrive.
                bucket.observe(time.monotonic() - released)
            if not last:  # a retry (429, 5xx, a restart) resumes at the next part
                row.parts_sent = index + 1
                await self._write(_RECORD_PARTS, {"row_id": row.id, "parts": row.parts_sent})

    async def _after_error(self, row: Claimed, error: str) -> None:
        age = utcnow() - (row.created_at or utcnow())
        if age >= self.give_up_after or (self.max_attempts is not None
                                         and row.attempts >= self.max_attempts):
            log.error("outbox %s: giving up after %d attempts over %ds: %s", row.id,
                      row.attempts, age.total_seconds(), error)
            await self._fail(row, error)
            return
        delay = min(self.max_backoff, self.backoff * 2 ** (row.attempts - 1))
        log.warning("outbox %s: attempt %d failed (%s), retry in %.1fs", row.id, row.attempts,
                    error, delay)
        await self._retry(row, delay, count_attempt=True, error=error)

    async def _write(self, statement: Any, params: Any) -> None:
        """Run ``statement`` (with ``params``, a list of them for one execution each) on its
        own: one round trip on PostgreSQL (autocommit: no BEGIN, no COMMIT, no ping before).
        Through a database outage it is tried again with a back-off, for up to a third of
        the lease: what Telegram accepted must be recorded, or the row would go out again
        once its lease expired."""
        gave_up_at = time.monotonic() + self.lease.total_seconds() / 3
        failures = 0
        while True:
            try:
                with unpinged():
                    async with self._writer.begin() as connection:
                        await connection.execute(statement, params)
                return
            except Exception as exc:
                failures += 1
                wait = min(2.0, 0.1 * 2 ** (failures - 1))
                if not is_outage(exc) or time.monotonic() + wait > gave_up_at:
                    raise
                await asyncio.sleep(wait)

    async def _update(self, row_id: int, **values: Any) -> None:
        await self._write(update(_OUTBOX).where(_OUTBOX.c.id == row_id).values(**values), None)

    async def _mark_sent(self, row: Claimed, *, prompt: bool) -> None:
        """Record an accepted row; rows accepted meanwhile are committed together."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._accepted.append((row.id, done))
        if prompt:
            self._record_now.set()
        if self._recorder is None or self._recorder.done():
            self._recorder = asyncio.create_task(self._record_accepted())
        await done
        self.sent_count += 1

    async def _record_accepted(self) -> None:
        while self._accepted:
            with contextlib.suppress(TimeoutError):  # a few more may join this commit
                await asyncio.wait_for(self._record_now.wait(), RECORD_DELAY)
            self._record_now.clear()
            batch, self._accepted = self._accepted, []
            try:
                accepted_at = utcnow()
                await self._write(_RECORD_SENT, [{"row_id": row_id, "accepted_at": accepted_at}
                                                 for row_id, _ in batch])
            except Exception as exc:  # the rows stay 'sending'; their lease brings them back
                for _, done in batch:
                    if not done.done():  # (its send may have been cancelled meanwhile)
                        done.set_exception(exc)
                continue
            for _, done in batch:
                if not done.done():
                    done.set_result(None)

    async def _retry(self, row: Claimed, delay: float, *, count_attempt: bool,
                     error: str) -> None:
        attempts = row.attempts if count_attempt else row.attempts - 1
        await self._update(row.id, status="pending", attempts=attempts, last_error=error,
                           next_attempt_at=utcnow() + timedelta(seconds=delay))

    async def _requeue(self, row_ids: list[int]) -> None:
        """Claimed rows not sent after all: back to the queue, as if never claimed."""
        if not row_ids:
            return
        await self._write(
            update(Outbox).where(Outbox.id.in_(row_ids), Outbox.status == "sending")
            .values(status="pending", attempts=Outbox.attempts - 1, next_attempt_at=utcnow())
            .execution_options(synchronize_session=False), None)
        self.nudge()

    async def _fail(self, row: Claimed, error: str) -> None:
        await self._update(row.id, status="failed", last_error=error)


def _describe(exc: Exception) -> str:
    """The error for logs and last_error: its class and Telegram's message, never our text."""
    return f"{type(exc).__name__}: {exc}"[:500]
