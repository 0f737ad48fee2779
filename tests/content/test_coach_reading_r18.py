"""What the coach's reading r18 asked of the shipped texts: help lines are offered as open
at any hour only when they are; a client who feels their goal is reached but does not want
it marked is asked what they want first, not what would make it feel complete; and the
last care check-in, still hard, lets the client keep their check-ins paused."""

from __future__ import annotations

import pytest

from bot.dialogue import DialogueSet, load_dialogues
from bot.engine import runner
from bot.engine.crisis import emergency_number, helplines_for
from tests.content.test_coach_reading_r11 import GOAL, REPO
from tests.content.test_coach_reading_r12 import context, play


@pytest.fixture(scope="module")
def dialogues() -> DialogueSet:
    return load_dialogues(REPO / "dialogues")


@pytest.mark.parametrize("country", ["GB", "IT", "HR", "IL", "BG", "ES", "US", None])
def test_only_the_lines_open_around_the_clock_say_so(country: str | None) -> None:
    said = runner.crisis_reply(context(country=country)).text
    assert "right now" not in said
    listed = [line for line in said.split("\n") if line.startswith("• ")]
    marked = [line for line in listed if line.endswith("(at any hour)")]
    number = emergency_number(country)
    open_always = [h for h in helplines_for(country)  # the emergency number has its own line
                   if h.hours is not None and h.hours.startswith("24/7")
                   and (h.phone or h.url) and (number is None or h.phone != number)]
    assert len(marked) == len(open_always)
    assert all(any(h.name in line for h in open_always) for line in marked)


def test_help_lines_with_office_hours_are_not_said_to_answer_at_any_hour() -> None:
    said = runner.crisis_reply(context(country="HR")).text
    plavi = next(line for line in said.split("\n") if "Plavi telefon" in line)
    assert "(at any hour)" not in plavi


def test_reached_but_not_to_be_marked_asks_what_they_want_first(
        dialogues: DialogueSet) -> None:
    variables = {**GOAL, "review.current": 6, "review.due_choice": "reached"}
    said, outcome = play(dialogues, "goal_completion", ["No", "Another race first"],
                         variables=variables)
    assert said[0] == "Shall I mark “\u2068Run 5 km\u2069” as reached?"
    assert "What is still open for you in this goal? You can send /skip." in said
    assert "What would need to happen for it to feel complete?" not in said
    assert outcome.state.variables["goal.completion_gap"] == "Another race first"


@pytest.mark.parametrize("answers", [["Worse", "No"], ["About the same"]])
def test_the_last_care_check_in_still_hard_offers_to_keep_the_pause(
        dialogues: DialogueSet, answers: list[str]) -> None:
    said, outcome = play(dialogues, "care_checkin", [*answers, "Yes", "5"],
                         variables={"care.last": True})
    assert said.index("For how many days? From 1 to 60.") < said.index(
        "Done. For 5 days, I will not send you check-ins, weekly reviews, exercises or session "
        "reminders. If you have a coach, their messages still reach you. If you would like "
        "all of these back sooner, send /reminders.")
    assert said[-1].startswith("Whenever you need someone")
    assert outcome.state.variables["profile.pause_days"] == 5
