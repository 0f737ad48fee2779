"""Whole conversations with the real application, in process, as a user would have them."""

from __future__ import annotations

import json
import unicodedata

from sqlalchemy import select

from bot.dialogue import load_dialogues
from bot.engine import ConversationState
from bot.store import Answer, Goal, Outbox, User
from tests.flows import count
from tests.inprocess import REPO, ClientUser, InProcessBot

DIALOGUES = load_dialogues(REPO / "dialogues")
TYPED = {"text": "In my own words", "yes_no": "yes", "date": "tomorrow", "time": "08:00",
         "timezone": "Rome", "number": "3"}


async def state_of(bot: InProcessBot, user_id: int) -> ConversationState:
    user_state = await bot.store.export_user(user_id)
    rows = user_state["conversations"]
    return ConversationState.from_dict(rows[0]["state"] if rows else None)


async def answer_until_idle(bot: InProcessBot, user: ClientUser,
                            answers: dict[str, str]) -> None:
    """Answer each question as a person would: press a button where there are buttons."""
    for _ in range(60):
        state = await state_of(bot, user.user_id)
        if not state.active:
            return
        frame = state.stack[-1]
        ask = DIALOGUES[frame.dialogue].steps[frame.step].ask
        wanted = answers.get(frame.step)
        if ask.type == "choice":
            label = wanted or ask.options[0].label
            await user.press(label)
        elif ask.type == "scale":
            await user.press(wanted or "5")
        elif ask.type == "yes_no":
            await user.press(wanted or "Yes")
        else:
            await user.send(wanted or TYPED[ask.type])
    raise AssertionError("the conversation did not end")


async def test_onboarding_and_goal_setting_with_keyboards(bot: InProcessBot) -> None:
    ana = bot.user(101)
    first = await ana.send("/start")
    assert first[0].text is not None and first[0].text.startswith("Hello, and welcome.")
    assert any("Yes" in json.dumps(m.reply_markup) for m in first)
    await ana.press("Yes")  # 18 or older
    await ana.press("Yes")  # agrees that the answers are kept
    await ana.press("English")
    replies = await ana.send("Rome")
    assert "At what time of day" in (replies[-1].text or "")
    await ana.send("8:00")
    await answer_until_idle(bot, ana, {
        "goal": "Run a 10k race", "baseline": "3", "target": "8", "commitment": "9"})
    assert "You are all set" in (ana.messages[-1].text or "")
    user = await bot.store.get_user(101)
    assert user is not None
    assert (user.time_zone, user.checkin_hour, user.consent_at is not None) == (
        "Europe/Rome", 8, True)
    async with bot.store.sessionmaker() as session:
        goal = (await session.execute(select(Goal))).scalar_one()
    assert (goal.title, goal.baseline, goal.target) == ("Run a 10k race", 3, 8)
    assert await count(bot, Outbox, 101) == len(ana.messages)


async def test_a_check_in_with_buttons(bot: InProcessBot) -> None:
    ana = bot.user(102)
    await bot.agree(102)
    await ana.send("/checkin")  # no goal yet: it starts with the goal
    assert "you have none at the moment" in (ana.messages[0].text or "")
    await answer_until_idle(bot, ana, {"goal": "Read more books", "commitment": "8"})
    await ana.send("/checkin")
    await answer_until_idle(bot, ana, {"mood": "7"})
    async with bot.store.sessionmaker() as session:
        moods = (await session.execute(select(Answer.value).where(
            Answer.variable == "checkin.mood"))).scalars().all()
    assert moods == [7]


async def test_wrong_answers_stale_buttons_stickers_and_commands(
    bot: InProcessBot,
) -> None:
    ana = bot.user(103)
    await bot.agree(103)
    await ana.send("/goal")
    await ana.send("Run a 10k race")
    await ana.send("Because I can")
    await ana.send("I see myself at the finish line")
    scale = ana.messages[-1]
    replies = await ana.send("eleven")
    assert replies[0].text == "Please answer with a whole number from 1 to 10."
    assert replies[0].reply_markup == scale.reply_markup
    await ana.press("4")
    ana.fake.press_button(103, scale.message_id, ana.button("4")[1])
    stale = await ana.replies()
    assert stale[0].text == ("That button belongs to an earlier question. "
                             "Here is where we are now:")
    sticker_update = ana.fake.send_sticker(103)
    assert sticker_update
    re_asked = await ana.replies()
    assert re_asked[0].text == ("Could you write it in words? If you need someone to talk to, "
                                "/sos shows who you can turn to.")
    assert re_asked[1].text == stale[1].text
    long_answer = await ana.send("x" * 5000)
    assert "5,000 characters" in (long_answer[0].text or "")
    cancelled = await ana.send("/cancel")
    assert (cancelled[0].text or "").startswith("All right, we will stop here. Your answers")
    unknown = await ana.send("/dance")
    assert unknown[0].text == "I do not know that command. Send /help to see what I can do."
    help_text = (await ana.send("/help"))[0].text or ""
    assert "/checkin — Daily check-in" in help_text


async def test_each_update_counts_once(bot: InProcessBot) -> None:
    ana = bot.user(104)
    await bot.agree(104)
    await ana.send("/goal")
    update_id = ana.fake.send_text(104, "Learn to swim")
    await ana.replies()
    answers = await count(bot, Answer, 104)
    ana.fake.redeliver(update_id)
    await bot.pump()
    await ana.send("/help")
    assert await count(bot, Answer, 104) == answers == 1
    asked = "You chose: “\u2068Learn to swim\u2069”. What makes it important to you?"
    assert [m.text for m in ana.messages].count(asked) == 1


async def test_a_new_telegram_name_is_stored_with_the_next_message(
        bot: InProcessBot) -> None:
    await bot.user(112, first_name="Ana").send("/help")
    user = await bot.store.get_user(112)
    assert user is not None and user.first_name is None  # before consent: not kept
    await bot.agree(112)
    await bot.user(112, first_name="Ana").send("/help")
    await bot.user(112, first_name="Anna").send("/help")
    user = await bot.store.get_user(112)
    assert user is not None and user.first_name == "Anna"


async def test_export_and_delete(bot: InProcessBot) -> None:
    ana = bot.user(105)
    await bot.agree(105)
    await ana.send("/goal")
    await ana.send("Write a book")
    exported = await ana.send("/export")
    assert exported[0].kind == "document"
    document = next(d for d in ana.fake.documents if d.chat_id == 105)
    data = json.loads(document.content)
    assert [a["value"] for a in data["answers"]] == ["Write a book"]
    confirm = await ana.send("/delete")
    assert confirm[0].text == (
        "This deletes everything I have stored about you (your profile, goals, answers, "
        "check-ins, notes and messages with your coach) and ends the sharing of your progress "
        "with them. It cannot be undone. What it cannot reach: anything already sent to your coach "
        "stays in their Telegram chat, and database backups keep a copy for as long as the "
        "people who run me keep them. Delete everything?")
    kept = await ana.press("No, keep it")
    assert kept[0].text == "All right, nothing was deleted."
    assert await count(bot, Answer, 105) == 1
    await ana.send("/delete")
    done = await ana.press("Yes, delete everything")
    assert (done[-1].text or "") == (
        "Done. Everything I stored about you is deleted. Anything already sent to your coach "
        "stays in their Telegram chat, and database backups keep a copy for as long as the "
        "people who run me keep them (/privacy). If you ever want to start again, send /start.")
    assert await count(bot, User, 105) == 0
    assert await count(bot, Answer, 105) == 0


async def test_declining_consent_keeps_nothing(bot: InProcessBot) -> None:
    ana = bot.user(106)
    await ana.send("/start")
    await ana.press("Yes")  # 18 or older
    declined = await ana.press("No")
    assert "I have kept nothing" in (declined[-1].text or "")
    assert await count(bot, User, 106) == 0
    assert await count(bot, Answer, 106) == 0


async def test_a_user_who_blocked_the_bot(bot: InProcessBot) -> None:
    ana = bot.user(107)
    await bot.agree(107)
    await ana.send("/goal")
    ana.fake.block(107)
    ana.fake.send_text(107, "Run a marathon")
    await bot.pump()
    user = await bot.store.get_user(107)
    assert user is not None and not user.reachable
    assert await count(bot, Answer, 107) == 1  # the answer itself is kept


async def test_groups_get_a_polite_refusal(bot: InProcessBot) -> None:
    bot.fake.send_text(108, "/start", chat_type="group")
    await bot.pump()
    messages = bot.fake.messages_to(-108)
    assert "only talk in private chats" in (messages[0].text or "")
    assert await count(bot, User, 108) == 0


async def test_hebrew_reads_right_to_left_around_latin_words(bot: InProcessBot) -> None:
    dana = bot.user(109, language_code="he", first_name="Dana")
    await bot.agree(109)
    await dana.send("/goal")
    replies = await dana.send("Run 10k")
    text = replies[-1].text or ""
    assert "\u2068Run 10k\u2069" in text
    first_strong = next(c for c in text if unicodedata.bidirectional(c) in ("L", "R", "AL"))
    assert unicodedata.bidirectional(first_strong) == "R"
    help_text = (await dana.send("/help"))[0].text or ""
    assert "/checkin" in help_text and "Daily check-in" not in help_text


async def test_metrics_count_updates_and_sends(bot: InProcessBot) -> None:
    from bot.observability import render_metrics

    def value(text: str, name: str) -> float:
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith(name))

    before = render_metrics()[0].decode()
    await bot.user(110).send("/help")
    after = render_metrics()[0].decode()
    assert value(after, 'updates_handled_total{kind="command"}') == \
        value(before, 'updates_handled_total{kind="command"}') + 1
    sent_ok = 'sends_total{outcome="ok"}'
    assert value(after, sent_ok) >= value(before, sent_ok) + 1
    assert "update_seconds_bucket" in after


async def test_the_language_picker_switches_at_once(bot: InProcessBot) -> None:
    ana = bot.user(111, language_code="it-CH")
    await bot.agree(111)
    first = await ana.send("/help")
    assert "/checkin" in (first[0].text or "") and "Daily check-in" not in (first[0].text or "")
    picker = await ana.send("/language")
    labels = [b["text"] for row in (picker[0].reply_markup or {})["inline_keyboard"] for b in row]
    assert labels == ["English", "Català", "Български", "Hrvatski", "Italiano", "עברית"]
    switched = await ana.press("Hrvatski")
    assert switched[0].text == "Od sada ću ti pisati na hrvatskom."
    user = await bot.store.get_user(111)
    assert user is not None and user.locale == "hr"
