"""Every button the bot makes fits Telegram's 64 bytes of callback data (review L10)."""

from __future__ import annotations

from pathlib import Path

from bot.dialogue import load_dialogues
from bot.dialogue.loader import MAX_DIALOGUE_ID
from bot.telegram.coach import HOURS, SCHEDULES
from bot.telegram.handlers import exercises_reply

REPO = Path(__file__).parents[2]
LONGEST_TELEGRAM_ID = str(-(2**52))  # ids fit in 52 bits; chats may be negative


def test_the_longest_button_data_fits() -> None:
    longest_id = "x" * MAX_DIALOGUE_ID
    schedule = max(SCHEDULES, key=len)
    hour = max(HOURS, key=len)
    for data in (f"exercise:{longest_id}", f"unlink:{LONGEST_TELEGRAM_ID}",
                 f"client:{LONGEST_TELEGRAM_ID}",
                 f"assign:{LONGEST_TELEGRAM_ID}:{longest_id}:{schedule}:{hour}"):
        assert len(data.encode()) <= 64, data


def test_the_shipped_exercises_make_valid_buttons() -> None:
    reply = exercises_reply(load_dialogues(REPO / "dialogues"), "en")
    assert reply.buttons and all(len(b.data.encode()) <= 64 for b in reply.buttons)
