"""What the coach's reading r27 asked of the daily check-in, walked through the engine: the
client can let a commitment go (it is saved as dropped, and nothing asks why)."""

from __future__ import annotations

import pytest

from bot.dialogue import DialogueSet, load_dialogues
from tests.content.test_coach_reading_r11 import REPO
from tests.content.test_coach_reading_r12 import play

YESTERDAY = {"commitment.last": "Stretch", "commitment.last_days_ago": 1}
EARLIER = {"commitment.last": "Stretch", "commitment.last_days_ago": 3}
LET_GO = "I am letting it go"
WHY = "What happened instead? You can send /skip."


@pytest.fixture(scope="module")
def dialogues() -> DialogueSet:
    return load_dialogues(REPO / "dialogues")


@pytest.mark.parametrize("provided", [YESTERDAY, EARLIER])
@pytest.mark.parametrize("progress", ["Yes", "A little", "Not yet"])
def test_a_commitment_let_go_is_saved_as_dropped_and_nothing_asks_why(
        dialogues: DialogueSet, provided: dict[str, object], progress: str) -> None:
    said, outcome = play(dialogues, "daily_checkin", ["7", LET_GO, progress],
                         provided=provided)
    assert outcome.state.variables["commitment.status"] == "dropped"
    assert WHY not in said
    assert not any("letting" in text.lower() or "why" in text.lower() for text in said)


def test_the_options_read_without_contractions(dialogues: DialogueSet) -> None:
    said, _ = play(dialogues, "daily_checkin", ["7"], provided=YESTERDAY)
    assert "'" not in LET_GO and "’" not in LET_GO
    assert said[-1].endswith("Where are you with it?")
