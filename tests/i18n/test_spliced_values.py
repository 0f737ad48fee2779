"""Values the bot formats (numbers, times, dates) read right whatever they are.

Grammar in front of a value can depend on the value: Catalan elides the article and "de"
before 1 and 11 ("l'1 d'abril", "d'11"), and says "la 1:00" but "les 8:00"; Italian says
"gli 80", "l'8" and "all'una"; Croatian dates end with a dot ("1. travnja 2027."), so a colon
or a full stop straight after one doubles up. Every catalog entry is rendered here with values
that trip each of those, the way Babel formats them, and the rendered text is searched for
the clashes. The cure is a label before the value ("Data: …") or a sentence with no article.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date, time
from pathlib import Path

import pytest
from babel.dates import format_date, format_time
from babel.numbers import format_decimal

from bot.dialogue.loader import LATER_EARLIEST_HOUR
from bot.dialogue.template import placeholders, render
from bot.i18n.catalogs import catalog_path, read_catalog

LOCALES_DIR = Path(__file__).parents[2] / "locales"

#: Placeholders filled with a person's or the bot's words, or with a value whose form never
#: changes (an ISO date such as 2027-04-01), never with a value Babel formats.
WORDS = frozenset({
    "name", "names", "person", "group", "client", "coach", "user", "link", "words", "question",
    "goal", "goal.title", "goal.first_step", "group.goal", "custom.title", "custom.instructions",
    "reply.coach_name", "message.client_name", "note.client_name", "schedule.client_name",
    "commitment", "commitment.last", "checkin.commitment", "recap.commitment", "actions.list",
    "review.next_action", "closing.later_goal", "completion.keep", "contribution", "answer",
    "exercise", "schedule", "days", "profile.time_zone", "iso",
})

#: Placeholders filled with a date (or a text that ends with one), or with a time of day;
#: every other one holds a number.
DATE_VALUES = frozenset({"date", "goal.first_step_date", "goal.due", "recap.by",
                         "closing.current_on", "schedule_and_dates",
                         "profile.pause_until", "start", "end", "example"})
TIME_VALUES = frozenset({"time", "profile.checkin_hour", "profile.quiet_start",
                         "profile.quiet_end"})

#: A time a dialogue comes back at (``later``): the loader allows only the day's hours.
DAYTIME_VALUES = frozenset({"later.time"})

NUMBERS = (1, 8, 11, 80)
TIMES = (time(1, 0), time(13, 0))
DAYTIMES = (time(LATER_EARLIEST_HOUR, 0), time(13, 0), time(23, 59))
DATES = (date(2027, 4, 1), date(2027, 9, 11), date(2027, 8, 8))

#: What each language must never show once a value is filled in.
CLASHES = {
    # el/al/del/pel/de + 1 or 11 (l'1, de l'11, d'11); "les 1:00" (la 1:00)
    "ca": re.compile(r"\b(?:el|al|del|pel|de)\s+1{1,2}(?!\d)|\bles\s+1(?!\d)", re.IGNORECASE),
    # il/i/al/ai/dal/dai/del/dei/nel/nei/sul/sui + 1, 8, 8x, 11 (l'1, gli 80, dagli 11);
    # le/alle/dalle/delle/nelle/sulle + 01:00 (all'una)
    "it": re.compile(r"\b(?:il|i|al|ai|dal|dai|del|dei|nel|nei|sul|sui)\s+(?:0?1|0?8\d*|11)(?!\d)"
                     r"|\b(?:le|alle|dalle|delle|nelle|sulle)\s+0?1(?!\d)", re.IGNORECASE),
    # a date's own closing dot followed by a colon or another full stop
    "hr": re.compile(r"\d\.\s*[:.]"),
    # a date's closing "г." followed by another full stop ("г.:" is fine in Bulgarian)
    "bg": re.compile(r"г\.\s*\."),
}


def samples(locale: str, name: str = "") -> list[str]:
    """The values a placeholder can hold (all kinds when no name is given), as Babel writes them."""
    values = []
    if name in DAYTIME_VALUES:
        return [format_time(moment, format=length, locale=locale)
                for moment in DAYTIMES for length in ("short", "medium")]
    if not name or (name not in DATE_VALUES and name not in TIME_VALUES):
        values += [format_decimal(number, locale=locale) for number in NUMBERS]
    if not name or name in TIME_VALUES:
        values += [format_time(moment, format=length, locale=locale)
                   for moment in TIMES for length in ("short", "medium")]
    if not name or name in DATE_VALUES:
        values += [format_date(day, format=length, locale=locale)
                   for day in DATES for length in ("short", "medium", "long", "full")]
    return values


def renderings(locale: str) -> Iterator[tuple[str, str]]:
    """Every form of every entry, with each sample value in every value placeholder."""
    for message in read_catalog(catalog_path(LOCALES_DIR, locale), locale):
        if not message.id:
            continue
        forms = message.string if isinstance(message.string, list | tuple) else (message.string,)
        for form in forms:
            names = placeholders(form)
            for name in set(names) - WORDS:
                for value in samples(locale, name):
                    values = {other: "Ana" if other in WORDS else samples(locale, other)[0]
                              for other in names}
                    yield form, render(form, values | {name: value})


@pytest.mark.parametrize("locale", sorted(CLASHES))
def test_no_value_clashes_with_the_grammar_before_or_after_it(locale: str) -> None:
    clashes = sorted({f"{form!r} renders {match.group(0)!r}"
                      for form, text in renderings(locale)
                      if (match := CLASHES[locale].search(text))})
    assert clashes == []


@pytest.mark.parametrize(("locale", "wrong", "right"), [
    ("ca", "previst per al 1 d’abril del 2027", "Data prevista: 1 d’abril del 2027"),
    ("ca", "fins al 11 de setembre", "Caduca: 11 de setembre de 2027"),
    ("ca", "a les 1:00", "a les 13:00"),
    ("ca", "intenta no passar de 11", "el màxim és 11"),
    ("it", "resta entro i 80", "il massimo è 80"),
    ("it", "alle 01:00", "alle 13:00"),
    ("it", "persone dai 8 anni", "persone di almeno 8 anni"),
    ("hr", "najkasnije do 1. travnja 2027.:", "Vrijedi do 1. travnja 2027. i"),
    ("hr", "Tvoj datum: 11. rujna 2027.. Pitat", "Tvoj rok: 11. rujna 2027."),
])
def test_the_clash_patterns_catch_what_the_reviewers_found(locale: str, wrong: str,
                                                            right: str) -> None:
    assert CLASHES[locale].search(wrong) and not CLASHES[locale].search(right)


def test_the_samples_are_the_values_that_trip_each_language() -> None:
    assert "1 d’abril del 2027" in samples("ca", "date") and "1:00" in samples("ca", "time")
    assert "01:00" in samples("it", "time") and "80" in samples("it", "max")
    assert all(value.endswith("2027.") for value in samples("hr", "date"))
