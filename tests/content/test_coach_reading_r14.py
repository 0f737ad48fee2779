"""What the coach's reading r14 asked of the shipped texts, walked through the engine: the
onboarding promises to notice a crisis only from what the client writes, and a client who
has just done their step (or part of it) is not asked what happened instead of more."""

from __future__ import annotations

import pytest

from bot.dialogue import DialogueSet, load_dialogues
from tests.content.test_coach_reading_r11 import REPO
from tests.content.test_coach_reading_r12 import play


@pytest.fixture(scope="module")
def dialogues() -> DialogueSet:
    return load_dialogues(REPO / "dialogues")


def test_the_onboarding_notices_a_crisis_only_from_what_the_client_writes(
        dialogues: DialogueSet) -> None:
    said, _ = play(dialogues, "onboarding", [], variables={})
    assert "If you are ever in crisis" not in said[1]
    assert "If what you write tells me you may be in crisis, I will stop" in said[1]


YESTERDAY = {"commitment.last": "Stretch", "commitment.last_days_ago": 1}
INSTEAD = "What happened instead? You can send /skip."
COMMIT = ("What is one thing you would like to do today towards “\u2068Run 5 km\u2069”? "
          "It can be small.")


@pytest.mark.parametrize("rating", ["Done", "Part of it"])
def test_a_step_done_is_not_followed_by_what_happened_instead(
        dialogues: DialogueSet, rating: str) -> None:
    said, _ = play(dialogues, "daily_checkin", [rating, "7", "Not yet"], provided=YESTERDAY)
    assert INSTEAD not in said and said[-1] == COMMIT


def test_a_step_not_started_still_asks_what_happened_instead(dialogues: DialogueSet) -> None:
    said, _ = play(dialogues, "daily_checkin", ["Not started yet", "7", "Not yet"],
                   provided=YESTERDAY)
    assert said[-1] == INSTEAD
