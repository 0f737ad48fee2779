"""The coach's side on Telegram: invites, clients, remote exercises, progress; and the
client's consent to a link and their way out of it. Every step checks, in the domain layer,
that the coach may act on that client, so forged button data gets nowhere."""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, time, timedelta
from typing import TYPE_CHECKING

from telegram import Update
from telegram.error import TelegramError

from bot.coaching import (
    assignments,
    coach_dialogues,
    coach_errors,
    links,
    managing,
    measures,
    notes,
    reports,
)
from bot.coaching.contracts import NEW_EXERCISE, ONBOARDING
from bot.coaching.conversation import Start, converse, enqueue_replies
from bot.coaching.link_end import announce_link_end
from bot.coaching.sessions import brief_question
from bot.dialogue.loader import MAX_UPLOAD_BYTES, too_large
from bot.dialogue.model import DialogueSet
from bot.engine import Outcome, Reply
from bot.engine.state import Button
from bot.i18n import N_, Translator, translator_for
from bot.i18n.languages import LANGUAGE_NAMES
from bot.schedule.planning import zone_of
from bot.store import Turn as StoreTurn
from bot.store import User
from bot.telegram.commands import CommandCall, set_coach_menus

if TYPE_CHECKING:  # coach_side uses this module's helpers; it is imported when first built
    from bot.telegram.coach_side import CoachSideHandlers

log = logging.getLogger(__name__)

Respond = Callable[[Update, Callable[[StoreTurn], Awaitable[Outcome | None]]], Awaitable[None]]
# A command's work inside its user's store turn: (turn, the text after the command).
TurnFn = Callable[[StoreTurn, str], Awaitable[Outcome | None]]
INVITE_PREFIX = "invite_"
TRY_DIALOGUE = "cdtry"  # cdtry:<coach dialogue id>: the coach tries their own dialogue
MAX_ERRORS_SHOWN = 15
# Schedules a coach picks from: (button key, schedule, how long in days).
SCHEDULES: dict[str, tuple[dict[str, object], int]] = {
    "d7": ({"kind": "daily", "days": 7}, 7),
    "d14": ({"kind": "daily", "days": 14}, 14),
    "d30": ({"kind": "daily", "days": 30}, 30),
    "mwf": ({"kind": "weekdays", "weekdays": [0, 2, 4]}, 28),
    "tt": ({"kind": "weekdays", "weekdays": [1, 3]}, 28),
    "wd": ({"kind": "weekdays", "weekdays": [0, 1, 2, 3, 4]}, 14),
}
# The hours a coach picks from, in the client's own time zone; "c" is the client's check-in.
HOURS = ("c", "7", "8", "12", "18", "20")
OWN_SCHEDULE = "own"  # the coach sets days, time, start and length in exercise_schedule
CUSTOM = managing.CUSTOM_KEY  # prefix of a coach's own exercise in button data: x<id>
# A Telegram id as typed or in button data: ASCII digits only (str.isdigit() accepts "²",
# which int() refuses), and small enough for a BIGINT.
_ID = re.compile(r"-?[0-9]{1,18}")


def parse_id(text: str) -> int | None:
    """The id ``text`` spells, or None: never an exception, whatever was typed or forged."""
    text = text.strip()
    return int(text) if _ID.fullmatch(text) else None


#: A coach with no client yet, wherever a client is to be chosen.
NO_CLIENTS = N_("Nobody shares their progress with you yet. Send /invite to invite a client.")


def say(t: StoreTurn, text: str, buttons: tuple[Button, ...] = (), *,
        subject: int | None = None) -> None:
    """Queue a message to the turn's user; ``subject``: the client it is about."""
    t.enqueue(t.user_id, Reply(text, buttons).to_payload(), subject=subject)


async def pick_client(t: StoreTurn, question: str, data_prefix: str) -> None:
    """The coach's clients as buttons (`data_prefix:<client id>`) under ``question``, or how
    to get a client when there is none."""
    tr = translator_for(t.user.locale)
    clients = await links.clients_of(t.session, t.user_id)
    if not clients:
        say(t, tr.gettext(NO_CLIENTS))
        return
    say(t, question, tuple(Button(tr.person(c.first_name, c.user_id), f"{data_prefix}:{c.user_id}")
                           for c in clients))


async def find_client(t: StoreTurn, argument: str) -> int | None:
    """The coach's client that ``argument`` numbers or names (first name, any case), else
    None."""
    wanted, number = argument.strip().casefold(), parse_id(argument)
    for client in await links.clients_of(t.session, t.user_id):
        if client.user_id == number or (client.first_name or "").casefold() == wanted:
            return client.user_id
    return None


def expiry_text(t: StoreTurn, tr: Translator, expires_at: datetime) -> str:
    """When a link stops working: the date on the turn's user's own calendar."""
    return tr.isolate(tr.date(expires_at.astimezone(zone_of(t.user.time_zone)).date(), "long"))


def schedule_label(key: str, tr: Translator) -> str:
    labels = {
        "d7": tr.gettext("Every day for a week"),
        "d14": tr.gettext("Every day for two weeks"),
        "d30": tr.gettext("Every day for a month"),
        "mwf": tr.gettext("Monday, Wednesday, Friday for four weeks"),
        "tt": tr.gettext("Tuesday and Thursday for four weeks"),
        "wd": tr.gettext("Monday to Friday for two weeks"),
    }
    return labels[key]


def hour_label(key: str, tr: Translator) -> str:
    if key == "c":
        return tr.gettext("At their check-in time")
    return tr.time(time(int(key)))


@dataclass
class CoachHandlers:
    dialogues: DialogueSet
    respond: Respond
    bot_username: Callable[[], str]
    side: CoachSideHandlers = field(init=False)  # issue 26's commands and buttons

    def __post_init__(self) -> None:
        from bot.telegram.coach_side import CoachSideHandlers

        self.side = CoachSideHandlers(self.dialogues)

    # -- coaches -------------------------------------------------------------------------------

    async def make_coach(self, call: CommandCall) -> None:
        """An admin makes someone a coach; then the coach commands go into their menu."""
        made: list[tuple[int, str]] = []  # (coach, locale) once the turn committed

        async def run(t: StoreTurn) -> None:
            made[:] = await self._make_coach(t, call.argument)
            return None

        await self.respond(call.update, run)
        if made:
            await set_coach_menus(call.update.get_bot(), made)

    async def _make_coach(self, t: StoreTurn, argument: str) -> list[tuple[int, str]]:
        tr = translator_for(t.user.locale)  # an admin: the command's audience (commands.py)
        target = parse_id(argument) if argument.strip() else t.user_id
        if target is None:
            say(t, tr.gettext("That is not a Telegram user id. Send /makecoach followed by "
                              "the person's numeric id, or on its own to become a coach "
                              "yourself."))
            return []
        await links.make_coach(t.session, target)
        say(t, tr.gettext("Done: user {user} can now invite clients with /invite.").format(
            user=target))
        coach = await t.session.get(User, target)
        return [(target, coach.locale if coach is not None else t.user.locale)]

    async def invite(self, t: StoreTurn, argument: str) -> None:
        tr = translator_for(t.user.locale)
        try:
            code = await links.create_invite(t.session, t.user_id, t.now)
        except coach_errors.NotACoach:
            say(t, tr.gettext("Only coaches can invite clients. If you are a coach, ask the "
                              "bot's administrator to set you up."))
            return None
        link = f"https://t.me/{self.bot_username()}?start={INVITE_PREFIX}{code}"
        expires = expiry_text(t, tr, t.now + links.INVITE_TTL)
        say(t, tr.gettext("Send this link to your client. It works once.\nExpires: {date}\n{link}")
            .format(date=expires, link=link))
        return None

    async def new_exercise(self, t: StoreTurn, argument: str) -> Outcome | None:
        outcome = await converse(t, self.dialogues, Start(NEW_EXERCISE), t.now)
        enqueue_replies(t, outcome)
        return outcome

    async def progress(self, t: StoreTurn, argument: str) -> None:
        """A coach asking for one client's progress: the report, and the weekly chart."""
        tr = translator_for(t.user.locale)
        client_id = await find_client(t, argument)
        try:
            if client_id is None:
                raise coach_errors.NotYourClient()
            progress = await reports.client_progress(t.session, t.user_id, client_id, t.now)
            chart = await reports.client_trend_png(t.session, t.user_id, client_id, t.now, tr)
        except coach_errors.NotYourClient:
            say(t, tr.gettext("I cannot find that client among yours. Send /clients to see "
                              "them."))
            return None
        private = notes.note_lines(await notes.notes_about(t.session, t.user_id, client_id), tr)
        say(t, "\n".join([reports.progress_report(progress, tr), *private]), subject=client_id)
        t.enqueue(t.user_id, {"photo": chart.hex(), "caption": tr.gettext(
            "Weekly trend: mood and goal, last 12 weeks")}, subject=client_id)
        client = await t.session.get(User, client_id)
        if client is not None:
            for payload in await measures.measure_reports(t.session, client, tr,
                                                          coach_id=t.user_id):
                t.enqueue(t.user_id, payload, subject=client_id)
        return None

    async def assign(self, t: StoreTurn, argument: str) -> None:
        tr = translator_for(t.user.locale)
        await pick_client(t, tr.gettext("Who is the exercise for?"), "assign")

    async def assign_step(self, t: StoreTurn, rest: str) -> Outcome | None:
        """assign:<client> → the exercise; …:<exercise> → how often; …:<schedule> → at what
        time; …:<hour> → assigned. Every step checks again that this is the coach's client
        and the coach's exercise, so a forged button gets nowhere."""
        tr = translator_for(t.user.locale)
        parts = rest.split(":")
        invalid = tr.gettext("That button is no longer valid. Send /assign to start again.")
        client_id = parse_id(parts[0])
        if client_id is None or len(parts) > 4:
            say(t, invalid)
            return None
        clients = {c.user_id: c for c in await links.clients_of(t.session, t.user_id)}
        if client_id not in clients:
            say(t, tr.gettext("I cannot find that client among yours. Send /clients to see "
                              "them."))
            return None
        client = await t.session.get(User, client_id)
        choices = await self.exercise_choices(t, tr, client.locale if client else None)
        if len(parts) == 1:
            left_out = await self._not_offered(
                t, tr, client, tr.person(clients[client_id].first_name, client_id))
            say(t, "\n\n".join(["\n".join(left_out), tr.gettext("Which exercise?")]).strip(),
                tuple(
                Button(title, f"assign:{client_id}:{key}") for key, title in choices.items()))
            return None
        exercise = parts[1]
        if exercise not in choices:
            say(t, invalid)
            return None
        prefix = f"assign:{client_id}:{exercise}"
        if len(parts) == 2:
            say(t, tr.gettext("How often?"), (*(
                Button(schedule_label(key, tr), f"{prefix}:{key}") for key in SCHEDULES),
                Button(tr.gettext("Another schedule…"), f"{prefix}:{OWN_SCHEDULE}")))
            return None
        if parts[2] == OWN_SCHEDULE and len(parts) == 3:  # any days, time, start and length
            name = tr.person(clients[client_id].first_name, client_id)
            outcome = await converse(t, self.dialogues, Start(managing.EXERCISE_SCHEDULE, {
                managing.SCHEDULE_CLIENT: client_id, managing.SCHEDULE_EXERCISE: exercise,
                "schedule.client_name": name}), t.now)
            enqueue_replies(t, outcome)
            return outcome
        if parts[2] not in SCHEDULES:
            say(t, invalid)
            return None
        if len(parts) == 3:
            say(t, tr.gettext("At what time? It is the client's own local time."), tuple(
                Button(hour_label(key, tr), f"{prefix}:{parts[2]}:{key}") for key in HOURS))
            return None
        if parts[3] not in HOURS:
            say(t, invalid)
            return None
        schedule, days = SCHEDULES[parts[2]]
        hour = await self._client_hour(t, client_id) if parts[3] == "c" else int(parts[3])
        today = t.now.date()
        custom = int(exercise[len(CUSTOM):]) if exercise.startswith(CUSTOM) else None
        await assignments.assign_exercise(
            t.session, t.user_id, client_id, exercise, {**schedule, "hour": hour}, today,
            today + timedelta(days=days - 1), t.now, assignments.exercise_ids(self.dialogues),
            custom_exercise_id=custom)
        assigned = tr.gettext("Assigned “{exercise}” to {client}.").format(
            exercise=tr.words(choices[exercise]),
            client=tr.person(clients[client_id].first_name, client_id))
        say(t, f"{assigned}\n{schedule_label(parts[2], tr)} · {hour_label(parts[3], tr)}",
            subject=client_id)
        return None

    async def exercise_choices(self, t: StoreTurn, tr: Translator,
                               client_locale: str | None = None) -> dict[str, str]:
        """Button key → title: the library's exercises, then the coach's own, then the
        dialogues the coach sent in the client's language (when there is one client)."""
        library = {e: tr.gettext(self.dialogues[e].title)
                   for e in assignments.exercise_ids(self.dialogues)}
        choices = dict(sorted(library.items(), key=lambda item: item[1]))
        for exercise_id, title in await assignments.own_exercises(t.session, t.user_id):
            choices[f"{CUSTOM}{exercise_id}"] = title
        for row in await coach_dialogues.dialogues_of(t.session, t.user_id):
            if client_locale in coach_dialogues.languages(row):
                choices[coach_dialogues.run_id(row.id)] = row.title
        return choices

    @staticmethod
    async def _not_offered(t: StoreTurn, tr: Translator, client: User | None,
                           person: str) -> list[str]:
        """Why the coach's dialogues in other languages than the client's are not offered
        (``person``: the client as :meth:`Translator.person` names them)."""
        locale = client.locale if client is not None else ""
        titles = [row.title for row in await coach_dialogues.dialogues_of(t.session, t.user_id)
                  if locale not in coach_dialogues.languages(row)]
        if not titles:
            return []
        return [tr.ngettext("This exercise or dialogue of yours is not offered to {client} "
                            "(language: {language}), because it is not written in that "
                            "language or translated into it:",
                            "These exercises and dialogues of yours are not offered to "
                            "{client} (language: {language}), because they are not written in "
                            "that language or translated into it:", len(titles)).format(
            client=person, language=tr.isolate(LANGUAGE_NAMES.get(locale, locale))),
            *(f"• {tr.words(title)}" for title in titles)]

    # -- dialogues a coach sends as files ----------------------------------------------------

    async def on_document(self, update: Update) -> bool:
        """A coach's YAML file: read (outside any transaction), checked and kept, or refused
        with every error by file, line and column. False: not a dialogue file."""
        message = update.message
        document = message.document if message is not None else None
        name = (document.file_name or "") if document is not None else ""
        if document is None or not name.lower().endswith(coach_dialogues.SUFFIXES):
            return False
        raw: bytes | None = None
        if (document.file_size or 0) <= MAX_UPLOAD_BYTES:
            try:
                file = await document.get_file()
                raw = bytes(await file.download_as_bytearray())
            except TelegramError as exc:
                log.warning("a coach's file could not be read: %s", type(exc).__name__)
                await self.respond(update, lambda t: self._upload_failed(t))
                return True
        await self.respond(update, lambda t: self._keep_upload(t, raw, name))
        return True

    async def _upload_failed(self, t: StoreTurn) -> None:
        say(t, translator_for(t.user.locale).gettext(
            "I could not read that file. Please send it again."))

    async def _keep_upload(self, t: StoreTurn, raw: bytes | None, name: str) -> None:
        tr = translator_for(t.user.locale)
        if not t.user.is_coach:
            say(t, tr.gettext("Only coaches can send dialogues. If you are a coach, ask the "
                              "bot's administrator to set you up."))
            return
        try:
            if raw is None:
                raise coach_dialogues.UploadRefused([too_large(name)])
            row = await coach_dialogues.upload(t.session, t.user_id, raw, name, self.dialogues,
                                               t.now)
        except coach_dialogues.UploadRefused as refused:
            shown = refused.lines(tr)[:MAX_ERRORS_SHOWN]
            say(t, "\n".join([tr.ngettext(
                "I did not keep this dialogue: there is {count} problem to fix.",
                "I did not keep this dialogue: there are {count} problems to fix.",
                len(refused.errors)).format(count=tr.number(len(refused.errors))), "",
                *shown]))
            return
        except coach_errors.NotACoach:
            return
        say(t, tr.gettext("Kept: “{title}”.\nLanguage: {language}.\nTry it yourself first; "
                          "then /assign gives it to your clients who use that language.").format(
                              title=tr.words(row.title), language=tr.isolate(", ".join(
                                  LANGUAGE_NAMES.get(code, code)
                                  for code in coach_dialogues.languages(row)))),
            (Button(tr.gettext("Try it"), f"{TRY_DIALOGUE}:{row.id}"),))

    async def try_dialogue(self, t: StoreTurn, raw_id: str) -> Outcome | None:
        """The coach runs their own dialogue, as a client would get it."""
        number = parse_id(raw_id)
        found = None if number is None else await coach_dialogues.dialogue_of(
            t.session, coach_dialogues.run_id(number), t.user_id)
        if found is None or not t.user.is_coach:
            say(t, translator_for(t.user.locale).gettext(
                "That dialogue is not one of yours."))
            return None
        outcome = await converse(t, self.dialogues, Start(found.id), t.now)
        enqueue_replies(t, outcome)
        return outcome

    @staticmethod
    async def _client_hour(t: StoreTurn, client_id: int) -> int:
        client = await t.session.get(User, client_id)
        return client.checkin_hour if client is not None else 9

    # -- clients ---------------------------------------------------------------------------------

    async def offer_invite(self, t: StoreTurn, code: str) -> None:
        tr = translator_for(t.user.locale)
        check = await links.invite_status(t.session, code, t.user_id, t.now)
        if not check.valid:
            say(t, tr.gettext("This invitation link is not valid any more (it may have been "
                              "used or have expired). Please ask your coach for a new one."))
            return None
        say(t, tr.gettext("{coach} invites you to share your coaching progress with them: "
                          "your goals, your check-ins (mood ratings included) and your exercise "
                          "answers, and also when you skip an exercise or do not answer for a "
                          "few days.\n\nNothing you write "
                          "before you agree is shared, and you can stop sharing at any time "
                          "with /coach. If you share and I notice signs that you may be in "
                          "crisis, I tell {coach}, without any of your words, so that they can "
                          "reach out to you.\n\nDo you want to share?").format(
                              coach=tr.words(check.coach_name or "")),
            (Button(tr.gettext("Yes, share"), f"invite:yes:{code}"),
             Button(tr.gettext("No"), "invite:no")), subject=check.coach_id)
        return None

    async def answer_invite(self, t: StoreTurn, rest: str) -> Outcome | None:
        tr = translator_for(t.user.locale)
        answer, _, code = rest.partition(":")
        if answer != "yes":
            say(t, tr.gettext("All right, nothing is shared."))
            return None
        try:
            coach_id = await links.accept_invite(t.session, code, t.user_id, t.now)
        except coach_errors.InviteError:
            say(t, tr.gettext("This invitation link is not valid any more (it may have been "
                              "used or have expired). Please ask your coach for a new one."))
            return None
        say(t, tr.gettext("Done: your coach can now follow your progress. "
                          "To stop sharing, send /coach."))
        if t.user.consent_at is not None:  # else the onboarding comes first; /brief later
            coach = await t.session.get(User, coach_id)
            t.enqueue(t.user_id, brief_question(
                coach_id, coach.first_name or "" if coach is not None else "", tr))
        if t.user.consent_at is None:
            outcome = await converse(t, self.dialogues, Start(ONBOARDING), t.now)
            enqueue_replies(t, outcome)
            return outcome
        return None

    async def coaches(self, t: StoreTurn, argument: str) -> None:
        tr = translator_for(t.user.locale)
        coaches = await links.coaches_of(t.session, t.user_id)
        if not coaches:
            say(t, tr.gettext("You are not sharing your progress with any coach."))
            return None
        say(t, tr.gettext("You share your progress with these coaches. Press a name to stop "
                          "sharing with them:"), tuple(
            Button(tr.person(c.first_name, c.user_id), f"unlink:{c.user_id}")
            for c in coaches))
        return None

    async def unlink(self, t: StoreTurn, rest: str) -> None:
        tr = translator_for(t.user.locale)
        coach_id = parse_id(rest)
        if coach_id is None:
            coach_id = -1
        ended = await links.unlink(t.session, t.user_id, coach_id, t.now)
        if ended.coaches:
            say(t, tr.gettext("Done: that coach no longer sees your progress. I have let them "
                              "know."))
        else:
            say(t, tr.gettext("You are not sharing your progress with that coach."))
        await announce_link_end(t, ended, t.now)
        return None
