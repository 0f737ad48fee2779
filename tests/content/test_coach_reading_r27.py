"""What the coach's reading r27 asked of the shipped texts: a question worded "if anything"
may be skipped (and a reached goal's look back is offered, not required); a session's
preparation says who will read it before the first answer; the crisis reply does not defer;
the coach's crisis notice says what their part is."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.coaching.events import Digest, digest_text
from bot.coaching.safety import CRISIS_PAUSE, MAX_CARE_CHECKINS
from bot.dialogue import DialogueSet, load_dialogues
from bot.engine import runner
from bot.i18n import translator_for
from tests.content.test_coach_reading_r11 import REPO
from tests.content.test_coach_reading_r12 import context, play

EN = translator_for("en")
REACHED = {"goal.title": "Run 5 km", "goal.target": 8, "review.current": 8,
           "review.due_choice": None}


@pytest.fixture(scope="module")
def dialogues() -> DialogueSet:
    return load_dialogues(REPO / "dialogues")


@pytest.mark.parametrize(("dialogue", "step"), [
    ("weekly_review", "helped"), ("weekly_review", "learned"),
    ("goal_completion", "before_marking"), ("goal_completion", "proud"),
    ("goal_completion", "difference"), ("goal_completion", "learned"),
    ("goal_completion", "keep"), ("obstacle_reframing", "changed"),
    ("best_possible_self", "surprised"), ("strengths_spotting", "strengths"),
    ("values_ranking", "next_step"), ("wheel_of_life", "lowest")])
def test_a_question_worded_if_anything_may_be_skipped(dialogues: DialogueSet, dialogue: str,
                                                      step: str) -> None:
    assert dialogues.dialogues[dialogue].steps[step].ask.optional


def test_every_if_anything_question_may_be_skipped(dialogues: DialogueSet) -> None:
    for dialogue in dialogues.dialogues.values():
        for step in dialogue.steps.values():
            if ", if any" in (step.say or "") and step.ask.type != "none":
                assert step.ask.optional, f"{dialogue.id}:{step.id}"


def test_a_reached_goal_looked_back_on_in_silence_is_not_thanked(
        dialogues: DialogueSet) -> None:
    said, _ = play(dialogues, "goal_completion", ["Yes", "/skip", "/skip", "/skip", "/skip"],
                   variables=REACHED)
    assert said[2].startswith("A few questions to look back on, if you like: you can send /skip")
    assert said[-1] == "Would you like to set a new goal now?"
    assert "Thank you for sharing this." not in said


def test_a_reached_goal_looked_back_on_is_thanked(dialogues: DialogueSet) -> None:
    said, _ = play(dialogues, "goal_completion", ["Yes", "/skip", "Friends", "/skip",
                                                  "Running on Sundays"], variables=REACHED)
    assert said[-2:] == ["Thank you for sharing this.",
                         "Would you like to set a new goal now?"]


@pytest.mark.parametrize(("briefed", "says"), [
    (True, "As you chose, your coach receives your answers an hour before the session."),
    (False, "Your answers stay with you, unless you send /brief to share them with your "
            "coach.")])
def test_the_preparation_says_who_reads_it_before_the_first_answer(
        dialogues: DialogueSet, briefed: bool, says: str) -> None:
    said, _ = play(dialogues, "session_prep", [], variables={},
                   provided={"prep.briefed": briefed, "notes.count": 0})
    assert says in said[0]
    assert said[-1].startswith("What has happened since you last spoke with your coach: ")


def test_the_crisis_reply_does_not_defer() -> None:
    text = runner.crisis_reply(context(country="IT")).text
    assert "as soon as you can" in text and "today" not in text


@pytest.mark.parametrize("clients", [("Ana",), ("Ana", "Bo")])
def test_the_crisis_notice_tells_the_coach_their_part(clients: tuple[str, ...]) -> None:
    text = digest_text(Digest(1, "en", crisis=True, crisis_clients=clients), EN)
    assert "you are not expected to counsel or treat them" in text
    assert "call the emergency services" in text
    first, what_to_do, why = text.split("\n\n")  # what to do first, on a phone
    assert first.startswith("Please reach") and "(by phone if you have agreed on none)" in first
    # The same notice follows abuse and threats, where a call can be overheard (r73-en).
    assert what_to_do.startswith("When you reach them, first ask whether they can talk freely")
    assert "check that they are safe" in what_to_do
    assert "messages you send through me wait" in why.lower()
    # As long as the pause can last (r36-en): a day, up to three with the care check-ins.
    assert timedelta(days=1) == CRISIS_PAUSE
    assert MAX_CARE_CHECKINS == 3
    assert "for a day, and for up to three days" in why


def test_what_to_do_with_a_gratitude_note_is_chosen_by_a_button(dialogues: DialogueSet) -> None:
    ask = dialogues.dialogues["gratitude_note"].steps["choice"].ask
    assert ask.type == "choice" and [option.label for option in ask.options] == [
        "Send it", "Read it to the person", "Keep it", "Not sure yet"]
