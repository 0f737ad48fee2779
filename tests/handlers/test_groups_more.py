"""Groups on Telegram, the rest of issue 27, in process: a coach schedules a group session
by buttons and each member gets it with the calendar file; the coach makes a new join link
(the old one then says so), renames the group and removes a member, who is told kindly;
members and other coaches pressing the coach's buttons, or forging a group's id, get
nowhere."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import select

from bot.store import CoachingSession, Group, GroupSession, ProgrammeRun, User
from bot.telegram.buttons import REFUSALS
from bot.telegram.commands import Audience
from tests import flows
from tests.inprocess import ClientUser, InProcessBot

COACH, STRANGER, ANA, BO = 900, 901, 910, 911


async def forge(bot: InProcessBot, user: ClientUser, data: str) -> str:
    """``user`` presses a button with ``data`` the bot never sent them (tests/flows.py);
    returns the bot's answer."""
    flows.forge(bot, user.user_id, data)
    return (await user.replies())[-1].text or ""


async def group_with_members(bot: InProcessBot) -> tuple[ClientUser, ClientUser, ClientUser,
                                                         int, str]:
    await flows.make_coaches(bot, COACH, STRANGER)
    coach = bot.user(COACH, first_name="Marta")
    made = await coach.send("/newgroup Sales team")
    found = re.search(r"start=group_([A-Za-z0-9_-]+)", made[0].text or "")
    assert found is not None
    code = found.group(1)
    await bot.agree(ANA, BO)
    ana = bot.user(ANA, first_name="Ana", language_code="it")
    bo = bot.user(BO, first_name="Bo", language_code="he")
    for member in (ana, bo):
        await member.send(f"/start group_{code}")
        await member.press(join_label(member))
    async with bot.store.sessionmaker() as session:
        group_id = await session.scalar(select(Group.id))
    assert group_id is not None
    return coach, ana, bo, group_id, code


def join_label(user: ClientUser) -> str:
    """The "group figures only" button, in the member's language."""
    for message in reversed(user.messages):
        for row in (message.reply_markup or {}).get("inline_keyboard", []):
            for button in row:
                if button["callback_data"].startswith("gjoin:f:"):
                    return str(button["text"])
    raise AssertionError("no join button")


def _data(message: Any, prefix: str) -> list[str]:
    return [b["callback_data"] for row in (message.reply_markup or {}).get("inline_keyboard", [])
            for b in row if b["callback_data"].startswith(prefix)]


async def test_a_coach_schedules_a_group_session_by_buttons(bot: InProcessBot) -> None:
    coach, ana, bo, _, _ = await group_with_members(bot)
    await coach.send("/groups")
    await coach.press("\u2068Sales team\u2069 (2)")
    await coach.press("Schedule a group session")
    days = (coach.messages[-1].reply_markup or {})["inline_keyboard"]
    tomorrow = days[1][0]["text"] if len(days) > 1 else days[0][1]["text"]
    await coach.press(tomorrow)
    await coach.press("6:00\u202fPM")
    await coach.press("6:00\u202fPM")
    await coach.press("60 min")
    await coach.press("By video")
    await coach.press("Just this once")
    done = await coach.send("https://meet.example/team")
    text = " ".join(m.text or "" for m in done)
    assert "Session scheduled with the group" in text and "2 members got it" in text
    for member, words in ((ana, "Il tuo gruppo"), (bo, "לקבוצה")):
        told = await member.replies()
        assert any(words in (m.text or "") for m in told)
    assert len(bot.fake.messages_to(ANA)) >= 3
    async with bot.store.sessionmaker() as session:
        assert len((await session.scalars(select(GroupSession))).all()) == 1
        assert len((await session.scalars(select(CoachingSession))).all()) == 2
    # A member sees it in /sessions under the group's name, with no coach's buttons.
    theirs = await ana.send("/sessions")
    assert "Sales team" in (theirs[0].text or "") and not _data(theirs[0], "gsess:")
    # The coach sees it in /sessions, with a button to cancel it.
    listing = await coach.send("/sessions")
    assert "Sales team" in (listing[0].text or "")
    assert _data(listing[0], "gsess:cancel:")
    # A member pressing that button, or another coach: nothing is cancelled.
    cancel = _data(listing[0], "gsess:cancel:")[0]
    assert await forge(bot, ana, cancel) == REFUSALS[Audience.COACH]  # no coach: the gate
    stranger = bot.user(STRANGER, first_name="Oz")
    await stranger.send("/groups")
    assert await forge(bot, stranger, cancel) == "This session is not planned any more."
    async with bot.store.sessionmaker() as session:
        assert (await session.scalars(select(GroupSession.status))).all() == ["scheduled"]
    # The coach moves it to 19:15 the same day; a stranger's move gets nowhere.
    move = _data(listing[0], "gsess:move:")[0]
    assert await forge(bot, stranger, move) == "This session is not planned any more."
    await coach.press(_label(listing[0], move))
    await coach.press(tomorrow)
    await coach.press("7:00\u202fPM")
    moved = (await coach.press("7:15\u202fPM"))[-1].text or ""
    assert moved.startswith("Session with the group “\u2068Sales team\u2069” moved:")
    assert "7:15\u202fPM" in moved
    for member, words in ((ana, "has moved"), (bo, "הוזז")):
        told = await member.replies()
        assert words in (told[0].text or "") and told[1].kind == "document"
    cancelled = await coach.press(_label(listing[0], cancel))
    assert "Session with the group “\u2068Sales team\u2069” cancelled:" in (
        cancelled[-1].text or "")
    for member in (ana, bo):
        files = [m for m in await member.replies() if m.kind == "document"]
        assert len(files) == 1
    async with bot.store.sessionmaker() as session:
        assert set((await session.scalars(select(CoachingSession.status))).all()) == {
            "cancelled"}


def _label(message: Any, data: str) -> str:
    for row in (message.reply_markup or {}).get("inline_keyboard", []):
        for button in row:
            if button["callback_data"] == data:
                return str(button["text"])
    raise AssertionError(data)


async def test_a_new_link_revokes_the_old_and_renaming_and_removing(bot: InProcessBot) -> None:
    coach, ana, bo, group_id, old_code = await group_with_members(bot)
    await coach.send("/groups")
    page = await coach.press("\u2068Sales team\u2069 (2)")
    assert old_code not in (page[0].text or "")  # shown once, when it was made
    assert "Join link expires:" in (page[0].text or "")
    made = await coach.press("New join link (the old one stops working)")
    new = re.search(r"start=group_([A-Za-z0-9_-]+)", made[0].text or "")
    assert new is not None and new.group(1) != old_code
    late = bot.user(912, first_name="Cy")
    await bot.agree(912)
    refused = await late.send(f"/start group_{old_code}")
    assert refused[0].text == ("This group link is not valid any more. Please ask your coach "
                               "for a new one.")
    offered = await late.send(f"/start group_{new.group(1)}")
    assert "invites you to join" in (offered[0].text or "")

    # Renaming, through its short dialogue.
    await coach.send("/groups")
    await coach.press("\u2068Sales team\u2069 (2)")
    await coach.press("Rename the group")
    await coach.send("Sales & Success")
    await coach.press("Yes")
    async with bot.store.sessionmaker() as session:
        assert (await session.scalars(select(Group.name))).all() == ["Sales & Success"]

    # Members and another coach pressing the coach's buttons, or a forged group id.
    not_yours = "I cannot find that group among yours. Send /groups to see them."
    stranger = bot.user(STRANGER, first_name="Oz")
    await stranger.send("/groups")
    for who, refusal in ((ana, not_yours), (stranger, not_yours)):
        for data in (f"grm:{group_id}", f"grm:{group_id}:{BO}:y", f"gren:{group_id}",
                     f"gcode:{group_id}", f"gwq:{group_id}:on", "grm:999999:910:y",
                     f"gcode:-{group_id}"):
            assert await forge(bot, who, data) == refusal, (who.user_id, data)
    assert await forge(bot, ana, f"session:new:g{group_id}") == (
        "Only coaches can do this. Ask your coach to use /schedule.")
    assert await forge(bot, stranger, f"session:new:g{group_id}") == (
        "That choice is not valid any more. Send /schedule to start again.")
    assert (await forge(bot, coach, "session:new:g999999")).startswith(
        "That choice is not valid any more")
    async with bot.store.sessionmaker() as session:
        assert len((await session.scalars(select(GroupSession))).all()) == 0

    # The coach removes Bo: asked first, then Bo is told kindly, in Hebrew.
    done = await flows.remove_member(coach, "\u2068Sales & Success\u2069 (2)", "\u2068Bo\u2069")
    assert "no longer in" in (done[-1].text or "")
    told = await bo.replies()
    assert "הסתיימה לפי החלטת הקואצ'ר שלך" in (told[-1].text or "")
    assert await forge(bot, bo, f"gcontrib:{group_id}") == "You are not in that group."
    # Removing someone who is no member any more: said so, nothing else.
    assert await forge(bot, coach, f"grm:{group_id}:{BO}:y") == (
        "That person is not in the group any more.")


async def test_a_coach_gives_the_whole_group_a_programme_and_no_one_else_can(
        bot: InProcessBot) -> None:
    coach, ana, _, group_id, _ = await group_with_members(bot)
    await coach.send("/groups")
    await coach.press("\u2068Sales team\u2069 (2)")
    await coach.press("Give the group a programme")
    await coach.press("Values and goals, in four weeks")
    done = await coach.press("6:00\u202fPM")
    assert "Members who got it: 2" in (done[-1].text or "")
    async with bot.store.sessionmaker() as session:
        runs = (await session.execute(select(ProgrammeRun.client_id, ProgrammeRun.programme)
                                      .order_by(ProgrammeRun.client_id))).all()
    assert runs == [(ANA, "values_and_goals"), (BO, "values_and_goals")]

    # A member, or another coach, forging the button: refused, nothing given.
    not_yours = "I cannot find that group among yours. Send /groups to see them."
    stranger = bot.user(STRANGER, first_name="Oz")
    await stranger.send("/groups")
    for who in (ana, stranger):
        for data in (f"gprg:{group_id}", f"gprg:{group_id}:values_and_goals:18",
                     "gprg:999999:values_and_goals:18"):
            assert await forge(bot, who, data) == not_yours, (who.user_id, data)
    assert (await forge(bot, coach, f"gprg:{group_id}:no_such:18")).startswith(
        "That button is no longer valid")
    async with bot.store.sessionmaker() as session:
        assert len((await session.execute(select(ProgrammeRun.id))).all()) == 2


REACHED_IT = ("Il vostro coach ha segnato come raggiunto l'obiettivo comune di "
              "«\u2068Sales team\u2069»: «\u2068Ship the guide by June\u2069». Secondo "
              "ciascuno di voi, che cosa ha reso possibile questo risultato?")


async def test_reaching_the_goal_is_celebrated_in_the_chats_language_without_names(
        bot: InProcessBot) -> None:
    coach, ana, bo, group_id, _ = await group_with_members(bot)
    chat = -100777
    async with bot.store.sessionmaker() as session, session.begin():
        group = await session.get(Group, group_id)
        assert group is not None
        group.kind, group.shared_goal = "team", "Ship the guide by June"
        group.chat_id, group.chat_locale = chat, "it"
    await coach.send("/groups")
    await coach.press("\u2068Sales team\u2069 (2)")
    await coach.press("The team reached its goal")
    await bot.pump()
    posted = [m.text or "" for m in bot.fake.messages_to(chat)]
    assert posted == [REACHED_IT]
    assert not any(name in posted[0] for name in ("Ana", "Bo", "Marta"))
    # Once reached, the button is gone; a forged press by a member changes nothing.
    assert await forge(bot, ana, f"gdone:{group_id}") == (
        "I cannot find that group among yours. Send /groups to see them.")
    assert len(bot.fake.messages_to(chat)) == 1
    # Without a linked chat, each member hears it in private, in their own language.
    async with bot.store.sessionmaker() as session, session.begin():
        group = await session.get(Group, group_id)
        assert group is not None
        group.chat_id, group.goal_reached_at = None, None
        for member, locale in ((ANA, "it"), (BO, "he")):  # as each chose in /language
            stored = await session.get(User, member)
            assert stored is not None
            stored.locale = locale
    await coach.send("/groups")
    await coach.press("\u2068Sales team\u2069 (2)")
    await coach.press("The team reached its goal")
    assert (await ana.replies())[-1].text == (
        "Il tuo coach ha segnato come raggiunto l'obiettivo comune del tuo team "
        "«\u2068Sales team\u2069»: «\u2068Ship the guide by June\u2069». Secondo te, che cosa "
        "ha reso possibile questo risultato?")  # in private: one person, the team's goal
    assert ((await bo.replies())[-1].text or "").startswith("עדכון מהקואצ'ר")
