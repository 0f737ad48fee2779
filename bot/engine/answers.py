"""Turning what a client typed (or pressed) into the value a step saves, or a friendly hint."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import date, timedelta

from babel.dates import parse_date
from babel.numbers import NumberFormatError, parse_decimal

from bot.dialogue.expr import Value
from bot.dialogue.model import AnswerType, Ask
from bot.engine.places import find_time_zones
from bot.i18n import Translator, parse_weekdays, without_accents


@dataclass(frozen=True)
class Invalid:
    hint: str


_TIME = re.compile(r"(\d{1,2})(?:\s*[:.h]\s*(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)?\Z", re.IGNORECASE)
_DAY_FIRST = re.compile(r"(\d{1,2})\s*[./-]\s*(\d{1,2})\s*[./-]?\s*(\d{2,4})?\.?\Z")


def parse_answer(ask: Ask, raw: str, tr: Translator, today: date) -> Value | Invalid:
    return ANSWER_UNITS[ask.type].parse(ask, raw.strip(), tr, today)


def answer_buttons(ask: Ask, tr: Translator,
                   dialogue_text: Callable[[str], str]) -> tuple[tuple[str, str], ...]:
    """The buttons offered with a question: (label, value) pairs; a choice's labels are
    dialogue texts, shown through `dialogue_text` (translated and filled in)."""
    return ANSWER_UNITS[ask.type].buttons(ask, tr, dialogue_text)


def _text(ask: Ask, text: str, tr: Translator) -> Value | Invalid:
    if not text:
        return Invalid(tr.gettext("Please answer in a few words."))
    length = len(text)
    if ask.max_length is not None and length > ask.max_length:
        return Invalid(tr.ngettext(
            "That is {length} character; please keep it to {max} at most. "
            "The heart of it is enough.",
            "That is {length} characters; please keep it to {max} at most. "
            "The heart of it is enough.",
            length,
        ).format(length=tr.number(length), max=tr.number(ask.max_length)))
    if ask.min_length is not None and length < ask.min_length:
        return Invalid(tr.ngettext(
            "Could you say a little more? At least {min} character, please.",
            "Could you say a little more? At least {min} characters, please.",
            ask.min_length,
        ).format(min=tr.number(ask.min_length)))
    return text


def _to_number(text: str, tr: Translator) -> float | None:
    candidates = [text.replace(" ", "").replace("\u00a0", "")]
    if candidates[0].count(",") == 1 and "." not in candidates[0]:
        candidates.append(candidates[0].replace(",", "."))
    for candidate in candidates:
        try:
            value = float(candidate)
        except ValueError:
            continue
        return value if math.isfinite(value) else None
    try:
        return float(parse_decimal(text, locale=tr.locale, strict=True))
    except (NumberFormatError, ValueError, ArithmeticError):
        return None


def _number(ask: Ask, text: str, tr: Translator) -> Value | Invalid:
    value = _to_number(text, tr) if len(text) <= 40 else None
    whole = ask.type == "scale"
    in_range = value is not None and not (whole and not value.is_integer()) and (
        (ask.min is None or value >= ask.min) and (ask.max is None or value <= ask.max)
    )
    if value is None or not in_range:
        if ask.min is not None and ask.max is not None:
            message = (tr.gettext("Please answer with a whole number from {min} to {max}.")
                       if whole else tr.gettext("Please answer with a number from {min} to {max}."))
            return Invalid(message.format(min=tr.number(ask.min), max=tr.number(ask.max)))
        if ask.min is not None:
            return Invalid(tr.gettext("Please answer with a number of at least {min}.")
                           .format(min=tr.number(ask.min)))
        if ask.max is not None:
            return Invalid(tr.gettext("Please answer with a number no greater than {max}.")
                           .format(max=tr.number(ask.max)))
        return Invalid(tr.gettext("Please answer with a number, for example 3 or 4.5."))
    return int(value) if value.is_integer() else value


def _choice(ask: Ask, text: str, tr: Translator) -> Value | Invalid:
    wanted = text.casefold().rstrip(".")
    for index, option in enumerate(ask.options, start=1):
        if wanted in (option.key, str(index), option.label.casefold(),
                      tr.gettext(option.label).casefold()):
            return option.key
    return Invalid(tr.gettext("Please pick one of the options: press a button, "
                              "or send its number."))


def _bare(word: str) -> str:
    """A typed word without case or accents: phones often drop them ("si" for "sì")."""
    return without_accents(word.casefold().strip().rstrip(".!"))


def _yes_no(text: str, tr: Translator) -> Value | Invalid:
    wanted = _bare(text)
    if wanted in {"yes", "y", _bare(tr.gettext("yes"))}:
        return True
    if wanted in {"no", "n", _bare(tr.gettext("no"))}:
        return False
    return Invalid(tr.gettext("Please answer yes or no."))


def _time(text: str, tr: Translator) -> Value | Invalid:
    match = _TIME.match(text)
    if match:
        hour, minute = int(match.group(1)), int(match.group(2) or 0)
        suffix = (match.group(3) or "").lower().replace(".", "")
        if suffix and 1 <= hour <= 12:
            hour = hour % 12 + (12 if suffix == "pm" else 0)
        elif suffix:
            hour = 99
        if hour <= 23 and minute <= 59:
            return f"{hour:02d}:{minute:02d}"
    return Invalid(tr.gettext("Please send a time such as 07:30 or 19:00."))


def _date(text: str, tr: Translator, today: date) -> Value | Invalid:
    words = {
        tr.gettext("today").casefold(): today,
        "today": today,
        tr.gettext("tomorrow").casefold(): today + timedelta(days=1),
        "tomorrow": today + timedelta(days=1),
    }
    found = words.get(text.casefold()) if len(text) <= 40 else None
    if found is None and len(text) <= 40:
        found = _parse_date(text, tr.locale, today)
    if found is None:
        example = today + timedelta(days=7)
        return Invalid(tr.gettext("Please send a date such as {example} or {iso}.").format(
            example=tr.date(example, "short"), iso=example.isoformat()))
    return found.isoformat()


def _parse_date(text: str, locale: str, today: date) -> date | None:
    try:
        return date.fromisoformat(text)
    except ValueError:
        pass
    match = _DAY_FIRST.match(text)
    if match is None:
        return None
    # The locale's own order first (month first in American English), then day first.
    try:
        return parse_date(text, locale=locale)
    except (ValueError, IndexError):
        pass
    day, month, year = match.groups()
    full_year = today.year if year is None else int(year) + (2000 if len(year) == 2 else 0)
    try:
        return date(full_year, int(month), int(day))
    except ValueError:
        pass
    return None


def _timezone(text: str, tr: Translator) -> Value | Invalid:
    zones = find_time_zones(text) if len(text) <= 80 else frozenset()
    if len(zones) == 1:
        return next(iter(zones))
    if zones:
        return Invalid(tr.gettext("That place spans several time zones. Which city are you "
                                  "in or near?"))
    # The example in the sentence is a city the translator's readers know.
    return Invalid(tr.gettext("I do not know that place. Please send the name of a city near "
                              "you, for example London or New York."))


def _weekdays(text: str, tr: Translator) -> Value | Invalid:
    days = parse_weekdays(text, tr.locale) if len(text) <= 200 else None
    if days is None:
        return Invalid(tr.gettext("I did not recognise those as days of the week. Please write "
                                  "their names separated by commas, for example: Monday, "
                                  "Thursday."))
    return weekdays_value(days)


def weekdays_value(days: Iterable[int]) -> str:
    """How a list of weekdays (Monday = 0) is saved: "0,4" is Monday and Friday."""
    return ",".join(str(day) for day in sorted(set(days)))


def weekdays_of(value: Value) -> tuple[int, ...] | None:
    """The weekdays (Monday = 0) of a saved ``weekdays`` value; None when it is not one."""
    if not isinstance(value, str) or not value:
        return None
    try:
        days = tuple(int(part) for part in value.split(","))
    except ValueError:
        return None
    return days if all(0 <= day <= 6 for day in days) else None


Parse = Callable[[Ask, str, Translator, date], Value | Invalid]
Buttons = Callable[[Ask, Translator, Callable[[str], str]], tuple[tuple[str, str], ...]]


def _no_buttons(ask: Ask, tr: Translator,
                dialogue_text: Callable[[str], str]) -> tuple[tuple[str, str], ...]:
    return ()


@dataclass(frozen=True)
class AnswerUnit:
    """What the engine does with one answer type: read a reply (the stripped text, or a
    button's value), and offer buttons. Its YAML keys and their validation are the
    loader's (``bot/dialogue/loader.py``: the dialogue layer does not import the engine)."""

    parse: Parse
    buttons: Buttons = _no_buttons


def _choice_buttons(ask: Ask, tr: Translator,
                    dialogue_text: Callable[[str], str]) -> tuple[tuple[str, str], ...]:
    return tuple((dialogue_text(option.label), option.key) for option in ask.options)


def _yes_no_buttons(ask: Ask, tr: Translator,
                    dialogue_text: Callable[[str], str]) -> tuple[tuple[str, str], ...]:
    return (tr.gettext("Yes"), "yes"), (tr.gettext("No"), "no")


def _scale_buttons(ask: Ask, tr: Translator,
                   dialogue_text: Callable[[str], str]) -> tuple[tuple[str, str], ...]:
    if ask.min is None or ask.max is None:
        return ()
    return tuple((tr.number(n), str(n)) for n in range(int(ask.min), int(ask.max) + 1))


#: Every answer type's behaviour in the engine, one entry each (tests/engine/test_answers.py
#: checks that every type the dialogue language knows has one).
ANSWER_UNITS: Mapping[AnswerType, AnswerUnit] = {
    "text": AnswerUnit(lambda ask, text, tr, today: _text(ask, text, tr)),
    "number": AnswerUnit(lambda ask, text, tr, today: _number(ask, text, tr)),
    "scale": AnswerUnit(lambda ask, text, tr, today: _number(ask, text, tr), _scale_buttons),
    "choice": AnswerUnit(lambda ask, text, tr, today: _choice(ask, text, tr), _choice_buttons),
    "yes_no": AnswerUnit(lambda ask, text, tr, today: _yes_no(text, tr), _yes_no_buttons),
    "time": AnswerUnit(lambda ask, text, tr, today: _time(text, tr)),
    "date": AnswerUnit(lambda ask, text, tr, today: _date(text, tr, today)),
    "timezone": AnswerUnit(lambda ask, text, tr, today: _timezone(text, tr)),
    "weekdays": AnswerUnit(lambda ask, text, tr, today: _weekdays(text, tr)),
    "none": AnswerUnit(lambda ask, text, tr, today: None),
}
