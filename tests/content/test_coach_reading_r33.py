"""What the coach's reading r33 asked of the shipped texts: consent names every limit before it
is given, an exercise's wrap-up asks what its buttons answer, a check-in's streak is a fact
without a verdict, and the group's question of the week may be left unanswered in private."""

from __future__ import annotations

import pytest

from bot.dialogue import DialogueSet, load_dialogues
from tests.content.test_coach_reading_r11 import REPO, STREAK, walk
from tests.content.test_coach_reading_r12 import play

WRAP_UP = ("Take your time. When you have finished, or if you decide to stop, come back here: "
           "did you get to do it?")


@pytest.fixture(scope="module")
def dialogues() -> DialogueSet:
    return load_dialogues(REPO / "dialogues")


def test_every_exercise_wrap_up_asks_what_its_buttons_answer(dialogues: DialogueSet) -> None:
    wrap_ups = {name: d.steps["status"] for name, d in dialogues.dialogues.items()
                if "status" in d.steps and d.steps["status"].ask is not None
                and d.steps["status"].ask.type == "choice"}
    waiting = {name for name, step in wrap_ups.items()
               if (step.say or "").startswith("Take your time.")}
    assert len(waiting) >= 9  # the others (day-long exercises) ask "Did you get to …?"
    assert {name: wrap_ups[name].say for name in waiting} == dict.fromkeys(waiting, WRAP_UP)
    assert all((step.say or "").endswith("?") for step in wrap_ups.values())


def test_the_onboarding_names_who_else_can_read_before_consent(dialogues: DialogueSet) -> None:
    steps = dialogues.dialogues["onboarding"].steps
    assert "The people who run me can access the database" in (steps["privacy"].say or "")
    assert (steps["crisis_note"].say or "").startswith("One more limit: ")


def test_a_streak_is_counted_not_praised(dialogues: DialogueSet) -> None:
    said = walk(dialogues, "daily_checkin", ["7", "Yes", "Mornings", "Walk to work"], STREAK)
    assert "Check-ins in a row: 5 days." in said
    assert not any("showing up" in text or "longest run" in text for text in said)


def test_the_groups_question_may_be_left_unanswered_in_private(dialogues: DialogueSet) -> None:
    said, outcome = play(dialogues, "group_answer", ["/skip"], variables={"group.id": 1})
    assert said == ["Take a moment. What is your answer? You can send /skip.", "All right."]
    assert not outcome.state.active
    assert outcome.state.variables.get("group.answer") is None


def test_an_answer_is_offered_to_the_group_only_after_saying_it_stays(
        dialogues: DialogueSet) -> None:
    said, outcome = play(dialogues, "group_answer", ["We shipped on time", "No"],
                         variables={"group.id": 1})
    assert said[1] == ("Your answer stays with you unless you say otherwise. Shall I post it in "
                       "the group's chat, with your first name?")
    assert said[-1] == "Thank you. I will not post it in the group."
    assert outcome.state.variables.get("group.answer_share") is False
