"""The client chooses on which days the daily check-in comes, in /reminders: applied at once,
planned only on those days, exported and erased with them (SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

import pytest
from sqlalchemy import insert

from bot.coaching.conversation import Start
from bot.dialogue import DialogueSet, load_dialogues
from bot.engine import Outcome, Turn
from bot.schedule.planner import plan
from bot.store import Goal, Store
from tests.coaching import turns
from tests.coaching.turns import texts
from tests.store.store_helpers import raw

REPO = Path(__file__).parents[2]
FRIDAY_EVENING = datetime(2026, 12, 4, 18, 0, tzinfo=UTC)
USER = 43
say = partial(turns.say, user=USER, now=FRIDAY_EVENING)


@pytest.fixture(scope="module")
def dialogues() -> DialogueSet:
    return load_dialogues(REPO / "dialogues")




def last_text(outcome: Outcome) -> str:
    return outcome.replies[-1].text


async def days_of(store: Store) -> int | None:
    user = await store.get_user(USER)
    assert user is not None
    return user.checkin_days


async def test_working_days_named_days_and_every_day(store: Store,
                                                     dialogues: DialogueSet) -> None:
    await say(store, dialogues, Start("set_timezone"), *texts("Jerusalem"))
    menu = await say(store, dialogues, Start("reminders"))
    assert [b.label for b in menu.replies[-1].buttons][:2] == ["Check-in time", "Check-in days"]
    asked = await say(store, dialogues, Turn(text="days"))
    assert last_text(asked) == "On which days would you like your check-in?"
    assert [b.label for b in asked.replies[-1].buttons] == [
        "Every day", "Working days only", "Let me choose the days"]
    done = await say(store, dialogues, Turn(text="working"))
    # Israel's working week, in its own order, in words.
    assert last_text(done) == ("Done. Check-in days: Sunday, Monday, Tuesday, Wednesday, "
                               "and Thursday.")
    assert await days_of(store) == 0b1001111

    await say(store, dialogues, Start("reminders"), Turn(text="days"), Turn(text="choose"))
    wrong = await say(store, dialogues, *texts("Funday"))
    assert "did not recognise those as days of the week" in last_text(wrong)
    assert await days_of(store) == 0b1001111  # nothing changes on a wrong answer
    named = await say(store, dialogues, *texts("thursday, Sun"))
    assert "Check-in days: Sunday and Thursday." in last_text(named)
    assert await days_of(store) == 1 << 6 | 1 << 3

    hour = await say(store, dialogues, Start("reminders"), Turn(text="hour"),
                     *texts("07:30"))
    assert last_text(hour).startswith("Done. New check-in time: ")
    assert last_text(hour).endswith("Your check-in days stay the same: Sunday and Thursday.")

    every = await say(store, dialogues, Start("reminders"), Turn(text="days"),
                      Turn(text="every"))
    assert last_text(every) == "Done. Your check-in will come every day."
    assert await days_of(store) is None
    hour = await say(store, dialogues, Start("reminders"), Turn(text="hour"),
                     *texts("08:00"))
    assert last_text(hour).startswith("Done. Your daily check-in will come at ")


async def test_planned_only_on_chosen_days_exported_and_erased(
        store: Store, dialogues: DialogueSet) -> None:
    await say(store, dialogues, Start("set_timezone"), *texts("Rome"))
    await say(store, dialogues, Start("reminders"), Turn(text="days"),
              Turn(text="working"))
    assert await days_of(store) == 0b0011111
    async with store.sessionmaker() as session, session.begin():
        await session.execute(insert(Goal), [{"user_id": USER, "title": "Walk",
                                              "status": "active",
                                              "created_at": FRIDAY_EVENING}])
    await plan(store, FRIDAY_EVENING, horizon=timedelta(days=8))
    dues = [r[0] for r in await raw(store, "SELECT due_at FROM planned_checkins "
                                    "WHERE kind = 'daily'")]
    due = dues[0] if isinstance(dues[0], datetime) else datetime.fromisoformat(str(dues[0]))
    assert len(dues) == 1 and due.replace(tzinfo=UTC) == datetime(2026, 12, 7, 8, 0,
                                                                   tzinfo=UTC)  # Monday
    exported = await store.export_user(USER)
    assert exported["users"][0]["checkin_days"] == 0b0011111
    await store.erase_user(USER)
    assert await store.get_user(USER) is None
    assert await raw(store, f"SELECT id FROM users WHERE id = {USER}") == []
