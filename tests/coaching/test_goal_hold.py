"""A goal the client chose to hold, in goal setting or at a weekly review (a target at or
below where they stand, "to hold steady?" yes), is held: reaching its target each week leads to
the usual review, never to "does it feel reached?". A later target without that choice ends
the hold, and a new goal starts without it."""

from __future__ import annotations

from datetime import timedelta

from bot.dialogue import DialogueSet
from bot.store import Store
from tests.coaching.test_goal_due import SET_ON, dialogues, goal, play

__all__ = ["dialogues"]  # the module fixture, shared
GOAL = {"goal": "Run a 10k race", "baseline": "3", "target": "8", "due": "/skip"}
WEEK = [SET_ON + timedelta(weeks=n) for n in range(1, 6)]


def _reached(asked: list[str]) -> bool:
    return "confirm" in asked  # goal_completion's question


async def test_a_target_chosen_to_hold_in_a_review_is_held_the_weeks_after(
        store: Store, dialogues: DialogueSet) -> None:
    await play(store, dialogues, "goal_setting", GOAL, SET_ON)
    # Week 1: at 7 (moved up from 3), the client lowers the target to 6, to hold steady.
    asked, _ = await play(store, dialogues, "weekly_review",
                          {"current": "7", "adjust": "yes", "adjust_what": "target",
                           "new_target": "6", "target_check": "yes"}, WEEK[0])
    assert "target_check" in asked and (await goal(store)).holding
    # Weeks 2 and 3: at 7, above the target, the goal is held: the usual review.
    for now in WEEK[1:3]:
        asked, said = await play(store, dialogues, "weekly_review", {"current": "7"}, now)
        assert not _reached(asked) and "retarget" not in asked
        assert said[2] == "You chose to stay at 6 or above, and today you are at 7. Let us " \
                          "look at the week."
    assert (await goal(store)).status == "active"


async def test_a_new_target_without_the_choice_ends_the_hold(store: Store,
                                                             dialogues: DialogueSet) -> None:
    await play(store, dialogues, "goal_setting", GOAL, SET_ON)
    await play(store, dialogues, "weekly_review",
               {"current": "7", "adjust": "yes", "adjust_what": "target", "new_target": "6",
                "target_check": "yes"}, WEEK[0])
    # Week 2: held at 7; the client raises the target to 9, above today.
    await play(store, dialogues, "weekly_review",
               {"current": "7", "adjust": "yes", "adjust_what": "target", "new_target": "9"},
               WEEK[1])
    stored = await goal(store)
    assert (stored.target, stored.holding) == (9, False)
    # Week 3: at 9, the new target is reached, and it is the client's to call complete.
    asked, _ = await play(store, dialogues, "weekly_review",
                          {"current": "9", "confirm": "yes", "next_goal": "no"}, WEEK[2])
    assert _reached(asked) and (await goal(store)).status == "done"


async def test_a_hold_chosen_in_goal_setting_is_kept_and_not_passed_to_the_next_goal(
        store: Store, dialogues: DialogueSet) -> None:
    await play(store, dialogues, "goal_setting",
               {**GOAL, "baseline": "7", "target": "7", "target_check": "yes"}, SET_ON)
    assert (await goal(store)).holding
    asked, said = await play(store, dialogues, "weekly_review", {"current": "8"}, WEEK[0])
    assert not _reached(asked) and said[2].startswith("You chose to stay at 7 or above")
    # A next goal, aimed above its start: not held, whatever the last one was.
    await play(store, dialogues, "goal_setting", {**GOAL, "goal": "Sleep by 23:00"}, WEEK[1])
    stored = await goal(store)
    assert (stored.title, stored.holding) == ("Sleep by 23:00", False)
    asked, _ = await play(store, dialogues, "weekly_review",
                          {"current": "8", "confirm": "no"}, WEEK[2])
    assert _reached(asked)


async def test_a_hold_declined_in_a_review_asks_for_the_target_again(
        store: Store, dialogues: DialogueSet) -> None:
    await play(store, dialogues, "goal_setting", GOAL, SET_ON)
    asked, _ = await play(store, dialogues, "weekly_review",
                          {"current": "7", "adjust": "yes", "adjust_what": "target",
                           "new_target": "6", "target_check": "no", "target_again": "9"},
                          WEEK[0])
    assert "target_again" in asked
    stored = await goal(store)
    assert (stored.target, stored.holding) == (9, False)

