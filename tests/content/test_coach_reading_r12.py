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

REACHED = ("You are at 8, and the target you set was 8. Do you feel you have reached "
           "“\u2068Run 5 km\u2069”?")
RETARGET = ("You are at or above your target, and this goal does not feel complete to you yet. "
            "Would you like to set a new target that shows what is still ahead?")
ACTIONS = {"actions.open": 1, "actions.overdue": 0, "actions.list": "• Stretch"}


@pytest.fixture(scope="module")
def dialogues() -> DialogueSet:
    return load_dialogues(REPO / "dialogues")


def context(provided: Mapping[str, Value] | None = None, country: str | None = None) -> Context:
    return Context(translator=translator_for("en"), today=date(2026, 12, 5), name="Ana",
                   country=country, provided=provided or {})


def play(dialogues: DialogueSet, dialogue: str, answers: list[str],
         variables: Mapping[str, Value] = GOAL,
         provided: Mapping[str, Value] | None = None, *,
         at: str | None = None) -> tuple[list[str], Outcome]:
    """Every text the client reads, answering each question in turn (a choice by its label,
    "/skip" as the command), and where the dialogue ends; from step ``at`` if given (where a
    dialogue comes back later)."""
    outcome = start(dialogues, ConversationState(variables=dict(variables)), dialogue,
                    context(provided), at=at)
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
    assert lines[2].startswith("If you have hurt yourself or feel you might, or you or someone "
                               "else is in immediate danger, call ")


# A client at their target (8) who does not feel the goal is reached: the gap, then the week.
AT_TARGET = ["8", "No", "Running without stopping", "Mornings", "/skip", "I like routine",
             "Going well"]


def test_two_reviews_at_the_target_not_reached_reopen_the_target(
        dialogues: DialogueSet) -> None:
    said, first = play(dialogues, "weekly_review", [*AT_TARGET, "Yes", "9", "Run twice"],
                       provided=ACTIONS)
    at = said.index("All right: your goal stays open.")
    assert said[at + 1:at + 3] == ["Let us look at the week.",
                                   "What, if anything, helped you this week? You can send /skip."]
    assert "What, if anything, did this week show you? You can send /skip." in said
    assert any(text.startswith("You have 1 open action:") for text in said)
    assert said.index(RETARGET) == said.index("Your target is 8 out of 10 and you are at 8. "
                                              "What would you like your target to be now, "
                                              "from 1 to 10?") - 1
    assert said[-1].startswith("Your action for the coming week: “\u2068Run twice\u2069”.")
    assert first.state.stack == () and first.state.variables["goal.target"] == 9
    # The next week, with the new target the platform kept: the usual review, no loop.
    said, second = play(dialogues, "weekly_review", ["8", "Fewer", "/skip", "Patience", "No",
                                                     "Stretch daily"],
                        variables={**GOAL, "goal.target": 9})
    assert REACHED not in said and RETARGET not in said
    assert said[2] == "You have moved from 3 to 8. Let us look at the week."
    assert "Looking at all this, would you like to change your goal?" in said
    assert second.state.stack == ()


def test_declining_a_new_target_still_gets_the_whole_review_next_week(
        dialogues: DialogueSet) -> None:
    weeks = [play(dialogues, "weekly_review", [*AT_TARGET, "No", "Run twice"],
                  provided=ACTIONS)[0] for _ in range(2)]
    for said in weeks:
        assert REACHED in said and RETARGET in said
        assert "What, if anything, helped you this week? You can send /skip." in said
        assert "Let's plan the coming week." not in said
        assert said[-2] == ("What, if anything, will you commit to for the coming week? You can "
                            "send /skip.")


def test_after_a_low_mood_the_commitment_can_be_skipped(dialogues: DialogueSet) -> None:
    said, outcome = play(dialogues, "daily_checkin", ["3", "No", "Yes", "/skip"])
    assert said[-2] == ("If you like, what is one small thing you could do towards "
                        "“\u2068Run 5 km\u2069” before we next talk? You can send /skip.")
    assert said[-1] == "Thank you for checking in, \u2068Ana\u2069."
    assert outcome.state.variables["checkin.commitment"] is None


@pytest.mark.parametrize(("label", "key", "help_lines"), [
    ("Better", "better", False), ("About the same", "same", True), ("Worse", "hard", True)])
def test_the_care_check_in_compares_with_yesterday(dialogues: DialogueSet, label: str,
                                                    key: str, help_lines: bool) -> None:
    answers = [label, "No"] if key == "hard" else [label]  # "Worse": the safety question first
    said, outcome = play(dialogues, "care_checkin", answers, variables={"care.last": False})
    assert outcome.state.variables["care.today"] == key
    assert ("immediate danger" in "\n".join(said)) is help_lines
    if help_lines:
        # Writing to the bot would resume coaching, not reach a person: it points to people.
        assert said[-1] == ("Until tomorrow, I will not send you anything else. Then I will "
                            "only ask how you are. If you need someone before then, please "
                            "contact one of the lines above; if you have hurt yourself or feel "
                            "you might, or you are in danger, call the emergency number, which "
                            "answers at any hour. /sos shows them again.")


GOAL_SETTING = ["Run 5 km", "Health", "Lighter", "3", "Some runs", "/skip", "8"]
PLAN_REST = ["/skip", "/skip", "Run, walk", "/skip", "Run 1 km", "2026-12-07", "8"]


@pytest.mark.parametrize(("due", "target"), [
    ("2027-03-01", "your target is 8, by March 1, 2027. First step"),
    ("/skip", "your target is 8. First step")])
def test_the_plan_names_the_date_chosen_for_the_goal(dialogues: DialogueSet, due: str,
                                                     target: str) -> None:
    said, _ = play(dialogues, "goal_setting", [*GOAL_SETTING, due, *PLAN_REST],
                   variables={})
    assert said[-2].startswith("Here is your plan") and target in said[-2]


def test_a_no_to_the_safety_question_does_not_push_on(dialogues: DialogueSet) -> None:
    _, asked = play(dialogues, "daily_checkin", ["2"])
    assert asked.state.safety_asked
    answered = handle(dialogues, asked.state, Turn(button=runner.SAFETY_NO),
                      context())
    assert answered.replies[0].text == (
        "Thank you for answering. If that changes at any point, /sos shows who you can talk to.")
    assert answered.replies[1].text.startswith("It sounds like today is hard.")
