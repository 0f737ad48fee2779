"""What r27's readers asked after their round: the daily check-in asks after the person
before the plan (r27-en m2), a commitment let go is said as the client's choice, and the
onboarding ends by saying how to make it less."""

from __future__ import annotations

import pytest

from bot.dialogue import DialogueSet, load_dialogues
from tests.content.test_coach_reading_r11 import REPO
from tests.content.test_coach_reading_r12 import play

YESTERDAY = {"commitment.last": "Stretch", "commitment.last_days_ago": 1}
MOOD = "Hello \u2068Ana\u2069. How are you feeling today, from 1 (very low) to 10 (very good)?"


@pytest.fixture(scope="module")
def dialogues() -> DialogueSet:
    return load_dialogues(REPO / "dialogues")


def test_the_check_in_asks_the_mood_before_the_last_commitment(dialogues: DialogueSet) -> None:
    said, _ = play(dialogues, "daily_checkin", ["6"], provided=YESTERDAY)
    assert said == [MOOD, "Thank you. Yesterday you said you would do this: “\u2068Stretch\u2069”. "
                          "Where are you with it?"]


def test_a_mood_at_the_safety_threshold_is_asked_about_before_anything_else(
        dialogues: DialogueSet) -> None:
    said, _ = play(dialogues, "daily_checkin", ["2"], provided=YESTERDAY)
    assert said[0] == MOOD and said[-1].startswith("Thank you for telling me.")
    assert not any("Stretch" in text for text in said)


def test_the_onboarding_ends_with_how_to_make_it_less(dialogues: DialogueSet) -> None:
    steps = dialogues.dialogues["onboarding"].steps
    for step in ("closing_every_day", "closing_days"):  # every day, or the days chosen
        closing = steps[step].say
        assert closing is not None and "/reminders" in closing and "pause" in closing
