"""Sessions and actions on Telegram: a coach schedules by buttons (client → day, two weeks a
page up to a year ahead → hour → minutes → length, 60 minutes first → how → once, weekly or
fortnightly → how many → the place, typed), moves (the same day and time steps) or cancels
one session or the rest of a series, one-to-one or a group's; the client lists their
sessions and marks their actions. Button data carries the choices so far
(``session:new:<client>:<yymmdd>:<hhmm>:…``; a page of dates is ``+<n>`` and an hour without
its minutes ``HH``, each only as the last part); every step is checked again in the domain
layer, so forged data gets nowhere."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime, time, timedelta

from babel.dates import format_skeleton

from bot.coaching import actions as commitments
from bot.coaching import group_sessions
from bot.coaching import sessions as domain
from bot.coaching.conversation import Start, converse, enqueue_replies
from bot.coaching.groups import groups_of
from bot.coaching.links import clients_of
from bot.dialogue.expr import Value
from bot.dialogue.model import DialogueSet
from bot.engine import Outcome
from bot.i18n import Translator, translator_for
from bot.schedule.planning import zone_of
from bot.schedule.sessions import LEADS, Repeat
from bot.store import SessionMode
from bot.store import Turn as StoreTurn

PAGE_DAYS = 14
PAGES = 27  # a year ahead and a little more, two weeks a page
#: A day part ``+<n>`` asks for page n of the dates; an hour part ``HH`` for its minutes.
PAGE = "+"
HOURS = range(6, 24)
MINUTES = (0, 15, 30, 45)
LENGTHS = (60, 30, 45, 90, 120)  # 60 minutes first: the usual length
MODES = {"i": SessionMode.IN_PERSON, "p": SessionMode.PHONE, "v": SessionMode.VIDEO}
REPEATS = {"o": Repeat.ONCE, "w": Repeat.WEEKLY, "f": Repeat.FORTNIGHTLY}
COUNTS = (4, 6, 8, 10, 12)
NEW = f"{domain.BUTTON}:new"


def _say(t: StoreTurn, text: str, buttons: list[tuple[str, str]] | None = None, *,
         subject: int | None = None) -> None:
    payload: dict[str, object] = {"text": text}
    if buttons:
        payload["buttons"] = [{"label": label, "data": data} for label, data in buttons]
    t.enqueue(t.user_id, payload, subject=subject)


def _local_today(t: StoreTurn) -> date:
    return t.now.astimezone(zone_of(t.user.time_zone)).date()


def _page(value: str) -> int | None:
    """The page of dates a day part asks for (``+<n>``), or None."""
    number = value.removeprefix(PAGE)
    if value.startswith(PAGE) and number.isascii() and number.isdigit() \
            and int(number) < PAGES:
        return int(number)
    return None


def _hour(value: str) -> int | None:
    """The hour a time part names before its minutes are chosen (``HH``), or None."""
    if len(value) == 2 and value.isascii() and value.isdigit() and int(value) in HOURS:
        return int(value)
    return None


def _clock(value: str) -> time | None:
    """The time a time part (``HHMM``) names, if the buttons offer it."""
    if len(value) != 4 or _hour(value[:2]) is None or not value[2:].isascii() \
            or int(value[2:]) not in MINUTES:
        return None
    return time(int(value[:2]), int(value[2:]))


def _day(value: str) -> date | None:
    try:
        return datetime.strptime(value, "%y%m%d").date() if value.isascii() else None
    except ValueError:
        return None


def _day_buttons(t: StoreTurn, prefix: str, tr: Translator,
                 page: int = 0) -> list[tuple[str, str]]:
    """A page of two weeks of dates from today, with the pages before and after it."""
    today = _local_today(t)
    days = [today + timedelta(days=page * PAGE_DAYS + n) for n in range(PAGE_DAYS)]
    buttons = [(format_skeleton("MMMEd" if day.year == today.year else "yMMMEd", day,
                                locale=tr.locale), f"{prefix}:{day:%y%m%d}") for day in days]
    if page > 0:
        buttons.append((tr.gettext("Earlier dates"), f"{prefix}:{PAGE}{page - 1}"))
    if page + 1 < PAGES:
        buttons.append((tr.gettext("Later dates"), f"{prefix}:{PAGE}{page + 1}"))
    return buttons


def _hour_buttons(prefix: str, tr: Translator) -> list[tuple[str, str]]:
    return [(tr.time(time(hour)), f"{prefix}:{hour:02d}") for hour in HOURS]


def _minute_buttons(prefix: str, hour: int, tr: Translator) -> list[tuple[str, str]]:
    return [(tr.time(time(hour, minute)), f"{prefix}:{hour:02d}{minute:02d}")
            for minute in MINUTES]


def _when_ask(t: StoreTurn, prefix: str, when: list[str], tr: Translator,
              day_question: str) -> tuple[str, list[tuple[str, str]]] | None:
    """The next question about a start (a page of days, an hour, its minutes) when ``when``
    (the day and time parts chosen so far, the last maybe a page or an hour) is not yet a
    whole start; None when it is. ``prefix`` ends before ``when``."""
    chosen = prefix + "".join(f":{part}" for part in when[:-1])
    if not when:
        return day_question, _day_buttons(t, prefix, tr)
    page = _page(when[-1]) if len(when) == 1 else None
    if page is not None:
        return day_question, _day_buttons(t, chosen, tr, page)
    if len(when) == 1:
        return tr.gettext("At what time?"), _hour_buttons(f"{chosen}:{when[0]}", tr)
    hour = _hour(when[1])
    if hour is not None:
        return tr.gettext("At what time?"), _minute_buttons(chosen, hour, tr)
    return None


def _when_valid(when: list[str]) -> bool:
    """The day and time parts so far are ones the buttons offer (a page or an hour only
    last, as a question still open)."""
    if not when:
        return True
    day, end = when[0], len(when) == 1
    if _day(day) is None and not (end and _page(day) is not None):
        return False
    return end or (len(when) == 2 and (_clock(when[1]) is not None
                                       or _hour(when[1]) is not None))


def _wall_clock(day: str, hhmm: str) -> datetime | None:
    """The wall-clock start a day (yymmdd) and time (hhmm) of button data name, or None."""
    on, at = _day(day), _clock(hhmm)
    return None if on is None or at is None else datetime.combine(on, at)


def _mode_label(mode: SessionMode, tr: Translator) -> str:
    return tr.gettext(domain.MODE_LABELS[mode])


def _move_question(tr: Translator, rest_of_series: bool) -> str:
    if rest_of_series:
        return tr.gettext("The later sessions of the series move with it, by the same number "
                          "of days. The times are in your time zone. Which day should this "
                          "session move to?")
    return tr.gettext("The times are in your time zone. Which day should this session move to?")


def _repeat_label(key: str, tr: Translator) -> str:
    return {"o": tr.gettext("Just this once"), "w": tr.gettext("Every week"),
            "f": tr.gettext("Every two weeks")}[key]


class SessionFlows:
    """The steps behind /schedule, /sessions, /actions and their buttons, each in the turn
    of the user who pressed or typed."""

    def __init__(self, dialogues: DialogueSet) -> None:
        self.dialogues = dialogues

    # -- commands ------------------------------------------------------------------------

    async def schedule(self, t: StoreTurn, argument: str = "") -> Outcome | None:
        return await self.step(t, "new")

    async def sessions(self, t: StoreTurn, argument: str = "") -> Outcome | None:
        t.enqueue(t.user_id, await domain.sessions_message(t, t.now))
        return None

    async def brief(self, t: StoreTurn, argument: str = "") -> Outcome | None:
        await domain.brief_questions(t)
        return None

    async def actions(self, t: StoreTurn, argument: str = "") -> Outcome | None:
        tr = translator_for(t.user.locale)
        t.enqueue(t.user_id, await commitments.actions_message(
            t.session, t.user_id, _local_today(t), tr))
        return None

    # -- buttons ---------------------------------------------------------------------------

    async def action_button(self, t: StoreTurn, rest: str) -> Outcome | None:
        tr = translator_for(t.user.locale)
        for payload in await commitments.mark_from_button(
                t.session, t.user_id, rest, _local_today(t), t.now, tr):
            t.enqueue(t.user_id, payload)
        return None

    async def step(self, t: StoreTurn, rest: str) -> Outcome | None:
        """One press of a session button (``rest`` is the data after ``session:``)."""
        what, _, tail = rest.partition(":")
        parts = tail.split(":") if tail else []
        if what == "cant" and parts and parts[0].isdigit():
            if not await domain.cant_make_it(t, int(parts[0]), t.now):
                return None
            outcome = await converse(t, self.dialogues, Start(
                domain.CANT_DIALOGUE, {domain.CANT_SESSION: int(parts[0])}), t.now)
            enqueue_replies(t, outcome)
            return outcome
        if what == "brief":
            await domain.brief_answer(t, tail)
            return None
        if not t.user.is_coach:
            _say(t, translator_for(t.user.locale).gettext(
                "Only coaches can do this. Ask your coach to use /schedule."))
            return None
        if what == "new":
            return await self._new(t, parts)
        if what == "lead" and not parts:
            self._lead(t)
        elif what == "lead" and len(parts) == 1:
            await self._set_lead(t, parts[0])
        elif what == "agree":
            await domain.agree_button(t, parts)
        elif what in ("held", "missed") and parts and parts[0].isdigit():
            await domain.record_outcome(t, int(parts[0]), what == "held", t.now)
        elif what in ("move", "mrest") and parts and parts[0].isdigit():
            await self._move(t, parts, rest_of_series=what == "mrest")
        elif what in ("cancel", "rest") and parts and parts[0].isdigit():
            await self._cancel(t, int(parts[0]), rest_of_series=what == "rest")
        else:
            self._invalid(t)
        return None

    @staticmethod
    def _lead(t: StoreTurn) -> None:
        """How long before their sessions the coach wants the reminders, as buttons."""
        tr = translator_for(t.user.locale)
        _say(t, tr.gettext("How long before each session should the reminders come, for you "
                           "and your clients?"), [
            (tr.duration(timedelta(minutes=n)), f"{domain.BUTTON}:lead:{n}") for n in LEADS])

    async def _set_lead(self, t: StoreTurn, value: str) -> None:
        minutes = int(value) if value.isascii() and value.isdigit() else 0
        if not await domain.set_reminder_lead(t.session, t.user_id, minutes, t.now):
            self._invalid(t)
            return
        tr = translator_for(t.user.locale)
        _say(t, tr.gettext("Done: the reminders now come {duration} before each session, for "
                           "you and your clients.").format(
            duration=tr.isolate(tr.duration(timedelta(minutes=minutes)))))

    def _invalid(self, t: StoreTurn) -> None:
        _say(t, translator_for(t.user.locale).gettext(
            "That choice is not valid any more. Send /schedule to start again."))

    async def _new(self, t: StoreTurn, parts: list[str]) -> Outcome | None:
        tr = translator_for(t.user.locale)
        if not parts:
            clients = await clients_of(t.session, t.user_id)
            own_groups = await groups_of(t.session, t.user_id)
            if not clients and not own_groups:
                _say(t, tr.gettext("You have no clients yet. Send /invite to invite one."))
                return None
            _say(t, tr.gettext("A session with whom?"), [
                (tr.person(c.first_name, c.user_id), f"{NEW}:{c.user_id}")
                for c in clients] + [
                (tr.gettext("Group: {group}").format(group=tr.words(g.name)),
                 f"{NEW}:{domain.GROUP_TARGET}{g.id}") for g in own_groups])
            return None
        client, chosen = parts[0], parts[1:]
        if not await self._own_target(t, client):
            self._invalid(t)
            return None
        first = self._start(t, f"{NEW}:{client}", chosen[:2], tr.gettext(
            "Which day? The times are in your time zone."), more=len(chosen) > 2)
        if first is None:
            return None
        prefix = f"{NEW}:" + ":".join(parts)
        chosen = chosen[2:]
        asks = (
            lambda: (tr.gettext("How long?"), [
                (tr.gettext("{minutes} min").format(minutes=tr.number(n)), f"{prefix}:{n}")
                for n in LENGTHS]),
            lambda: (tr.gettext("How will you meet?"), [
                (_mode_label(mode, tr), f"{prefix}:{key}") for key, mode in MODES.items()]),
            lambda: (tr.gettext("Once, or a series?"), [
                (_repeat_label(key, tr), f"{prefix}:{key}") for key in REPEATS]),
            lambda: (tr.gettext("How many sessions in the series?"), [
                (tr.number(n), f"{prefix}:{n}") for n in COUNTS]),
        )
        if not self._valid(chosen):
            self._invalid(t)
            return None
        once = len(chosen) >= 3 and chosen[2] == "o"
        if len(chosen) < len(asks) and not (once and len(chosen) == 3):
            text, buttons = asks[len(chosen)]()
            _say(t, text, buttons)
            return None
        minutes, mode, repeat = chosen[:3]
        choices: dict[str, Value] = {"session.client": client, "session.start": first.isoformat(),
                   "session.minutes": int(minutes), "session.mode": MODES[mode].value,
                   "session.repeat": REPEATS[repeat].value,
                   "session.count": 1 if once else int(chosen[3])}
        outcome = await converse(t, self.dialogues, Start(domain.PLACE_DIALOGUE, choices),
                                 t.now)
        enqueue_replies(t, outcome)
        return outcome

    def _start(self, t: StoreTurn, prefix: str, when: list[str], day_question: str, *,
               more: bool = False) -> datetime | None:
        """The wall-clock start the day and time parts name; until they name a whole one,
        the next question about it is asked (or the data refused) and None returned.
        ``more``: other choices follow them in the data, so they must be whole."""
        tr = translator_for(t.user.locale)
        asked = _when_ask(t, prefix, when, tr, day_question) if _when_valid(when) else None
        first = _wall_clock(*when) if len(when) == 2 else None
        if not _when_valid(when) or (more and first is None):
            self._invalid(t)
        elif asked is not None:
            _say(t, *asked)
        return first

    @staticmethod
    async def _own_target(t: StoreTurn, target: str) -> bool:
        """A client of the coach (their id), or one of their groups (``g<id>``)."""
        group = target.removeprefix(domain.GROUP_TARGET)
        if target.startswith(domain.GROUP_TARGET) and group.isascii() and group.isdigit():
            return int(group) in {g.id for g in await groups_of(t.session, t.user_id)}
        return target.isascii() and target.isdigit() and int(target) in {
            c.user_id for c in await clients_of(t.session, t.user_id)}

    @staticmethod
    def _valid(chosen: list[str]) -> bool:
        """Each choice after the start so far is one the buttons offer."""
        checks: tuple[Callable[[str], bool], ...] = (
            lambda v: v.isdigit() and int(v) in LENGTHS,
            lambda v: v in MODES,
            lambda v: v in REPEATS,
            lambda v: v.isdigit() and int(v) in COUNTS,
        )
        return len(chosen) <= len(checks) and all(
            check(value) for check, value in zip(checks, chosen, strict=False))

    async def _move(self, t: StoreTurn, parts: list[str], *, rest_of_series: bool) -> None:
        """``move:<id>:…`` one session, ``mrest:<id>:…`` it and the rest of its series."""
        tr = translator_for(t.user.locale)
        try:
            cs = await domain.coach_session(t.session, t.user_id, int(parts[0]), t.now)
        except domain.SessionNotFound:
            _say(t, tr.gettext("This session is not planned any more."))
            return
        new = self._start(t, f"{domain.BUTTON}:{'mrest' if rest_of_series else 'move'}:{cs.id}",
                          parts[1:], _move_question(tr, rest_of_series))
        if new is None:
            return
        try:
            moved = await domain.move_rest(t.session, t.user_id, cs.id, new, t.user.time_zone,
                                           t.now) if rest_of_series else [
                await domain.move_session(t.session, t.user_id, cs.id, new,
                                          t.user.time_zone, t.now)]
        except ValueError:
            _say(t, tr.gettext("That time has already passed. Choose another one."))
            return
        await domain.announce(t, moved, domain.SessionChange.MOVED, t.now)

    async def group_step(self, t: StoreTurn, rest: str) -> Outcome | None:
        """A coach's group session button: ``move:<id>:…`` or ``mrest:<id>:…`` (the day and
        time asked here), or ``cancel:<id>`` and ``rest:<id>`` (group_sessions)."""
        what, _, tail = rest.partition(":")
        parts = tail.split(":")
        if what not in ("move", "mrest"):
            await group_sessions.cancel_from_button(t, rest)
            return None
        tr = translator_for(t.user.locale)
        rest_of_series = what == "mrest"
        try:
            if not (parts[0].isascii() and parts[0].isdigit()):
                raise domain.SessionNotFound("invalid button")
            gs = await group_sessions.coach_group_session(t.session, t.user_id, int(parts[0]),
                                                          t.now)
        except domain.SessionNotFound:
            _say(t, tr.gettext("This session is not planned any more."))
            return None
        new = self._start(t, f"{domain.GROUP_BUTTON}:{what}:{gs.id}", parts[1:],
                          _move_question(tr, rest_of_series))
        if new is None:
            return None
        try:
            moved, copies = await group_sessions.move_group_sessions(
                t.session, t.user_id, gs.id, new, t.user.time_zone, t.now,
                rest_of_series=rest_of_series)
        except ValueError:
            _say(t, tr.gettext("That time has already passed. Choose another one."))
            return None
        await group_sessions.announce(t, moved, copies, domain.SessionChange.MOVED)
        return None

    async def _cancel(self, t: StoreTurn, session_id: int, *, rest_of_series: bool) -> None:
        try:
            gone = await domain.cancel_sessions(t.session, t.user_id, session_id, t.now,
                                                rest_of_series=rest_of_series)
        except domain.SessionNotFound:
            _say(t, translator_for(t.user.locale).gettext(
                "This session is not planned any more."))
            return
        await domain.announce(t, gone, domain.SessionChange.CANCELLED, t.now)
