"""What the coach's reading r25 (M3) asked of the day-long exercises: no buttons under the
instructions hours before the client can answer; the bot says truthfully when it comes
back, comes back on its own, and then asks how the exercise went, naming it."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, time, timedelta

import pytest

from bot.dialogue import DialogueSet, load_dialogues
from bot.engine import ConversationState, Later, start
from tests.content.test_coach_reading_r11 import REPO
from tests.content.test_coach_reading_r12 import context, play

TODAY = date(2026, 12, 5)  # the day of test_coach_reading_r12's context
DAY_LONG = {"energy_audit": ("Did you get to do your energy audit?", time(19)),
            "time_log": ("Did you get to keep your time log?", time(19)),
            "three_good_things": ("Did you get to write down your three good things?", time(20))}
THIS_EVENING = "I will check in with you this evening at {} to hear how it went."
TOMORROW = ("There is not much of the day left, so this one is for tomorrow. I will check in "
            "with you tomorrow at {} to hear how it went.")


@pytest.fixture(scope="module")
def dialogues() -> DialogueSet:
    return load_dialogues(REPO / "dialogues")


@pytest.mark.parametrize("exercise", sorted(DAY_LONG))
def test_in_the_morning_it_says_it_comes_back_this_evening_and_asks_nothing_yet(
        dialogues: DialogueSet, exercise: str) -> None:
    at = DAY_LONG[exercise][1]
    outcome = start(dialogues, ConversationState(), exercise,
                    replace(context(), clock=time(9)))
    shown = f"{at.hour - 12}:00\u202fPM"
    assert outcome.replies[-1].text.endswith(THIS_EVENING.format(shown))
    assert not any(r.buttons for r in outcome.replies)
    assert not outcome.state.active
    assert outcome.later == Later(exercise, "status", TODAY, at)


@pytest.mark.parametrize("exercise", sorted(DAY_LONG))
def test_late_in_the_day_it_says_tomorrow(dialogues: DialogueSet, exercise: str) -> None:
    at = DAY_LONG[exercise][1]
    outcome = start(dialogues, ConversationState(), exercise,
                    replace(context(), clock=time(18)))
    assert outcome.replies[-1].text == TOMORROW.format(f"{at.hour - 12}:00\u202fPM")
    assert outcome.later == Later(exercise, "status", TODAY + timedelta(days=1), at)


@pytest.mark.parametrize("exercise", sorted(DAY_LONG))
def test_coming_back_it_asks_how_it_went_by_name_and_goes_on_as_before(
        dialogues: DialogueSet, exercise: str) -> None:
    said, outcome = play(dialogues, exercise, ["I did part of it"], variables={}, at="status")
    assert said[0] == DAY_LONG[exercise][0]
    assert said[1] == "Let us look at how it went."
    assert outcome.saved[0].variable == "exercise.status"
    assert outcome.saved[0].dialogue == exercise and outcome.state.active
