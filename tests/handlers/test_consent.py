"""Consent first (review findings M2, L8): before a client agrees, the bot keeps only their
Telegram id, language and where they are in the consent questions; a crisis is still
answered; declining or being under age erases them in the same turn, with a goodbye that
always arrives."""

from __future__ import annotations

import json

from sqlalchemy import text

from bot.engine.crisis import detect_crisis
from tests.flows import stored, text_of
from tests.inprocess import InProcessBot

AGE_QUESTION = "I work only with people aged 18 and over. Are you 18 or older?"
NAME = "Zoravka"
TYPED = ("Tell my wife about the debts", "Because I hide the letters from her")


async def users_row(bot: InProcessBot, user_id: int) -> list[tuple[object, ...]]:
    async with bot.store.engine.connect() as connection:
        return [tuple(r) for r in await connection.execute(text(
            "SELECT first_name, locale, consent_at FROM users WHERE id = :id"), {"id": user_id})]


async def test_before_consent_nothing_typed_is_kept_and_every_command_asks_first(
        bot: InProcessBot) -> None:
    ana = bot.user(7001, first_name=NAME)
    first = await ana.send("/goal")
    texts = [m.text or "" for m in first]
    assert texts[0].startswith("Hello, and welcome.") and NAME not in " ".join(texts)
    assert any("without any of your words" in t for t in texts)  # a coach hears of a crisis
    assert texts[-1] == AGE_QUESTION
    for typed in TYPED:
        await ana.send(typed)
    for command in ("/checkin", "/progress", "/exercises", "/export", "/help", "/coach"):
        again = await ana.send(command)
        assert again[-1].text == AGE_QUESTION, command
    rows = await stored(bot, 7001, NAME, *TYPED)
    assert await users_row(bot, 7001) == [(None, "en", None)]
    assert set(rows) <= {"users", "conversations", "processed_updates", "outbox"}
    assert not [r for rows_ in rows.values() for r in rows_ if any(t in r for t in TYPED)]
    assert not [d for d in bot.fake.documents if d.chat_id == 7001]  # no export yet
    async with bot.store.engine.connect() as connection:
        answers = (await connection.execute(text("SELECT count(*) FROM answers"))).scalar()
    assert answers == 0


async def test_a_crisis_before_consent_is_answered_and_not_kept(
        bot: InProcessBot) -> None:
    words = "I want to kill myself"
    assert detect_crisis(words)
    ana = bot.user(7002, first_name=NAME)
    replies = await ana.send(words)
    assert "deserve to talk to a person." in " ".join(m.text or "" for m in replies)
    rows = await stored(bot, 7002, NAME, *TYPED)
    assert not [r for rows_ in rows.values() for r in rows_ if words in r]
    assert await users_row(bot, 7002) == [(None, "en", None)]


async def test_cancel_before_consent_says_nothing_was_kept_and_how_to_begin_again(
        bot: InProcessBot) -> None:
    ana = bot.user(7004, first_name=NAME)
    await ana.send("/start")
    await ana.press("Yes")  # an adult, not yet agreeing
    stopped = await ana.send("/cancel")
    assert [m.text for m in stopped] == [
        "All right, we will stop here. Until you agree, I keep none of your answers. If you "
        "would like to begin again, send /start."]
    async with bot.store.engine.connect() as connection:
        answers = (await connection.execute(text("SELECT count(*) FROM answers"))).scalar()
    assert answers == 0 and await users_row(bot, 7004) == [(None, "en", None)]
    again = await ana.send("/start")
    assert (again[0].text or "").startswith("Hello, and welcome.")


async def test_delete_works_before_consent(bot: InProcessBot) -> None:
    ana = bot.user(7003, first_name=NAME)
    await ana.send("/start")
    confirm = await ana.send("/delete")
    assert "cannot be undone" in (confirm[0].text or "")
    await ana.press("Yes, delete everything")
    assert await users_row(bot, 7003) == []


async def test_under_the_minimum_age_is_told_kindly_and_erased(bot: InProcessBot) -> None:
    ana = bot.user(7004, first_name=NAME)
    await ana.send("/start")
    told = await ana.press("No")
    assert "I work only with people aged 18 and over" in (told[-1].text or "")
    assert (told[-1].text or "").endswith("/sos shows who else you can turn to.")
    assert await users_row(bot, 7004) == []
    assert await stored(bot, 7004, NAME, *TYPED) == {}
    helped = await ana.send("/sos")  # the refusal points to it: it works for them too
    assert "findahelpline.com" in text_of(helped)


async def test_only_text_after_consent_is_kept(bot: InProcessBot) -> None:
    ana = bot.user(7007, first_name=NAME)
    await ana.send("/start")
    await ana.press("Yes")
    await ana.press("Yes")
    await ana.send("/cancel")
    await ana.send("/goal")
    await ana.send(TYPED[0])
    (name, _, consent_at), = await users_row(bot, 7007)
    assert name == NAME and consent_at is not None
    exported = await bot.store.export_user(7007)
    assert [a["value"] for a in exported["answers"]][-1] == TYPED[0]
    assert json.dumps(exported)
