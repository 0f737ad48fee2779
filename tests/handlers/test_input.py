"""Input a client controls stays contained (review findings L4, L5): forged buttons start
only what was offered, and a name with direction controls cannot flip the bot's lines."""

from __future__ import annotations

from bot.i18n import BIDI_CONTROLS, FSI, PDI
from tests.flows import forge
from tests.inprocess import InProcessBot


async def test_forged_exercise_buttons_start_only_offered_exercises(
        bot: InProcessBot) -> None:
    ana = bot.user(9301)
    await bot.agree(9301)
    for dialogue in ("custom_exercise", "weekly_review", "onboarding", "goal_setting"):
        forge(bot, 9301, f"exercise:{dialogue}")
        said = " ".join(m.text or "" for m in await ana.replies())
        assert "An exercise from your coach" not in said and "weekly review" not in said
        assert "Hello, and welcome" not in said and "give your goal some shape" not in said
    forge(bot, 9301, "exercise:three_good_things")
    offered = await ana.replies()
    assert (offered[0].text or "").startswith("Exercise: Three good things.")


async def test_a_name_with_an_override_cannot_flip_an_english_line(
        bot: InProcessBot) -> None:
    name = "\u202egnp.exe Rolo"
    ana = bot.user(9302, first_name=name)
    await bot.agree(9302)
    await ana.send("/help")  # the name is kept from the first message after consent
    shape = await ana.send("/goal")
    text = shape[0].text or ""
    assert f"{FSI}gnp.exe Rolo{PDI}" in text
    assert not set(text) & (BIDI_CONTROLS - {FSI, PDI})
