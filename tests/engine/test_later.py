"""A dialogue that comes back later on its own: the engine decides the day, the platform plans."""

from __future__ import annotations

from dataclasses import replace
from datetime import time, timedelta

import pytest

from bot.dialogue import DialogueSet
from bot.engine import Context, ConversationState, Later, Turn, handle, start
from bot.engine.runner import LATER_MIN_GAP

from .conftest import TODAY


def test_early_in_the_day_it_comes_back_this_evening(dialogues: DialogueSet,
                                                     ctx: Context) -> None:
    outcome = start(dialogues, ConversationState(), "day_long", replace(ctx, clock=time(9, 30)))
    assert [r.text for r in outcome.replies] == [
        "Do it over the day.", "This evening at 7:00\u202fPM I will ask."]
    assert outcome.later == Later("day_long", "ask", TODAY, time(19))
    assert outcome.state.variables["later.tomorrow"] is False
    assert outcome.finished == ("day_long",) and not outcome.state.active


@pytest.mark.parametrize("clock", [time(16, 1), time(18, 0), time(19, 0), time(23, 59)])
def test_with_too_little_of_the_day_left_it_comes_back_tomorrow(
        dialogues: DialogueSet, ctx: Context, clock: time) -> None:
    outcome = start(dialogues, ConversationState(), "day_long", replace(ctx, clock=clock))
    assert outcome.replies[-1].text == "Tomorrow at 7:00\u202fPM I will ask."
    assert outcome.later == Later("day_long", "ask", TODAY + timedelta(days=1), time(19))


def test_exactly_the_gap_before_is_still_today(dialogues: DialogueSet, ctx: Context) -> None:
    assert timedelta(hours=3) == LATER_MIN_GAP
    outcome = start(dialogues, ConversationState(), "day_long", replace(ctx, clock=time(16)))
    assert outcome.later is not None and outcome.later.on == TODAY


def test_the_default_clock_is_midnight(dialogues: DialogueSet, ctx: Context) -> None:
    outcome = start(dialogues, ConversationState(), "day_long", ctx)
    assert outcome.later is not None and outcome.later.on == TODAY


def test_coming_back_starts_at_the_step_with_the_answers_asked_anew(
        dialogues: DialogueSet, ctx: Context) -> None:
    earlier = ConversationState(variables={"day.how": "An old answer"})
    outcome = start(dialogues, earlier, "day_long", ctx, at="ask")
    assert [r.text for r in outcome.replies] == ["How did it go?"]
    assert outcome.later is None
    assert outcome.state.variables["day.how"] is None
    outcome = handle(dialogues, outcome.state, Turn(text="Well"), ctx)
    assert [(a.dialogue, a.step, a.value) for a in outcome.saved] == [("day_long", "ask", "Well")]
    assert outcome.finished == ("day_long",)


def test_coming_back_at_a_step_an_edit_removed_starts_over(dialogues: DialogueSet,
                                                           ctx: Context) -> None:
    outcome = start(dialogues, ConversationState(), "day_long", ctx, at="gone")
    assert outcome.replies[0].text == "Do it over the day."


def test_a_dialogue_without_later_plans_nothing(dialogues: DialogueSet, ctx: Context) -> None:
    assert start(dialogues, ConversationState(), "all_types", ctx).later is None
