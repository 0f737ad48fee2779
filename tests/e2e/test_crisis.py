"""The crisis path over real HTTP, where timing is what is tested: the help lines overtake a
flood of queued replies. (The rest of the crisis path: tests/handlers/test_crisis.py.)"""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.e2e.conftest import RunningBot
from tests.flows import URGENT, text_of


@pytest.mark.timed
@pytest.mark.usefixtures("fixed_detector")
async def test_help_overtakes_a_flood_and_what_was_queued_is_held_back(
    running_bot: RunningBot
) -> None:
    ana = running_bot.user(305)
    await ana.send("/start")
    await ana.press("Yes")
    await ana.press("Yes")
    for n in range(30):  # a burst: each reply would go out at one a second
        running_bot.fake.send_text(305, f"word {n}", first_name="Ana")
    started = time.monotonic()
    running_bot.fake.send_text(305, URGENT, first_name="Ana")
    while "pausing our coaching" not in text_of(ana.messages):
        assert time.monotonic() - started < 5, "the help lines waited behind the flood"
        await asyncio.sleep(0.05)
    helped_at = len(ana.messages)
    await running_bot.idle(305)  # every message of the flood handled, nothing left to send
    assert len(ana.messages) - helped_at <= 1  # at most one already in flight went after it
