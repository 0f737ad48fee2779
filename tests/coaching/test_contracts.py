"""The dialogues and answers the platform relies on: checked by `coachbot validate` and at
the bot's start, so that a set without them is refused rather than failing on a /start."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bot.coaching.contracts import CONTRACTS, check_contracts
from bot.config import Settings
from bot.dialogue import load_dialogues
from bot.telegram.app import StartupError, serve

REPO = Path(__file__).parents[2]


@pytest.fixture
def dialogues(tmp_path: Path) -> Path:
    """A copy of the shipped dialogues, to break."""
    return Path(shutil.copytree(REPO / "dialogues", tmp_path / "dialogues"))


def problems(path: Path) -> list[str]:
    return [str(error) for error in check_contracts(load_dialogues(path), path)]


def test_the_shipped_dialogues_keep_every_contract() -> None:
    assert problems(REPO / "dialogues") == []
    assert {c.dialogue for c in CONTRACTS} <= set(load_dialogues(REPO / "dialogues").dialogues)


def test_without_the_onboarding_validate_fails_and_says_why(dialogues: Path) -> None:
    (dialogues / "onboarding.yaml").unlink()
    result = subprocess.run([sys.executable, "-m", "bot.cli", "validate", str(dialogues)],
                            capture_output=True, text=True, cwd=REPO, timeout=60)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        f"{dialogues}:1:1: the bot needs the dialogue 'onboarding' (/start and the consent "
        "question start it), and there is none here"]


async def test_without_the_onboarding_the_bot_does_not_start(dialogues: Path,
                                                             tmp_path: Path) -> None:
    (dialogues / "onboarding.yaml").unlink()
    settings = Settings(telegram_token="1:x", dialogues=dialogues,
                        database_url=f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}")
    with pytest.raises(StartupError, match="the bot needs the dialogue 'onboarding'"):
        await asyncio.wait_for(serve(settings), timeout=30)


def test_an_answer_the_platform_reads_saved_as_another_type(dialogues: Path) -> None:
    path = dialogues / "set_timezone.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace(
        "type: timezone", "type: text"), encoding="utf-8")
    assert problems(dialogues) == [
        f"{path}:1:1: the bot reads 'profile.time_zone' from 'set_timezone' as a timezone "
        "answer: a step must save it with type timezone (it saves it as text)"]


def test_the_language_question_offers_exactly_the_registry(dialogues: Path) -> None:
    path = dialogues / "onboarding.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace(
        '        he: "עברית"\n', ""), encoding="utf-8")
    [problem] = problems(dialogues)
    assert problem.startswith(f"{path}:")
    assert problem.endswith("the options of 'profile.locale' must be the languages the bot "
                            "speaks, in this order: en, ca, bg, hr, it, he "
                            "(bot/i18n/languages.py)")
