"""The logs of a whole run, database failures included, hold nothing a user typed and no
secret (review findings H4, H5 and L3)."""

from __future__ import annotations

import io
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import text

from bot import observability as obs
from tests.e2e.conftest import RunningBot, bot_running, settings_for
from tests.e2e.test_webhook import free_port
from tests.fakes.bot_api import FakeBotApi

pytestmark = pytest.mark.fault  # database failures injected into a whole run

SECRET = "webhook-secret_QpZ81x"
KEY = Fernet.generate_key().decode()
COACH, CLIENT = 7101, 7102
# What the users type or are called: distinctive, so any trace of it in a log is found.
NAMES = ("Zoravka", "Quillona")
TYPED = (
    "Tell my wife about the debts qx7",
    "Because I hide the letters qx7",
    "I hid the betting app qx7",
    "Leave the job at the bank qx7",
)
ODD = ("²", "9" * 25, "³", "١٢")  # digits str.isdigit() accepts and int() refuses or overflows


@pytest.fixture
def log_stream() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    handler = obs.configure_logging(json=True, stream=stream)  # as `coachbot run` does
    yield stream
    logging.getLogger().removeHandler(handler)


def forged_button(fake: FakeBotApi, user_id: int, data: str, name: str) -> None:
    """A callback query with any data, as a modified client can send."""
    sender = {"id": user_id, "is_bot": False, "first_name": name, "language_code": "en"}
    fake.send_raw({"callback_query": {
        "id": str(time.monotonic_ns()), "chat_instance": "1", "data": data, "from": sender,
        "message": {"message_id": 1, "date": int(time.time()), "text": "old",
                    "chat": {"id": user_id, "type": "private"},
                    "from": {"id": 1, "is_bot": True, "first_name": "bot"}}}})


async def fail_answers(bot: RunningBot, failing: bool) -> None:
    """Make every INSERT into answers fail, as a full disk or a dropped connection would."""
    async with bot.store.engine.begin() as connection:
        if failing:
            await connection.execute(text(
                "CREATE TRIGGER full_disk BEFORE INSERT ON answers BEGIN "
                "SELECT RAISE(ABORT, 'simulated: database or disk is full'); END"))
        else:
            await connection.execute(text("DROP TRIGGER full_disk"))


@pytest.mark.parametrize("key", [None, KEY], ids=["no key", "key"])
async def test_a_run_with_failures_logs_no_typed_text_and_no_secret(
        fake_bot_api: FakeBotApi, tmp_path: Path, log_stream: io.StringIO,
        key: str | None) -> None:
    port = free_port()
    settings = settings_for(fake_bot_api, tmp_path, webhook_url=f"http://127.0.0.1:{port}/t",
                            webhook_secret=SECRET, encryption_key=key,
                            admin_ids=frozenset({COACH}))
    async with bot_running(fake_bot_api, settings, listen=("127.0.0.1", port)) as bot:
        coach = bot.user(COACH, first_name=NAMES[0])
        client = bot.user(CLIENT, first_name=NAMES[1])
        await coach.send("/makecoach")
        await client.send("/start")
        await client.press("Yes")
        await client.press("Yes")
        await client.press("English")
        await client.send("Rome")
        await client.send("8:00")
        await client.press("Every day")
        await client.send(TYPED[3])
        # A statement fails while the client's words are its parameters.
        await fail_answers(bot, True)
        client.fake.send_text(CLIENT, TYPED[0], first_name=NAMES[1])
        await bot.idle(CLIENT)
        client.fake.send_text(CLIENT, TYPED[1], first_name=NAMES[1])
        await bot.idle(CLIENT)
        await fail_answers(bot, False)
        await client.send("/cancel")
        await client.send("/goal")
        await client.send(TYPED[2])
        # Odd numbers and forged buttons, from a coach and from a client.
        seen = len(coach.messages), len(client.messages)
        for odd in ODD:
            for who in (coach, client):
                await who.send(f"/progress {odd}")
            await coach.send(f"/makecoach {odd}")
            for data in (f"unlink:{odd}", f"assign:{odd}", f"client:{odd}",
                         f"assign:{CLIENT}:x{odd}", f"exercise:{odd}"):
                forged_button(bot.fake, CLIENT, data, NAMES[1])
                await bot.idle(CLIENT)
    logs = log_stream.getvalue()
    assert "update" in logs and "failed" in logs  # the failures were logged, as ids and kinds
    leaks: dict[str, Any] = {}
    for needle in (*TYPED, *NAMES, *ODD, "qx7", bot.fake.token, bot.fake.token.split(":")[1],
                   SECRET, KEY):
        if needle in logs:
            leaks[needle] = [line[:900] for line in logs.splitlines() if needle in line][:2]
    assert not leaks, leaks
    # Every odd input got a polite answer, not the apology for an internal error.
    sorry = "Sorry, something went wrong on my side"
    answers = [m.text or "" for m in coach.messages[seen[0]:] + client.messages[seen[1]:]]
    assert len(answers) >= 8 * len(ODD)
    assert not [t for t in answers if sorry in t], answers
