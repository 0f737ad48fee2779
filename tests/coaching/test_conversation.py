"""The conversation service: answers kept, profile and goals applied, in one transaction."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from functools import partial
from pathlib import Path

import pytest
from sqlalchemy import event, select

from bot.coaching.actions import COMMITMENT_VARIABLES
from bot.coaching.conversation import (
    STREAK_VARIABLES,
    Resume,
    Start,
    context_for,
    converse,
    provided_read,
)
from bot.coaching.progress import current_streak, progress_text
from bot.coaching.streaks import streak
from bot.dialogue import DialogueSet, load_dialogues
from bot.engine import ConversationState, Turn
from bot.engine.state import Frame
from bot.store import Answer, Goal, Store, User
from tests.coaching import turns
from tests.coaching.turns import texts

REPO = Path(__file__).parents[2]
NOW = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
USER = 42
say = partial(turns.say, user=USER, now=NOW)


@pytest.fixture(scope="module")
def dialogues() -> DialogueSet:
    return load_dialogues(REPO / "dialogues")





async def test_answers_are_kept_with_their_dialogue_and_step(store: Store,
                                                             dialogues: DialogueSet) -> None:
    await say(store, dialogues, Start("set_timezone"), *texts("Zagreb"))
    async with store.sessionmaker() as session:
        answers = list((await session.execute(select(Answer))).scalars())
    assert [(a.dialogue_id, a.step_id, a.variable, a.value) for a in answers] == [
        ("set_timezone", "city", "profile.time_zone", "Europe/Zagreb")]
    user = await store.get_user(USER)
    assert user is not None and user.time_zone == "Europe/Zagreb"


async def test_reminder_settings_take_effect(store: Store, dialogues: DialogueSet) -> None:
    await say(store, dialogues, Start("reminders"), *texts("1", "7:30"))
    await say(store, dialogues, Start("reminders"), *texts("3", "22:00", "06:30"))
    user = await store.get_user(USER)
    assert user is not None
    assert (user.checkin_hour, user.quiet_start, user.quiet_end) == (7, 22 * 60, 6 * 60 + 30)
    await say(store, dialogues, Start("reminders"), *texts("4", "10"))
    user = await store.get_user(USER)
    assert user is not None and user.paused_until == NOW + timedelta(days=10)
    await say(store, dialogues, Start("reminders"), *texts("5"))
    user = await store.get_user(USER)
    assert user is not None and user.paused_until is None


async def test_a_failing_turn_keeps_nothing(store: Store, dialogues: DialogueSet) -> None:
    await say(store, dialogues, Start("set_timezone"))

    async def broken(t):  # type: ignore[no-untyped-def]
        await converse(t, dialogues, Turn(text="Rome"), NOW)
        raise RuntimeError("the process died here")

    with pytest.raises(RuntimeError):
        await store.run_turn(USER, broken)
    user = await store.get_user(USER)
    assert user is not None and user.time_zone == "UTC"
    outcome = await say(store, dialogues, Resume())
    assert "Which city" in outcome.replies[0].text


def test_streaks_count_today_and_never_punish_a_gap() -> None:
    today = date(2026, 12, 2)
    days = [today - timedelta(days=n) for n in (1, 2, 3, 10, 11, 12, 13, 14)]
    assert streak(days, today) == (4, 5)
    assert streak([], today) == (1, 1)
    assert current_streak(days, today) == (3, 5)
    assert current_streak([*days, today], today) == (4, 5)
    assert current_streak([today - timedelta(days=5)], today) == (0, 1)


async def test_progress_shows_goals_and_streak(store: Store, dialogues: DialogueSet) -> None:
    await say(store, dialogues, Start("set_timezone"))  # first contact creates the user
    async with store.sessionmaker() as session, session.begin():
        session.add(Goal(user_id=USER, title="Run 10k", baseline=3, current=5, target=8,
                         status="active", created_at=NOW))
        for days_ago in (1, 2):
            session.add(Answer(user_id=USER, dialogue_id="daily_checkin", step_id="mood",
                               variable="checkin.mood", marker="checkin.mood", value=7,
                               answered_at=NOW - timedelta(days=days_ago)))
    async with store.sessionmaker() as session:
        user = await session.get(User, USER)
        assert user is not None
        text = await progress_text(session, user, await context_for(session, user, NOW))
    assert text.splitlines() == [
        "• \u2068Run 10k\u2069",
        "  Started at 3, now at 5, aiming for 8 (on a scale of 1 to 10).",
        "Check-ins in a row: 2 days.",
    ]


def reads_streak(dialogues: DialogueSet, state: ConversationState,
                 action: Turn | Start) -> bool:
    return STREAK_VARIABLES in provided_read(dialogues, state, action)


def test_the_streak_is_looked_up_only_for_dialogues_that_read_it(
        dialogues: DialogueSet, tmp_path: Path) -> None:
    idle = ConversationState()
    assert provided_read(dialogues, idle, Start("goal_setting")) == frozenset()
    assert COMMITMENT_VARIABLES in provided_read(dialogues, idle, Start("daily_checkin"))
    assert not reads_streak(dialogues, idle, Start("goal_setting"))
    assert reads_streak(dialogues, idle, Start("daily_checkin"))
    checking_in = ConversationState((Frame("daily_checkin", "mood", ""),))
    assert reads_streak(dialogues, checking_in, Turn(text="4"))
    assert not reads_streak(dialogues, ConversationState((Frame("goal_setting", "why", ""),)),
                            Turn(text="because"))
    (tmp_path / "caller.yaml").write_text(
        "id: caller\ntitle: Caller\nstart: a\nsteps:\n"
        "  a: {say: 'Hi', next: {call: shower, then: b}}\n  b: {say: 'Bye', next: end}\n")
    (tmp_path / "shower.yaml").write_text(
        "id: shower\ntitle: Shower\nstart: a\nsteps:\n"
        "  a: {say: 'Day {streak.days} of your streak', next: end}\n")
    calling = load_dialogues(tmp_path)
    assert reads_streak(calling, idle, Start("caller"))  # through the dialogue it calls


async def test_a_turn_without_the_streak_makes_no_streak_query(
        store: Store, dialogues: DialogueSet) -> None:
    statements: list[str] = []

    def record(_conn, _cursor, statement, *_args):  # type: ignore[no-untyped-def]
        statements.append(statement)

    event.listen(store.engine.sync_engine, "before_cursor_execute", record)
    try:
        await say(store, dialogues, Start("goal_setting"))
        assert not any("answers" in s and s.lstrip().startswith("SELECT") for s in statements)
        statements.clear()
        await say(store, dialogues, Start("daily_checkin"))
        assert any("answers" in s and s.lstrip().startswith("SELECT") for s in statements)
    finally:
        event.remove(store.engine.sync_engine, "before_cursor_execute", record)


async def test_a_holiday_pauses_everything_until_a_date_in_the_clients_zone(
        store: Store, dialogues: DialogueSet) -> None:
    await say(store, dialogues, Start("set_timezone"), *texts("Jerusalem"))
    outcome = await say(store, dialogues, Start("reminders"), *texts("6", "2026-12-20"))
    user = await store.get_user(USER)
    assert user is not None
    assert user.paused_until == datetime(2026, 12, 19, 22, 0, tzinfo=UTC)  # local midnight
    assert outcome.replies[-1].text.startswith("Done. Everything starts again on ")
