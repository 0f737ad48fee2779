"""Pacing sends within Telegram's limits: the bot's budget and each chat's pace.

Telegram allows a bot about 30 messages a second in all, whatever the number of processes,
and a chat about one a second. The bot's budget (``rate`` messages/s, the bot's total) is a
grid of release times ``1/rate`` apart:

- :class:`LocalBudget`: the grid lives in this process (SQLite: one replica).
- :class:`SharedBudget`: the grid lives in one row of the database every replica uses
  (PostgreSQL). A replica leases a small slice of it at a time (a few release times, a
  quarter of a second's worth: one round trip per slice, never per message); slices of
  different replicas never share a release time, so together they never exceed ``rate``. A
  replica that dies holds at most the slice it leased last: its share is back within a
  quarter of a second, and an idle replica leases nothing.

:class:`TokenBucket` hands the release times to the sends waiting in this process, best
:class:`Priority` first (urgent rows and retries after a 429, then replies to a client's own
message, then scheduled bulk), first come first served within a priority.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import time
from collections import deque
from datetime import datetime, timedelta
from enum import IntEnum
from typing import Any, Protocol

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.loops import backoff_delay

log = logging.getLogger(__name__)

Clock = Any  # () -> float, monotonic seconds


class Priority(IntEnum):
    """Which waiting send goes first (lower first)."""

    FIRST = 0  # an urgent row, or a send retried after a 429
    REPLY = 1  # a reply to a client's own message (or a row its chat's reply waits behind)
    BULK = 2  # scheduled first messages: check-ins, exercises, digests


class Budget(Protocol):
    """Where the bot's release times come from."""

    interval: float

    async def next_release(self, wanted: int) -> float:
        """The next release time (monotonic) this process may use; ``wanted``: how many
        sends are waiting here (a hint for how much to lease)."""

    def take(self, now: float) -> None:
        """The release returned last was used at ``now``."""

    def pause(self, seconds: float) -> None:
        """Nothing goes out for ``seconds`` (Telegram answered 429)."""


class LocalBudget:
    """The grid in this process. Release times keep to it as long as a release is late by
    less than a quarter of the interval (so the event loop's timer lateness does not slow
    the rate down); after a longer delay (a stalled loop, a pause, an idle spell) it restarts
    from the late release instead of catching up, so a stall never turns into a burst: any
    second holds at most ``rate + 1`` releases."""

    LATE = 0.25  # of the interval: later than this restarts the grid

    def __init__(self, rate: float, clock: Clock = time.monotonic) -> None:
        self.interval = 1.0 / rate
        self._clock = clock
        self._next = -float("inf")
        self._paused_until = 0.0

    async def next_release(self, wanted: int) -> float:
        return max(self._next, self._paused_until)

    def take(self, now: float) -> None:
        on_grid = now - self._next < self.LATE * self.interval
        self._next = (self._next if on_grid else now) + self.interval

    def pause(self, seconds: float) -> None:
        self._paused_until = max(self._paused_until, self._clock() + seconds)


FREE_BUDGET, PAID_BUDGET = 1, 2  # ids of the budgets' rows: free sends, paid broadcasts
# One row per budget; ``next_slot`` is the first release time nobody has leased yet.
_LEASE = text("""
    INSERT INTO send_budget (id, next_slot) VALUES (:key, clock_timestamp() + :span)
    ON CONFLICT (id) DO UPDATE
        SET next_slot = greatest(send_budget.next_slot, clock_timestamp()) + :span
    RETURNING next_slot, clock_timestamp() AS db_now""")
_PAUSE = text("""
    INSERT INTO send_budget (id, next_slot) VALUES (:key, clock_timestamp() + :span)
    ON CONFLICT (id) DO UPDATE
        SET next_slot = greatest(send_budget.next_slot, clock_timestamp() + :span)""")


class SharedBudget:
    """The grid in the database (PostgreSQL), leased a slice at a time; see the module's
    docstring. A leased release time used later than ``LATE`` intervals is dropped (not
    used late: that could crowd the next replica's), and so is any before a pause."""

    LATE = 0.5  # of the interval
    SLICE = 0.25  # seconds of the budget leased at most at once

    def __init__(self, engine: AsyncEngine, rate: float, *, key: int = FREE_BUDGET,
                 clock: Clock = time.monotonic) -> None:
        self.engine = engine
        self.interval = 1.0 / rate
        self.key = key
        self._clock = clock
        self._slice = max(1, round(rate * self.SLICE))
        self._leased: deque[float] = deque()
        self._paused_until = 0.0
        self._failures = 0
        self.leases = 0  # round trips, for tests and benchmarks
        self.dropped = 0  # leased release times left unused (too late, or paused)

    async def next_release(self, wanted: int) -> float:
        while True:
            now = self._clock()
            late = now - self.LATE * self.interval
            while self._leased and (self._leased[0] < late
                                    or self._leased[0] < self._paused_until):
                self._leased.popleft()
                self.dropped += 1
            if self._leased:
                return self._leased[0]
            if now < self._paused_until:  # no lease the pause would waste
                await asyncio.sleep(self._paused_until - now)
                continue
            try:
                await self._lease(min(max(wanted, 1), self._slice))
                self._failures = 0
            except Exception as exc:  # the database away: nothing goes out meanwhile
                self._failures += 1
                delay = backoff_delay(self._failures, first=0.2, cap=5.0)
                log.warning("send budget: no lease (%s), trying again in %.1fs",
                            type(exc).__name__, delay)
                await asyncio.sleep(delay)

    async def _lease(self, count: int) -> None:
        span = timedelta(seconds=count * self.interval)
        async with self.engine.begin() as connection:
            row = (await connection.execute(_LEASE, {"key": self.key, "span": span})).one()
        # In this process's clock: the database's clock never meets another replica's.
        now = self._clock()
        next_slot: datetime = row.next_slot
        first = now + ((next_slot - span) - row.db_now).total_seconds()
        self._leased.extend(first + i * self.interval for i in range(count))
        self.leases += 1

    def take(self, now: float) -> None:
        if self._leased:
            self._leased.popleft()

    def pause(self, seconds: float) -> None:
        self._paused_until = max(self._paused_until, self._clock() + seconds)
        task = asyncio.ensure_future(self._share_pause(seconds))
        task.add_done_callback(lambda done: done.cancelled() or done.exception())

    async def _share_pause(self, seconds: float) -> None:
        """Every replica waits too: the grid starts again after the pause."""
        async with self.engine.begin() as connection:
            await connection.execute(_PAUSE, {"key": self.key,
                                              "span": timedelta(seconds=seconds)})


class TokenBucket:
    """Paces this process's sends by a :class:`Budget` (by default ``rate`` per second, in
    process); :meth:`pause` stops every send.

    Senders take turns, best :class:`Priority` first, first come first served within one:
    one at a time waits for its release time, then hands the turn on. A better send that
    arrives meanwhile takes the turn (and the release time) over.
    """

    def __init__(self, rate: float, clock: Clock = time.monotonic, *,
                 budget: Budget | None = None) -> None:
        self.budget: Budget = budget or LocalBudget(rate, clock)
        self.interval = self.budget.interval
        self._clock = clock
        self._busy = False  # a sender holds the turn (or was just handed it)
        self._holder = Priority.BULK
        self._waiters: list[tuple[Priority, int, asyncio.Future[None]]] = []  # a heap
        self._order = itertools.count()
        self._nap: asyncio.Future[None] | None = None  # the holder's wait for its release

    def pause(self, seconds: float) -> None:
        self.budget.pause(seconds)

    async def acquire(self, priority: Priority = Priority.BULK) -> None:
        place = next(self._order)
        if self._busy:
            await self._wait_turn(priority, place)
        self._busy = holding = True
        self._holder = priority
        try:
            while True:
                release = await self.budget.next_release(len(self._waiters) + 1)
                now = self._clock()
                if release <= now:
                    break
                if self._waiters and self._waiters[0][0] < priority:
                    holding = False  # a better send goes first, then us
                    self._hand_on()
                    await self._wait_turn(priority, place)
                    holding = True
                    self._holder = priority
                    continue
                await self._sleep(release - now)
            self.budget.take(now)
        finally:
            if holding:
                self._hand_on()

    async def _sleep(self, seconds: float) -> None:
        """Sleep, unless a better send arrives meanwhile."""
        loop = asyncio.get_running_loop()
        self._nap = nap = loop.create_future()
        timer = loop.call_later(seconds, _wake, nap)
        try:
            await nap
        finally:
            timer.cancel()
            self._nap = None

    async def _wait_turn(self, priority: Priority, place: int) -> None:
        entry = (priority, place, asyncio.get_running_loop().create_future())
        heapq.heappush(self._waiters, entry)
        if priority < self._holder and self._nap is not None:
            _wake(self._nap)  # the holder looks again: we may go first
        turn = entry[2]
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self._hand_on()  # we had been handed the turn: pass it on
            elif entry in self._waiters:  # (a hand-on may have dropped it already)
                self._waiters.remove(entry)
                heapq.heapify(self._waiters)
            raise

    def _hand_on(self) -> None:
        while self._waiters:
            _, _, turn = heapq.heappop(self._waiters)
            if not turn.done():
                turn.set_result(None)  # stays busy: the turn is theirs
                return
        self._busy = False


def _wake(nap: asyncio.Future[None]) -> None:
    if not nap.done():
        nap.set_result(None)


class ChatPacer:
    """About one message per ``interval`` seconds to each chat (in this process), with a
    small burst so that the two or three replies of one turn arrive together; over any
    longer stretch a chat still gets no more than one message per interval."""

    def __init__(self, interval: float = 1.0, clock: Clock = time.monotonic,
                 burst: int = 3) -> None:
        self.interval = interval
        self.burst = burst
        self._clock = clock
        self._tokens: dict[int, tuple[float, float]] = {}  # chat -> (tokens, as of when)

    def _available(self, chat_id: int, now: float) -> float:
        tokens, since = self._tokens.get(chat_id, (float(self.burst), now))
        if self.interval <= 0:
            return float(self.burst)
        return min(float(self.burst), tokens + (now - since) / self.interval)

    def ready(self, chat_id: int) -> bool:
        """Whether a message to this chat can go out now, without waiting."""
        return self._available(chat_id, self._clock()) >= 1

    async def wait(self, chat_id: int) -> None:
        available = self._available(chat_id, self._clock())
        if available < 1:
            await asyncio.sleep((1 - available) * self.interval)

    def sent(self, chat_id: int) -> None:
        now = self._clock()
        self._tokens[chat_id] = (max(0.0, self._available(chat_id, now) - 1), now)
        if len(self._tokens) > 50_000:  # forget chats whose burst is full again
            self._tokens = {c: v for c, v in self._tokens.items()
                            if self._available(c, now) < self.burst}
