"""`python -m bench.run_coachbot API_URL DATABASE_URL [--paced]`: the real `serve()` in its
own process, so the benchmark can measure its CPU time and resident memory.

Unpaced (the default) lifts the two send limits that exist for Telegram's sake, the global
token bucket (``send_rate``, 28/s by default) and one message per second per chat, because
they would measure Telegram's rate limits rather than the bot; the fake server has none,
and the baseline bot (the usual way) has none either. `--paced` keeps both as in production.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from pathlib import Path
from typing import Any

from bot.config import Settings
from bot.telegram import app
from bot.telegram.sender import Sender

REPO = Path(__file__).parents[1]
TOKEN = "123456:TEST-TOKEN"


def unpaced(*args: Any, **kwargs: Any) -> Sender:
    """The sender without the per-chat pace, and with the rate in this process alone:
    `wire` passes both (a partial's defaults would lose to them)."""
    return Sender(*args, **{**kwargs, "per_chat_interval": 0.0, "shared": False})


def main(argv: list[str]) -> None:
    api_url, database_url, *flags = argv
    paced = "--paced" in flags
    logging.basicConfig(level=logging.WARNING, format="coachbot %(levelname)s %(message)s")
    if not paced:
        app.Sender = unpaced  # type: ignore[misc]
    settings = Settings(telegram_token=TOKEN, telegram_api_base_url=api_url,
                        database_url=database_url, dialogues=REPO / "dialogues",
                        send_rate=28.0 if paced else 1_000_000.0,
                        encryption_key=os.environ.get("COACHBOT_ENCRYPTION_KEY"),
                        allow_plaintext=True)
    asyncio.run(app.serve(settings, own_process=True))  # SIGTERM stops it cleanly


if __name__ == "__main__":
    main(sys.argv[1:])
