"""Pacing sends within Telegram's limits: the bot's budget and each chat's pace.

Telegram allows a bot about 30 messages a second in all, whatever the number of processes,
and a chat about one a second. The bot's budget (``rate``, the bot's total) means: no window
of one second at Telegram holds more than ``rate`` sends (rounded down). The budget is a
grid of release times; a send leaves at its release time (or up to a quarter of ``1/rate``
later) and arrives some time after, and these delays vary, so that a window of one second at
Telegram may hold the sends released over ``1 + spread`` seconds. The grid is therefore
``(1 + spread) / rate`` apart, with the spread derived from what this process measures
(:class:`Spread`: how much its sends' times vary, the allowed lateness, and on PostgreSQL the
lease's round trip), not guessed: with sends taking 1 to 20 ms, 28/s keeps about 27.2/s.

- :class:`LocalBudget`: the grid lives in this process (SQLite: one replica).
- :class:`SharedBudget`: the grid lives in one row of the database every replica uses
  (PostgreSQL), over a connection of its own. A replica leases a small slice of it at a
  time (a few release times, a quarter of a second's worth: one round trip per slice,
  never per message); slices of different replicas never share a release time, so together
  they never exceed ``rate``. A replica that dies holds at most the slice it leased last:
  its share is back within a quarter of a second, and an idle replica leases nothing.

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
from datetime import timedelta
from enum import IntEnum
from typing import Any, Protocol

from sqlalchemy import Float, bindparam, text
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

    spread: Spread  # how much this process's sends' arrival times vary

    @property
    def interval(self) -> float:
        """The time between two release times now."""

    async def next_release(self, wanted: int) -> float:
        """The next release time (monotonic) this process may use; ``wanted``: how many
        sends are waiting here (a hint for how much to lease)."""

    def take(self, now: float) -> None:
        """The release returned last was used at ``now``."""

    def pause(self, seconds: float) -> None:
        """Nothing goes out for ``seconds`` (Telegram answered 429)."""

    def observe(self, seconds: float) -> None:
        """A send took ``seconds`` from its release to Telegram's answer."""


#: The most spread a budget allows for, in seconds: beyond it the bot keeps ``rate / 1.1``
#: and Telegram may answer 429 (which pauses every send) rather than the bot slowing down
#: without end while a network or a database is in trouble.
MAX_SPREAD = 0.1


class Spread:
    """How much the time from a release to the send's arrival at Telegram varies: what a
    one-second window at Telegram may gain over the same window of release times.

    A send arrives somewhere between its release and the answer to it; how long the
    fastest recent send took bounds the part every send shares, so the spread is the
    99th percentile of recent sends' times (release to answer) less the fastest. Until
    ``MIN_SAMPLES`` sends were measured it is ``initial``; it is never below ``floor``
    nor above ``cap`` (a stalled process or network would otherwise stop the bot)."""

    SAMPLES = 256
    MIN_SAMPLES = 16

    def __init__(self, *, initial: float = 0.02, floor: float = 0.002,
                 cap: float = MAX_SPREAD) -> None:
        self.initial, self.floor, self.cap = initial, floor, cap
        self._samples: deque[float] = deque(maxlen=self.SAMPLES)
        self._value = initial
        self._fresh = 0  # samples since the value was last worked out

    def observe(self, seconds: float) -> None:
        self._samples.append(seconds)
        self._fresh += 1
        if len(self._samples) >= self.MIN_SAMPLES and self._fresh >= 16:
            self._fresh = 0
            ordered = sorted(self._samples)
            high = ordered[int(0.99 * (len(ordered) - 1))]
            self._value = min(self.cap, max(self.floor, high - ordered[0]))

    @property
    def value(self) -> float:
        return self._value


def interval_terms(rate: float) -> tuple[float, int]:
    """``(a, b)`` such that the interval for a spread is ``(a + spread) / b``."""
    return (1.0 / rate, 1) if rate < 1 else (1.0, int(rate))


def release_interval(rate: float, spread: float) -> float:
    """The time between release times so that no window of one second at Telegram holds
    more than ``rate`` sends (rounded down), although each arrives up to ``spread`` later
    than another released the same way: ``n`` releases fit in ``1 + spread`` seconds."""
    a, b = interval_terms(rate)
    return (a + spread) / b


class LocalBudget:
    """The grid in this process. Release times keep to it as long as a release is late by
    at most ``LATE`` of the nominal interval (so the event loop's timer lateness does not
    slow the rate down; that lateness is part of the spread the grid allows for); after a
    longer delay (a stalled loop, a pause, an idle spell) it moves on from the late release
    instead of catching up, so a stall never turns into a burst."""

    LATE = 0.25  # of the nominal interval 1/rate: later than this restarts the grid

    def __init__(self, rate: float, clock: Clock = time.monotonic) -> None:
        self.rate = rate
        self.late = self.LATE / rate
        self.spread = Spread()
        self._clock = clock
        self._next = -float("inf")
        self._paused_until = 0.0

    @property
    def interval(self) -> float:
        return release_interval(self.rate, min(MAX_SPREAD, self.late + self.spread.value))

    async def next_release(self, wanted: int) -> float:
        return max(self._next, self._paused_until)

    def take(self, now: float) -> None:
        # A send later than ``late`` counts as if released ``late`` before it left: the
        # grid moves on from there (no catching up), and every send stays within ``late``
        # of its release time.
        self._next = max(self._next, now - self.late) + self.interval

    def pause(self, seconds: float) -> None:
        self._paused_until = max(self._paused_until, self._clock() + seconds)

    def observe(self, seconds: float) -> None:
        self.spread.observe(seconds)


FREE_BUDGET, PAID_BUDGET = 1, 2  # ids of the budgets' rows: free sends, paid broadcasts
# One row per budget; ``next_slot`` is the first release time nobody has leased yet;
# ``spread``: what the release times are spaced for, the largest spread any replica
# reported in the last ``:keep`` (a replica whose sends vary more must not have its late
# arrivals crowd the release times of one whose vary less). A slice of ``n`` release times
# spans ``:fixed + :per_spread * spread`` seconds (:func:`release_interval`); ``EXCLUDED``
# holds what this replica asked for. A slice after an idle spell starts ``:lead`` seconds
# from now, the time its answer may take to come back: one starting "now" was often over
# by then, and its release times were dropped unused.
_KEPT = """(EXCLUDED.spread >= budget.spread OR budget.spread_at IS NULL
            OR budget.spread_at < clock_timestamp() - CAST(:keep AS interval))"""
_LEASE = text(f"""
    INSERT INTO send_budget AS budget (id, next_slot, spread, spread_at)
    VALUES (:key, clock_timestamp()
                  + make_interval(secs => :lead + :fixed + :per_spread * :spread),
            :spread, clock_timestamp())
    ON CONFLICT (id) DO UPDATE SET
        spread = CASE WHEN {_KEPT} THEN EXCLUDED.spread ELSE budget.spread END,
        spread_at = CASE WHEN {_KEPT} THEN EXCLUDED.spread_at ELSE budget.spread_at END,
        next_slot = greatest(budget.next_slot,
                             clock_timestamp() + make_interval(secs => :lead)) + make_interval(
            secs => :fixed + :per_spread
                    * CASE WHEN {_KEPT} THEN EXCLUDED.spread ELSE budget.spread END)
    RETURNING next_slot, spread, clock_timestamp() AS db_now""").bindparams(
    bindparam("fixed", type_=Float), bindparam("per_spread", type_=Float),
    bindparam("spread", type_=Float), bindparam("lead", type_=Float))
_CLOCK = text("SELECT clock_timestamp()")
_PAUSE = text("""
    INSERT INTO send_budget (id, next_slot) VALUES (:key, clock_timestamp() + :span)
    ON CONFLICT (id) DO UPDATE
        SET next_slot = greatest(send_budget.next_slot, clock_timestamp() + :span)""")


class SharedBudget:
    """The grid in the database (PostgreSQL), leased a slice at a time; see the module's
    docstring. A leased release time is used at most ``LATE`` of the nominal interval
    after it, or counts as that much earlier than it was used and moves the slice's later
    ones on (:meth:`take`); one past the slice's end, or before a pause, is dropped.

    A slice's release times are put on this process's clock as if the database had read
    its clock when the answer arrived: never early, and late by at most the round trip.
    That lateness, the ``LATE`` allowance and the :class:`Spread` of this replica's sends
    make up the spread its interval allows for; the slice it leases is as long as its
    release times take, so replicas that measure different spreads never crowd each
    other. ``engine``: a small engine of the budget's own (one connection), so that a
    busy pool never keeps the sends waiting."""

    LATE = 0.25  # of the nominal interval 1/rate
    SLICE = 0.25  # seconds of the budget leased at most at once
    TRIPS = 16  # lease round trips remembered (for the database's clock)

    def __init__(self, engine: AsyncEngine, rate: float, *, key: int = FREE_BUDGET,
                 clock: Clock = time.monotonic) -> None:
        self.engine = engine
        self.rate = rate
        self.late = self.LATE / rate
        self.key = key
        self.spread = Spread()
        self._clock = clock
        self._slice = max(1, round(rate * self.SLICE))
        # Leased release times, each with its slice's last one and its slice's interval.
        self._leased: deque[tuple[float, float, float]] = deque()
        self._leasing: asyncio.Future[None] | None = None
        self._next_slot = 0.0  # where this replica's last slice ended, database's clock
        self._follows_at = 0.0  # ... and where one right after it starts, this process's
        # Per lease: the database's clock less this process's, at least and at most (it
        # was read somewhere between asking and the answer).
        self._trips: deque[tuple[float, float]] = deque(maxlen=self.TRIPS)
        self._shared_spread = self.late + self.spread.value
        self._paused_until = 0.0
        self._failures = 0
        self.leases = 0  # round trips, for tests and benchmarks
        self.dropped = 0  # leased release times left unused (too late, or paused)

    # A replica's spread counts this long after it said so: longer than its slice is in use
    # (a busy replica leases again every quarter of a second and says it again).
    KEEP = timedelta(seconds=1)

    @property
    def own_spread(self) -> float:
        """This replica's: lateness allowed, the lease's round trip, its sends' spread."""
        return min(MAX_SPREAD, self.late + self._offset()[1] + self.spread.value)

    def _offset(self) -> tuple[float, float]:
        """The database's clock less this process's, as its lower bound, and how much
        larger it may be: the bounds of every recent lease hold at once, so the tightest
        round trips bound it (the way NTP does), not the slowest."""
        if not self._trips:
            return 0.0, 0.0
        low = max(low for low, _ in self._trips)
        high = min(high for _, high in self._trips)
        if high < low:  # a clock was set meanwhile: only the last lease counts
            low, high = self._trips[-1]
            self._trips.clear()
            self._trips.append((low, high))
        return low, high - low

    def _lead(self) -> float:
        """How far ahead of the database's clock a slice after an idle spell starts: the
        slowest of the recent lease round trips (the answer's way back is part of one)."""
        return min(MAX_SPREAD, max((high - low for low, high in self._trips), default=0.0))

    @property
    def interval(self) -> float:
        """The interval of the slice leased last (for the budget's shared spread)."""
        return release_interval(self.rate, self._shared_spread)

    async def next_release(self, wanted: int) -> float:
        while True:
            now = self._clock()
            while self._leased and (now - self.late > self._leased[0][1]  # its slice is over
                                    or self._leased[0][0] < self._paused_until):
                self._leased.popleft()
                self.dropped += 1
            # The next slice is asked for while the last release of this one waits, so that
            # it follows on without a gap when no other replica leased in between.
            if len(self._leased) <= 1 and self._leasing is None and now >= self._paused_until \
                    and wanted > len(self._leased):
                self._leasing = asyncio.ensure_future(
                    self._lease_or_wait(min(wanted - len(self._leased), self._slice)))
            if self._leased:
                return self._leased[0][0]
            if now < self._paused_until:  # no lease the pause would waste
                await asyncio.sleep(self._paused_until - now)
                continue
            if self._leasing is not None:
                await asyncio.wait({self._leasing})  # (a cancelled caller leaves it running)

    async def _lease_or_wait(self, count: int) -> None:
        try:
            await self._lease(count)
            self._failures = 0
        except Exception as exc:  # the database away: nothing goes out meanwhile
            self._failures += 1
            delay = backoff_delay(self._failures, first=0.2, cap=5.0)
            log.warning("send budget: no lease (%s), trying again in %.1fs",
                        type(exc).__name__, delay)
            await asyncio.sleep(delay)
        finally:
            self._leasing = None

    async def _lease(self, count: int) -> None:
        a, b = interval_terms(self.rate)
        async with self.engine.connect() as connection:
            # One statement, atomic by itself: no BEGIN and COMMIT round trips.
            connection = await connection.execution_options(isolation_level="AUTOCOMMIT")
            for _ in range(0 if self._trips else 3):  # the clocks first, before any slice
                asked = self._clock()
                db_now = (await connection.execute(_CLOCK)).scalar_one().timestamp()
                self._trips.append((db_now - self._clock(), db_now - asked))
            asked = self._clock()  # (after connecting: that is no part of the round trip)
            row = (await connection.execute(_LEASE, {
                "key": self.key, "fixed": count * a / b, "per_spread": count / b,
                "spread": self.own_spread, "keep": self.KEEP, "lead": self._lead()})).one()
            now = self._clock()
        # In this process's clock: the database's clock never meets another replica's. As
        # late as the clocks' offset allows, never early (the uncertainty is in the spread).
        db_now = row.db_now.timestamp()
        self._trips.append((db_now - now, db_now - asked))
        self._shared_spread = float(row.spread)
        interval = release_interval(self.rate, self._shared_spread)
        next_slot: float = row.next_slot.timestamp()
        start = next_slot - count * interval  # in the database's clock
        first = start - self._offset()[0]
        joined = abs(start - self._next_slot) < 1e-5
        if joined:
            # Right after this replica's last slice, nobody's in between: it goes on where
            # that one ended here. Placed by a newer reading of the clocks, it could start a
            # little before that (by up to the readings' difference), and a slice's release
            # time moved on to keep the interval would have been dropped at its end.
            first = max(first, self._follows_at)
        end = first + (count - 1) * interval
        if joined:
            # One slice, so that a late release there moves this one's on instead of being
            # dropped.
            self._leased = deque((release, end, step) for release, _, step in self._leased)
        self._next_slot = next_slot
        self._follows_at = end + interval
        self._leased.extend((first + i * interval, end, interval) for i in range(count))
        self.leases += 1

    def take(self, now: float) -> None:
        """Within its slice a release used late moves the slice's later ones on (as in
        :class:`LocalBudget`), never past the slice's last: those are dropped instead, so
        the next replica's slice is never crowded and a late release costs its lateness,
        not a release time each. Moved on, they keep the grid's own spacing (where slices
        joined, or the spread changed between them, it may differ from the last interval
        by a little): one used in time moves nothing."""
        if not self._leased:
            return
        was = self._leased.popleft()[0]
        previous = max(was, now - self.late)
        if previous == was:
            return
        kept: deque[tuple[float, float, float]] = deque()
        for release, end, interval in self._leased:
            moved = max(release, previous + min(interval, release - was))
            was = release
            if moved > end + 1e-6:  # (not a rounding error's worth later: on time)
                self.dropped += 1
                continue
            kept.append((moved, end, interval))
            previous = moved
        self._leased = kept

    def observe(self, seconds: float) -> None:
        self.spread.observe(seconds)

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
        self._clock = clock
        self._busy = False  # a sender holds the turn (or was just handed it)
        self._holder = Priority.BULK
        self._waiters: list[tuple[Priority, int, asyncio.Future[None]]] = []  # a heap
        self._order = itertools.count()
        self._nap: asyncio.Future[None] | None = None  # the holder's wait for its release

    def pause(self, seconds: float) -> None:
        self.budget.pause(seconds)

    def observe(self, seconds: float) -> None:
        """A send released here took ``seconds`` until Telegram answered."""
        self.budget.observe(seconds)

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
    longer stretch a chat still gets no more than one message per interval. Counted as
    they leave, so with the ``spread`` of arrival times added to the interval: one that
    arrives late must not bring the next too close to it at Telegram."""

    def __init__(self, interval: float = 1.0, clock: Clock = time.monotonic,
                 burst: int = 3, spread: Spread | None = None) -> None:
        self.interval = interval
        self.burst = burst
        self.spread = spread
        self._clock = clock
        self._tokens: dict[int, tuple[float, float]] = {}  # chat -> (tokens, as of when)

    @property
    def _refill(self) -> float:
        return self.interval + (self.spread.value if self.spread is not None else 0.0)

    def _available(self, chat_id: int, now: float) -> float:
        tokens, since = self._tokens.get(chat_id, (float(self.burst), now))
        if self.interval <= 0:
            return float(self.burst)
        return min(float(self.burst), tokens + (now - since) / self._refill)

    def ready(self, chat_id: int) -> bool:
        """Whether a message to this chat can go out now, without waiting."""
        return self._available(chat_id, self._clock()) >= 1

    async def wait(self, chat_id: int) -> None:
        available = self._available(chat_id, self._clock())
        if available < 1:
            await asyncio.sleep((1 - available) * self._refill)

    def sent(self, chat_id: int) -> None:
        now = self._clock()
        self._tokens[chat_id] = (max(0.0, self._available(chat_id, now) - 1), now)
        if len(self._tokens) > 50_000:  # forget chats whose burst is full again
            self._tokens = {c: v for c, v in self._tokens.items()
                            if self._available(c, now) < self.burst}
