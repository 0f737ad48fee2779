from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from bot.dialogue import DialogueSet, load_dialogues
from bot.engine import Context
from bot.i18n import translator_for

DIALOGUES = Path(__file__).parent / "dialogues"
TODAY = date(2026, 12, 2)


@pytest.fixture(scope="session")
def dialogues() -> DialogueSet:
    return load_dialogues(DIALOGUES)


@pytest.fixture
def ctx() -> Context:
    return Context(translator=translator_for("en"), today=TODAY, name="Ana")
