"""The budget's arithmetic, as pure functions over a fake clock: how far apart release
times are for a spread of arrival times, and how the spread is derived from sends."""

from __future__ import annotations

import random

import pytest

from bot.telegram.pacing import LocalBudget, Spread, release_interval
from tests.telegram.test_sender import busiest_second


def test_release_times_leave_room_for_the_spread() -> None:
    assert release_interval(28, 0.0) == pytest.approx(1 / 28)
    assert release_interval(28, 0.05) == pytest.approx(1.05 / 28)
    assert release_interval(28.9, 0.0) == pytest.approx(1 / 28)  # at most 28 in a second
    assert release_interval(0.5, 0.01) == pytest.approx(2.01)


def test_spread_is_derived_from_the_sends_times_within_its_bounds() -> None:
    spread = Spread(initial=0.02, floor=0.002, cap=0.1)
    for _ in range(Spread.MIN_SAMPLES - 1):
        spread.observe(0.001)
    assert spread.value == 0.02  # too few sends measured yet
    for _ in range(300):
        spread.observe(0.001)
    assert spread.value == 0.002  # the floor: equal times
    for i in range(300):
        spread.observe(0.001 + 0.03 * (i % 10 == 0))  # one send in ten takes 30 ms more
    assert spread.value == pytest.approx(0.03)
    for _ in range(300):
        spread.observe(5.0 if random.random() < 0.5 else 0.001)  # a network in trouble
    assert spread.value == 0.1  # the cap: the budget keeps most of its rate


def test_late_releases_never_crowd_a_window_of_arrivals() -> None:
    """Sends leave up to ``late`` after their release and arrive up to the spread after
    that: no window of one second of arrivals holds more than the rate."""
    clock = [0.0]
    budget = LocalBudget(28, clock=lambda: clock[0])
    rng = random.Random(7)
    arrivals: list[float] = []
    for _ in range(2000):
        budget.observe(0.001 + rng.uniform(0, 0.02))  # what the sends took: 1 to 21 ms
    spread = budget.spread.value
    for _ in range(3000):
        release = budget._next
        # Mostly on time, often a little late (the loop's timers), now and then a stall.
        lateness = 0.2 if rng.random() < 0.005 else rng.uniform(0, budget.late)
        clock[0] = max(clock[0], release) + lateness
        budget.take(clock[0])
        arrivals.append(clock[0] + rng.uniform(0, spread))
    arrivals.sort()
    assert busiest_second(arrivals) <= 28
    steady = budget.interval
    assert 28 * 0.97 <= 1 / steady <= 28
