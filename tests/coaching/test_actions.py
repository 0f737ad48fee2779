"""Commitments as rows: collected from the dialogues, asked about the next day in the
client's words (a first step or a session's commitment the day after its date), listed for
the weekly review and the coach, marked by the client."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from functools import partial
from pathlib import Path

import pytest
from sqlalchemy import select

from bot.coaching.actions import actions_summary, open_actions, set_status, summary_lines
from bot.coaching.conversation import Start
from bot.dialogue import DialogueSet, load_dialogues
from bot.engine import Turn
from bot.i18n import translator_for
from bot.store import ActionSource, ActionStatus, CommitmentAction, Goal, Store
from tests.coaching import turns

REPO = Path(__file__).parents[2]
MONDAY = datetime(2026, 12, 7, 8, 0, tzinfo=UTC)  # 09:00 in Rome
USER = 42
say = partial(turns.say, user=USER, now=MONDAY, time_zone="Europe/Rome")
SKIP = Turn(command="skip")


@pytest.fixture(scope="module")
def dialogues() -> DialogueSet:
    return load_dialogues(REPO / "dialogues")



async def _with_goal(store: Store) -> None:
    await store.run_turn(USER, lambda t: _noop(t))
    async with store.sessionmaker() as s, s.begin():
        s.add(Goal(user_id=USER, title="Run 5 km", baseline=3, current=3, target=8,
                   created_at=MONDAY - timedelta(days=7)))


async def _noop(t: object) -> None:
    return None


async def _actions(store: Store) -> list[CommitmentAction]:
    async with store.sessionmaker() as s:
        return list((await s.execute(select(CommitmentAction).order_by(CommitmentAction.id)))
                    .scalars())


async def test_the_next_check_in_asks_about_yesterdays_commitment_in_the_clients_words(
        store: Store, dialogues: DialogueSet) -> None:
    await _with_goal(store)
    first = await say(store, dialogues, Start("daily_checkin"))
    assert first.replies[0].text.startswith("Hello")
    assert "How are you feeling today" in first.replies[0].text  # nothing to ask about yet
    await say(store, dialogues, Turn(text="7"), Turn(text="A little"), Turn(text="some of it"),
              Turn(text="Call Ana about the plan"))
    [action] = await _actions(store)
    assert (action.words, action.source, action.due_on, action.status) == (
        "Call Ana about the plan", ActionSource.DAILY, date(2026, 12, 7), ActionStatus.OPEN)

    tuesday = MONDAY + timedelta(days=1)
    asked = await say(store, dialogues, Start("daily_checkin"), Turn(text="7"), now=tuesday)
    [question] = asked.replies  # the person first, then the commitment
    assert question.text.startswith("Thank you. Yesterday you said you would do this:")
    assert "\u2068Call Ana about the plan\u2069" in question.text
    assert question.text.endswith("Where are you with it?")
    assert [b.label for b in question.buttons] == ["Done", "Part of it", "Not started yet",
                                                 "I am letting it go"]
    then = await say(store, dialogues, Turn(button=question.buttons[0].data), now=tuesday)
    assert "Apart from that step" in then.replies[-1].text
    [action] = await _actions(store)
    assert action.status == ActionStatus.DONE and action.closed_at == tuesday


async def test_a_commitment_from_days_ago_not_done_stays_open(
        store: Store, dialogues: DialogueSet) -> None:
    await _with_goal(store)
    await say(store, dialogues, Start("daily_checkin"), Turn(text="7"), Turn(text="A little"),
              Turn(text="some"), Turn(text="Write the draft"))
    thursday = MONDAY + timedelta(days=3)
    asked = await say(store, dialogues, Start("daily_checkin"), Turn(text="7"), now=thursday)
    assert "3 days ago you said you would do this:" in asked.replies[0].text
    await say(store, dialogues, Turn(text="Not started yet"), now=thursday)
    [action] = await _actions(store)
    assert action.status == ActionStatus.OPEN
    async with store.sessionmaker() as s:
        summary = await actions_summary(s, USER, MONDAY - timedelta(days=1),
                                        thursday.date())
    assert [a.words for a in summary.overdue] == ["Write the draft"] and not summary.open
    lines = summary_lines(summary, thursday.date(), translator_for("en"))
    assert lines[0] == "Actions past their date:"
    assert lines[1].endswith("; that date has passed)")


async def test_a_week_later_the_commitment_is_no_longer_asked_about(
        store: Store, dialogues: DialogueSet) -> None:
    await _with_goal(store)
    await say(store, dialogues, Start("daily_checkin"), Turn(text="7"), Turn(text="A little"),
              Turn(text="some"), Turn(text="Write the draft"))
    later = MONDAY + timedelta(days=8)
    asked = await say(store, dialogues, Start("daily_checkin"), now=later)
    assert "How are you feeling today" in asked.replies[0].text


async def test_the_weekly_action_and_the_first_step_are_kept_with_their_dates(
        store: Store, dialogues: DialogueSet) -> None:
    await _with_goal(store)
    await say(store, dialogues, Start("weekly_review"), Turn(text="5"), Turn(text="Friends"),
              SKIP, Turn(text="Small steps work"), Turn(text="No"),
              Turn(text="Run twice this week"))
    await say(store, dialogues, Start("goal_setting"), Turn(text="Speak Italian"),
              Turn(text="family"), Turn(text="chatting"), Turn(text="2"),
              Turn(text="a few words"), SKIP, Turn(text="7"),
              SKIP, SKIP, SKIP,
              Turn(text="lessons"), SKIP, Turn(text="Book a lesson"),
              Turn(text="2026-12-10"), Turn(text="9"))
    actions = await _actions(store)
    assert [(a.words, a.source, a.due_on) for a in actions] == [
        ("Run twice this week", ActionSource.WEEKLY, date(2026, 12, 14)),
        ("Book a lesson", ActionSource.FIRST_STEP, date(2026, 12, 10)),
    ]


async def test_the_weekly_review_goes_through_open_and_overdue_actions(
        store: Store, dialogues: DialogueSet) -> None:
    await _with_goal(store)
    async with store.sessionmaker() as s, s.begin():
        s.add(CommitmentAction(user_id=USER, words="Old one", source=ActionSource.DAILY,
                               due_on=date(2026, 12, 1), created_at=MONDAY))
        s.add(CommitmentAction(user_id=USER, words="New one", source=ActionSource.WEEKLY,
                               due_on=date(2026, 12, 9), created_at=MONDAY))
    out = await say(store, dialogues, Start("weekly_review"), Turn(text="5"),
                    Turn(text="Friends"), SKIP, Turn(text="Small steps"))
    text = out.replies[-1].text
    assert text.startswith("You have 2 open actions, and at least one of them is past its date:")
    assert "Old one" in text and "that date has passed" in text and "New one" in text
    assert "/actions" in text


async def test_only_the_clients_own_open_actions_can_be_marked(store: Store) -> None:
    await store.run_turn(USER, _noop)
    await store.run_turn(USER + 1, _noop)
    async with store.sessionmaker() as s, s.begin():
        mine = CommitmentAction(user_id=USER, words="Mine", source=ActionSource.DAILY,
                                due_on=date(2026, 12, 7), created_at=MONDAY)
        theirs = CommitmentAction(user_id=USER + 1, words="Theirs", source=ActionSource.DAILY,
                                  due_on=date(2026, 12, 7), created_at=MONDAY)
        s.add_all([mine, theirs])
    async with store.sessionmaker() as s, s.begin():
        assert not await set_status(s, USER, theirs.id, ActionStatus.DONE, MONDAY)
        assert await set_status(s, USER, mine.id, ActionStatus.DROPPED, MONDAY)
        assert not await set_status(s, USER, mine.id, ActionStatus.DONE, MONDAY)  # not open
        assert await open_actions(s, USER) == []


async def test_the_first_step_is_asked_about_in_the_check_in_once_its_date_has_passed(
        store: Store, dialogues: DialogueSet) -> None:
    await say(store, dialogues, Start("goal_setting"), Turn(text="Speak Italian"),
              Turn(text="family"), Turn(text="chatting"), Turn(text="2"),
              Turn(text="a few words"), SKIP, Turn(text="7"),
              SKIP, SKIP, SKIP,
              Turn(text="lessons"), SKIP, Turn(text="Book a lesson"),
              Turn(text="2026-12-10"), Turn(text="9"))
    on_its_date = await say(store, dialogues, Start("daily_checkin"),
                            now=MONDAY + timedelta(days=3))
    assert "How are you feeling today" in on_its_date.replies[0].text
    await say(store, dialogues, Turn(text="7"), Turn(text="Yes"), Turn(text="practice"),
              Turn(text="Listen to a podcast"), now=MONDAY + timedelta(days=3))
    async with store.sessionmaker() as s, s.begin():  # the daily one rated already
        daily = (await s.execute(select(CommitmentAction).where(
            CommitmentAction.source == ActionSource.DAILY))).scalar_one()
        daily.status = ActionStatus.DONE
    friday = MONDAY + timedelta(days=4)
    asked = await say(store, dialogues, Start("daily_checkin"), Turn(text="7"), now=friday)
    # Said on Monday, due on Thursday: asked on Friday, counted from when it was said.
    assert "4 days ago you said you would do this: “\u2068Book a lesson\u2069”." \
        in asked.replies[0].text
    await say(store, dialogues, Turn(text="Done"), now=friday)
    first_step = next(a for a in await _actions(store) if a.source == ActionSource.FIRST_STEP)
    assert first_step.status == ActionStatus.DONE


async def test_a_session_commitment_is_asked_about_once_its_date_has_passed(
        store: Store, dialogues: DialogueSet) -> None:
    await _with_goal(store)
    async with store.sessionmaker() as s, s.begin():
        s.add(CommitmentAction(user_id=USER, words="Ask for feedback",
                               source=ActionSource.SESSION, due_on=date(2026, 12, 6),
                               created_at=MONDAY - timedelta(days=5)))
    asked = await say(store, dialogues, Start("daily_checkin"), Turn(text="7"))
    assert "5 days ago you said you would do this: “\u2068Ask for feedback\u2069”." \
        in asked.replies[0].text


async def test_the_weekly_action_is_left_to_the_weekly_review(
        store: Store, dialogues: DialogueSet) -> None:
    await _with_goal(store)
    async with store.sessionmaker() as s, s.begin():
        s.add(CommitmentAction(user_id=USER, words="Run twice", source=ActionSource.WEEKLY,
                               due_on=date(2026, 12, 6), created_at=MONDAY - timedelta(days=8)))
    asked = await say(store, dialogues, Start("daily_checkin"))
    assert "How are you feeling today" in asked.replies[0].text


async def test_a_commitment_the_client_lets_go_is_dropped_and_never_asked_about_again(
        store: Store, dialogues: DialogueSet) -> None:
    await _with_goal(store)
    await say(store, dialogues, Start("daily_checkin"), Turn(text="7"), Turn(text="A little"),
              Turn(text="some"), Turn(text="Write the draft"))
    wednesday = MONDAY + timedelta(days=2)
    [question] = (await say(store, dialogues, Start("daily_checkin"), Turn(text="7"),
                            now=wednesday)).replies
    assert "2 days ago you said you would do this:" in question.text
    assert question.buttons[-1].label == "I am letting it go"
    then = await say(store, dialogues, Turn(button=question.buttons[-1].data), now=wednesday)
    # Straight on, with no question about why.
    assert "moved forward" in then.replies[-1].text and "why" not in then.replies[-1].text
    [action] = await _actions(store)
    assert action.status == ActionStatus.DROPPED and action.closed_at == wednesday

    for days in (3, 4):  # not asked again the next days, though within the week
        asked = await say(store, dialogues, Start("daily_checkin"), Turn(text="7"),
                          now=MONDAY + timedelta(days=days))
        assert not any("you said you would do this" in r.text for r in asked.replies)
        await say(store, dialogues, Turn(command="cancel"), now=MONDAY + timedelta(days=days))


async def test_the_coach_sees_a_let_go_action_as_the_clients_choice_not_as_overdue(
        store: Store) -> None:
    await store.run_turn(USER, _noop)
    async with store.sessionmaker() as s, s.begin():
        s.add(CommitmentAction(user_id=USER, words="Write the draft", source=ActionSource.DAILY,
                               due_on=date(2026, 12, 1), created_at=MONDAY,
                               status=ActionStatus.DROPPED, closed_at=MONDAY))
    async with store.sessionmaker() as s:
        summary = await actions_summary(s, USER, MONDAY - timedelta(days=1), MONDAY.date())
    assert not summary.overdue and not summary.done and not summary.open
    assert [a.words for a in summary.let_go] == ["Write the draft"]
    lines = summary_lines(summary, MONDAY.date(), translator_for("en"))
    assert lines[0] == "Actions they chose to let go:"
    assert "Write the draft" in lines[1] and "overdue" not in lines[1]
