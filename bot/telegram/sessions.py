"""Sessions and actions on Telegram: a coach schedules by buttons (client → day → time →
length → how → once, weekly or fortnightly → how many → the place, typed), moves or cancels
one session or the rest of a series; the client lists their sessions and marks their actions.
Button data carries the choices so far (``session:new:<client>:<yymmdd>:<hhmm>:…``); every
step is checked again in the domain layer, so forged data gets nowhere."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime, time, timedelta

from babel.dates import format_skeleton

from bot.coaching import actions as commitments
from bot.coaching import sessions as domain
from bot.coaching.conversation import Start, converse, enqueue_replies
from bot.coaching.groups import groups_of
from bot.coaching.links import clients_of
from bot.dialogue.expr import Value
from bot.dialogue.model import DialogueSet
from bot.engine import Outcome
from bot.i18n import Translator, translator_for
from bot.schedule.planning import zone_of
from bot.schedule.sessions import Repeat
from bot.store import SessionMode
from bot.store import Turn as StoreTurn

DAYS_AHEAD = 14
TIMES = tuple(f"{h:02d}{m:02d}" for h in range(7, 21) for m in (0, 30))
LENGTHS = (30, 45, 60, 90)
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


def _day_buttons(t: StoreTurn, prefix: str, tr: Translator) -> list[tuple[str, str]]:
    today = _local_today(t)
    days = (today + timedelta(days=n) for n in range(DAYS_AHEAD))
    return [(format_skeleton("MMMEd", day, locale=tr.locale), f"{prefix}:{day:%y%m%d}")
            for day in days]


def _time_buttons(prefix: str, tr: Translator) -> list[tuple[str, str]]:
    return [(tr.time(time(int(hhmm[:2]), int(hhmm[2:]))), f"{prefix}:{hhmm}")
            for hhmm in TIMES]


def _wall_clock(day: str, hhmm: str) -> datetime | None:
    """The wall-clock start a day (yymmdd) and time (hhmm) of button data name, or None."""
    if hhmm not in TIMES:
        return None
    try:
        return datetime.strptime(f"{day}{hhmm}", "%y%m%d%H%M")
    except ValueError:
        return None


def _mode_label(mode: SessionMode, tr: Translator) -> str:
    return tr.gettext(domain.MODE_LABELS[mode])


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
        if what == "agree":
            await domain.agree_button(t, parts)
        elif what in ("held", "missed") and parts and parts[0].isdigit():
            await domain.record_outcome(t, int(parts[0]), what == "held", t.now)
        elif what == "move" and parts and parts[0].isdigit():
            await self._move(t, parts)
        elif what in ("cancel", "rest") and parts and parts[0].isdigit():
            await self._cancel(t, int(parts[0]), rest_of_series=what == "rest")
        else:
            self._invalid(t)
        return None

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
                (tr.words(c.first_name or str(c.user_id)), f"{NEW}:{c.user_id}")
                for c in clients] + [
                (tr.gettext("Group: {group}").format(group=tr.words(g.name)),
                 f"{NEW}:{domain.GROUP_TARGET}{g.id}") for g in own_groups])
            return None
        prefix = f"{NEW}:" + ":".join(parts)
        client, chosen = parts[0], parts[1:]
        if not await self._own_target(t, client):
            self._invalid(t)
            return None
        asks = (
            lambda: (tr.gettext("Which day? The times are in your time zone."),
                     _day_buttons(t, prefix, tr)),
            lambda: (tr.gettext("At what time?"), _time_buttons(prefix, tr)),
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
        once = len(chosen) >= 5 and chosen[4] == "o"
        if len(chosen) < len(asks) and not (once and len(chosen) == 5):
            text, buttons = asks[len(chosen)]()
            _say(t, text, buttons)
            return None
        day, hhmm, minutes, mode, repeat = chosen[:5]
        first = _wall_clock(day, hhmm)
        assert first is not None  # checked by _valid
        choices: dict[str, Value] = {"session.client": client, "session.start": first.isoformat(),
                   "session.minutes": int(minutes), "session.mode": MODES[mode].value,
                   "session.repeat": REPEATS[repeat].value,
                   "session.count": 1 if once else int(chosen[5])}
        outcome = await converse(t, self.dialogues, Start(domain.PLACE_DIALOGUE, choices),
                                 t.now)
        enqueue_replies(t, outcome)
        return outcome

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
        """Each choice so far is one the buttons offer."""
        checks: tuple[Callable[[str], bool], ...] = (
            lambda v: _wall_clock(v, TIMES[0]) is not None,
            lambda v: v in TIMES,
            lambda v: v.isdigit() and int(v) in LENGTHS,
            lambda v: v in MODES,
            lambda v: v in REPEATS,
            lambda v: v.isdigit() and int(v) in COUNTS,
        )
        return len(chosen) <= len(checks) and all(
            check(value) for check, value in zip(checks, chosen, strict=False))

    async def _move(self, t: StoreTurn, parts: list[str]) -> None:
        tr = translator_for(t.user.locale)
        session_id = int(parts[0])
        try:
            cs = await domain.coach_session(t.session, t.user_id, session_id, t.now)
        except domain.SessionNotFound:
            _say(t, tr.gettext("This session is not planned any more."))
            return
        prefix = f"{domain.BUTTON}:move:" + ":".join(parts)
        if len(parts) == 1:
            _say(t, tr.gettext("Move it to which day? The times are in your time zone."),
                 _day_buttons(t, prefix, tr))
            return
        if len(parts) == 2:
            if _wall_clock(parts[1], TIMES[0]) is None:
                self._invalid(t)
                return
            _say(t, tr.gettext("At what time?"), _time_buttons(prefix, tr))
            return
        new = _wall_clock(parts[1], parts[2]) if len(parts) == 3 else None
        if new is None:
            self._invalid(t)
            return
        try:
            moved = await domain.move_session(t.session, t.user_id, cs.id, new,
                                              t.user.time_zone, t.now)
        except ValueError:
            _say(t, tr.gettext("That time has already passed. Choose another one."))
            return
        await domain.announce(t, [moved], domain.SessionChange.MOVED, t.now)

    async def _cancel(self, t: StoreTurn, session_id: int, *, rest_of_series: bool) -> None:
        try:
            gone = await domain.cancel_sessions(t.session, t.user_id, session_id, t.now,
                                                rest_of_series=rest_of_series)
        except domain.SessionNotFound:
            _say(t, translator_for(t.user.locale).gettext(
                "This session is not planned any more."))
            return
        await domain.announce(t, gone, domain.SessionChange.CANCELLED, t.now)
