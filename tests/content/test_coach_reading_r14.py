"""What the coach's reading r14 asked of the shipped texts, walked through the engine: the
onboarding promises to notice a crisis only from what the client writes; a client who has
just done their step (or part of it) is not asked what happened instead of more; a yes to
the safety question is not thanked with the question's own opener; an open goal does not
promise what the review promises again; a goal left for later says how to come back; a
holiday asks its question last; the last care check-in ends on the people who can help;
and a coach's own exercise promises no coach who may not see it."""

from __future__ import annotations

import pytest

from bot.dialogue import DialogueSet, load_dialogues
from bot.engine import Turn, handle, runner
from tests.content.test_coach_reading_r11 import REPO
from tests.content.test_coach_reading_r12 import context, play


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
COMMIT = ("What is one thing, however small, you would like to do towards “\u2068Run 5 km\u2069” "
          "before we next talk? If there is nothing for now, you can send /skip.")


@pytest.mark.parametrize("rating", ["Done", "Part of it"])
def test_a_step_done_is_not_followed_by_what_happened_instead(
        dialogues: DialogueSet, rating: str) -> None:
    said, _ = play(dialogues, "daily_checkin", ["7", rating, "Not yet"], provided=YESTERDAY)
    assert INSTEAD not in said and said[-1] == COMMIT


def test_a_step_not_started_still_asks_what_happened_instead(dialogues: DialogueSet) -> None:
    said, _ = play(dialogues, "daily_checkin", ["7", "Not started yet", "Not yet"],
                   provided=YESTERDAY)
    assert said[-1] == INSTEAD


def test_a_yes_to_the_safety_question_is_not_thanked_with_the_questions_opener(
        dialogues: DialogueSet) -> None:
    _, asked = play(dialogues, "daily_checkin", ["2"])
    opener = "Thank you for telling me."
    assert asked.replies[-1].text.startswith(opener)
    answered = handle(dialogues, asked.state, Turn(button=runner.SAFETY_YES), context())
    assert answered.crisis
    assert answered.replies[0].text.startswith("Thank you for trusting me with this.")


def test_an_open_goal_is_kept_without_a_second_promise_of_check_ins(
        dialogues: DialogueSet) -> None:
    said, _ = play(dialogues, "weekly_review", ["8", "No", "A steady pace"])
    assert "All right: your goal stays open." in said
    assert not any("keep asking" in text for text in said)


def test_a_goal_left_for_later_says_check_ins_stop_and_how_to_come_back(
        dialogues: DialogueSet) -> None:
    said, _ = play(dialogues, "weekly_review", ["8", "Yes", "Running", "Mornings",
                                                "Patience", "Stretching", "No"])
    assert "they pause until you set a new one" in said[-1] and "/goal" in said[-1]


def test_the_holiday_tells_what_stops_before_asking_until_when(
        dialogues: DialogueSet) -> None:
    said, _ = play(dialogues, "reminders", ["Pause until a date"], variables={})
    # Asked as the day everything starts again (r70-ca, r70-hr: "until which day" read as
    # the last day of the pause).
    assert said[-1].endswith("On which day would you like all of these to start again?")
    assert "from your coach" not in said[-1]


def test_the_last_care_check_in_ends_on_the_people_above(dialogues: DialogueSet) -> None:
    said, _ = play(dialogues, "care_checkin", ["Worse", "No", "No"],
                   variables={"care.last": True})  # "No" to the safety question first
    assert said[-1].startswith("Whenever you need someone")
    assert said[-1].endswith("please contact one of the lines above; if you have hurt "
                             "yourself or feel you might, or you are in danger, call the "
                             "emergency number, which answers at any hour. /sos shows them "
                             "again.")


def test_a_coachs_own_exercise_promises_no_coach_who_may_not_see_it() -> None:
    for source in (REPO / "dialogues" / "exercises" / "custom_exercise.yaml",
                   REPO / "bot" / "coaching" / "coach_dialogues.py"):
        assert "Your coach will see how it" not in source.read_text(encoding="utf-8")


@pytest.mark.parametrize(("answers", "asked"), [
    (["7", "Yes", "Mornings"], COMMIT),
    (["3", "No", "Yes"], "If you like, what is one small thing you could do towards "
                         "“\u2068Run 5 km\u2069” before we next talk? You can send /skip.")])
def test_the_commitment_runs_until_the_next_check_in_not_to_the_end_of_today(
        dialogues: DialogueSet, answers: list[str], asked: str) -> None:
    said, _ = play(dialogues, "daily_checkin", answers)
    assert said[-1] == asked and "today" not in said[-1]


# At 10, the top of the scale, a goal the client does not feel is complete.
NEXT_ACTION = "What, if anything, will you commit to for the coming week? You can send /skip."
AT_TEN = ["10", "No", "Running without stopping", "Mornings", "/skip", "Patience"]
TOP = ("You are at 10, the top of the scale, and this goal does not feel complete yet. "
       "Would you like to reword it, so the scale can show what is still ahead?")


def test_at_ten_the_goal_is_reworded_and_rated_anew_before_its_target(
        dialogues: DialogueSet) -> None:
    said, outcome = play(dialogues, "weekly_review",
                         [*AT_TEN, "Yes", "Run 10 km", "6", "9", "Run twice"])
    assert TOP in said and NEXT_ACTION in said
    # The old target measured the old wording (r16-en): it is not shown again.
    at = said.index("With this wording, where do you stand today, from 1 to 10?")
    assert said[at + 1] == "And where would you like to be, from 1 to 10?"
    assert not any(text.startswith("Your target is") for text in said)
    assert not any(text.startswith("Today you are at") for text in said)
    variables = outcome.state.variables
    assert (variables["goal.title"], variables["review.current"], variables["goal.target"]) \
        == ("Run 10 km", 6, 9)


def test_at_ten_a_no_to_rewording_goes_on_to_the_weeks_action(dialogues: DialogueSet) -> None:
    said, _ = play(dialogues, "weekly_review", [*AT_TEN, "No"])
    assert said[-2:] == [TOP, NEXT_ACTION]



def test_a_pause_for_some_days_says_it_stops_everything_like_a_holiday(
        dialogues: DialogueSet) -> None:
    _, menu = play(dialogues, "reminders", [], variables={})
    labels = [b.label for r in menu.replies for b in r.buttons]
    assert "Pause for some days" in labels and "Pause until a date" in labels
    said, outcome = play(dialogues, "reminders", ["Pause for some days", "3"], variables={})
    assert said[-2].startswith("Until the pause ends, I send you no check-ins, weekly reviews, "
                               "exercises or session reminders.")
    # A coach's message is not held by the client's own pause (r37-en): said so.
    assert said[-1] == ("Done. For 3 days, I will not send you check-ins, weekly reviews, "
                        "exercises or session reminders. If you have a coach, their messages "
                        "still reach you. If you would like all of these back sooner, send "
                        "/reminders.")
    assert outcome.state.variables["profile.pause_days"] == 3


HOLDING = {"goal.title": "Run 5 km", "goal.baseline": 8, "goal.target": 8}


@pytest.mark.parametrize("today", ["8", "9"])
def test_a_goal_to_hold_is_not_asked_every_week_whether_it_is_reached(
        dialogues: DialogueSet, today: str) -> None:
    said, outcome = play(dialogues, "weekly_review",
                         [today, "Mornings", "/skip", "Patience", "No", "Run twice"],
                         variables=HOLDING)
    assert said[2] == (f"You chose to stay at 8 or above, and today you are at {today}. "
                       "Let us look at the week.")
    assert not any("reached this goal" in text for text in said)
    assert "Looking at all this, would you like to change your goal?" in said
    assert said[-1].startswith("Your action for the coming week: “\u2068Run twice\u2069”.")
    assert outcome.state.variables.get("goal.completed") is None


def test_no_text_promises_that_help_lines_answer_day_or_night() -> None:
    # r16-en: several national lines keep office hours and an unknown country's list is
    # web directories; only the emergency number answers at any hour.
    from pathlib import Path
    root = Path(__file__).parents[2]
    sources = [*(root / "dialogues").rglob("*.yaml"), *(root / "bot").rglob("*.py")]
    promising = [str(p) for p in sources if "day or night" in p.read_text(encoding="utf-8")]
    assert sources and promising == []
