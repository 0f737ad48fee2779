"""What the coach's reading r12 asked of the shipped texts, walked through the engine: the
emergency line speaks to a client worried about someone else too, a goal at its target that
the client does not feel is reached gets the whole weekly review and the offer of a new
target (so the next review does not come back to the same question), a low mood's
commitment can be skipped, the care check-in's buttons all compare with yesterday, and the
plan played back names the date the client chose for the goal."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date

import pytest

from bot.dialogue import DialogueSet, load_dialogues
from bot.dialogue.expr import Value
from bot.engine import Context, ConversationState, Outcome, Turn, handle, runner, start
from bot.i18n import translator_for
from tests.content.test_coach_reading_r11 import GOAL, REPO

REACHED = "Let's look at “\u2068Run 5 km\u2069” together. Do you feel you have reached this goal?"
RETARGET = ("You said you have not reached this goal yet. Would you like to set a new target "
            "for it?")
ACTIONS = {"actions.open": 1, "actions.overdue": 0, "actions.list": "• Stretch"}


@pytest.fixture(scope="module")
def dialogues() -> DialogueSet:
    return load_dialogues(REPO / "dialogues")


def context(provided: Mapping[str, Value] | None = None, country: str | None = None) -> Context:
    return Context(translator=translator_for("en"), today=date(2026, 12, 5), name="Ana",
                   country=country, provided=provided or {})


def play(dialogues: DialogueSet, dialogue: str, answers: list[str],
         variables: Mapping[str, Value] = GOAL,
         provided: Mapping[str, Value] | None = None) -> tuple[list[str], Outcome]:
    """Every text the client reads, answering each question in turn (a choice by its label,
    "/skip" as the command), and where the dialogue ends."""
    outcome = start(dialogues, ConversationState(variables=dict(variables)), dialogue,
                    context(provided))
    said = [r.text for r in outcome.replies]
    for answer in answers:
        buttons = {b.label: b.data for r in outcome.replies for b in r.buttons}
        turn = Turn(command="skip") if answer == "/skip" else \
            Turn(button=buttons[answer]) if answer in buttons else Turn(text=answer)
        outcome = handle(dialogues, outcome.state, turn, context(provided))
        said += [r.text for r in outcome.replies]
    return said, outcome


@pytest.mark.parametrize("country", [None, "IT"])
def test_worry_for_someone_else_is_told_to_call_for_them_too(country: str | None) -> None:
    lines = runner.concern_reply(context(country=country)).text.split("\n")
    assert lines[2].startswith("If you or someone else is in immediate danger, call ")


@pytest.mark.parametrize(("label", "key", "help_lines"), [
    ("Better", "better", False), ("About the same", "same", True), ("Worse", "hard", True)])
def test_the_care_check_in_compares_with_yesterday(dialogues: DialogueSet, label: str,
                                                    key: str, help_lines: bool) -> None:
    said, outcome = play(dialogues, "care_checkin", [label], variables={"care.last": False})
    assert outcome.state.variables["care.today"] == key
    assert ("immediate danger" in "\n".join(said)) is help_lines
    if help_lines:
        assert said[-1] == ("Until tomorrow, I will not send you anything else. Then I will "
                            "only ask how you are. If you want to talk before then, just write "
                            "to me.")


def test_a_no_to_the_safety_question_does_not_push_on(dialogues: DialogueSet) -> None:
    _, asked = play(dialogues, "daily_checkin", ["2"])
    assert asked.state.safety_asked
    answered = handle(dialogues, asked.state, Turn(button=runner.SAFETY_NO),
                      context())
    assert answered.replies[0].text == (
        "Thank you for answering. If that changes at any point, /sos shows who you can talk "
        "to.")
    assert answered.replies[1].text.startswith("Thank you for telling me. It sounds like today")
