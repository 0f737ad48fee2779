"""A client on a phone chooses the days of their check-in: in the onboarding, right after the
time, with the closing line true to the choice; and in /reminders, which plans again at once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from tests.handlers.test_bot import answer_until_idle
from tests.inprocess import ClientUser, InProcessBot
from tests.schedule.helpers import add_due, add_users
from tests.store.store_helpers import raw


async def to_the_days(bot: InProcessBot, user_id: int, city: str, time: str) -> ClientUser:
    """A new client through the onboarding up to the check-in days (the question's message is
    the client's last)."""
    client = bot.user(user_id)
    await client.send("/start")
    await client.press("Yes")
    await client.press("Yes")
    await client.press("English")
    await client.send(city)
    await client.send(time)
    return client


async def test_onboarding_asks_the_days_and_the_closing_says_them(bot: InProcessBot) -> None:
    ana = await to_the_days(bot, 121, "Zagreb", "7:30")
    asked = ana.messages[-1:]
    assert asked[-1].text == "On which days would you like your check-in?"
    await ana.press("Let me choose the days")
    wrong = await ana.send("Someday")
    assert "did not recognise those as days of the week" in (wrong[-1].text or "")
    goal = await ana.send("Friday, monday and Wed")
    assert (goal[-1].text or "").startswith("In your own words") or any(
        "first goal" in (m.text or "") for m in goal)
    user = await bot.store.get_user(121)
    assert user is not None and user.checkin_days == 0b10101  # Monday, Wednesday, Friday
    await answer_until_idle(bot, ana, {
        "goal": "Run a 10k race", "baseline": "3", "target": "8", "commitment": "9"})
    closing = ana.messages[-1].text or ""
    assert "You are all set. Check-in days: Monday, Wednesday, and Friday. Check-in time: " \
        in closing
    assert "every day" not in closing


async def test_onboarding_every_day_keeps_its_closing(bot: InProcessBot) -> None:
    ana = await to_the_days(bot, 122, "Rome", "8:00")
    await ana.press("Every day")
    await answer_until_idle(bot, ana, {
        "goal": "Read more", "baseline": "3", "target": "8", "commitment": "9"})
    assert "I will write to you every day at" in (ana.messages[-1].text or "")
    user = await bot.store.get_user(122)
    assert user is not None and user.checkin_days is None


async def test_weekdays_only_in_reminders_plans_again_at_once(bot: InProcessBot) -> None:
    store, now = bot.store, datetime.now(UTC)
    await add_users(store, [823], now=now, zone="Europe/Rome")
    zone = ZoneInfo("Europe/Rome")
    # A check-in planned by every day on the next Saturday goes when the client picks
    # weekdays only; the next one comes on a weekday.
    local = now.astimezone(zone)
    saturday = (local + timedelta(days=(5 - local.weekday()) % 7 or 7)).replace(
        hour=9, minute=0, second=0, microsecond=0)
    await add_due(store, [823], saturday.astimezone(UTC))
    ana = bot.user(823)
    await ana.send("/reminders")
    await ana.press("Check-in days")
    done = await ana.press("Working days only")
    assert done[-1].text == ("Done. Check-in days: Monday, Tuesday, Wednesday, Thursday, "
                             "and Friday.")
    rows = await raw(store, "SELECT due_at FROM planned_checkins WHERE user_id = 823 "
                     "AND kind = 'daily' AND status = 'planned'")
    for (due,) in rows:
        at = due if isinstance(due, datetime) else datetime.fromisoformat(str(due))
        assert at.replace(tzinfo=UTC).astimezone(zone).weekday() < 5
