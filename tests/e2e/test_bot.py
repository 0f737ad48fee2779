"""`coachbot run` as an operator starts it: a missing or wrong token is one clear line.
(Conversations with the application: tests/handlers/test_bot.py.)"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from tests.e2e.conftest import REPO
from tests.fakes.bot_api import FakeBotApi


def test_a_missing_or_wrong_token_is_one_clear_line(tmp_path: Path) -> None:
    env = {**os.environ, "COACHBOT_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/x.db",
           "COACHBOT_DIALOGUES": str(REPO / "dialogues")}
    env.pop("TELEGRAM_BOT_TOKEN", None)
    missing = subprocess.run([sys.executable, "-m", "bot.cli", "run"], capture_output=True,
                             text=True, env=env, timeout=60)
    assert missing.returncode == 1
    assert missing.stderr.strip().splitlines() == [
        "coachbot: TELEGRAM_BOT_TOKEN is not set; to try the dialogues without Telegram, "
        "run `coachbot chat`"]


async def test_a_wrong_token_is_one_clear_line(fake_bot_api: FakeBotApi, tmp_path: Path) -> None:
    env = {**os.environ, "COACHBOT_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/x.db",
           "COACHBOT_DIALOGUES": str(REPO / "dialogues"),
           "TELEGRAM_API_BASE_URL": fake_bot_api.url, "TELEGRAM_BOT_TOKEN": "123:WRONG"}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", "run", env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    _, stderr = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode == 1
    assert stderr.decode().strip().splitlines()[-1] == (
        "coachbot: Telegram refused the bot token (TELEGRAM_BOT_TOKEN)")
    assert "Traceback" not in stderr.decode()
