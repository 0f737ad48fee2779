"""Every inline button and every ``/start`` link, once: its prefix, who it is for, its handler.

Beside the command registry (``commands.py``). ``Handlers`` dispatches a button's callback data
(``<prefix>:<value>``) and a ``/start`` payload (``<prefix><value>``) from here, and refuses one
whose audience the user is not in, in one place (``Handlers.dispatch``), with the route's
``refusal``. Callback data with no route here is an answer to a dialogue's question (the
engine's buttons). Adding a button is one entry here plus its handler; each handler still
checks, in the domain layer, that the coach may act on that client or group, so forged data
gets nowhere.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from telegram import Update

from bot.coaching.actions import BUTTON as ACTION_BUTTON
from bot.coaching.sessions import BUTTON as SESSION_BUTTON
from bot.coaching.sessions import GROUP_BUTTON as GROUP_SESSION_BUTTON
from bot.i18n import N_
from bot.telegram import coach_side
from bot.telegram.coach import INVITE_PREFIX, TRY_DIALOGUE
from bot.telegram.commands import Audience
from bot.telegram.groups import CHAT_PREFIX, JOIN_PREFIX
from bot.telegram.groups import LANGUAGE_BUTTON as GROUP_LANGUAGE
from bot.telegram.groups import PROGRAMME_BUTTON as GROUP_PROGRAMME

if TYPE_CHECKING:  # the handlers import this registry; it names them only for typing
    from bot.telegram.handlers import Handlers

BUTTON_SEPARATOR = ":"
#: The choice of address, after /language: ``address:<AddressForm>``.
ADDRESS_BUTTON = "address"


@dataclass(frozen=True)
class Press:
    """One press of a button, or one ``/start`` link: the update, the whole data, and what
    follows the route's prefix (and, for a button, its ``:``)."""

    update: Update
    data: str
    value: str


PressHandler = Callable[["Handlers", Press], Awaitable[None]]


@dataclass(frozen=True)
class Route:
    prefix: str
    audience: Audience
    handler: PressHandler
    refusal: str | None = None  # msgid told to anyone outside the audience; None: the default


class Routes:
    """Routes by prefix; ``separator`` ends a button's prefix, a start link's is matched as
    the start of its payload (no prefix may start another, so at most one matches)."""

    def __init__(self, *routes: Route, separator: str | None) -> None:
        self.routes = routes
        self.separator = separator
        self._by_prefix: dict[str, Route] = {}
        for route in routes:
            if not route.prefix or (separator is not None and separator in route.prefix):
                raise ValueError(f"not a prefix: {route.prefix!r}")
            if any(route.prefix == p if separator is not None
                   else route.prefix.startswith(p) or p.startswith(route.prefix)
                   for p in self._by_prefix):
                raise ValueError(f"{route.prefix!r} overlaps another route's prefix")
            self._by_prefix[route.prefix] = route

    def find(self, data: str) -> tuple[Route, str] | None:
        """The route of ``data`` and what follows its prefix, or None."""
        if self.separator is not None:
            prefix, _, value = data.partition(self.separator)
            route = self._by_prefix.get(prefix)
            return None if route is None else (route, value)
        for prefix, route in self._by_prefix.items():
            if data.startswith(prefix):
                return route, data[len(prefix):]
        return None


C, CO = Audience.CLIENT, Audience.COACH

# Said by the gate to someone outside a route's (or a command's) audience, unless the route
# has a refusal of its own: the texts the handlers said before the gate existed.
REFUSALS: dict[Audience, str] = {
    Audience.COACH: N_("Only coaches can do this. If you are a coach, ask the bot's "
                       "administrator to set you up."),
    Audience.ADMIN: N_("I do not know that command. Send /help to see what I can do."),
}
NOT_YOUR_CLIENT = N_("I cannot find that client among yours. Send /clients to see them.")
NOT_YOUR_GROUP = N_("I cannot find that group among yours. Send /groups to see them.")
NOT_YOUR_ASSIGNMENT = N_("That assignment is not one of yours any more. Send /assignments to "
                         "see them.")


def _side(step: Callable[[coach_side.CoachSideHandlers], coach_side.PressStep]
          ) -> PressHandler:
    """A button of the coach's side (coach_side.py), run in its user's store turn."""
    return lambda h, p: h.in_press(p, step(h.coach.side))


# Inline buttons: ``<prefix>:<value>``.
BUTTONS = Routes(
    Route("lang", C, lambda h, p: h.on_language_button(p)),
    Route(ADDRESS_BUTTON, C, lambda h, p: h.on_address_button(p)),
    Route("delete", C, lambda h, p: h.on_delete_button(p)),
    Route("exercise", C, lambda h, p: h.on_exercise_button(p)),
    # A client's (can't make it, the brief) and a coach's (held, moved …): each step checks.
    Route(SESSION_BUTTON, C, lambda h, p: h.in_press(p, h.sessions.step)),
    Route(ACTION_BUTTON, C, lambda h, p: h.in_press(p, h.sessions.action_button)),
    # The client's side of a coach's link.
    Route("invite", C, lambda h, p: h.in_press(p, h.coach.answer_invite)),
    Route("unlink", C, lambda h, p: h.in_press(p, h.coach.unlink)),
    Route(coach_side.REPLY, C, _side(lambda s: s.start_reply)),
    # The coach's side.
    Route("assign", CO, lambda h, p: h.in_press(p, h.coach.assign_step), NOT_YOUR_CLIENT),
    Route("client", CO, lambda h, p: h.in_press(p, h.coach.progress), NOT_YOUR_CLIENT),
    Route(coach_side.MESSAGE, CO, _side(lambda s: s.message_button)),
    Route(coach_side.NOTE, CO, _side(lambda s: s.note_button)),
    Route(coach_side.ASSIGNMENTS, CO, _side(lambda s: s.assignments_button)),
    Route(coach_side.ACT, CO, _side(lambda s: s.act_button), NOT_YOUR_ASSIGNMENT),
    Route(coach_side.CHANGE, CO, _side(lambda s: s.change_button), NOT_YOUR_ASSIGNMENT),
    Route(coach_side.QUIET, CO, _side(lambda s: s.quiet_button), NOT_YOUR_CLIENT),
    Route(coach_side.MEASURE, CO, _side(lambda s: s.measure_button), NOT_YOUR_CLIENT),
    Route(coach_side.PROGRAMME, CO, _side(lambda s: s.programme_button), NOT_YOUR_CLIENT),
    Route(coach_side.PROGRAMME_ACT, CO, _side(lambda s: s.programme_act_button)),
    Route(TRY_DIALOGUE, CO, lambda h, p: h.in_press(p, h.coach.try_dialogue)),
    # Groups: a member's …
    Route("gjoin", C, lambda h, p: h.in_press(p, h.groups.answer_join)),
    Route("gleave", C, lambda h, p: h.in_press(p, h.groups.leave_button)),
    Route("gcontrib", C, lambda h, p: h.in_press(p, h.groups.contribute)),
    # … and the coach's.
    Route("grp", CO, lambda h, p: h.in_press(p, h.groups.show), NOT_YOUR_GROUP),
    Route("gkind", CO, lambda h, p: h.in_press(p, h.groups.set_kind), NOT_YOUR_GROUP),
    Route("gas", CO, lambda h, p: h.in_press(p, h.groups.assign_step), NOT_YOUR_GROUP),
    Route(GROUP_PROGRAMME, CO, lambda h, p: h.in_press(p, h.groups.programme_step),
          NOT_YOUR_GROUP),
    Route("gchat", CO, lambda h, p: h.in_press(p, h.groups.chat_link), NOT_YOUR_GROUP),
    Route(GROUP_LANGUAGE, CO, lambda h, p: h.in_press(p, h.groups.chat_language),
          NOT_YOUR_GROUP),
    Route("ggoal", CO, lambda h, p: h.in_press(p, h.groups.set_goal), NOT_YOUR_GROUP),
    Route("gdone", CO, lambda h, p: h.in_press(p, h.groups.celebrate), NOT_YOUR_GROUP),
    Route("gq", CO, lambda h, p: h.in_press(p, h.groups.post_question), NOT_YOUR_GROUP),
    Route("gwq", CO, lambda h, p: h.in_press(p, h.groups.weekly_question), NOT_YOUR_GROUP),
    Route("gcode", CO, lambda h, p: h.in_press(p, h.groups.new_code), NOT_YOUR_GROUP),
    Route("gren", CO, lambda h, p: h.in_press(p, h.groups.rename), NOT_YOUR_GROUP),
    Route("grm", CO, lambda h, p: h.in_press(p, h.groups.remove_step), NOT_YOUR_GROUP),
    Route(GROUP_SESSION_BUTTON, CO, lambda h, p: h.in_press(p, h.sessions.group_step)),
    separator=BUTTON_SEPARATOR,
)

# ``/start`` payloads of the links the bot hands out: ``<prefix><code>``, and what each does
# in its user's turn (also at the end of the onboarding, for a link opened before consent).
START_STEPS: dict[str, Callable[[Handlers], coach_side.PressStep]] = {
    INVITE_PREFIX: lambda h: h.coach.offer_invite,
    JOIN_PREFIX: lambda h: h.groups.offer_join,
}


def _opened(step: Callable[[Handlers], coach_side.PressStep]) -> PressHandler:
    return lambda h, p: h.open_link(p, step(h))


START_LINKS = Routes(*(Route(prefix, C, _opened(step)) for prefix, step in START_STEPS.items()),
                     separator=None)

# In a group chat: the week's question's button (answered in private), and the link that
# adds the bot to the group's chat (``/startgroup``, which Telegram sends there as /start).
GROUP_BUTTONS = Routes(
    Route("gqa", Audience.GROUP, lambda h, p: h.groups.answer_in_private(p.update, p.value)),
    separator=BUTTON_SEPARATOR,
)
GROUP_START_LINKS = Routes(
    Route(CHAT_PREFIX, Audience.GROUP, lambda h, p: h.groups.link_chat(p.update, p.value)),
    separator=None,
)
