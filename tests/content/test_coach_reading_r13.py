"""What the coach's reading r13 asked of the shipped texts, walked through the engine: no
text offers the bot as someone to talk to (writing to it gets a note or a check-in), a new
client reads about /sos where the bot says what it is not, no opening judges or repeats,
"not yet" and a skipped exercise ask what happened instead, a no to the safety question is
not thanked twice, progress right after the last commitment is asked apart from it, a new
target at or below today is asked about in the weekly review too, a reached goal does not
get three closings, and the groups' weekly question about pride does not assume a good week."""

from __future__ import annotations

import pytest

from bot.coaching import groups
from bot.dialogue import DialogueSet, load_dialogues
from bot.engine import Turn, handle, runner
from tests.content.test_coach_reading_r11 import GOAL, REPO
from tests.content.test_coach_reading_r12 import context, play


@pytest.fixture(scope="module")
def dialogues() -> DialogueSet:
    return load_dialogues(REPO / "dialogues")


def _dialogue_texts() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "dialogues").rglob("*.yaml"))


def test_no_text_offers_the_bot_as_someone_to_talk_to() -> None:
    assert "want to talk" not in _dialogue_texts()


def test_a_new_client_reads_about_sos_with_what_the_bot_is_not(
        dialogues: DialogueSet) -> None:
    said, _ = play(dialogues, "onboarding", [], variables={})
    assert "not a crisis service" in said[1] and "/sos" in said[1]


def test_the_onboarding_asks_for_the_city_once_and_leads_to_the_goal_without_judging(
        dialogues: DialogueSet) -> None:
    said, _ = play(dialogues, "onboarding", ["Yes", "Yes", "English", "London", "08:00",
                                                   "Every day"],
                   variables={})
    city = next(text for text in said if "city" in text)
    assert city.count("city") == 1
    intro = said.index("Let us give your goal some shape, \u2068Ana\u2069. You choose the goal "
                       "and you own the results. I will only ask questions.")
    assert said[intro - 1] == ("Next comes your first goal, if you are ready for it: it takes "
                               "about ten to fifteen minutes. /back takes you to the previous "
                               "question. "
                               "Your check-ins begin once you have a goal. "
                               "If now is not a good time, or you would rather set it with your "
                               "coach first, send /cancel and start it later with /goal.")


def test_a_target_at_today_is_asked_about_without_hinting_at_a_mistake(
        dialogues: DialogueSet) -> None:
    said, _ = play(dialogues, "goal_setting",
                   ["Run 5 km", "Health", "Lighter", "8", "Some runs", "/skip", "8", "Yes"],
                   variables={})
    assert said[-2] == ("Today you are at 8, and the target you chose, 8, is not above "
                        "that. If you answer No, you can choose another target. "
                        "Is your aim to stay at 8 or above?")
    assert said[-1].startswith("By what date would you like to be there?")


def test_not_yet_and_a_skipped_exercise_ask_what_happened_not_what_got_in_the_way(
        dialogues: DialogueSet) -> None:
    said, _ = play(dialogues, "daily_checkin", ["7", "Not yet"])
    assert said[-1] == "What happened instead? You can send /skip."
    # Only the weekly review asks it, after "What, if anything, helped you this week?".
    assert [p.name for p in (REPO / "dialogues").rglob("*.yaml")
            if "got in the way?" in p.read_text(encoding="utf-8")] == ["weekly_review.yaml"]


def test_a_no_to_the_safety_question_is_not_thanked_twice_in_a_row(
        dialogues: DialogueSet) -> None:
    """The answer is thanked for (r18-en, r20-en, r22-en: not judged as good news), in other
    words than the question's own opening, and the low-mood step thanks no one again."""
    _, asked = play(dialogues, "daily_checkin", ["2"])
    opening = asked.replies[-1].text.split(".")[0]
    answered = handle(dialogues, asked.state, Turn(button=runner.SAFETY_NO), context())
    first, second = (reply.text for reply in answered.replies)
    assert first.startswith("Thank you for answering.") and opening not in first
    assert second.startswith("It sounds like today is hard.")


def test_the_groups_question_about_pride_does_not_assume_a_good_week() -> None:
    assert "What are you proud of this week, as a group?" not in groups.GROUP_QUESTIONS
    assert "What, if anything, are you proud of this week, as a group?" in groups.GROUP_QUESTIONS


# A client at their target (8) who feels the goal is reached, and looks back on it.
REACHED = ["8", "Yes", "Running", "Mornings", "Patience", "Stretching"]
NEW_GOAL = ["Sleep by 11", "Energy", "Rested", "4", "Some nights", "/skip", "8", "/skip",
            "/skip", "/skip", "Phone away", "/skip", "Phone in the hall", "2026-12-06", "8"]
WELL_DONE = ("You have a new goal. You also named what you would like to keep doing: "
             "“\u2068Stretching\u2069”.")
LATER = ("All right. Your check-ins are about a goal in progress, so they pause until you "
         "set a new one. Whenever you would like one, send /goal and we will start from there.")


@pytest.mark.parametrize(("answers", "last"), [
    ([*REACHED, "Yes", *NEW_GOAL], WELL_DONE), ([*REACHED, "No"], LATER)])
def test_a_reached_goal_ends_the_review_on_goal_completions_last_words(
        dialogues: DialogueSet, answers: list[str], last: str) -> None:
    said, outcome = play(dialogues, "weekly_review", answers)
    assert said[-1] == last and outcome.state.stack == ()
    assert "Thank you, \u2068Ana\u2069." not in said


# At 5 (from 3, target 8), the client changes the target in the weekly review.
ADJUST_TARGET = ["5", "Mornings", "/skip", "Patience", "Yes", "The target"]
HOLD_CHECK = ("Today you are at 5, and the new target you chose, 5, is not above "
              "that. If you answer No, you can choose another target. Is "
              "your aim to stay at 5 or above?")
NEXT_ACTION = "What, if anything, will you commit to for the coming week? You can send /skip."


def test_a_new_target_at_today_is_asked_about_and_kept_on_a_yes(
        dialogues: DialogueSet) -> None:
    said, outcome = play(dialogues, "weekly_review", [*ADJUST_TARGET, "5", "Yes"])
    assert said[-2:] == [HOLD_CHECK, NEXT_ACTION]
    assert outcome.state.variables["goal.target"] == 5


def test_a_no_to_the_new_target_check_asks_for_the_target_again(
        dialogues: DialogueSet) -> None:
    said, outcome = play(dialogues, "weekly_review",
                         [*ADJUST_TARGET, "5", "No", "4", "No", "9"])
    again = "Where on the same scale from 1 to 10 do you want to be?"
    at_four = HOLD_CHECK.replace("chose, 5,", "chose, 4,").replace("at 5 or", "at 4 or")
    assert said[-5:] == [HOLD_CHECK, again, at_four, again, NEXT_ACTION]
    assert outcome.state.variables["goal.target"] == 9


def test_a_new_target_above_today_is_not_questioned(dialogues: DialogueSet) -> None:
    said, _ = play(dialogues, "weekly_review", [*ADJUST_TARGET, "7"])
    assert said[-1] == NEXT_ACTION


YESTERDAY = {"commitment.last": "Stretch", "commitment.last_days_ago": 1}
SINCE = "Since we last talked, have you moved forward with “\u2068Run 5 km\u2069”?"
BESIDES = "Apart from that step, have you moved forward with “\u2068Run 5 km\u2069”?"


@pytest.mark.parametrize("rating", ["Done", "Part of it", "Not started yet"])
def test_right_after_the_last_commitment_progress_is_asked_apart_from_it(
        dialogues: DialogueSet, rating: str) -> None:
    said, _ = play(dialogues, "daily_checkin", ["7", rating], provided=YESTERDAY)
    assert said[-1] == BESIDES and SINCE not in said


def test_after_a_low_mood_the_last_commitment_is_not_asked_about(dialogues: DialogueSet) -> None:
    said, outcome = play(dialogues, "daily_checkin", ["3", "No"], provided=YESTERDAY)  # goes on
    assert not any("Stretch" in text for text in said)
    assert said[-1] == SINCE and outcome.state.variables["commitment.status"] is None


def test_without_a_commitment_to_rate_progress_is_asked_as_usual_whatever_was_rated_before(
        dialogues: DialogueSet) -> None:
    rated_before = {**GOAL, "commitment.status": "done"}  # an earlier day's answer, still saved
    said, outcome = play(dialogues, "daily_checkin", ["7", "Yes"], variables=rated_before)
    assert said[-2:] == [SINCE, "What helped you move forward?"]
    assert outcome.state.variables["commitment.status"] is None
