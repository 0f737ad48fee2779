"""What the coach's reading r25 asked of the shipped texts: an exercise's closing step and a
team member's contribution are offered, never required; a coach's measure is the one agreed
with the client; ending a coaching link says the way back."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.dialogue import DialogueSet, load_dialogues
from tests.content.test_coach_reading_r11 import REPO
from tests.content.test_coach_reading_r12 import play

CLOSING_STEPS = ["action_sprint", "custom_exercise", "energy_audit", "obstacle_reframing",
                 "strengths_spotting", "three_good_things", "best_possible_self"]


@pytest.fixture(scope="module")
def dialogues() -> DialogueSet:
    return load_dialogues(REPO / "dialogues")


@pytest.mark.parametrize("exercise", CLOSING_STEPS)
def test_an_exercises_next_step_may_be_skipped(dialogues: DialogueSet, exercise: str) -> None:
    step = dialogues.dialogues[exercise].steps["next_step"]
    assert step.ask.optional and (step.say or "").endswith("You can send /skip.")


def test_a_skipped_sprint_step_is_not_asked_when(dialogues: DialogueSet) -> None:
    said, outcome = play(dialogues, "action_sprint", ["I did it", "Answered two emails",
                                                       "Lighter", "/skip"], variables={})
    assert "When will you do it? You can send /skip." not in said
    assert said[-1] == "Thank you, \u2068Ana\u2069." and not outcome.state.active


@pytest.mark.parametrize(("answers", "last"), [
    (["/skip", "/skip"], "All right. Thank you, \u2068Ana\u2069."),
    (["Testing the builds", "/skip"], "Nobody else in the group sees what you wrote here. "
                                      "Would you like your coach to see it?")])
def test_a_team_member_may_leave_out_their_part(dialogues: DialogueSet, answers: list[str],
                                                last: str) -> None:
    said, _ = play(dialogues, "group_contribution", answers,
                   variables={"group.goal": "Ship the release"})
    assert said[-1] == last and not any(text.startswith("By when") for text in said)


def test_a_coachs_measure_is_the_one_agreed_with_the_client(dialogues: DialogueSet) -> None:
    said, _ = play(dialogues, "new_measure", ["Energy", "A scale from 1 to 10"],
                   variables={"measure.client_name": "Luca"})
    assert said[0].startswith("What did you and \u2068Luca\u2069 agree they will rate or count?")
    assert said[-1] == ("What target did you agree on with \u2068Luca\u2069, from 1 to 10? Send "
                        "/skip if you set none.")


def test_ending_a_link_says_the_way_back() -> None:
    text = Path(REPO / "dialogues" / "engagement_close.yaml").read_text(encoding="utf-8")
    assert "If you change your mind, you can ask {closing.coach} for a new invitation." in text
