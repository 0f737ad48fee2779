"""What the readings r61 to r63 asked of the exercises a client did only part of: every first
question fits part of it, and in Stop, start, continue each list may be missing."""

from __future__ import annotations

import pytest

from bot.dialogue import DialogueSet, load_dialogues
from tests.content.test_coach_reading_r11 import REPO
from tests.content.test_coach_reading_r12 import play


@pytest.fixture(scope="module")
def dialogues() -> DialogueSet:
    return load_dialogues(REPO / "dialogues")


def test_a_client_without_a_start_list_is_not_asked_when_they_will_try_it(
        dialogues: DialogueSet) -> None:
    said, outcome = play(dialogues, "stop_start_continue", ["/skip", "/skip", "/skip"],
                         variables={}, at="stop")
    assert said[1].startswith("Which item on your Start list")
    assert said[2].startswith("What does your Continue list tell you")
    assert not any(text.startswith("When will you try it?") for text in said)
    assert said[-1] == "All right." and not outcome.state.active  # nothing told, no thanks


def test_one_list_told_is_thanked(dialogues: DialogueSet) -> None:
    said, _ = play(dialogues, "stop_start_continue", ["/skip", "/skip", "Walking at lunch"],
                   variables={}, at="stop")
    assert said[-1] == "Thank you, \u2068Ana\u2069."


def test_a_start_item_is_followed_by_when(dialogues: DialogueSet) -> None:
    said, _ = play(dialogues, "stop_start_continue", ["Scrolling at night", "A morning walk"],
                   variables={}, at="stop")
    assert said[-1] == "When will you try it? You can send /skip."


@pytest.mark.parametrize(("exercise", "first"), [
    ("time_log", "What did you notice when you read your list?"),
    ("three_good_things", "What did you notice as you wrote them down?"),
    ("values_ranking", "What did you notice as you worked through the list?"),
    ("strengths_spotting", "Which strengths, if any, appeared more than once? You can send /skip."),
])
def test_part_of_an_exercise_is_asked_about_as_it_went(dialogues: DialogueSet, exercise: str,
                                                       first: str) -> None:
    said, _ = play(dialogues, exercise, ["I did part of it"], variables={}, at="status")
    assert said[1:] == ["Let us look at how it went.", first]
