"""Groups on Telegram, in process: a coach makes a group, people join in
private, the coach links the group's own chat (``my_chat_member`` when the bot is added
and removed, ``migrate_to_chat_id``), commands there get a pointer to the private chat, and
a crisis seen there is answered in private only."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.coaching.links import make_coach
from bot.i18n import translator_for
from bot.store import User
from tests.fakes.bot_api import FakeBotApi, SentMessage
from tests.inprocess import InProcessBot, client_settings, in_process

COACH, ANA, BO, CI, STRANGER = 501, 502, 503, 504, 505
CHAT, SUPERGROUP, UNLINKED = -700, -100700, -800


@pytest.fixture
async def group_bot(tmp_path: Path, db_url: str) -> AsyncIterator[InProcessBot]:
    """The bot on SQLite and on PostgreSQL."""
    fake = FakeBotApi()
    settings = client_settings(fake, tmp_path, database_url=db_url, allow_plaintext=True)
    async with in_process(fake, settings) as bot:
        yield bot


async def messages_in(bot: InProcessBot, chat_id: int, count: int) -> list[SentMessage]:
    """The chat's messages once every waiting update is handled: at least ``count``."""
    await bot.pump()
    messages = bot.fake.messages_to(chat_id)
    assert len(messages) >= count, [m.text for m in messages]
    return messages


async def quiet(bot: InProcessBot, chat_id: int, count: int) -> None:
    """The chat still has exactly ``count`` messages once everything waiting is handled."""
    await bot.pump()
    assert len(bot.fake.messages_to(chat_id)) == count, [
        m.text for m in bot.fake.messages_to(chat_id)]


async def test_a_group_from_the_link_to_its_own_chat(group_bot: InProcessBot) -> None:
    running_bot = group_bot
    fake = running_bot.fake
    async with running_bot.store.sessionmaker() as session, session.begin():
        await make_coach(session, COACH)
    coach = running_bot.user(COACH, first_name="Marta")
    made = await coach.send("/newgroup Sales team")
    found = re.search(r"start=(group_[A-Za-z0-9_-]+)", made[0].text or "")
    assert found is not None and "Sales team" in (made[0].text or "")
    await coach.press("Team")

    members = [running_bot.user(uid, first_name=name) for uid, name in
               ((ANA, "Ana"), (BO, "Bo"), (CI, "Ci"))]
    await running_bot.agree(ANA, BO, CI, STRANGER)
    for member, choice in zip(members, ("Join: group figures only",
                                        "Join and share my progress",
                                        "Join: group figures only"), strict=True):
        offer = await member.send(f"/start {found.group(1)}")
        assert "\u2068Marta\u2069 invites you to join the group" in (offer[0].text or "")
        welcome = await member.press(choice)
        assert "Welcome to" in (welcome[0].text or "")
        # Sharing their progress links them with the coach: asked about the brief, as by invite.
        assert ("an hour before each session" in (welcome[-1].text or "")) == (
            choice == "Join and share my progress")
    again = await members[0].send(f"/start {found.group(1)}")
    assert again[0].text == "You are already in this group."

    await coach.send("/groups")
    shown = await coach.press("\u2068Sales team\u2069 (3)")
    view = shown[0].text or ""
    assert "Members: 3" in view and "\u2068Bo\u2069 (also shares their own progress)" in view
    linking = await coach.press("Link the group's Telegram chat")
    chat_link = re.search(r"startgroup=(gchat_[A-Za-z0-9_-]+)", linking[0].text or "")
    assert chat_link is not None

    # Someone else adds the bot to a group and tries the coach's link: refused.
    fake.bot_membership(UNLINKED, STRANGER, "member")
    fake.send_text(STRANGER, f"/start {chat_link.group(1)}", chat_type="group",
                   chat_id=UNLINKED)
    refused = await messages_in(running_bot, UNLINKED, 1)
    assert "Only the group's coach can link" in (refused[0].text or "")
    fake.send_text(ANA, "/checkin", chat_type="group", chat_id=UNLINKED, first_name="Ana")
    unlinked = await messages_in(running_bot, UNLINKED, 2)
    assert "only talk in private chats" in (unlinked[1].text or "")

    # The coach adds the bot (Telegram's startgroup link sends /start with the payload).
    fake.bot_membership(CHAT, COACH, "administrator")
    fake.send_text(COACH, f"/start@{fake.bot_username} {chat_link.group(1)}",
                   chat_type="group", chat_id=CHAT, first_name="Marta")
    hello = await messages_in(running_bot, CHAT, 1)
    assert (hello[0].text or "").startswith("Hello, “\u2068Sales team\u2069”!")

    # A command there: a pointer to the private chat, nothing else.
    fake.send_text(BO, "/progress", chat_type="group", chat_id=CHAT, first_name="Bo")
    pointer = await messages_in(running_bot, CHAT, 2)
    assert f"https://t.me/{fake.bot_username}" in (pointer[1].text or "")
    # A crisis seen there is answered in private, and not a word in the group.
    private_before = len(fake.messages_to(CI))
    fake.send_text(CI, f"@{fake.bot_username} i want to kill myself tonight, i have the "
                   "pills ready", chat_type="group", chat_id=CHAT, first_name="Ci")
    helped = await messages_in(running_bot, CI, private_before + 1)
    assert any("pausing our coaching" in (m.text or "") for m in helped[private_before:])
    await quiet(running_bot, CHAT, 2)
    # The same after a command: checked before the pointer, which does not come either.
    private_before = len(fake.messages_to(CI))
    fake.send_text(CI, f"/help@{fake.bot_username} i want to kill myself tonight, i have the "
                   "pills ready", chat_type="group", chat_id=CHAT, first_name="Ci")
    helped = await messages_in(running_bot, CI, private_before + 1)
    assert any("pausing our coaching" in (m.text or "") for m in helped[private_before:])
    await quiet(running_bot, CHAT, 2)

    # The team's shared goal, each member's part in private, a celebration in the chat.
    await coach.send("/groups")
    await coach.press("\u2068Sales team\u2069 (3)")
    await coach.press("Set the team's shared goal")
    await coach.send("Ship the new onboarding by June")
    saved = await coach.press("Yes")
    assert saved[-1].text == "Saved. Each member now gets the question in private."
    bo = members[1]
    offer = await bo.replies()
    assert "has a shared goal now" in (offer[-1].text or "")
    await bo.press("Name my part")
    await bo.send("I write the guide")
    when = await bo.send("A first draft")
    assert when[-1].text == "By when will you do it? Send a date, for example “tomorrow”."
    await bo.send("2030-05-17")
    thanked = await bo.press("Yes")
    assert thanked[-1].text == "Thank you. Your coach can see it; nobody else in the group can."
    await coach.send("/groups")
    view = (await coach.press("\u2068Sales team\u2069 (3)"))[0].text or ""
    assert ("\u2068Bo\u2069 will contribute: \u2068I write the guide\u2069; commits to: "
            "\u2068A first draft\u2069, by May 17, 2030") in view
    assert "Ana" not in view.split("Shared goal")[1]  # Ana said nothing: nothing shown
    await coach.press("The team reached its goal")
    party = await messages_in(running_bot, CHAT, 3)
    assert (party[2].text or "").startswith(
        "Your coach has marked the shared goal of “\u2068Sales team\u2069” as reached: ")
    assert "I write the guide" not in " ".join(m.text or "" for m in party)

    # This week's question in the chat; answered in private, shared there on a yes only.
    await coach.send("/groups")
    await coach.press("\u2068Sales team\u2069 (3)")
    await coach.press("Post this week's question in the group's chat")
    question = (await messages_in(running_bot, CHAT, 4))[3]
    assert (question.text or "").startswith("This week's question: ")
    data = (question.reply_markup or {})["inline_keyboard"][0][0]["callback_data"]
    for member, words, share in ((members[0], "We listen better", "Yes"),
                                 (members[2], "My private doubt", "No")):
        fake.press_button(member.user_id, question.message_id, data, chat_id=CHAT)
        asked = await member.replies()
        assert asked[-1].text == "Take a moment. What is your answer? You can send /skip."
        await member.send(words)
        await member.press(share)
    posted = await messages_in(running_bot, CHAT, 5)
    assert posted[4].text == "\u2068Ana\u2069 answers: \u2068We listen better\u2069"
    await quiet(running_bot, CHAT, 5)  # the answer without a yes stays private
    fake.press_button(STRANGER, question.message_id, data, chat_id=CHAT)
    stranger_said = await running_bot.user(STRANGER).replies()
    assert stranger_said[-1].text == "You are not in that group."

    # The group becomes a supergroup: the link follows it.
    fake.migrate_group(CHAT, SUPERGROUP, COACH)
    await running_bot.pump()
    fake.send_text(ANA, "/help", chat_type="supergroup", chat_id=SUPERGROUP, first_name="Ana")
    moved = await messages_in(running_bot, SUPERGROUP, 1)
    assert "Let us talk in private" in (moved[0].text or "")
    # Removed from the group: the link ends, and the bot refuses the chat again.
    fake.bot_membership(SUPERGROUP, COACH, "kicked", chat_type="supergroup")
    await running_bot.pump()
    fake.send_text(ANA, "/help", chat_type="supergroup", chat_id=SUPERGROUP, first_name="Ana")
    gone = await messages_in(running_bot, SUPERGROUP, 2)
    assert "only talk in private chats" in (gone[1].text or "")

    # A member leaves with /leave; a forged leave of a group they are not in gets nothing.
    await members[0].send("/leave")
    left = await members[0].press("\u2068Sales team\u2069")
    assert left[0].text == ("Done: you have left “\u2068Sales team\u2069”. Its exercises and "
                            "sessions stop for you.")
    stranger = running_bot.user(STRANGER)
    await stranger.send("/leave")
    assert stranger.messages[-1].text == "You are not in any group."


async def test_the_coach_picks_the_chats_language_and_the_bot_posts_in_it(
        group_bot: InProcessBot) -> None:
    bot, fake = group_bot, group_bot.fake
    it, he = translator_for("it"), translator_for("he")
    async with bot.store.sessionmaker() as session, session.begin():
        await make_coach(session, COACH)
        coach_row = await session.get(User, COACH)
        assert coach_row is not None
        coach_row.locale = "it"  # the coach's own bot language
    coach = bot.user(COACH, first_name="Marta", language_code="it")
    await coach.send("/newgroup Squadra")
    await coach.send("/groups")
    await coach.press("\u2068Squadra\u2069 (0)")
    chat_language = it.gettext("Language of the group's chat: {language}")
    assert chat_language.format(language="Italiano") in coach.button_labels()
    linking = await coach.press(it.gettext("Link the group's Telegram chat"))
    chat_link = re.search(r"startgroup=(gchat_[A-Za-z0-9_-]+)", linking[0].text or "")
    assert chat_link is not None
    # Added from a phone set to Hebrew: the chat still hears the coach's own language.
    fake.bot_membership(CHAT, COACH, "administrator")
    fake.send_text(COACH, f"/start@{fake.bot_username} {chat_link.group(1)}",
                   chat_type="group", chat_id=CHAT, first_name="Marta", language_code="he")
    hello = await messages_in(bot, CHAT, 1)
    assert hello[0].text == it.gettext(
        "Hello, “{group}”! Here I post only what is for everyone, and a private answer only "
        "when the person who wrote it chooses to share it. Everything personal happens in "
        "private chats with me.").format(group="\u2068Squadra\u2069")

    await coach.send("/groups")
    await coach.press("\u2068Squadra\u2069 (0)")
    picker = await coach.press(chat_language.format(language="Italiano"))
    assert picker[0].text == it.gettext("Which language should I use in the group's chat?")
    assert coach.button_labels() == ["English", "Català", "Български", "Hrvatski", "Italiano",
                                     "עברית"]
    chosen = await coach.press("עברית")
    assert chosen[0].text == chat_language.format(language="עברית")
    fake.send_text(ANA, "/help", chat_type="group", chat_id=CHAT, first_name="Ana")
    pointer = await messages_in(bot, CHAT, 2)
    assert pointer[1].text == he.gettext(
        "Let us talk in private: nobody in this group sees what you write to me there. "
        "/privacy says what I keep and who sees it. Here is our private chat: {link}").format(
            link=f"https://t.me/{fake.bot_username}")


async def forge(bot: InProcessBot, user_id: int, data: str) -> str:
    """``user_id`` sends a callback query with ``data`` on a message the bot sent them, as
    a modified client can; returns the bot's answer."""
    fake = bot.fake
    last = fake.messages_to(user_id)[-1]
    fake.send_raw({"callback_query": {
        "id": f"forged-{user_id}-{data}", "from": {"id": user_id, "is_bot": False,
                                                 "first_name": "X", "language_code": "en"},
        "message": fake._messages[(user_id, last.message_id)],
        "chat_instance": "1", "data": data}})
    answer = await messages_in(bot, user_id, len(fake.messages_to(user_id)) + 1)
    return answer[-1].text or ""


async def test_forged_buttons_of_another_group_get_nowhere(group_bot: InProcessBot) -> None:
    bot = group_bot
    async with bot.store.sessionmaker() as session, session.begin():
        await make_coach(session, COACH)
        await make_coach(session, STRANGER)
    coach, other = bot.user(COACH, first_name="Marta"), bot.user(STRANGER, first_name="Oz")
    made = await coach.send("/newgroup Sales team")
    code = re.search(r"start=(group_[A-Za-z0-9_-]+)", made[0].text or "")
    theirs = await other.send("/newgroup Other team")
    other_code = re.search(r"start=(group_[A-Za-z0-9_-]+)", theirs[0].text or "")
    assert code is not None and other_code is not None
    team_id = int((made[0].reply_markup or {})["inline_keyboard"][0][0]["callback_data"]
                  .split(":")[1])
    await bot.agree(ANA, BO)
    ana, bo = bot.user(ANA, first_name="Ana"), bot.user(BO, first_name="Bo")
    await ana.send(f"/start {code.group(1)}")
    await ana.press("Join: group figures only")
    await bo.send(f"/start {other_code.group(1)}")
    await bo.press("Join: group figures only")
    await coach.send("/groups")
    await coach.press("\u2068Sales team\u2069 (1)")
    await coach.press("Set the team's shared goal")
    await coach.send("Ship it")
    await coach.press("Yes")
    await ana.replies()

    not_yours = "I cannot find that group among yours. Send /groups to see them."
    # Another coach: the group's view, assigning to it, its goal, its chat link, its kind.
    for data in (f"grp:{team_id}", f"gas:{team_id}:action_sprint:d7:8", f"ggoal:{team_id}",
                 f"gchat:{team_id}", f"gkind:{team_id}:cohort", f"gdone:{team_id}",
                 f"glang:{team_id}", f"glang:{team_id}:he",
                 "grp:-1", "grp:99999999999999999999"):
        assert await forge(bot, STRANGER, data) == not_yours, data
    stale = "That button is no longer valid. Send /groups to start again."
    assert await forge(bot, STRANGER, "gas:1:2:3:4:5") == stale
    assert await forge(bot, COACH, f"glang:{team_id}:fr") == stale
    assert await forge(bot, COACH, f"glang:{team_id}:he:x") == stale
    # A member of another group: its goal dialogue, leaving it.
    assert await forge(bot, BO, f"gcontrib:{team_id}") == "You are not in that group."
    assert await forge(bot, BO, f"gleave:{team_id}") == "You are not in that group."
    # A removed member.
    await ana.send("/leave")
    await ana.press("\u2068Sales team\u2069")
    assert await forge(bot, ANA, f"gcontrib:{team_id}") == "You are not in that group."
    # A member is no coach of their group.
    assert await forge(bot, BO, f"grp:{team_id}") == not_yours


async def test_sos_in_a_group_is_answered_in_private_or_with_a_pointer(
    group_bot: InProcessBot
) -> None:
    """/sos in a group: never the help lines of a country there, which would say something
    of who asked. Someone the bot can write to in private gets them there and nothing is said
    in the group; anyone else gets the worldwide emergency numbers and a pointer to /sos in a
    private chat."""
    fake = group_bot.fake
    fake.bot_membership(UNLINKED, ANA, "member")
    ana = group_bot.user(ANA, first_name="Ana")
    await group_bot.agree(ANA)
    await ana.send("/start")
    private_before = len(fake.messages_to(ANA))
    fake.send_text(ANA, "/sos", chat_type="group", chat_id=UNLINKED, first_name="Ana")
    helped = await messages_in(group_bot, ANA, private_before + 1)
    assert "where you can find people to talk to:" in (helped[-1].text or "")
    await quiet(group_bot, UNLINKED, 0)
    # Words of crisis after it: the crisis path, in private too.
    fake.send_text(ANA, f"/sos@{fake.bot_username} i want to kill myself tonight, i have "
                   "the pills ready", chat_type="group", chat_id=UNLINKED, first_name="Ana")
    helped = await messages_in(group_bot, ANA, private_before + 2)
    assert "pausing our coaching" in (helped[-1].text or "")
    await quiet(group_bot, UNLINKED, 0)

    fake.send_text(STRANGER, "/SOS", chat_type="group", chat_id=UNLINKED, first_name="Eve")
    pointer = await messages_in(group_bot, UNLINKED, 1)
    said = pointer[0].text or ""
    assert said.startswith("If you have hurt yourself or feel you might, or you or someone else "
                           "is in immediate danger, call your local emergency number now (112 "
                           "in the EU, 911 in North America, 999 in the UK).")
    assert "send /sos to me in a private chat" in said
    assert f"https://t.me/{fake.bot_username}" in said and "Eve" not in said
    assert "Telefono Amico" not in said and "Samaritans" not in said  # no country's lines
    await quiet(group_bot, UNLINKED, 1)
    assert fake.messages_to(STRANGER) == []
