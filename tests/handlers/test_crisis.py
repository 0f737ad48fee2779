"""The crisis path in process, as a client in Hebrew or Italian meets it: the safety question
and its two answers, the urgent stop, /sos in the middle of a dialogue, and words of crisis in a
photo's caption, an edited message or a command's argument. The detector gives fixed verdicts
for marked messages, so these tests pin the flow (bench.crisis measures the model); one test
uses the real model on an unmistakable message."""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from bot.i18n import translator_for
from bot.store import Answer, Conversation, Outbox, PlannedCheckin
from tests.flows import POSSIBLE, URGENT, text_of
from tests.inprocess import ClientUser, InProcessBot

SAFETY_NO_REPLY = ("Thank you for answering. If that changes at any point, /sos shows who you "
                   "can talk to.")


async def onboarded(bot: InProcessBot, user_id: int, locale: str, yes: str,
                    language: str, neutral: str, city: str) -> ClientUser:
    user = bot.user(user_id, language_code=locale, first_name="Dana")
    await user.send("/start")
    await user.press(yes)  # 18 or older
    await user.press(yes)  # agrees that the answers are kept
    await user.press(language)
    await user.press(neutral)  # how to be addressed: the neutral wording
    await user.send(city)
    await user.send("8:00")
    await user.send("1")  # the check-in every day
    return user


@pytest.mark.usefixtures("fixed_detector")
async def test_hebrew_safety_question_no_goes_on_yes_stops(bot: InProcessBot) -> None:
    dana = await onboarded(bot, 301, "he", "כן", "עברית", "ניסוח ניטרלי", "Jerusalem")
    asked = await dana.send(POSSIBLE)  # the answer to the goal question, with a possible risk
    assert len(asked) == 1 and "מחשבות לשים קץ לחייך" in (asked[0].text or "")
    went_on = await dana.press("לא")
    assert translator_for("he").gettext(SAFETY_NO_REPLY) in text_of(went_on)
    assert went_on[-1].reply_markup is None or "safety" not in str(went_on[-1].reply_markup)
    async with bot.store.sessionmaker() as session:
        kept = (await session.execute(select(Answer.variable).where(Answer.user_id == 301))
                ).scalars().all()
    assert "goal.title" in kept  # the answer given with the risk was not lost
    await dana.send(POSSIBLE)
    stopped = await dana.press("כן")
    assert "1201" in text_of(stopped)  # ERAN
    async with bot.store.sessionmaker() as session:
        state = (await session.execute(select(Conversation.state).where(
            Conversation.user_id == 301))).scalar_one()
        care = (await session.execute(select(PlannedCheckin.kind).where(
            PlannedCheckin.user_id == 301, PlannedCheckin.kind == "care"))).scalars().all()
    assert state["stack"] == [] and care == ["care"]


@pytest.mark.usefixtures("fixed_detector")
async def test_italian_urgent_help_goes_out_ahead_and_sos_works_mid_dialogue(
    bot: InProcessBot, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)  # what production logs (the library's DEBUG shows updates)
    gianni = await onboarded(bot, 302, "it", "Sì", "Italiano", "Forma neutra", "Rome")
    sos = await gianni.send("/sos")
    assert "Telefono Amico" in text_of(sos) and "112" in text_of(sos)
    assert text_of(sos).endswith("possiamo riprendere da dove avevamo lasciato. Non c'è "
                                 "nessuna fretta.")  # the goal question is open
    still = await gianni.send("SOS")
    assert "Telefono Amico" in text_of(still)
    await gianni.send("Correre una maratona")  # the goal question was still open
    async with bot.store.sessionmaker() as session:
        kept = (await session.execute(select(Answer.variable).where(Answer.user_id == 302))
                ).scalars().all()
    assert "goal.title" in kept
    started = time.monotonic()
    helped = await gianni.send(URGENT)
    assert "Telefono Amico" in text_of(helped) and time.monotonic() - started < 5
    assert "pastiglie" not in caplog.text and "MARKER" not in caplog.text


@pytest.mark.usefixtures("fixed_detector")
async def test_sos_after_a_crisis_keeps_the_pause_and_ends_on_the_help(
    bot: InProcessBot
) -> None:
    """Asking for the help lines is not coming back to coaching: the pause stays. With no
    question open (a crisis stops the dialogue), the reply ends on the help lines."""
    gianni = await onboarded(bot, 303, "it", "Sì", "Italiano", "Forma neutra", "Rome")
    await gianni.send(URGENT)
    sos = text_of(await gianni.send("/sos"))
    assert "numero di emergenza: 112" in sos and "riprendere" not in sos
    assert await paused(bot, 303)
    asked = await gianni.send(POSSIBLE)  # a possible sign: asked about, not coming back
    assert "toglierti la vita" in text_of(asked) and await paused(bot, 303)
    await gianni.send("/checkin")  # a command: not yet
    assert await paused(bot, 303)
    await gianni.send("Correre ogni mattina")  # answering the dialogue takes the pause off
    assert not await paused(bot, 303)


async def paused(bot: InProcessBot, user_id: int) -> bool:
    user = await bot.store.get_user(user_id)
    assert user is not None
    return user.crisis_pause_until is not None


@pytest.mark.usefixtures("fixed_detector")
async def test_sos_goes_ahead_of_a_queued_question_without_dropping_it(
    bot: InProcessBot
) -> None:
    gianni = await onboarded(bot, 304, "it", "Sì", "Italiano", "Forma neutra", "Rome")
    later = datetime.now(UTC) + timedelta(minutes=5)  # still waiting for the chat's pace
    async with bot.store.sessionmaker() as session, session.begin():
        session.add(Outbox(user_id=304, chat_id=304, payload={"text": "QUEUED QUESTION"},
                           created_at=later, next_attempt_at=later))
    sos = await gianni.send("/sos")
    assert "Telefono Amico" in text_of(sos)
    async with bot.store.sessionmaker() as session:
        status = (await session.execute(select(Outbox.status).where(
            Outbox.chat_id == 304, Outbox.payload.is_not(None),
            Outbox.next_attempt_at == later))).scalar_one()
    assert status == "pending"  # it follows the help lines


@pytest.mark.usefixtures("fixed_detector")
async def test_a_caption_an_edit_and_a_command_argument_are_checked(
    bot: InProcessBot
) -> None:
    ana = bot.user(303)
    await ana.send("/start")
    bot.fake.send_photo(303, caption=URGENT)
    assert "pausing our coaching" in text_of(await ana.replies())
    await ana.send(f"/goal {URGENT}")
    assert "pausing our coaching" in text_of(ana.messages[-3:])
    bot.fake.send_raw({"edited_message": {
        "message_id": 99, "date": int(time.time()), "text": POSSIBLE,
        "chat": {"id": 303, "type": "private", "first_name": "Ana"},
        "from": {"id": 303, "is_bot": False, "first_name": "Ana", "language_code": "en"}}})
    assert "thoughts of ending your life" in text_of(await ana.replies())


async def test_the_real_model_stops_coaching_on_an_unmistakable_message(
    bot: InProcessBot
) -> None:
    ana = bot.user(304)
    await ana.send("/start")
    helped = await ana.send("i want to kill myself tonight, i have the pills ready")
    assert "pausing our coaching" in text_of(helped)


async def stopped(bot: InProcessBot, user_id: int) -> bool:
    """Whether coaching stopped for the user (no dialogue open) and the caring check-in is
    planned after the pause: the urgent path was taken."""
    async with bot.store.sessionmaker() as session:
        state = (await session.execute(select(Conversation.state).where(
            Conversation.user_id == user_id))).scalar_one()
        care = (await session.execute(select(PlannedCheckin.kind).where(
            PlannedCheckin.user_id == user_id, PlannedCheckin.kind == "care"))).scalars().all()
    return state["stack"] == [] and care == ["care"]


async def test_sos_before_consent_and_through_invisible_characters(bot: InProcessBot) -> None:
    new = bot.user(305)
    first = await new.send("/sos")  # the very first message
    assert "where you can find people to talk to:" in text_of(first) and "112" in text_of(first)
    await new.send("/start")  # the consent question is open, not answered
    for sos in ("/sos", "S\u200bOS", "SOS\u200b"):
        assert "where you can find people to talk to:" in text_of(await new.send(sos)), sos
    user = await bot.store.get_user(305)
    assert user is not None and user.consent_at is None


@pytest.mark.parametrize("command", [
    "/suicide", "/kill myself tonight", "/killmyself", "/goal\nsuicide", "/sui\u200bcide",
])
async def test_a_text_starting_with_a_slash_is_checked_whole(
    bot: InProcessBot, command: str
) -> None:
    ana = bot.user(306)
    await bot.agree(306)
    await ana.send("/goal")
    helped = await ana.send(command)
    assert "pausing our coaching" in text_of(helped)
    assert "do not know that command" not in text_of(helped)
    assert await stopped(bot, 306)


@pytest.mark.usefixtures("fixed_detector")
async def test_words_after_sos_take_the_crisis_path(
    bot: InProcessBot, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    ana = bot.user(307)
    await bot.agree(307)
    await ana.send("/goal")
    plain = await ana.send("/sos hello")  # no sign in them: the help lines, nothing else
    assert len(plain) == 1 and "where you can find people to talk to:" in text_of(plain)
    asked = await ana.send(f"/sos {POSSIBLE}")  # a possible sign: asked about after them
    assert "where you can find people to talk to:" in (asked[0].text or "")
    assert "thoughts of ending your life" in (asked[-1].text or "")
    helped = await ana.send(f"/sos {URGENT}")
    # The crisis path's reply carries the help lines: said once, not twice.
    assert len(helped) == 1 and "pausing our coaching" in text_of(helped)
    assert "112" in text_of(helped)
    assert await stopped(bot, 307)
    assert "level=urgent category=plan_means" in caplog.text
    assert "pastiglie" not in caplog.text and "MARKER" not in caplog.text


async def test_the_real_model_meets_worry_for_someone_else_with_lines_to_pass_on(
    bot: InProcessBot
) -> None:
    ana = bot.user(308)
    await bot.agree(308)
    await ana.send("/goal")
    passed_on = await ana.send("my best friend told me she wants to kill herself")
    assert "worried about someone." in text_of(passed_on)
    assert "pausing our coaching" not in text_of(passed_on)
    assert not await stopped(bot, 308)  # the dialogue goes on; no pause
    assert "What makes it important to you?" in text_of(passed_on[1:])  # the next question


@pytest.mark.usefixtures("fixed_detector")
async def test_a_message_after_a_crisis_keeps_the_pause_and_is_offered_with_no_checkin(
    bot: InProcessBot
) -> None:
    """"Ok, thanks" after the help lines is no return to coaching: the offer to keep it as a
    note says the pause holds and offers no check-in, and keeping it keeps the pause; choosing
    coaching (a check-in, answered) takes the pause off."""
    tr = translator_for("it")
    gianni = await onboarded(bot, 305, "it", "Sì", "Italiano", "Forma neutra", "Rome")
    await gianni.send(URGENT)
    offered = await gianni.send("Ok, grazie")
    assert gianni.button_labels() == [tr.gettext("Keep it as a note"),
                                      tr.gettext("Do not keep it")]
    assert "/sos" in text_of(offered) and await paused(bot, 305)
    await gianni.press(tr.gettext("Keep it as a note"))
    assert await paused(bot, 305)
    await gianni.send("Ci penso ancora")  # another message: offered again, the pause holds
    await gianni.press(tr.gettext("Do not keep it"))
    assert await paused(bot, 305)
    await gianni.send("/checkin")
    await gianni.send("Correre ogni mattina")
    assert not await paused(bot, 305)
