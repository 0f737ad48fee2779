"""How `coachbot run` sets up the process it serves in."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from bot import cli
from bot.telegram import app


def test_coachbot_run_serves_in_a_process_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    given: dict[str, Any] = {}

    async def serve(settings: Any, **kwargs: Any) -> None:
        given.update(kwargs)

    monkeypatch.setattr(app, "serve", serve)
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "123456:TEST-TOKEN")
    monkeypatch.delenv("COACHBOT_METRICS_PORT", raising=False)
    assert cli.main(["run"]) == 0
    assert given["own_process"] is True


def test_a_started_server_stops_scanning_what_start_up_loaded() -> None:
    # In a fresh interpreter: the settings are the whole process's.
    probe = ("import gc; from bot.telegram.app import settle_garbage_collection as settle; "
             "settle(); print(gc.get_threshold()[0], gc.get_freeze_count() > 10_000)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["10000", "True"]


async def test_no_plain_text_on_postgresql_unless_allowed(caplog: pytest.LogCaptureFixture,
                                                          tmp_path: Any) -> None:
    """Production (PostgreSQL) refuses to start without an encryption key, unless told it
    may (COACHBOT_ALLOW_PLAINTEXT=1); SQLite starts with a warning (review M7)."""
    from bot.config import Settings

    postgres = Settings(telegram_token="1:x", database_url="postgresql+asyncpg://u@h/db",
                        dialogues=tmp_path / "none")
    with pytest.raises(app.StartupError, match="COACHBOT_ALLOW_PLAINTEXT=1"):
        await app.serve(postgres)
    # Allowed, or on SQLite, it goes on (here, to the next check: the dialogues).
    for settings in (Settings(**{**vars(postgres), "allow_plaintext": True}),
                     Settings(**{**vars(postgres), "database_url": "sqlite+aiosqlite:///x"})):
        with caplog.at_level("WARNING"), pytest.raises(app.StartupError, match="dialogues"):
            await app.serve(settings)
    assert caplog.text.count("stored in plain text") == 2


async def test_a_replica_whose_keys_share_none_with_the_data_does_not_start(
        tmp_path: Any) -> None:
    """Key fingerprints: a replica started with another key than the others' is refused in one
    line that names the fingerprints, never the keys."""
    from pathlib import Path

    from cryptography.fernet import Fernet

    from bot.config import Settings
    from bot.store import Store

    url = f"sqlite+aiosqlite:///{tmp_path}/bot.db"
    theirs, mine = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    store = Store(url, encryption_key=theirs)
    await store.start()
    await store.close()
    settings = Settings(telegram_token="1:x", database_url=url, encryption_key=mine,
                        dialogues=Path(__file__).parents[2] / "dialogues")
    with pytest.raises(app.StartupError, match="shares no key") as refused:
        await app.serve(settings)
    assert mine not in str(refused.value) and theirs not in str(refused.value)
