"""What the coach's reading r11 asked of the shipped dialogues, walked through the engine: a
low mood keeps the check-in short as it says, the preparation's end says who sees it, an open
goal's weekly review does not close twice, and every dialogue in dialogues/ is started by
something (a dialogue nothing starts cannot keep the promises its texts make)."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from datetime import date
from pathlib import Path

import pytest

from bot.coaching.assignments import exercise_ids
from bot.dialogue import DialogueSet, load_dialogues
from bot.dialogue.expr import Value
from bot.engine import Context, ConversationState, Outcome, Turn, handle, start
from bot.i18n import translator_for

REPO = Path(__file__).parents[2]
GOAL = {"goal.title": "Run 5 km", "goal.baseline": 3, "goal.target": 8}


@pytest.fixture(scope="module")
def dialogues() -> DialogueSet:
    return load_dialogues(REPO / "dialogues")


def ctx(provided: Mapping[str, Value] | None = None) -> Context:
    return Context(translator=translator_for("en"), today=date(2026, 12, 5), name="Ana",
                   provided=provided or {})


def walk(dialogues: DialogueSet, dialogue: str, answers: list[str],
         provided: Mapping[str, Value] | None = None) -> list[str]:
    """Every text the client reads, answering each question in turn (a choice by its label)."""
    outcome = start(dialogues, ConversationState(variables=GOAL), dialogue, ctx(provided))
    said = [r.text for r in outcome.replies]
    for answer in answers:
        outcome = _answer(dialogues, outcome, answer, ctx(provided))
        said += [r.text for r in outcome.replies]
    return said


def _answer(dialogues: DialogueSet, outcome: Outcome, answer: str, context: Context) -> Outcome:
    buttons = {b.label: b.data for r in outcome.replies for b in r.buttons}
    turn = Turn(button=buttons[answer]) if answer in buttons else Turn(text=answer)
    return handle(dialogues, outcome.state, turn, context)


STREAK = {"streak.days": 5, "streak.best": 5}


def test_after_a_low_mood_the_check_in_is_as_short_as_it_says(dialogues: DialogueSet) -> None:
    said = walk(dialogues, "daily_checkin", ["3", "No", "Yes", "Walk to work"], STREAK)
    assert ("All right. We will keep it short. You can stop at any time with /cancel, and /sos "
            "shows who you can talk to.") in said
    assert not any("in a row" in text or "longest run" in text for text in said)
    assert said[-2].startswith("If you like, what is one small thing you could do towards")
    assert "What helped you move forward?" not in said
    assert said[-1] == ("Noted: “\u2068Walk to work\u2069”. Thank you for checking in, "
                        "\u2068Ana\u2069.")


def test_on_a_good_day_the_check_in_follows_up_on_progress(dialogues: DialogueSet) -> None:
    said = walk(dialogues, "daily_checkin", ["7", "Yes", "Mornings", "Walk to work"], STREAK)
    assert any("in a row" in text for text in said)
    assert "What helped you move forward?" in said


def test_a_low_mood_that_stops_names_sos(dialogues: DialogueSet) -> None:
    said = walk(dialogues, "daily_checkin", ["3", "Yes"])
    assert ("/sos shows who you can talk to, including the emergency number, which answers at "
            "any hour" in said[-1])


@pytest.mark.parametrize(("briefed", "end"), [
    (True, "Thank you, \u2068Ana\u2069. Your coach receives your answers an hour before the "
           "session."),
    (False, "Thank you, \u2068Ana\u2069. Your answers stay with you. If you ever want your "
            "coach to see them before a session, send /brief."),
])
def test_the_preparation_ends_by_saying_who_sees_it(dialogues: DialogueSet, briefed: bool,
                                                    end: str) -> None:
    said = walk(dialogues, "session_prep", ["A calm week", "Clarity", "Skip it"],
                {"prep.briefed": briefed, "notes.count": 0})
    assert said[-1] == end


def test_an_open_goal_goes_on_to_the_week_without_a_second_closing(
        dialogues: DialogueSet) -> None:
    said = walk(dialogues, "weekly_review", ["8", "No", "A steady pace"])
    at = said.index("All right: your goal stays open.")
    assert said[at + 1:] == ["Let us look at the week.",
                             "What, if anything, helped you this week? You can send /skip."]


def _named_in_code() -> set[str]:
    """Every string literal in bot/."""
    names: set[str] = set()
    for path in (REPO / "bot").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                names.add(node.value)
    return names


def test_every_dialogue_is_started_by_something(dialogues: DialogueSet) -> None:
    """By the code (its id is named there), by another dialogue (call), or as an exercise
    (/exercises and a coach's /assign offer those)."""
    called = {m for path in (REPO / "dialogues").rglob("*.yaml")
              for m in re.findall(r"call: (\w+)", path.read_text(encoding="utf-8"))}
    started = _named_in_code() | called | exercise_ids(dialogues)
    unstarted = {d for d in dialogues.dialogues if d not in started}
    assert unstarted == set()
    assert "exercise_reflection" not in dialogues.dialogues  # r11 #24: removed, not wired
