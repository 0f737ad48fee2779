"""What the coach's reading r19 asked of the shipped texts: the crisis reply ends on people;
no text the day after a crisis (or of any pause) invites the client to write as if someone
would answer; a pause names the session reminders among what stops; a client who cannot
make a session is not promised what only the coach can do; a changed first step is asked
anew; and the wheel of life ends on a step, as every other exercise does."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bot.dialogue import DialogueSet, load_dialogues
from bot.engine import runner
from tests.content.test_coach_reading_r11 import REPO
from tests.content.test_coach_reading_r12 import context, play


@pytest.fixture(scope="module")
def dialogues() -> DialogueSet:
    return load_dialogues(REPO / "dialogues")


def test_the_crisis_reply_ends_on_people_not_on_the_bot() -> None:
    last = runner.crisis_reply(context(country="IT")).text.split("\n")[-1]
    assert last.startswith("Please also tell someone you trust")
    assert "I am here" not in last


def _texts(path: Path) -> list[str]:
    steps = yaml.safe_load(path.read_text(encoding="utf-8"))["steps"]
    return [text for step in steps.values() for text in
            ([step["say"]] if "say" in step else list(step.get("say_plural", {}).values()))]


@pytest.mark.parametrize("name", ["care_checkin", "reminders"])
def test_no_pause_invites_writing_as_if_someone_would_answer(name: str) -> None:
    assert not any("write to me whenever" in text
                   for text in _texts(REPO / "dialogues" / f"{name}.yaml"))


@pytest.mark.parametrize("choice", ["Pause for some days", "Pause until a date"])
def test_a_pause_says_session_reminders_stop_too(dialogues: DialogueSet, choice: str) -> None:
    said, _ = play(dialogues, "reminders", [choice], variables={})
    assert "session reminders" in said[-1]


def test_a_missed_session_promises_nothing_the_coach_must_do(dialogues: DialogueSet) -> None:
    said, _ = play(dialogues, "session_cant", ["Tuesday evening"], variables={})
    assert said[-1] == "Thank you. I passed it on to your coach, who can move the session."
    # Skipped: nothing was passed on, so nothing is said to have been (r38-hr).
    said, _ = play(dialogues, "session_cant", ["/skip"], variables={})
    assert said[-1] == "All right. Your coach can move the session."


def test_a_changed_first_step_is_asked_anew(dialogues: DialogueSet) -> None:
    steps = dialogues["goal_setting"].steps
    changed = next(b.goto for b in steps["change_step"].next if b.condition is not None)
    assert changed == "new_step"
    assert steps["new_step"].say != steps["first_step"].say


def test_the_wheel_of_life_ends_on_a_step(dialogues: DialogueSet) -> None:
    steps = dialogues["wheel_of_life"].steps
    assert [b.goto for b in steps["next_step"].next] == ["small_step"]
    assert "this week" in (steps["small_step"].say or "")


def test_a_look_back_at_the_end_of_the_sessions_ends_looking_forward(
        dialogues: DialogueSet) -> None:
    steps = dialogues["engagement_close"].steps
    assert [b.goto for b in steps["take_away"].next] == ["keep_doing"]
    assert [b.goto for b in steps["keep_doing"].next] == ["stay"]


def test_a_skipped_exercise_promises_nothing_it_may_not_keep() -> None:
    for path in (REPO / "dialogues" / "exercises").glob("*.yaml"):
        assert "will still be here another day" not in path.read_text(encoding="utf-8"), path


def test_a_skipped_exercise_thanks_only_for_what_was_told(dialogues: DialogueSet) -> None:
    said, told = play(dialogues, "three_good_things", ["Not this time", "A long day at work"],
                      variables={}, at="status")
    assert said[-1] == "Thank you for telling me."
    # Another day, skipped without a word: last time's answer does not count (fresh).
    said, _ = play(dialogues, "three_good_things", ["Not this time", "/skip"],
                   variables=told.state.variables, at="status")
    assert said[-1] == "All right."
