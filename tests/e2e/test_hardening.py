"""Over real HTTP, what only concurrency shows: a user flooding the bot does not starve the
others. (Fuzzed updates and injection attempts: tests/handlers/test_hardening.py.)"""

from __future__ import annotations

import time

from sqlalchemy import func, select

from bot.dialogue import load_dialogues
from bot.engine import ConversationState
from bot.store import ProcessedUpdate
from tests.e2e.conftest import REPO, RunningBot
from tests.flows import assert_consistent

DIALOGUES = load_dialogues(REPO / "dialogues")


async def test_a_flood_from_one_user_does_not_starve_others(running_bot: RunningBot) -> None:
    fake = running_bot.fake
    flooder, other = running_bot.user(303), running_bot.user(304)
    await running_bot.agree(303, 304)
    await flooder.send("/goal")
    for index in range(1000):
        fake.send_text(303, f"flood {index}")
    started = time.monotonic()
    fake.send_text(304, "/help", first_name=other.first_name)
    replies = await fake.wait_for_messages(304, 1, timeout=10)  # not idle: the flood goes on
    waited = time.monotonic() - started
    assert replies[0].text is not None and "/checkin" in replies[0].text
    assert waited < 10, f"another user waited {waited:.1f} s behind the flood"
    await running_bot.idle(303, timeout=120)  # every flooded message is handled, once
    async with running_bot.store.sessionmaker() as session:
        handled = await session.scalar(select(func.count()).where(
            ProcessedUpdate.user_id == 303))
    assert handled == 1001
    exported = await running_bot.store.export_user(303)
    assert_consistent(ConversationState.from_dict(exported["conversations"][0]["state"]))
    texts_saved = [a["value"] for a in exported["answers"]]
    assert texts_saved[0] == "flood 0" and len(set(texts_saved)) == len(texts_saved)
