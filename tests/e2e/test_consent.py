"""Consent over real HTTP, while messages are still in flight: a "no" sent before the
onboarding's first messages are out still gets its goodbye, and nothing is kept.
(The rest of consent first: tests/handlers/test_consent.py.)"""

from __future__ import annotations

import asyncio

from tests.e2e.conftest import RunningBot, TelegramUser
from tests.flows import stored

NAME = "Zoravka"
TYPED = ("Tell my wife about the debts", "Because I hide the letters from her")


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
        assert await stored(running_bot, user_id, NAME, *TYPED) == {}, user_id
