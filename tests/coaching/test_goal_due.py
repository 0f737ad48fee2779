"""The date a client set for their goal comes up in the first weekly review on or after it
(by the client's local today), below the target, and their choice is kept: done, a new date,
or a changed goal."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from sqlalchemy import select

from bot.coaching.checkins import has_active_goal
from bot.coaching.conversation import Start, converse
from bot.dialogue import DialogueSet, load_dialogues
from bot.engine import Turn
from bot.store import Goal, Store

REPO = Path(__file__).parents[2]
SET_ON = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
BEFORE = datetime(2026, 12, 16, 9, 0, tzinfo=UTC)
AFTER = datetime(2026, 12, 23, 9, 0, tzinfo=UTC)
WEEK_LATER = datetime(2026, 12, 30, 9, 0, tzinfo=UTC)
DEFAULTS = {"text": "In my own words", "scale": "5", "yes_no": "no", "date": "tomorrow",
            "time": "08:00", "timezone": "Rome", "number": "3"}
GOAL = {"goal": "Run a 10k race", "baseline": "3", "target": "8", "commitment": "9",
        "due": "2026-12-20"}
SKIP = "/skip"
CAME = "has come."  # "The date you set for “Run a 10k race” has come."


@pytest.fixture(scope="module")
def dialogues() -> DialogueSet:
    return load_dialogues(REPO / "dialogues")


async def play(store: Store, dialogues: DialogueSet, dialogue_id: str, answers: dict[str, str],
               now: datetime, user: int = 7, zone: str | None = None) -> tuple[list[str],
                                                                                 list[str]]:
    """Answer every question (by step id where given, else a plausible answer for its type)
    at `now`; the steps asked and the texts said, in order."""
    asked: list[str] = []
    said: list[str] = []
    where: list[tuple[str, str]] = []

    async def step(action: Turn | Start) -> bool:
        async def run(t):  # type: ignore[no-untyped-def]
            t.user.consent_at = t.user.consent_at or SET_ON
            t.user.time_zone = zone or t.user.time_zone
            return await converse(t, dialogues, action, now)

        outcome = await store.run_turn(user, run)
        said.extend(reply.text for reply in outcome.replies)
        if outcome.state.active:
            frame = outcome.state.stack[-1]
            where.append((frame.dialogue, frame.step))
            asked.append(frame.step)
        return bool(outcome.state.active)

    active = await step(Start(dialogue_id))
    for _ in range(200):
        if not active:
            return asked, said
        ask = dialogues[where[-1][0]].steps[where[-1][1]].ask
        default = ask.options[0].key if ask.type == "choice" else DEFAULTS[ask.type]
        answer = answers.get(asked[-1], default)
        active = await step(Turn(command="skip") if answer == SKIP else Turn(text=answer))
    raise AssertionError(f"the dialogue did not end: {asked[-5:]}")


async def goal(store: Store, user: int = 7) -> Goal:
    async with store.sessionmaker() as session:
        return (await session.execute(select(Goal).where(Goal.user_id == user)
                                      .order_by(Goal.id.desc()).limit(1))).scalar_one()


async def test_the_review_before_the_date_is_unchanged(store: Store,
                                                        dialogues: DialogueSet) -> None:
    await play(store, dialogues, "goal_setting", GOAL, SET_ON, user=7)
    await play(store, dialogues, "goal_setting", {**GOAL, "due": "/skip"}, SET_ON, user=8)
    dated = await play(store, dialogues, "weekly_review", {"current": "5"}, BEFORE, user=7)
    undated = await play(store, dialogues, "weekly_review", {"current": "5"}, BEFORE, user=8)
    assert dated == undated
    assert "date_come" not in dated[0]


async def test_the_first_review_after_the_date_brings_it_up(store: Store,
                                                             dialogues: DialogueSet) -> None:
    await play(store, dialogues, "goal_setting", GOAL, SET_ON)
    asked, said = await play(store, dialogues, "weekly_review",
                             {"current": "5", "date_come": "new_date", "new_due": "/skip"},
                             AFTER)
    assert asked[:3] == ["current", "date_come", "new_due"]
    assert any(CAME in text and "Run a 10k race" in text for text in said)


async def test_it_goes_by_the_clients_local_day(store: Store, dialogues: DialogueSet) -> None:
    await play(store, dialogues, "goal_setting", GOAL, SET_ON, zone="Pacific/Kiritimati")
    late_on_the_19th_utc = datetime(2026, 12, 19, 11, 0, tzinfo=UTC)  # the 20th, at UTC+14
    asked, _ = await play(store, dialogues, "weekly_review",
                          {"current": "5", "date_come": "new_date"}, late_on_the_19th_utc)
    assert "date_come" in asked


async def test_a_new_date_is_kept_and_not_brought_up_again(store: Store,
                                                           dialogues: DialogueSet) -> None:
    await play(store, dialogues, "goal_setting", GOAL, SET_ON)
    asked, _ = await play(store, dialogues, "weekly_review",
                          {"current": "5", "date_come": "new_date", "new_due": "2027-01-31"},
                          AFTER)
    assert asked[-1] == "next_action" and "helped" in asked  # the review goes on as usual
    assert (await goal(store)).due_on == date(2027, 1, 31)
    asked, said = await play(store, dialogues, "weekly_review", {"current": "5"}, WEEK_LATER)
    assert "date_come" not in asked and not any(CAME in text for text in said)


async def test_reached_goes_to_goal_completion(store: Store, dialogues: DialogueSet) -> None:
    await play(store, dialogues, "goal_setting", GOAL, SET_ON)
    asked, _ = await play(store, dialogues, "weekly_review",
                          {"current": "6", "date_come": "reached", "mark": "yes",
                           "next_goal": "no"}, AFTER)
    # Chosen already: not asked again whether it feels reached, only whether to mark it.
    assert "mark" in asked and "confirm" not in asked
    assert (await goal(store)).status == "done"


async def test_not_complete_after_all_asks_for_a_new_date(store: Store,
                                                          dialogues: DialogueSet) -> None:
    await play(store, dialogues, "goal_setting", GOAL, SET_ON)
    asked, _ = await play(store, dialogues, "weekly_review",
                          {"current": "6", "date_come": "reached", "mark": "no",
                           "due_again": "2027-02-01"}, AFTER)
    # It felt reached to them: not asked what would make it feel complete (r18-en).
    assert "not_complete" not in asked
    assert asked.index("before_marking") < asked.index("due_again") < asked.index("helped")
    stored = await goal(store)
    assert (stored.status, stored.due_on) == ("active", date(2027, 2, 1))


async def test_changing_the_goal_ends_with_its_date(store: Store,
                                                    dialogues: DialogueSet) -> None:
    await play(store, dialogues, "goal_setting", GOAL, SET_ON)
    asked, _ = await play(store, dialogues, "weekly_review",
                          {"current": "5", "date_come": "change", "adjust_what": "wording",
                           "new_title": "Run a 5k race", "new_due": "/skip"}, AFTER)
    assert "adjust" not in asked  # chosen already: straight to what to change
    assert asked.index("helped") < asked.index("adjust_what") < asked.index("new_due") \
        < asked.index("next_action")
    stored = await goal(store)
    assert (stored.title, stored.due_on) == ("Run a 5k race", None)
    asked, _ = await play(store, dialogues, "weekly_review", {"current": "5"}, WEEK_LATER)
    assert "date_come" not in asked


async def test_a_goal_without_a_date_never_brings_it_up(store: Store,
                                                        dialogues: DialogueSet) -> None:
    await play(store, dialogues, "goal_setting", {**GOAL, "due": "/skip"}, SET_ON)
    for now in (AFTER, datetime(2028, 6, 1, 9, 0, tzinfo=UTC)):
        asked, said = await play(store, dialogues, "weekly_review", {"current": "5"}, now)
        assert "date_come" not in asked and not any(CAME in text for text in said)


async def test_at_the_target_goal_completion_runs_as_before(store: Store,
                                                            dialogues: DialogueSet) -> None:
    await play(store, dialogues, "goal_setting", GOAL, SET_ON)
    asked, _ = await play(store, dialogues, "weekly_review",
                          {"current": "8", "confirm": "yes", "next_goal": "no"}, AFTER)
    assert "date_come" not in asked and "confirm" in asked and "mark" not in asked


async def test_letting_the_goal_go_ends_it_without_a_why(store: Store,
                                                         dialogues: DialogueSet) -> None:
    await play(store, dialogues, "goal_setting", GOAL, SET_ON)
    asked, said = await play(store, dialogues, "weekly_review",
                             {"current": "5", "date_come": "let_go"}, AFTER)
    # The client owns the goal: letting it go is an outcome, confirmed, and not asked about.
    assert asked == ["current", "date_come"]
    # It says what stops with it, as goal completion does: the check-ins need a goal.
    assert said[-1] == ("All right: “\u2068Run a 10k race\u2069” is no longer your goal. Your "
                        "check-ins are about a goal in progress, so they pause until you set a "
                        "new one. When you would like one, send /goal.")
    assert (await goal(store)).status == "dropped"
    async with store.sessionmaker() as session:
        assert not await has_active_goal(session, 7)  # no weekly review comes for it
