"""Consent over real HTTP, while messages are still in flight: a "no" sent before the
onboarding's first messages are out still gets its goodbye, and nothing is kept.
(The rest of consent first: tests/handlers/test_consent.py.)"""

from __future__ import annotations

import asyncio

from tests.e2e.conftest import RunningBot, TelegramUser
from tests.flows import stored

NAME = "Zoravka"
TYPED = ("Tell my wife about the debts", "Because I hide the letters from her")


async def decline(user: TelegramUser, *, settled: bool) -> list[str]:
    """/start, the age confirmed as soon as its question shows (``settled``: once everything
    /start brings has gone out), then "no" to consent typed at once."""
    user.fake.send_text(user.user_id, "/start", first_name=NAME)
    if settled:
        await user.bot.idle(user.user_id)
    await user.fake.wait_idle(timeout=10)
    for _ in range(100):  # the age question's buttons
        if any((m.text or "").startswith("I work only with people aged") for m in user.messages):
            break
        await asyncio.sleep(0.05)
    message, data = user.button("Yes")
    user.fake.press_button(user.user_id, message.message_id, data)
    user.fake.send_text(user.user_id, "no", first_name=NAME)  # at once, messages in flight
    await user.bot.idle(user.user_id)
    return [m.text or "" for m in user.messages]


async def test_declining_consent_always_says_goodbye_and_keeps_nothing(
        running_bot: RunningBot) -> None:
    for user_id, settled in ((7005, False), (7006, True)):
        said = await decline(running_bot.user(user_id, first_name=NAME), settled=settled)
        assert any("I have kept nothing" in t for t in said), said
        assert await stored(running_bot, user_id, NAME, *TYPED) == {}, user_id
