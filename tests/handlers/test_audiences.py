"""The one gate: a coach's or an admin's command, button or link refused to anyone else,
with the text the registry gives it; before consent, the consent question as for anything."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from bot.i18n import translator_for
from bot.store import CoachLink, Group, Invite, User
from bot.telegram.buttons import (
    BUTTONS,
    GROUP_BUTTONS,
    GROUP_START_LINKS,
    REFUSALS,
    START_LINKS,
    Route,
)
from bot.telegram.commands import COMMANDS, Audience, BotCommandSpec
from tests.flows import forge, make_coaches
from tests.inprocess import ClientUser, InProcessBot

CLIENT, COACH = 701, 702


def refusal_of(entry: BotCommandSpec | Route) -> str:
    return entry.refusal or REFUSALS[entry.audience]


COACH_COMMANDS = [s for s in COMMANDS.specs if s.audience is Audience.COACH
                  and COMMANDS.find(s.name) is s]  # /progress is the client's too
COACH_BUTTONS = [r for r in BUTTONS.routes if r.audience is Audience.COACH]


async def pressed(user: ClientUser, data: str) -> str:
    """A press of a button with ``data`` that the bot never sent ``user`` (forged)."""
    forge(user.bot, user.user_id, data, first_name=user.first_name)
    return (await user.replies())[0].text or ""


async def counts(bot: InProcessBot) -> tuple[int, ...]:
    async with bot.store.sessionmaker() as session:
        return tuple([int(await session.scalar(select(func.count()).select_from(table)) or 0)
                      for table in (Group, Invite, CoachLink)]
                     + [int(await session.scalar(select(func.count()).where(
                         User.is_coach.is_(True))) or 0)])


def test_every_coach_entry_is_gated() -> None:
    assert {s.name for s in COACH_COMMANDS} >= {"invite", "clients", "message", "assign",
                                                "assignments", "note", "schedule",
                                                "newexercise", "newgroup", "groups"}
    assert {r.prefix for r in COACH_BUTTONS} >= {"assign", "client", "grp", "gas", "asg"}
    assert COMMANDS.find("makecoach") is not None
    assert COMMANDS.find("makecoach").audience is Audience.ADMIN  # type: ignore[union-attr]


@pytest.mark.parametrize("spec", COACH_COMMANDS, ids=lambda s: s.name)
async def test_a_client_is_refused_a_coach_command(bot: InProcessBot,
                                                  spec: BotCommandSpec) -> None:
    client = bot.user(CLIENT, language_code="it")
    await bot.agree(CLIENT)
    before = await counts(bot)
    answer = await client.send(f"/{spec.name} Luca")
    assert [m.text for m in answer] == [translator_for("it").gettext(refusal_of(spec))]
    assert await counts(bot) == before  # nothing made, linked or invited


@pytest.mark.parametrize("route", COACH_BUTTONS, ids=lambda r: r.prefix)
async def test_a_client_is_refused_a_coach_button(bot: InProcessBot, route: Route) -> None:
    client = bot.user(CLIENT)
    await bot.agree(CLIENT)
    before = await counts(bot)
    assert await pressed(client, f"{route.prefix}:{COACH}:1") == refusal_of(route)
    assert await counts(bot) == before


async def test_only_an_admin_makes_a_coach(bot: InProcessBot) -> None:
    client = bot.user(CLIENT)
    await bot.agree(CLIENT)
    answer = await client.send(f"/makecoach {CLIENT}")
    assert answer[0].text == "I do not know that command. Send /help to see what I can do."
    assert await counts(bot) == (0, 0, 0, 0)


async def test_before_consent_the_gate_asks_for_consent_first(bot: InProcessBot) -> None:
    stranger = bot.user(CLIENT)
    answer = await stranger.send("/clients")
    assert answer[-1].text == "I work only with people aged 18 and over. Are you 18 or older?"


async def test_a_coach_passes_the_gate(bot: InProcessBot) -> None:
    await make_coaches(bot, COACH)
    coach = bot.user(COACH)
    answer = await coach.send("/clients")
    assert answer[0].text == ("Nobody shares their progress with you yet. Send /invite to "
                              "invite a client.")
    assert "cannot find that client" in await pressed(coach, f"client:{CLIENT}")


def test_routes_find_their_prefix_and_nothing_else() -> None:
    found = BUTTONS.find("gjoin:12")
    assert found is not None and found[0].prefix == "gjoin" and found[1] == "12"
    assert BUTTONS.find("gjoinx:12") is None  # a dialogue's answer, not a route
    assert BUTTONS.find("goal_yes") is None
    link = START_LINKS.find("invite_AbC-1")
    assert link is not None and link[0].prefix == "invite_" and link[1] == "AbC-1"
    group = START_LINKS.find("group_xyz")
    assert group is not None and group[1] == "xyz"
    assert START_LINKS.find("hello") is None
    in_group = GROUP_BUTTONS.find("gqa:5:0")
    assert in_group is not None and in_group[0].audience is Audience.GROUP
    assert GROUP_BUTTONS.find("grp:5") is None  # a private chat's button does nothing there
    chat_link = GROUP_START_LINKS.find("gchat_code")
    assert chat_link is not None and chat_link[1] == "code"
    assert START_LINKS.find("gchat_code") is None


def test_a_prefix_is_declared_once() -> None:
    from bot.telegram.buttons import Routes

    async def nothing(*_: object) -> None:
        return None

    with pytest.raises(ValueError, match="overlaps"):
        Routes(Route("g", Audience.CLIENT, nothing), Route("g", Audience.COACH, nothing),
               separator=":")
    with pytest.raises(ValueError, match="overlaps"):
        Routes(Route("inv_", Audience.CLIENT, nothing), Route("inv", Audience.CLIENT, nothing),
               separator=None)
