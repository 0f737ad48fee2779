"""The command registry: /help and the menus come from it, in order, each name once."""

from __future__ import annotations

from typing import Any

import pytest
from telegram import BotCommand

from bot.engine.crisis import detect_crisis
from bot.i18n import SUPPORTED_LOCALES, translator_for
from bot.telegram import commands
from bot.telegram.commands import (
    CLIENT_MENU,
    COACH_MENU,
    COMMANDS,
    Audience,
    BotCommandSpec,
    CommandRegistry,
    help_text,
    set_coach_menu,
)
from bot.telegram.handlers import _as_words

EN = translator_for("en")
CLIENT_COMMANDS = ["sos", "checkin", "goal", "progress", "exercises", "reminders", "timezone",
                   "language", "cancel", "actions", "sessions", "brief", "coach", "privacy",
                   "export", "delete", "leave", "help"]
COACH_COMMANDS = ["invite", "clients", "message", "assign", "assignments", "note", "measure",
                  "programme", "schedule", "newexercise", "newgroup", "groups"]


async def nothing(h: Any, c: Any) -> None:
    return None


async def other(h: Any, c: Any) -> None:
    return None


def test_the_clients_menu_is_the_client_commands_in_order() -> None:
    menu = COMMANDS.menu(CLIENT_MENU, EN)
    assert [c.command for c in menu] == CLIENT_COMMANDS
    assert menu[0] == BotCommand("sos", "Help lines and the emergency number")


def test_a_coachs_menu_has_the_coach_commands_first_and_no_name_twice() -> None:
    for locale in SUPPORTED_LOCALES:
        menu = COMMANDS.menu(COACH_MENU, translator_for(locale))
        names = [c.command for c in menu]
        assert names == COACH_COMMANDS + CLIENT_COMMANDS, locale
        assert all(c.description.strip() for c in menu), locale
    italian = COMMANDS.menu(COACH_MENU, translator_for("it"))
    assert italian[0].description != "Invite a client (a link that works once)"


def test_help_lists_the_client_commands_and_for_a_coach_theirs() -> None:
    client = help_text(EN, coach=False).splitlines()
    assert [line.split(" ")[0] for line in client if line.startswith("/")] == [
        f"/{name}" for name in CLIENT_COMMANDS]
    assert "For coaches:" not in client
    coach = help_text(EN, coach=True).splitlines()
    assert coach[coach.index("For coaches:") + 1:][:11] == [
        "/invite — Invite a client (a link that works once)",
        "/clients — Your clients and their progress",
        "/message — Write to a client",
        "/assign — Assign an exercise to a client",
        "/assignments — A client's assignments: pause, change, cancel",
        "/note — A private note about a client",
        "/measure — Ask a client for a rating or a number on a schedule",
        "/programme — Give a client a programme of exercises over weeks",
        "/schedule — Schedule a session or a series with a client",
        "/newexercise — Write an exercise of your own",
        "/progress — A client's progress: /progress name",
    ]


def test_privacy_is_in_every_clients_menu_and_help_before_export() -> None:
    for locale in SUPPORTED_LOCALES:
        for menu in (CLIENT_MENU, COACH_MENU):
            names = [c.command for c in COMMANDS.menu(menu, translator_for(locale))]
            assert names.index("privacy") + 1 == names.index("export"), (locale, menu)
    assert BotCommand("privacy", "What I keep, for how long, and who sees it") in \
        COMMANDS.menu(CLIENT_MENU, EN)
    assert "/privacy — What I keep, for how long, and who sees it" in \
        help_text(EN, coach=False).splitlines()


def test_hidden_commands_are_found_but_never_listed() -> None:
    for name in ("start", "back", "skip", "makecoach"):
        spec = COMMANDS.find(name)
        assert spec is not None and not spec.listed
        assert all(name not in line for line in COMMANDS.help_lines(Audience.CLIENT, EN))
    assert COMMANDS.find("nosuch") is None
    assert COMMANDS.find("makecoach").audience is Audience.ADMIN  # type: ignore[union-attr]


def test_what_runs_before_consent_is_declared_in_the_registry() -> None:
    before = {s.name for s in COMMANDS.specs if s.before_consent}
    assert before == {"sos", "start", "language", "privacy", "delete"}


def test_one_name_runs_one_handler() -> None:
    with pytest.raises(ValueError, match="/note"):
        CommandRegistry(BotCommandSpec("note", Audience.CLIENT, nothing),
                        BotCommandSpec("note", Audience.COACH, other))
    with pytest.raises(ValueError, match="not a Telegram command name"):
        CommandRegistry(BotCommandSpec("Note", Audience.COACH, nothing))
    both = CommandRegistry(BotCommandSpec("note", Audience.CLIENT, nothing, "A"),
                           BotCommandSpec("note", Audience.COACH, nothing, "B"))
    assert [c.command for c in both.menu((Audience.COACH, Audience.CLIENT), EN)] == ["note"]


async def test_a_failure_to_set_a_coachs_menu_is_logged_not_raised(
        caplog: pytest.LogCaptureFixture) -> None:
    class Refusing:
        async def set_my_commands(self, *args: Any, **kwargs: Any) -> bool:
            raise OSError("connection reset")

    with caplog.at_level("WARNING", logger=commands.__name__):
        assert await set_coach_menu(Refusing(), 42, "he") is False  # type: ignore[arg-type]
    assert "coach 42 not set: OSError" in caplog.text


#: Arguments the commands are sent with (start links carry a random code).
EVERYDAY_ARGUMENTS = ["", "@coachbot", " invite_Xk3_q9LmZ2aB", " group_Qw7-Rt2yUi0p",
                      " gchat_Zx8_Cv1bNm4K", " Ana", " Europe/Rome", " it", " Sales team",
                      " 12345"]


@pytest.mark.parametrize("name", sorted({spec.name for spec in COMMANDS.specs}))
def test_an_everyday_command_is_no_sign_of_crisis(name: str) -> None:
    # What the crisis check reads of a text starting with "/" (handlers.py): a known
    # command's argument; the model alone takes some command words ("note") for a sign.
    for argument in EVERYDAY_ARGUMENTS:
        text = f"/{name}{argument}"
        assert not detect_crisis(_as_words(text)), text
