"""The benchmark's second peer (bench/baseline/aiogram_peer.py: aiogram 3 + aiogram-dialog,
Redis storage) holds goal setting against the fake Bot API and stores every answer in its
database. That its transcript is the plain python-telegram-bot peer's, message for message,
`python -m bench bench.messages` checks in every run."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
import yaml

from bench.baseline import goal
from bench.baseline.goal import CLOSING, SCALE_HINT, intro
from bench.baseline.records import REDIS_URL, forget, redis_down, stored
from bench.load import (
    ANSWERS_PER_CONVERSATION,
    MESSAGES_PER_CONVERSATION,
    REPO,
    BotProcess,
    LoadFake,
    Wave,
    converse,
    quiet,
    transcript,
)

USER = 1_000_000


async def test_the_aiogram_peer_holds_goal_setting_and_stores_every_answer(
        tmp_path: Path) -> None:
    reason = await redis_down()
    if reason is not None:
        pytest.skip(reason)
    database = f"sqlite+aiosqlite:///{tmp_path}/peer.db"
    prefix = f"coachbot-test-{uuid.uuid4().hex}"
    try:
        async with LoadFake() as fake:
            bot = BotProcess("bench.baseline.aiogram_peer", fake.url, database, REDIS_URL,
                             prefix)
            await bot.start(fake)
            try:
                wave = Wave(1)
                # One user all the way (converse checks each reply's count), one halfway.
                assert await converse(fake, USER, wave, timeout=5), wave.failures
                assert await converse(fake, USER + 1, wave, steps=3, timeout=5), wave.failures
                await quiet(fake)
            finally:
                assert await bot.stop() == 0
            sent = transcript(fake, USER)
        assert await stored(database, range(USER, USER + 1)) == (1, ANSWERS_PER_CONVERSATION)
        assert await stored(database, range(USER + 1, USER + 2)) == (0, 2)
    finally:
        in_redis = await forget(REDIS_URL, prefix)
    assert in_redis > 0  # the second user's place in the dialogue
    assert len(sent) == MESSAGES_PER_CONVERSATION
    assert sent[0][0] == intro("Ana")
    assert sent[5] == (SCALE_HINT, [str(n) for n in range(1, 11)])  # after "eleven"
    assert sent[-2][0] is not None and sent[-2][0].startswith("Here is your plan")
    assert sent[-1] == (CLOSING, [])


def test_both_peers_ask_what_goal_setting_yaml_asks() -> None:
    """The peers' questions are goal_setting.yaml's, placeholders aside: when a question is
    reworded there, the peers follow (else the benchmark's transcripts stop matching)."""
    steps = yaml.safe_load((REPO / "dialogues" / "goal_setting.yaml").read_text())["steps"]
    says = {re.sub(r"\{[^}]*\}", "{}", step["say"]) for step in steps.values()
            if "say" in step}
    asked = [value for name, value in vars(goal).items()
             if name.startswith("ASK_") or name == "CLOSING"] + [goal.intro("{}")]
    assert {re.sub(r"\{[^}]*\}", "{}", text) for text in asked} <= says
