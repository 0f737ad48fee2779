"""The schedule as promised: the check-in time keeps its minutes, a changed time re-plans the
next check-in at once, and /checkin without a goal offers to set one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from bot.coaching.conversation import apply_profile
from bot.schedule.planner import plan
from bot.store import Store
from bot.store import Turn as StoreTurn
from tests.inprocess import InProcessBot
from tests.schedule.helpers import add_due, add_users
from tests.store.store_helpers import raw


async def test_a_checkin_time_keeps_its_minutes(store: Store) -> None:
    """Onboarding's 07:30 was stored as 7 and planned at 07:00."""
    now = datetime.now(UTC)
    await add_users(store, [801], now=now, zone="Europe/Rome")

    async def choose(t: StoreTurn) -> None:
        apply_profile(t.user, {"profile.checkin_hour": "07:30"}, {"profile.checkin_hour"},
                      t.now)

    await store.run_turn(801, choose)
    user = await store.get_user(801)
    assert user is not None and (user.checkin_hour, user.checkin_minute) == (7, 30)
    await plan(store, now)
    dues = [r[0] for r in await raw(store, "SELECT due_at FROM planned_checkins "
                                    "WHERE kind = 'daily'")]
    assert len(dues) == 1
    due = dues[0] if isinstance(dues[0], datetime) else datetime.fromisoformat(str(dues[0]))
    local = due.replace(tzinfo=due.tzinfo or UTC).astimezone(ZoneInfo("Europe/Rome"))
    assert (local.hour, local.minute) == (7, 30)


async def test_a_changed_checkin_time_replans_the_next_checkin_at_once(
        bot: InProcessBot) -> None:
    store, now = bot.store, datetime.now(UTC)
    await add_users(store, [802], now=now)
    old = (now + timedelta(hours=2)).replace(minute=0, second=0, microsecond=0)
    await add_due(store, [802], old)  # planned by the old hour
    ana = bot.user(802)
    await ana.send("/reminders")
    await ana.press("Check-in time")
    new = now + timedelta(hours=5)
    replies = await ana.send(f"{new:%H}:45")
    assert (replies[-1].text or "").startswith("Done. Your daily check-in will come at")
    assert ":45" in (replies[-1].text or "")
    rows = await raw(store, "SELECT kind, status, due_at FROM planned_checkins "
                     "WHERE user_id = 802")
    assert len(rows) == 1 and tuple(rows[0][:2]) == ("daily", "planned")
    due = rows[0][2] if isinstance(rows[0][2], datetime) else datetime.fromisoformat(
        str(rows[0][2]))
    assert (due.hour, due.minute) == (new.hour, 45)
    assert due.replace(tzinfo=UTC) > now


async def test_checkin_without_a_goal_offers_to_set_one(bot: InProcessBot) -> None:
    """A goal setting cancelled after its title left the title behind, and /checkin ran a
    check-in on a goal that does not exist."""
    await add_users(bot.store, [803], now=datetime.now(UTC), goal=False)
    ana = bot.user(803)
    await ana.send("/goal")
    await ana.send("Run a marathon")
    await ana.send("/cancel")
    replies = await ana.send("/checkin")
    assert replies[0].text == ("A check-in is about a goal you are working on, but you have "
                               "none at the moment. If you would like, we can set one now; if "
                               "you would rather not, send /cancel.")
    assert replies[-1].text == "In your own words: what would you like to achieve?"
