"""Whatever a client sends, in any order, the engine neither crashes nor corrupts state."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.dialogue import DialogueSet, load_dialogues
from bot.dialogue.model import END
from bot.engine import Context, ConversationState, Turn, handle, runner, start
from bot.engine.answers import Invalid, parse_answer
from bot.i18n import translator_for

# Loaded once: the engine only reads them (loading the shipped ones in every example was
# most of this file's time).
DIALOGUES = load_dialogues(Path(__file__).parent / "dialogues")
REPO_DIALOGUES = load_dialogues(Path(__file__).parents[2] / "dialogues")
TODAY = date(2026, 12, 2)
CTX = Context(translator=translator_for("en"), today=TODAY, name="Ana")


@pytest.fixture(autouse=True)
def no_crisis_in_random_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """These properties are the dialogues' mechanics; what the crisis detector makes of random
    strings is measured by bench.crisis, and its two levels by tests/engine/test_safety.py."""
    monkeypatch.setattr(runner, "detect_crisis", lambda text: None)

turns = st.one_of(
    st.builds(Turn, text=st.text(max_size=600)),
    st.builds(Turn, text=st.sampled_from(["1", "5", "10", "yes", "no", "today", "7:30",
                                          "2026-12-24", "red", "blue", "done", "not_yet"])),
    st.builds(Turn, button=st.text(max_size=70)),
    st.builds(Turn, command=st.sampled_from(["cancel", "back", "skip"])),
    st.integers(min_value=0, max_value=11).map(lambda i: Turn(button=f"press:{i}")),
)


def assert_consistent(dialogues: DialogueSet, state: ConversationState) -> None:
    for index, frame in enumerate(state.stack):
        dialogue = dialogues[frame.dialogue]
        on_top = index == len(state.stack) - 1
        if on_top:
            assert dialogue.steps[frame.step].ask.type != "none"
        else:
            assert frame.step == END or frame.step in dialogue.steps
    assert ConversationState.from_dict(json.loads(json.dumps(state.to_dict()))) == state


def press(state_replies: tuple[object, ...], turn: Turn) -> Turn:
    """Map 'press:i' to the i-th button shown, so real buttons get pressed often."""
    if turn.button and turn.button.startswith("press:"):
        buttons = [b for r in state_replies for b in r.buttons]  # type: ignore[attr-defined]
        if buttons:
            return Turn(button=buttons[int(turn.button[6:]) % len(buttons)].data)
    return turn


def run_property(dialogues: DialogueSet, dialogue_id: str, ctx: Context,
                 sequence: list[Turn]) -> None:
    outcome = start(dialogues, ConversationState(), dialogue_id, ctx)
    assert_consistent(dialogues, outcome.state)
    for raw_turn in sequence:
        turn = press(outcome.replies, raw_turn)
        before = outcome.state
        outcome = handle(dialogues, before, turn, ctx)
        assert outcome.replies, "every message gets an answer"
        assert_consistent(dialogues, outcome.state)
        # (With go_on, the open question is the safety question, not the step on top.)
        if before.active and not before.go_on and turn.text is not None and not turn.command:
            step = dialogues[before.stack[-1].dialogue].steps[before.stack[-1].step]
            if isinstance(parse_answer(step.ask, turn.text, ctx.translator, TODAY), Invalid):
                assert outcome.state == before, "a wrong answer changes nothing"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), sequence=st.lists(turns, max_size=25))
def test_random_turns_on_the_test_dialogues(data: st.DataObject, sequence: list[Turn]) -> None:
    dialogue_id = data.draw(st.sampled_from(sorted(DIALOGUES.dialogues)))
    run_property(DIALOGUES, dialogue_id, CTX, sequence)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), sequence=st.lists(turns, max_size=30))
def test_random_turns_on_the_shipped_dialogues(data: st.DataObject,
                                               sequence: list[Turn]) -> None:
    dialogue_id = data.draw(st.sampled_from(sorted(REPO_DIALOGUES.dialogues)))
    run_property(REPO_DIALOGUES, dialogue_id, CTX, sequence)
