"""Every bot command, once: its name, who it is for, its handler, its description.

Dispatch, ``/help`` and the Telegram command menus (``setMyCommands``, per scope) are all
derived from ``COMMANDS``. Adding a command is one entry here plus its handler.

Audiences say where a command is listed, and gate it: a coach's or an admin's command from
anyone else gets its ``refusal`` (``Handlers.admitted``, in one place; buttons and start links
likewise, ``buttons.py``). The handlers still check, in the domain layer, what they act on.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from telegram import Bot, BotCommand, BotCommandScopeChat, Message, Update

from bot.coaching.contracts import GOAL_SETTING, REMINDERS, SET_TIMEZONE
from bot.i18n import N_, Translator, translator_for

if TYPE_CHECKING:  # the handlers import this registry; it names them only for typing
    from bot.telegram.handlers import Handlers

log = logging.getLogger(__name__)

_NAME = re.compile(r"[a-z0-9_]{1,32}")  # what Telegram accepts as a command name


class Audience(Enum):
    """Whose /help and menu list a command."""

    CLIENT = "client"
    COACH = "coach"
    ADMIN = "admin"
    GROUP = "group"  # group chats: every command there gets a pointer to the private chat


@dataclass(frozen=True)
class CommandCall:
    """One use of a command: the update, its message, the text after the command, and the
    command's own ``before_consent`` (for the store turn its handler runs)."""

    update: Update
    message: Message
    argument: str
    before_consent: bool


Handler = Callable[["Handlers", CommandCall], Awaitable[None]]


@dataclass(frozen=True)
class BotCommandSpec:
    name: str
    audience: Audience
    handler: Handler
    description: str | None = None  # msgid; None: listed neither in /help nor in a menu
    before_consent: bool = False  # runs before the user agreed that answers are kept
    in_menu: bool = True  # False: listed in /help only
    refusal: str | None = None  # msgid for anyone outside the audience; None: the default

    @property
    def listed(self) -> bool:
        return self.description is not None


class CommandRegistry:
    def __init__(self, *specs: BotCommandSpec) -> None:
        self.specs = specs
        self._by_name: dict[str, BotCommandSpec] = {}
        for spec in specs:
            if not _NAME.fullmatch(spec.name):
                raise ValueError(f"not a Telegram command name: {spec.name!r}")
            first = self._by_name.setdefault(spec.name, spec)
            # One name may be listed for two audiences (/progress), but it runs one handler.
            if first.handler is not spec.handler or first.before_consent != spec.before_consent:
                raise ValueError(f"/{spec.name} is registered twice with different handlers")

    def find(self, name: str) -> BotCommandSpec | None:
        return self._by_name.get(name)

    def listed(self, audience: Audience) -> tuple[BotCommandSpec, ...]:
        """The commands /help shows to this audience, in order."""
        return tuple(s for s in self.specs if s.audience is audience and s.listed)

    def menu(self, audiences: Iterable[Audience], tr: Translator) -> list[BotCommand]:
        """The menu for these audiences, in their order, each name once, in ``tr``'s language."""
        seen: set[str] = set()
        menu: list[BotCommand] = []
        for audience in audiences:
            for spec in self.listed(audience):
                if spec.in_menu and spec.name not in seen and spec.description is not None:
                    seen.add(spec.name)
                    menu.append(BotCommand(spec.name, tr.gettext(spec.description)))
        return menu

    def help_lines(self, audience: Audience, tr: Translator) -> list[str]:
        return [f"/{s.name} — {tr.gettext(s.description)}" for s in self.listed(audience)
                if s.description is not None]


async def _progress(h: Handlers, c: CommandCall) -> None:
    """With a name or id, a coach asking about a client; alone, the user's own progress."""
    if c.argument:
        await h.in_turn(c, h.coach.progress)
    else:
        await h.on_progress(c)


C, CO, AD = Audience.CLIENT, Audience.COACH, Audience.ADMIN
ONLY_COACHES_GROUPS = N_("Only coaches can make groups. If you are a coach, ask the bot's "
                         "administrator to set you up.")

# In the order /help and the menus show them.
COMMANDS = CommandRegistry(
    BotCommandSpec("sos", C, lambda h, c: h.on_sos(c.update),
                   N_("Help lines and the emergency number"), before_consent=True),
    BotCommandSpec("checkin", C, lambda h, c: h.on_checkin(c), N_("Daily check-in")),
    BotCommandSpec("goal", C, lambda h, c: h.start_dialogue(c, GOAL_SETTING),
                   N_("Set a new goal")),
    BotCommandSpec("progress", C, _progress, N_("See your progress")),
    BotCommandSpec("exercises", C, lambda h, c: h.on_exercises(c), N_("Exercises")),
    BotCommandSpec("reminders", C, lambda h, c: h.start_dialogue(c, REMINDERS),
                   N_("Check-in time and days, quiet hours, pause")),
    BotCommandSpec("timezone", C, lambda h, c: h.start_dialogue(c, SET_TIMEZONE),
                   N_("Change your time zone")),
    BotCommandSpec("language", C, lambda h, c: h.on_language_command(c),
                   N_("Change the language"), before_consent=True),
    BotCommandSpec("cancel", C, lambda h, c: h.engine_command(c, "cancel"),
                   N_("Stop the current conversation")),
    BotCommandSpec("actions", C, lambda h, c: h.in_turn(c, h.sessions.actions),
                   N_("What you committed to: mark it done or let it go")),
    BotCommandSpec("sessions", C, lambda h, c: h.in_turn(c, h.sessions.sessions),
                   N_("Your next sessions with your coach")),
    BotCommandSpec("brief", C, lambda h, c: h.in_turn(c, h.sessions.brief),
                   N_("Whether your coach gets your preparation before a session")),
    BotCommandSpec("coach", C, lambda h, c: h.in_turn(c, h.coach.coaches),
                   N_("The coaches who see your progress")),
    BotCommandSpec("privacy", C, lambda h, c: h.on_privacy(c),
                   N_("What I keep, for how long, and who sees it"), before_consent=True),
    BotCommandSpec("export", C, lambda h, c: h.on_export(c), N_("Download all your data")),
    BotCommandSpec("delete", C, lambda h, c: h.on_delete_command(c),
                   N_("Delete all your data"), before_consent=True),
    BotCommandSpec("leave", C, lambda h, c: h.in_turn(c, h.groups.leave),
                   N_("Leave a group")),
    BotCommandSpec("help", C, lambda h, c: h.on_help(c), N_("What I can do")),
    BotCommandSpec("start", C, lambda h, c: h.on_start(c), before_consent=True),
    BotCommandSpec("back", C, lambda h, c: h.engine_command(c, "back")),
    BotCommandSpec("skip", C, lambda h, c: h.engine_command(c, "skip")),
    BotCommandSpec("invite", CO, lambda h, c: h.in_turn(c, h.coach.invite),
                   N_("Invite a client (a link that works once)"),
                   refusal=N_("Only coaches can invite clients. If you are a coach, ask the "
                              "bot's administrator to set you up.")),
    BotCommandSpec("clients", CO, lambda h, c: h.in_turn(c, h.coach.side.clients),
                   N_("Your clients and their progress")),
    BotCommandSpec("message", CO, lambda h, c: h.in_turn(c, h.coach.side.message),
                   N_("Write to a client")),
    BotCommandSpec("assign", CO, lambda h, c: h.in_turn(c, h.coach.assign),
                   N_("Assign an exercise to a client")),
    BotCommandSpec("assignments", CO, lambda h, c: h.in_turn(c, h.coach.side.assignments),
                   N_("A client's assignments: pause, change, cancel")),
    BotCommandSpec("note", CO, lambda h, c: h.in_turn(c, h.coach.side.note),
                   N_("A private note about a client")),
    BotCommandSpec("measure", CO, lambda h, c: h.in_turn(c, h.coach.side.measure),
                   N_("Ask a client for a rating or a number on a schedule")),
    BotCommandSpec("programme", CO, lambda h, c: h.in_turn(c, h.coach.side.programme),
                   N_("Give a client a programme of exercises over weeks")),
    BotCommandSpec("schedule", CO, lambda h, c: h.in_turn(c, h.sessions.schedule),
                   N_("Schedule a session or a series with a client"),
                   refusal=N_("Only coaches can do this. Ask your coach to use /schedule.")),
    BotCommandSpec("newexercise", CO, lambda h, c: h.in_turn(c, h.coach.new_exercise),
                   N_("Write an exercise of your own"),
                   refusal=N_("Only coaches can write exercises. If you are a coach, ask the "
                              "bot's administrator to set you up.")),
    BotCommandSpec("progress", CO, _progress, N_("A client's progress: /progress name"),
                   in_menu=False),  # the client's /progress is in the menu already
    BotCommandSpec("newgroup", CO, lambda h, c: h.in_turn(c, h.groups.new_group),
                   N_("Make a group (a team or a cohort): /newgroup name"),
                   refusal=ONLY_COACHES_GROUPS),
    BotCommandSpec("groups", CO, lambda h, c: h.in_turn(c, h.groups.list_groups),
                   N_("Your groups: members, figures, assigning to everyone"),
                   refusal=ONLY_COACHES_GROUPS),
    BotCommandSpec("makecoach", AD, lambda h, c: h.coach.make_coach(c)),
)

CLIENT_MENU = (Audience.CLIENT,)
COACH_MENU = (Audience.COACH, Audience.CLIENT)  # a coach uses the client's commands too


def help_text(tr: Translator, *, coach: bool) -> str:
    lines = [tr.gettext("I am your coaching companion, with a coach or on your own. "
                        "I ask questions; the answers and the goals are yours."), ""]
    lines += COMMANDS.help_lines(Audience.CLIENT, tr)
    if coach:
        lines += ["", tr.gettext("For coaches:")]
        lines += COMMANDS.help_lines(Audience.COACH, tr)
    lines += ["", tr.gettext("During a conversation: /back goes to the previous question, "
                             "/skip skips an optional one.")]
    return "\n".join(lines)


async def set_coach_menu(bot: Bot, coach_id: int, locale: str) -> bool:
    """The coach commands in the coach's own chat menu, in their language. A failure is
    logged (ids and the error's kind only), never raised: the commands work without it."""
    try:
        await bot.set_my_commands(COMMANDS.menu(COACH_MENU, translator_for(locale)),
                                  scope=BotCommandScopeChat(coach_id))
    except Exception as exc:
        log.warning("command menu of coach %s not set: %s", coach_id, type(exc).__name__)
        return False
    return True


async def set_coach_menus(bot: Bot, coaches: Iterable[tuple[int, str]]) -> int:
    """The menus of these (coach id, locale); returns how many were set."""
    done = 0
    for coach_id, locale in coaches:
        done += await set_coach_menu(bot, coach_id, locale)
    return done
