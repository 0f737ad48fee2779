"""Background loops that never die quietly.

Each loop (the outbox sender, the scheduler tick, the coach digests) runs its rounds under
:func:`run_loop`: a round that raises anything is logged (the loop's name and the
exception's type, never its text, which may carry SQL parameters or a client's words),
counted in ``loop_errors_total`` and retried after a back-off that doubles up to a cap;
a round that completes beats the loop's heart (:class:`bot.observability.Heartbeats`),
which ``/healthz`` and the ``loop_last_round_timestamp_seconds`` gauge report.

:class:`Supervisor` runs the loops as tasks and starts again any that ends while it is not
stopping (a bug past the loop's own guard), so a replica never keeps serving updates with a
dead sender.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from bot.observability import LOOP_ERRORS, Heartbeats

log = logging.getLogger(__name__)

BACKOFF = 1.0  # seconds after the first failed round, doubling
MAX_BACKOFF = 30.0
RESTART_DELAY = 1.0  # before a loop that ended is started again


def backoff_delay(failures: int, *, first: float = BACKOFF, cap: float = MAX_BACKOFF) -> float:
    """The wait after ``failures`` failed rounds in a row (1, 2, 4 … up to ``cap``)."""
    return float(min(cap, first * 2 ** max(0, failures - 1)))


def loop_failed(loop: str, exc: BaseException, failures: int, delay: float) -> None:
    """Log and count a failed round: the exception's type only."""
    LOOP_ERRORS.labels(loop).inc()
    log.error("%s loop: round failed (%s, %d in a row); next try in %.1fs", loop,
              type(exc).__name__, failures, delay)


async def run_loop(name: str, round_: Callable[[], Awaitable[object]], *, interval: float,
                   stop: asyncio.Event, heartbeats: Heartbeats, backoff: float = BACKOFF,
                   max_backoff: float = MAX_BACKOFF) -> None:
    """Run ``round_`` every ``interval`` seconds until ``stop`` is set; survive anything."""
    failures = 0
    while not stop.is_set():
        try:
            await round_()
        except Exception as exc:
            failures += 1
            wait = backoff_delay(failures, first=backoff, cap=max_backoff)
            loop_failed(name, exc, failures, wait)
        else:
            if failures:
                log.info("%s loop: working again after %d failed rounds", name, failures)
            failures = 0
            heartbeats.beat(name)
            wait = interval
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), wait)


class Supervisor:
    """Runs named loops as tasks; one that ends before :meth:`stop` is started again."""

    def __init__(self, *, restart_delay: float = RESTART_DELAY) -> None:
        self.restart_delay = restart_delay
        self.restarts: dict[str, int] = {}
        self._factories: dict[str, Callable[[], Coroutine[Any, Any, None]]] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._stopping = False

    def start(self, name: str, factory: Callable[[], Coroutine[Any, Any, None]]) -> None:
        self._factories[name] = factory
        self._launch(name)

    def _launch(self, name: str) -> None:
        task = asyncio.create_task(self._factories[name](), name=f"coachbot-{name}")
        self._tasks[name] = task
        task.add_done_callback(lambda done: self._ended(name, done))

    def _ended(self, name: str, task: asyncio.Task[None]) -> None:
        if self._stopping or self._tasks.get(name) is not task:
            return
        error = "cancelled" if task.cancelled() else type(task.exception()).__name__
        log.error("%s loop ended unexpectedly (%s); starting it again", name, error)
        self.restarts[name] = self.restarts.get(name, 0) + 1
        asyncio.get_running_loop().call_later(self.restart_delay, self._relaunch, name)

    def _relaunch(self, name: str) -> None:
        if not self._stopping:
            self._launch(name)

    def running(self, name: str) -> bool:
        task = self._tasks.get(name)
        return task is not None and not task.done()

    def stopping(self) -> None:
        """From now on a loop that ends is not started again (the process is stopping)."""
        self._stopping = True

    async def stop(self, timeout: float = 30.0) -> None:
        """Wait for the loops to end (their stop events are set by the caller); any still
        running after ``timeout`` is cancelled."""
        self._stopping = True
        tasks = list(self._tasks.values())
        if not tasks:
            return
        _, late = await asyncio.wait(tasks, timeout=timeout)
        for task in late:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
