"""From Telegram updates to store turns: every reply goes to the outbox in the same
transaction as the update's effects, and the sender delivers it once the turn has committed."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from telegram import Message, Update
from telegram.constants import ChatType
from telegram.error import TelegramError
from telegram.ext import ContextTypes

from bot.coaching import measures, programmes, session_notes
from bot.coaching.assignments import exercise_ids
from bot.coaching.chart import own_trend_png
from bot.coaching.checkins import has_active_goal
from bot.coaching.contracts import DAILY_CHECKIN, GOAL_SETTING, ONBOARDING, SESSION_NOTE
from bot.coaching.conversation import (
    Action,
    Resume,
    Start,
    context_for,
    converse,
    declined_consent,
    enqueue_replies,
)
from bot.coaching.links import coaches_of
from bot.coaching.managing import FromCoach, assigned_to
from bot.coaching.privacy import EXPORT_EVERY, PrivacyFacts, export_document, privacy_summary
from bot.coaching.progress import progress_text
from bot.coaching.safety import comes_back, end_pause_when_client_comes_back, paused_by_crisis
from bot.config import DEFAULT_MIN_AGE
from bot.dialogue.model import DialogueSet
from bot.engine import ConversationState, Outcome, Reply, Turn
from bot.engine.crisis import detect_crisis
from bot.engine.runner import sos_reply, sos_words, worldwide_emergency_line
from bot.engine.state import Button, Command
from bot.i18n import (
    N_,
    SOURCE_LOCALE,
    SUPPORTED_LOCALES,
    Translator,
    normalize_locale,
    translator_for,
)
from bot.i18n.languages import LANGUAGE_NAMES
from bot.observability import UpdateKind, handling_update
from bot.schedule.planner import replan, schedule_of
from bot.store import NoteMedia, Store, off_the_loop
from bot.store import Turn as StoreTurn
from bot.store.kinds import AddressForm
from bot.store.types import utcnow
from bot.telegram.buttons import (
    ADDRESS_BUTTON,
    BUTTONS,
    GROUP_BUTTONS,
    GROUP_START_LINKS,
    REFUSALS,
    START_LINKS,
    START_STEPS,
    Press,
    Route,
)
from bot.telegram.coach import CoachHandlers, TurnFn
from bot.telegram.coach_side import PressStep, client_today, programme_text
from bot.telegram.commands import COMMANDS, Audience, CommandCall, help_text, set_coach_menu
from bot.telegram.groups import GroupHandlers
from bot.telegram.sessions import SessionFlows

log = logging.getLogger(__name__)

#: Where the onboarding's state keeps a start link a new person opened before agreeing,
#: until the onboarding is over (see ``Handlers._open_waiting_link``).
WAITING_LINK = "start.link"


class Deliverer(Protocol):
    lease: timedelta

    async def deliver_turn(self, t: StoreTurn, *, patient: bool = False) -> object: ...

    async def deliver_now(self, user_id: int, *, patient: bool = False) -> object: ...

    async def say_now(self, chat_id: int, text: str) -> None: ...


@dataclass
class Handlers:
    store: Store
    dialogues: DialogueSet
    sender: Deliverer
    admin_ids: frozenset[int] = frozenset()
    bot_username: Callable[[], str] = lambda: "coachbot"
    min_age: int = DEFAULT_MIN_AGE
    privacy: PrivacyFacts = field(default_factory=PrivacyFacts)
    coach: CoachHandlers = field(init=False)
    sessions: SessionFlows = field(init=False)
    groups: GroupHandlers = field(init=False)

    def __post_init__(self) -> None:
        self.coach = CoachHandlers(self.dialogues, self._turn, self.bot_username)
        self.sessions = SessionFlows(self.dialogues)
        self.groups = GroupHandlers(self.store, self._turn, self.bot_username,
                                    lambda: exercise_ids(self.dialogues),
                                    self.coach.exercise_choices, self.dialogues,
                                    self.sender.say_now)

    # -- plumbing ----------------------------------------------------------------------------

    async def _turn(self, update: Update,
                    fn: Callable[[StoreTurn], Awaitable[Outcome | None]], *,
                    action: Action | None = None, before_consent: bool = False,
                    link: str | None = None) -> None:
        """Run `fn` in one store turn for the update's user, then deliver what it queued.

        Consent first: until the user agrees that their answers are kept, `fn` runs only when
        `before_consent` (/start, /language, /privacy, /delete); anything else leads to the consent
        question, except a message in which the engine sees a crisis (`action`, the engine's
        reading of the update, decides; nothing of it is kept). A user who declines, or is
        under the minimum age, is erased in the same turn and told so directly.

        ``link``: the update opened that start link; before consent it waits in the
        onboarding's state and is opened when the onboarding is over. An ``action`` in which
        the client comes back (``comes_back``) ends a crisis pause."""
        user = update.effective_user
        if user is None:
            return
        telegram_user = user
        committed: list[StoreTurn] = []  # the attempt that committed (a turn may be retried)
        goodbye: list[Reply] = []

        async def body(t: StoreTurn) -> Outcome | None:
            goodbye.clear()
            if t.state is None:  # first contact: take Telegram's language until they choose
                t.user.locale = normalize_locale(telegram_user.language_code)
            agreed = self._agreed(t)
            if agreed:  # before that, nothing of theirs is kept, not even their name
                t.user.first_name = telegram_user.first_name
            schedule = schedule_of(t.user)
            # Writing to the bot means they no longer block it: reachable again, and their
            # check-ins are planned again (at once, by replan).
            t.user.reachable = True
            result = await fn(t) if agreed or before_consent \
                else await self._consent_first(t, action, link)
            if self._agreed(t):
                await self._open_waiting_link(t, dropped=link is not None or (
                    result is not None and result.crisis))
            if comes_back(action):
                await end_pause_when_client_comes_back(t, result, t.now)
            if result is not None and declined_consent(result):
                goodbye.extend(result.replies)
                await t.erase_user()  # as the bot promised: nothing is kept
            elif schedule_of(t.user) != schedule:  # a new check-in time applies at once
                await replan(t, t.now)
            committed[:] = [t]
            return result

        await self.store.run_turn(user.id, body, update_id=update.update_id,
                                  hold_for=self.sender.lease)
        if goodbye:  # straight to Telegram: nothing of theirs is left to queue it in
            await self._say_directly(user.id, goodbye)
        elif committed:
            try:
                await self.sender.deliver_turn(committed[0])
            except Exception as exc:  # committed: the rows' lease brings them back to the queue
                log.error("update %s: replies not delivered now (%s); the sender retries",
                          update.update_id, type(exc).__name__)

    def _agreed(self, t: StoreTurn) -> bool:
        """Consent given; coaches and admins are set up by an administrator, not asked."""
        return t.user.consent_at is not None or t.user.is_coach or t.user_id in self.admin_ids

    async def _consent_first(self, t: StoreTurn, action: Action | None,
                             link: str | None = None) -> Outcome:
        """Before consent: a crisis (or a possible one, or worry for someone) is answered;
        an answer to the onboarding's questions goes on; anything else is met with the
        consent question (where the onboarding stands), and a start link waits for the
        onboarding's end."""
        state = ConversationState.from_dict(t.state)
        if link is not None:
            state = replace(state, variables={**state.variables, WAITING_LINK: link})
            t.set_state(state.to_dict())
        onboarding = state.active and state.stack[0].dialogue == ONBOARDING
        if isinstance(action, Turn) and (onboarding or state.safety_asked
                                         or action.text is not None):
            outcome = await converse(t, self.dialogues, action, t.now, min_age=self.min_age)
            if onboarding or outcome.crisis or outcome.signal is not None \
                    or state.safety_asked:
                enqueue_replies(t, outcome)
                return outcome
        outcome = await converse(t, self.dialogues, Resume() if onboarding else
                                 Start(ONBOARDING), t.now, min_age=self.min_age)
        enqueue_replies(t, outcome)
        return outcome

    async def _open_waiting_link(self, t: StoreTurn, *, dropped: bool) -> None:
        """The start link a person opened before agreeing, opened for them once the
        onboarding (and any safety question) is over, as if they opened it now; ``dropped``
        (a crisis, or another link opened now) forgets it instead."""
        if WAITING_LINK not in (t.state or {}).get("variables", {}):
            return
        state = ConversationState.from_dict(t.state)
        link = state.variables.get(WAITING_LINK)
        waiting = state.safety_asked or (state.active and state.stack[0].dialogue == ONBOARDING)
        if not isinstance(link, str) or (waiting and not dropped):
            return
        t.set_state(replace(state, variables={
            name: value for name, value in state.variables.items() if name != WAITING_LINK})
            .to_dict())
        found = START_LINKS.find(link)
        if found is not None and not dropped:
            await START_STEPS[found[0].prefix](self)(t, found[1])

    async def _say_directly(self, user_id: int, replies: list[Reply]) -> None:
        for reply in replies:
            try:
                await self.sender.say_now(user_id, reply.text)
            except TelegramError as exc:
                log.warning("goodbye to user %s not sent: %s", user_id, type(exc).__name__)

    async def _converse(self, update: Update, action: Action, *,
                        note: str | None = None) -> None:
        """Run the engine; `note` (a source text) is said first, in the user's language."""

        async def run(t: StoreTurn) -> Outcome:
            if note is not None:
                t.enqueue(t.user_id, Reply(translator_for(t.user.locale).gettext(note))
                          .to_payload())
            outcome = await converse(t, self.dialogues, action, t.now, min_age=self.min_age)
            enqueue_replies(t, outcome)
            return await self._after_note(t, outcome)

        await self._turn(update, run, action=action)

    async def _say(self, update: Update, message: Callable[[StoreTurn], Reply], *,
                   before_consent: bool = False) -> None:
        async def run(t: StoreTurn) -> None:
            t.enqueue(t.user_id, message(t).to_payload())
            return None

        await self._turn(update, run, before_consent=before_consent)

    async def in_turn(self, call: CommandCall, fn: TurnFn) -> None:
        """Run a command's ``fn(turn, argument)`` in one store turn of its user."""
        await self._turn(call.update, lambda t: fn(t, call.argument),
                         before_consent=call.before_consent)

    @staticmethod
    def _private(update: Update) -> bool:
        chat = update.effective_chat
        return chat is not None and chat.type == ChatType.PRIVATE

    # -- entry points --------------------------------------------------------------------------

    async def on_update(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """The one handler: every update comes here and is sorted by what it carries."""
        with handling_update(_kind_of(update)):
            await self._dispatch(update, context)

    async def _dispatch(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        if not self._private(update):
            await self._in_group(update, context)
            return
        if update.callback_query is not None:
            await self._on_button(update)
            return
        message = update.message or update.edited_message
        if message is None or update.effective_user is None:
            return
        text = message.text or message.caption
        sos = None if text is None else sos_words(text)
        if sos is not None:
            await self.on_sos(update, sos)
            return
        edited = update.edited_message is not None
        # Not an answer, so the engine would not see these words: checked here.
        if text is not None and (edited or message.text is None or text.startswith("/")) \
                and await self._crisis_in(update, _as_words(text)):
            return
        if edited:
            return  # an edit of an earlier answer: that answer already counted
        if message.document is not None and await self._from_coach(update) \
                and await self.coach.on_document(update):
            return
        if message.text is None:
            await self._on_non_text(update)
        elif message.text.startswith("/"):
            await self._on_command(update, message)
        else:
            await self._on_text(update, message.text)

    async def _in_group(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """A group chat: a linked group's own business (see groups.py); a crisis in what the
        bot sees there (with privacy mode on: commands, mentions, replies to it) is answered
        in private with the crisis path and nothing in the group, before any pointer or
        refusal there; /sos there as in ``_sos_in_group``; otherwise a refusal."""
        if await self._group_route(update):
            return
        message = update.message or update.edited_message
        text = None if message is None else message.text or message.caption
        sos = None if text is None else sos_words(text)
        if sos is not None and update.effective_user is not None:
            await self._sos_in_group(update, sos)
            return
        if text is not None and update.effective_user is not None \
                and await self._crisis_in(update, _as_words(text)):
            return
        if not await self.groups.on_group_chat(update):
            await self._refuse_group(update, context)

    async def _group_route(self, update: Update) -> bool:
        """A button pressed in a group chat, or a /start link opened there: from the
        registries (buttons.py). True when it was one (an unknown button does nothing)."""
        if update.effective_chat is None:
            return False  # nothing to do there (groups.on_group_chat says so)
        query = update.callback_query
        if query is not None:
            try:
                await query.answer()
            except TelegramError as exc:
                log.info("callback query not answered: %s", type(exc).__name__)
            found = GROUP_BUTTONS.find(query.data or "")
            if found is not None:
                await self.dispatch(found[0], Press(update, query.data or "", found[1]))
            return True
        text = update.message.text if update.message is not None else None
        if text is None or not text.startswith("/"):
            return False
        name, _, argument = text[1:].partition(" ")
        link = GROUP_START_LINKS.find(argument.strip()) \
            if name.split("@")[0].lower() == "start" else None
        if link is None:
            return False
        await self.dispatch(link[0], Press(update, argument.strip(), link[1]))
        return True

    async def _refuse_group(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        chat, user = update.effective_chat, update.effective_user
        if chat is None or update.message is None or update.message.text is None \
                or not update.message.text.startswith("/"):
            return  # stay silent in groups unless spoken to with a command
        tr = translator_for(user.language_code if user else None)
        try:
            await self.sender.say_now(chat.id, tr.gettext(
                "I only talk in private chats, so that nobody in a group sees what you share with "
                "me. "
                "Please write to me directly."))
        except TelegramError as exc:
            log.warning("could not answer in a group: %s", type(exc).__name__)

    async def on_sos(self, update: Update, words: str = "") -> None:
        """The help lines, at once and in any state, in private; the conversation stays
        where it is. Words written after /sos are checked like a command's: a sign of crisis
        in them takes the crisis path (coaching stops, the coach is told, the pause, the
        audit), whose reply already carries the help lines; a possible one is asked about
        after them."""
        async def run(t: StoreTurn) -> Outcome | None:
            outcome = None
            if words and detect_crisis(words):
                outcome = await converse(t, self.dialogues, Turn(text=words, answers=False),
                                         t.now, min_age=self.min_age)
            if outcome is None or not outcome.crisis:
                ctx = await context_for(None, t.user, t.now)
                # Ahead of what is queued, which follows it: the conversation stays.
                t.enqueue(t.user_id, sos_reply(ctx, ConversationState.from_dict(t.state))
                          .to_payload(), urgent=True, hold_back=False)
            if outcome is not None:
                enqueue_replies(t, outcome)
            return outcome

        await self._turn(update, run, before_consent=True)

    async def _sos_in_group(self, update: Update, words: str) -> None:
        """/sos (or SOS) in a group chat: help lines never go to the group, where they would
        name the person who asked. Someone the bot can write to in private (they have
        written to it there, and have not blocked it) gets them there, as /sos in private,
        and nothing is said in the group, as for a crisis seen there. Anyone else gets, in
        the group, only a pointer to send /sos in a private chat with the bot (which also
        tells them nothing about anyone); a sign of crisis in their words is still answered
        in private, as for any crisis seen in a group."""
        user = update.effective_user
        assert user is not None
        known = await self.store.get_user(user.id)
        if known is not None and known.reachable:
            await self.on_sos(update, words)
            return
        chat = update.effective_chat
        if chat is not None:
            tr = translator_for(user.language_code)
            try:
                # Nothing here names the person or their country: the worldwide numbers.
                await self.sender.say_now(chat.id, "\n\n".join((
                    worldwide_emergency_line(tr),
                    tr.gettext("To see who else you can talk to, send /sos to me in a private "
                               "chat: {link}").format(link=f"https://t.me/{self.bot_username()}"))))
            except TelegramError as exc:
                log.warning("could not answer in a group: %s", type(exc).__name__)
        await self._crisis_in(update, words)

    async def _crisis_in(self, update: Update, words: str) -> bool:
        """Words the engine would not see as an answer (a command's, a caption's, an edit's,
        what follows /sos): a sign of crisis in them takes the crisis path. True when it
        did."""
        if not words or not detect_crisis(words):
            return False
        await self._converse(update, Turn(text=words, answers=False))
        return True

    async def _on_text(self, update: Update, text: str) -> None:
        """Free text. The engine checks it for a crisis, then takes it as the answer to the
        open question, or to the open safety question; only when it answers nothing is it
        offered to be kept as a note for the client's next session (added to the note
        already on offer, if one is)."""
        action = Turn(text=text)

        async def run(t: StoreTurn) -> Outcome:
            state = ConversationState.from_dict(t.state)
            if _offering(state) and not state.safety_asked and not detect_crisis(text):
                pending = session_notes.Jotted.from_variables(state.variables)
                joined = pending.joined(session_notes.Jotted(words=text))
                if joined is not None:
                    return await self._offer_note(t, joined)
            outcome = await converse(t, self.dialogues, action, t.now, min_age=self.min_age)
            if outcome.unplaced and await self._keeps_notes(t):
                return await self._offer_note(t, session_notes.Jotted(words=text))
            enqueue_replies(t, outcome)
            return await self._after_note(t, outcome)

        await self._turn(update, run, action=action)

    @staticmethod
    async def _keeps_notes(t: StoreTurn) -> bool:
        """Clients keep notes for their sessions; a coach only as someone's client."""
        return not t.user.is_coach or bool(await coaches_of(t.session, t.user_id))

    async def _offer_note(self, t: StoreTurn, jotted: session_notes.Jotted) -> Outcome:
        variables = await session_notes.offer_variables(
            t.session, t.user_id, jotted, t.now, paused=paused_by_crisis(t.user, t.now))
        outcome = await converse(t, self.dialogues, Start(SESSION_NOTE, variables), t.now,
                                 min_age=self.min_age)
        enqueue_replies(t, outcome)
        return outcome

    async def _after_note(self, t: StoreTurn, outcome: Outcome) -> Outcome:
        """A client who chose a check-in over keeping a note gets it (or a goal first)."""
        if not any(a.variable == session_notes.CHOICE and a.value == session_notes.CHECKIN
                   for a in outcome.saved):
            return outcome
        return await self._start_checkin(t)
    async def _from_coach(self, update: Update) -> bool:
        user = update.effective_user
        stored = await self.store.get_user(user.id) if user is not None else None
        return stored is not None and stored.is_coach

    async def _on_non_text(self, update: Update) -> None:
        """A voice message, a photo, a document or a video, with no question open, is
        offered to be kept as a note (by its file id); anything else, or with a question
        open, gets a request for words."""
        message = update.message
        jotted = None if message is None else _jotted(message)
        note = N_("Could you write it in words? If you need someone to talk to, /sos shows "
                  "who you can turn to.")
        if jotted is None:
            await self._converse(update, Resume(), note=note)
            return

        async def run(t: StoreTurn) -> Outcome:
            state = ConversationState.from_dict(t.state)
            offer: session_notes.Jotted | None = jotted
            if _offering(state) and not state.safety_asked:
                offer = session_notes.Jotted.from_variables(state.variables).joined(jotted)
                if offer is None:
                    t.enqueue(t.user_id, Reply(translator_for(t.user.locale).gettext(
                        "One thing at a time: first tell me what to do with your earlier "
                        "message, then send this one again.")).to_payload())
                    outcome = await converse(t, self.dialogues, Resume(), t.now,
                                             min_age=self.min_age)
                    enqueue_replies(t, outcome)
                    return outcome
            elif state.active or state.safety_asked or not await self._keeps_notes(t):
                t.enqueue(t.user_id, Reply(translator_for(t.user.locale).gettext(note))
                          .to_payload())
                outcome = await converse(t, self.dialogues, Resume(), t.now,
                                         min_age=self.min_age)
                enqueue_replies(t, outcome)
                return outcome
            return await self._offer_note(t, offer or jotted)

        await self._turn(update, run, action=Resume())

    async def _on_command(self, update: Update, message: Message) -> None:
        assert message.text is not None
        name, _, argument = message.text[1:].partition(" ")
        command = COMMANDS.find(name.split("@")[0].lower())
        if command is None:
            await self._say(update, lambda t: Reply(translator_for(t.user.locale).gettext(
                "I do not know that command. Send /help to see what I can do.")))
            return
        if not await self.admitted(update, command.audience):
            await self.refuse(update, command.refusal or REFUSALS[command.audience])
            return
        await command.handler(self, CommandCall(update, message, argument.strip(),
                                                command.before_consent))

    # -- commands (see bot/telegram/commands.py) ------------------------------------------------

    async def engine_command(self, call: CommandCall, command: Command) -> None:
        await self._converse(call.update, Turn(command=command))

    async def start_dialogue(self, call: CommandCall, dialogue_id: str) -> None:
        await self._converse(call.update, Start(dialogue_id))

    async def on_help(self, call: CommandCall) -> None:
        await self._say(call.update, lambda t: help_reply(t.user.locale, coach=t.user.is_coach),
                        before_consent=call.before_consent)

    async def on_language_command(self, call: CommandCall) -> None:
        await self._say(call.update, lambda t: language_reply(t.user.locale),
                        before_consent=call.before_consent)

    async def on_privacy(self, call: CommandCall) -> None:
        """What is kept, who sees it, for how long, /export and /delete: before consent too
        (it keeps nothing more than any message then), and then the open question again, so
        that the consent question follows what it is about."""
        async def run(t: StoreTurn) -> Outcome | None:
            for text in privacy_summary(translator_for(t.user.locale), self.privacy):
                t.enqueue(t.user_id, Reply(text).to_payload())
            if not ConversationState.from_dict(t.state).active:
                return None
            outcome = await converse(t, self.dialogues, Resume(), t.now, min_age=self.min_age)
            enqueue_replies(t, outcome)
            return outcome

        await self._turn(call.update, run, before_consent=call.before_consent)

    async def on_exercises(self, call: CommandCall) -> None:
        """The exercises the client's coaches gave them, then those they can do alone."""
        async def run(t: StoreTurn) -> None:
            given = await assigned_to(t.session, t.user_id)
            tr = translator_for(t.user.locale)
            if given:
                t.enqueue(t.user_id, Reply(from_coaches_text(self.dialogues, given, tr))
                          .to_payload())
            today = client_today(t.user, t.now)
            for run in await programmes.runs_of(t.session, t.user_id):
                t.enqueue(t.user_id, Reply(programme_text(run, self.dialogues, tr, today))
                          .to_payload())
            t.enqueue(t.user_id, exercises_reply(self.dialogues, t.user.locale).to_payload())
            return None

        await self._turn(call.update, run, before_consent=call.before_consent)

    async def on_delete_command(self, call: CommandCall) -> None:
        await self._say(call.update, lambda t: delete_reply(t.user.locale),
                        before_consent=call.before_consent)

    async def on_start(self, call: CommandCall) -> None:
        found = START_LINKS.find(call.argument)  # a link the bot handed out: /start <payload>
        if found is None:
            await self._on_start(call.update, call.before_consent)
            return
        route, value = found
        await self.dispatch(route, Press(call.update, call.argument, value))

    async def _on_start(self, update: Update, before_consent: bool) -> None:
        async def run(t: StoreTurn) -> Outcome | None:
            state = ConversationState.from_dict(t.state)
            action: Action
            if not self._agreed(t):
                action = Resume() if state.active and state.stack[0].dialogue == ONBOARDING \
                    else Start(ONBOARDING)
            elif state.active:
                action = Resume()
            else:
                t.enqueue(t.user_id, help_reply(t.user.locale).to_payload())
                return None
            outcome = await converse(t, self.dialogues, action, t.now, min_age=self.min_age)
            enqueue_replies(t, outcome)
            return outcome

        await self._turn(update, run, before_consent=before_consent)

    async def on_checkin(self, call: CommandCall) -> None:
        await self._turn(call.update, self._start_checkin, before_consent=call.before_consent)

    async def _start_checkin(self, t: StoreTurn) -> Outcome:
        action: Action = Start(DAILY_CHECKIN)
        # The goals table, not the conversation's variables: a goal whose setting was
        # cancelled after its title left the title behind, but no goal.
        if not await has_active_goal(t.session, t.user_id):
            t.enqueue(t.user_id, Reply(translator_for(t.user.locale).gettext(
                "A check-in is about a goal you are working on, but you have none at the "
                "moment. If you would like, we can set one now; if you would rather not, "
                "send /cancel.")
            ).to_payload())
            action = Start(GOAL_SETTING)
        outcome = await converse(t, self.dialogues, action, t.now, min_age=self.min_age)
        enqueue_replies(t, outcome)
        return outcome

    async def on_progress(self, call: CommandCall) -> None:
        """The client's own progress: the text, and their weekly chart."""
        async def run(t: StoreTurn) -> None:
            ctx = await context_for(t.session, t.user, t.now)
            text = await progress_text(t.session, t.user, ctx)
            t.enqueue(t.user_id, Reply(text).to_payload())
            chart = await own_trend_png(t.session, t.user_id, t.now, ctx.translator)
            t.enqueue(t.user_id, {"photo": chart.hex(), "caption": ctx.translator.gettext(
                "Weekly trend: mood and goal, last 12 weeks")})
            wheel = await measures.wheel_summary(t.session, t.user_id, ctx.translator)
            if wheel is not None:
                t.enqueue(t.user_id, Reply(wheel).to_payload())
            for payload in await measures.measure_reports(t.session, t.user, ctx.translator):
                t.enqueue(t.user_id, payload)
            return None

        await self._turn(call.update, run, before_consent=call.before_consent)

    async def on_export(self, call: CommandCall) -> None:
        """The client's data as a file: at most one per ``EXPORT_EVERY``, read on the
        connection's thread and turned into JSON on another, so other chats go on."""
        update, message = call.update, call.message
        user = update.effective_user
        assert user is not None
        stored = await self.store.get_user(user.id)
        if stored is None or not (stored.consent_at or stored.is_coach
                                  or user.id in self.admin_ids):
            await self._converse(update, Resume())  # the consent question; nothing is kept
            return
        now = utcnow()
        next_allowed = await self.store.claim_export(user.id, now, EXPORT_EVERY)
        if next_allowed is not None:
            await self._say(update, lambda t: Reply(translator_for(t.user.locale).gettext(
                "I sent you a copy of your data a short while ago. You can ask for a new one "
                "from {time}.").format(time=translator_for(t.user.locale).time(
                    next_allowed.astimezone(_zone(stored.time_zone))))))
            return
        with off_the_loop():
            data = await self.store.export_user(user.id)
        tr = translator_for(data["users"][0]["locale"] if data["users"] else user.language_code)
        document = await asyncio.to_thread(export_document, data, tr)
        await message.reply_document(
            document, filename=f"coachbot-{user.id}.json",
            caption=tr.gettext("Everything I have stored about you. It is yours."))

    # -- buttons ----------------------------------------------------------------------------

    async def _on_button(self, update: Update) -> None:
        query = update.callback_query
        assert query is not None
        data = query.data or ""
        try:
            await query.answer()
        except TelegramError as exc:  # too old to answer: the press still counts
            log.info("callback query not answered: %s", type(exc).__name__)
        found = BUTTONS.find(data)
        if found is None:  # an answer to a dialogue's question
            await self._converse(update, Turn(button=data))
            return
        route, value = found
        await self.dispatch(route, Press(update, data, value))

    async def dispatch(self, route: Route, press: Press) -> None:
        """A button or a start link, through the audience gate."""
        if not await self.admitted(press.update, route.audience):
            await self.refuse(press.update, route.refusal or REFUSALS[route.audience])
            return
        await route.handler(self, press)

    async def admitted(self, update: Update, audience: Audience) -> bool:
        """The one check of who may use a command or a button (registries: commands.py,
        buttons.py). The handlers check, in the domain layer, what they act on."""
        user = update.effective_user
        if user is None:
            return False
        if audience is Audience.ADMIN:
            return user.id in self.admin_ids
        if audience is Audience.COACH:
            stored = await self.store.get_user(user.id)
            return stored is not None and stored.is_coach
        return True

    async def refuse(self, update: Update, refusal: str) -> None:
        """``refusal`` (a msgid), in a turn like any other: before consent, the consent
        question comes instead, as for any command."""
        await self._say(update, lambda t: Reply(translator_for(t.user.locale).gettext(refusal)))

    async def in_press(self, press: Press, step: PressStep) -> None:
        """Run a button's ``step(turn, value)`` in one store turn."""
        await self._turn(press.update, lambda t: step(t, press.value))

    async def open_link(self, press: Press, step: PressStep) -> None:
        """Run a start link's ``step(turn, value)`` in one store turn (before consent, at the
        onboarding's end)."""
        await self._turn(press.update, lambda t: step(t, press.value), link=press.data)

    async def on_language_button(self, press: Press) -> None:
        if press.value in SUPPORTED_LOCALES:
            await self._on_language(press.update, press.value)
        else:
            await self._converse(press.update, Turn(button=press.data))

    async def on_address_button(self, press: Press) -> None:
        if press.value in set(AddressForm):
            await self._on_address(press.update, AddressForm(press.value))
        else:
            await self._converse(press.update, Turn(button=press.data))

    async def on_delete_button(self, press: Press) -> None:
        await self._on_delete(press.update, confirmed=press.value == "yes")

    async def on_exercise_button(self, press: Press) -> None:
        if press.value in exercise_ids(self.dialogues):  # only as offered
            await self._converse(press.update, Start(press.value))
        else:
            await self._converse(press.update, Turn(button=press.data))

    async def _on_language(self, update: Update, locale: str) -> None:
        coach: list[int] = []  # a coach's menu follows their language, once committed

        async def run(t: StoreTurn) -> Outcome | None:
            coach[:] = [t.user_id] if t.user.is_coach else []
            t.user.locale = locale
            tr = translator_for(locale)
            t.enqueue(t.user_id, Reply(tr.gettext("From now on I will write to you in "
                                                  "English.")).to_payload())
            if self._agreed(t) and locale != SOURCE_LOCALE:  # nothing of theirs before
                t.enqueue(t.user_id, address_reply(locale).to_payload())
            state = ConversationState.from_dict(t.state)
            if not state.active:
                return None
            outcome = await converse(t, self.dialogues, Resume(), t.now, min_age=self.min_age)
            enqueue_replies(t, outcome)
            return outcome

        await self._turn(update, run, before_consent=True)
        for coach_id in coach:
            await set_coach_menu(update.get_bot(), coach_id, locale)

    async def _on_address(self, update: Update, form: AddressForm) -> None:
        """The grammatical gender the client chose (after /language): kept with their consent
        only; without it, the press leads to the consent question like any other message."""
        async def run(t: StoreTurn) -> None:
            t.user.address = form.value
            tr = translator_for(t.user.locale, form.value)
            t.enqueue(t.user_id, Reply(tr.gettext(
                "Done. You can change it at any time with /language.")).to_payload())

        await self._turn(update, run)

    async def _on_delete(self, update: Update, *, confirmed: bool) -> None:
        user, query = update.effective_user, update.callback_query
        assert user is not None and query is not None
        if not confirmed:
            await self._say(update, lambda t: Reply(translator_for(t.user.locale).gettext(
                "All right, nothing was deleted.")), before_consent=True)
            return
        stored = await self.store.get_user(user.id)
        tr = translator_for(stored.locale if stored else user.language_code)
        await self.store.erase_user(user.id)
        await self.sender.say_now(user.id, tr.gettext(
            "Done. Everything I stored about you is deleted. Anything already sent to your "
            "coach stays in their Telegram chat, and database backups keep a copy for as long as "
            "the people who run me keep them (/privacy). If you ever want to start again, send "
            "/start."))


def _as_words(text: str) -> str:
    """A message as the crisis check reads it. After a known command, its argument, however
    it is set apart ("/goal" and a line break before the words); otherwise the whole text,
    the word stuck to the "/" read as a word ("/suicide", "/kill myself tonight"). A known
    command's own word is not read: it is no sign, and the model takes some of them, alone,
    for one ("/note")."""
    if not text.startswith("/"):
        return text
    word, *argument = text[1:].split(maxsplit=1) or [""]
    if COMMANDS.find(word.split("@")[0].lower()) is None:
        return text[1:]
    return argument[0] if argument else ""


def _offering(state: ConversationState) -> bool:
    """Whether the conversation waits for the client's choice on a note on offer."""
    top = state.stack[-1] if state.stack else None
    return session_notes.offer_open(None if top is None else (top.dialogue, top.step))


#: The kinds of message a note can be, by the Message field that carries each.
_NOTE_MEDIA = tuple(NoteMedia)


def _jotted(message: Message) -> session_notes.Jotted | None:
    """A voice message, photo, document or video as a note on offer; None for anything else
    (a sticker, a location …)."""
    for media in _NOTE_MEDIA:
        found = getattr(message, media.value, None)
        if found:
            item = found[-1] if isinstance(found, tuple) else found  # a photo's largest size
            file_id = getattr(item, "file_id", None)
            if isinstance(file_id, str):
                return session_notes.Jotted(words=message.caption, media=media,
                                            file_id=file_id, message_id=message.message_id)
    return None


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def _kind_of(update: Update) -> UpdateKind:
    if update.callback_query is not None:
        return UpdateKind.BUTTON
    text = update.message.text if update.message is not None else None
    if text is None:
        return UpdateKind.OTHER
    return UpdateKind.COMMAND if text.startswith("/") else UpdateKind.TEXT


def help_reply(locale: str, *, coach: bool = False) -> Reply:
    return Reply(help_text(translator_for(locale), coach=coach))


def language_reply(locale: str) -> Reply:
    tr = translator_for(locale)
    return Reply(tr.gettext("Which language would you like me to use?"), tuple(
        Button(LANGUAGE_NAMES[code], f"lang:{code}") for code in SUPPORTED_LOCALES))


#: The onboarding's question of how to address the client, and its options (the same texts:
#: a test holds them to the onboarding's ``address`` step).
ADDRESS_QUESTION = N_("In your language, some of my sentences can be worded for a woman or for "
                      "a man. Unless you choose otherwise, I use neutral wording, and you can "
                      "change it at any time with /language. How would you like me to address "
                      "you?")
ADDRESS_OPTIONS: dict[AddressForm, str] = {
    AddressForm.NEUTRAL: N_("Neutral wording"),
    AddressForm.FEMININE: N_("Feminine forms"),
    AddressForm.MASCULINE: N_("Masculine forms"),
}


def address_reply(locale: str) -> Reply:
    tr = translator_for(locale)
    return Reply(tr.gettext(ADDRESS_QUESTION), tuple(
        Button(tr.gettext(label), f"{ADDRESS_BUTTON}:{form.value}")
        for form, label in ADDRESS_OPTIONS.items()))


def delete_reply(locale: str) -> Reply:
    tr = translator_for(locale)
    return Reply(tr.gettext("This deletes everything I have stored about you (your profile, "
                            "goals, answers, check-ins, notes and messages with your coach) "
                            "and ends the sharing of your progress with them. It cannot be "
                            "undone. What it cannot reach: anything already sent to your "
                            "coach stays in their Telegram chat, and database backups keep a "
                            "copy for as long as the people who run me keep them. Delete "
                            "everything?"),
                 (Button(tr.gettext("Yes, delete everything"), "delete:yes"),
                  Button(tr.gettext("No, keep it"), "delete:no")))


def from_coaches_text(dialogues: DialogueSet, given: list[FromCoach], tr: Translator) -> str:
    """The exercises coaches assigned, each with whose it is (paused ones say so)."""
    lines = [tr.gettext("Exercises from your coach:")]
    for item in given:
        dialogue = dialogues.get(item.exercise_slug or "")
        title = tr.words(item.custom_title) if item.custom_title is not None else \
            tr.gettext(dialogue.title) if dialogue is not None else item.exercise_slug or ""
        line = f"• {title} ({tr.words(item.coach_name or '')})"
        if item.paused:
            line += " · " + tr.gettext("paused")
        lines.append(line)
    return "\n".join(lines)


def exercises_reply(dialogues: DialogueSet, locale: str) -> Reply:
    tr = translator_for(locale)
    exercises = sorted((dialogues[i] for i in exercise_ids(dialogues)),
                       key=lambda d: tr.gettext(d.title))
    if not exercises:
        return Reply(tr.gettext("There are no exercises yet."))
    return Reply(tr.gettext("Here are exercises you can do on your own. Pick one to start:"),
                 tuple(Button(tr.gettext(d.title), f"exercise:{d.id}") for d in exercises))
