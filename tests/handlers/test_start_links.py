"""A new person's start link (a group's, a coach's invite) opened before they agreed that
their answers are kept: it waits in the onboarding's state, and when the onboarding is over
they get the group's offer or the invite as an agreed person would, without opening the link
again; if they decline, nothing of it is kept and no offer comes."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import func, select

from bot.coaching.links import coaches_of
from bot.store import Conversation, User
from tests.fakes.bot_api import FakeBotApi
from tests.flows import make_coaches, text_of
from tests.handlers.test_bot import answer_until_idle
from tests.inprocess import ClientUser, InProcessBot, client_settings, in_process

COACH, NEWCOMER = 601, 602


@pytest.fixture
async def link_bot(tmp_path: Path, db_url: str) -> AsyncIterator[InProcessBot]:
    """The bot on SQLite and on PostgreSQL."""
    fake = FakeBotApi()
    settings = client_settings(fake, tmp_path, database_url=db_url, allow_plaintext=True)
    async with in_process(fake, settings) as bot:
        yield bot


async def group_link(bot: InProcessBot) -> str:
    await make_coaches(bot, COACH)
    coach = bot.user(COACH, first_name="Marta")
    made = await coach.send("/newgroup Runners")
    await coach.press("Cohort")
    found = re.search(r"start=(group_[\w-]+)", made[0].text or "")
    assert found is not None
    return found.group(1)


async def invite_link(bot: InProcessBot) -> str:
    await make_coaches(bot, COACH)
    invite = (await bot.user(COACH, first_name="Marta").send("/invite"))[0].text or ""
    found = re.search(r"start=(invite_[\w-]+)", invite)
    assert found is not None
    return found.group(1)


async def onboarded(bot: InProcessBot, newcomer: ClientUser) -> None:
    """Through the whole onboarding after the link: age, consent, language, zone, hour, goal."""
    await newcomer.press("Yes")  # 18 or older
    await newcomer.press("Yes")  # agrees
    await newcomer.press("English")
    await newcomer.send("Rome")
    await newcomer.send("8:00")
    await answer_until_idle(bot, newcomer, {
        "goal": "Run a 10k race", "baseline": "3", "target": "8", "commitment": "9"})


async def test_a_new_person_gets_the_groups_offer_when_the_onboarding_ends(
        link_bot: InProcessBot) -> None:
    code = await group_link(link_bot)
    ana = link_bot.user(NEWCOMER, first_name="Ana")
    first = await ana.send(f"/start {code}")
    assert (first[0].text or "").startswith("Hello, and welcome.")
    assert "invites you to join" not in text_of(first)
    await onboarded(link_bot, ana)
    texts = [m.text or "" for m in ana.messages]
    closing = next(i for i, t in enumerate(texts) if "You are all set" in t)
    assert "\u2068Marta\u2069 invites you to join the group “\u2068Runners\u2069”" \
        in texts[closing + 1]
    assert sum("invites you to join" in t for t in texts) == 1
    welcome = await ana.press("Join: group figures only")
    assert "Welcome to “\u2068Runners\u2069”" in (welcome[0].text or "")
    await ana.send("/checkin")  # the link waits no more: no second offer
    assert sum("invites you to join" in m.text for m in ana.messages if m.text) == 1


async def test_a_new_person_gets_the_coachs_invite_when_the_onboarding_ends(
        link_bot: InProcessBot) -> None:
    code = await invite_link(link_bot)
    luca = link_bot.user(NEWCOMER, first_name="Luca")
    await luca.send(f"/start {code}")
    await onboarded(link_bot, luca)
    assert "\u2068Marta\u2069 invites you to share your coaching progress" \
        in (luca.messages[-1].text or "")
    linked = await luca.press("Yes, share")
    assert "your coach can now follow your progress" in (linked[0].text or "")
    assert "an hour before each session" in text_of(linked)  # the brief question
    async with link_bot.store.sessionmaker() as session:
        assert [c.user_id for c in await coaches_of(session, NEWCOMER)] == [COACH]


async def test_declining_keeps_nothing_of_the_link_and_no_offer_comes(
        link_bot: InProcessBot) -> None:
    code = await group_link(link_bot)
    bo = link_bot.user(NEWCOMER, first_name="Bo")
    await bo.send(f"/start {code}")
    await bo.press("Yes")  # 18 or older
    goodbye = await bo.press("No")  # does not agree
    assert "I have kept nothing" in text_of(goodbye)
    assert "invites you" not in text_of(bo.messages)
    async with link_bot.store.sessionmaker() as session:
        for model, column in ((User, User.id), (Conversation, Conversation.user_id)):
            assert await session.scalar(select(func.count()).select_from(model).where(
                column == NEWCOMER)) == 0
    again = await bo.send("/start")  # starting over: the onboarding alone, no offer at its end
    assert (again[0].text or "").startswith("Hello, and welcome.")
    await onboarded(link_bot, bo)
    assert "invites you" not in text_of(bo.messages)
