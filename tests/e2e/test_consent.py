"""Consent over real HTTP, while messages are still in flight: a "no" sent before the
onboarding's first messages are out still gets its goodbye, and nothing is kept.
(The rest of consent first: tests/handlers/test_consent.py.)"""

from __future__ import annotations

import asyncio

from sqlalchemy import text

from tests.e2e.conftest import RunningBot, TelegramUser

NAME = "Zoravka"
TYPED = ("Tell my wife about the debts", "Because I hide the letters from her")


async def stored(bot: RunningBot, user_id: int) -> dict[str, list[str]]:
    """Every row that mentions the user, table by table, as text."""
    found: dict[str, list[str]] = {}
    async with bot.store.engine.connect() as connection:
        tables = [r[0] for r in await connection.execute(text(
            "SELECT name FROM sqlite_master WHERE type = 'table'"))]
        for table in tables:
            rows = [repr(tuple(r)) for r in await connection.execute(
                text(f"SELECT * FROM {table}"))]
            hits = [r for r in rows if str(user_id) in r or NAME in r
                    or any(t in r for t in TYPED)]
            if hits:
                found[table] = hits
    return found


async def decline(user: TelegramUser, *, wait_first: float) -> list[str]:
    """/start, the age confirmed, then "no" to consent typed `wait_first` seconds later
    (0: while the onboarding's first messages are still going out)."""
    user.fake.send_text(user.user_id, "/start", first_name=NAME)
    await asyncio.sleep(wait_first)
    await user.fake.wait_idle(timeout=10)
    for _ in range(100):  # the age question's buttons
        if any((m.text or "").startswith("I am made for adults") for m in user.messages):
            break
        await asyncio.sleep(0.05)
    message, data = user.button("Yes")
    user.fake.press_button(user.user_id, message.message_id, data)
    user.fake.send_text(user.user_id, "no", first_name=NAME)  # at once, messages in flight
    for _ in range(100):
        if any("nothing is kept" in (m.text or "") for m in user.messages):
            break
        await asyncio.sleep(0.05)
    return [m.text or "" for m in user.messages]


async def test_declining_consent_always_says_goodbye_and_keeps_nothing(
        running_bot: RunningBot) -> None:
    for user_id, wait_first in ((7005, 0.0), (7006, 3.0)):
        said = await decline(running_bot.user(user_id, first_name=NAME), wait_first=wait_first)
        assert any("nothing is kept" in t for t in said), said
        assert await stored(running_bot, user_id) == {}, user_id
