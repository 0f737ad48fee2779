"""The optional choice of address (issue 29): asked after consent, in the onboarding and in
/language; kept on the user, in their export, gone with them; the bot's texts follow it."""

from __future__ import annotations

from bot.engine.state import Reply
from tests.inprocess import ClientUser, InProcessBot

ADDRESS_QUESTION_HE = "בעברית אפשר לנסח חלק מהמשפטים שלי בלשון נקבה או בלשון זכר."


def buttons(reply: Reply | object) -> list[str]:
    markup = getattr(reply, "reply_markup", None) or {}
    return [b["text"] for row in markup.get("inline_keyboard", []) for b in row]


async def address_of(bot: InProcessBot, user_id: int) -> str | None:
    user = await bot.store.get_user(user_id)
    assert user is not None
    return user.address


async def test_the_onboarding_asks_after_consent_and_the_next_question_follows_it(
        bot: InProcessBot) -> None:
    dana = bot.user(8101, language_code="he")
    await dana.send("/start")
    await dana.press("כן")  # 18 or older
    assert await address_of(bot, 8101) is None
    await dana.press("כן")  # agrees that the answers are kept
    asked = await dana.press("עברית")
    assert (asked[-1].text or "").startswith(ADDRESS_QUESTION_HE)
    assert buttons(asked[-1]) == ["ניסוח ניטרלי", "לשון נקבה", "לשון זכר"]
    city = await dana.press("לשון נקבה")
    assert await address_of(bot, 8101) == "feminine"
    # the very next question, in the same turn, is already worded for her
    assert city[-1].text == ("באיזו עיר את גרה? גם עיר קרובה מתאימה. זה עוזר לי לכתוב "
                             "לך בשעה הנכונה ביום.")


async def test_english_has_nothing_to_choose(bot: InProcessBot) -> None:
    ana = bot.user(8102)
    await ana.send("/start")
    await ana.press("Yes")
    await ana.press("Yes")
    replies = await ana.press("English")
    assert "Which city do you live in" in (replies[-1].text or "")
    assert await address_of(bot, 8102) is None


async def _to_hebrew(user: ClientUser) -> list[object]:
    await user.send("/language")
    return list(await user.press("עברית"))


async def agreed(bot: InProcessBot, user_id: int) -> ClientUser:
    """A client who went through the onboarding: agreed, and in a goal setting."""
    user = bot.user(user_id)
    await bot.agree(user_id)
    await user.send("/goal")
    return user


async def test_language_offers_the_choice_and_the_texts_follow_it(bot: InProcessBot) -> None:
    noam = await agreed(bot, 8103)
    replies = await _to_hebrew(noam)
    assert [buttons(m) for m in replies if buttons(m)] == [["ניסוח ניטרלי", "לשון נקבה",
                                                            "לשון זכר"]]
    done = await noam.press("לשון זכר")
    assert done[-1].text == "בוצע. אפשר לשנות את זה בכל זמן עם /language."
    assert await address_of(bot, 8103) == "masculine"
    await noam.send("/cancel")
    goal = await noam.send("/goal")
    assert "במילים שלך: מה אתה רוצה להשיג?" in [m.text for m in goal]
    # back to neutral: the neutral wording again
    await _to_hebrew(noam)
    await noam.press("ניסוח ניטרלי")
    assert await address_of(bot, 8103) == "neutral"
    await noam.send("/cancel")
    again = await noam.send("/goal")
    assert "במילים שלך: מה היית רוצה להשיג?" in [m.text for m in again]


async def test_the_choice_is_in_the_export_and_gone_with_the_user(bot: InProcessBot) -> None:
    rina = await agreed(bot, 8104)
    await _to_hebrew(rina)
    await rina.press("לשון נקבה")
    data = await bot.store.export_user(8104)
    assert data["users"][0]["address"] == "feminine"
    await bot.store.erase_user(8104)
    assert await bot.store.get_user(8104) is None


async def test_before_consent_nothing_is_asked_or_kept(bot: InProcessBot) -> None:
    eli = bot.user(8105)
    await eli.send("/start")
    replies = await _to_hebrew(eli)
    assert replies[0].text == "מעכשיו אכתוב לך בעברית."  # type: ignore[attr-defined]
    assert not any("לשון נקבה" in buttons(m) for m in replies)
    assert await address_of(bot, 8105) is None
