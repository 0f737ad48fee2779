"""Every text a user sees goes through a Translator for the user's locale.

Catalogs are the `.po` files under `locales/`; they are compiled in memory when first needed,
so a `.mo` can never be out of date with its `.po`.
"""

from __future__ import annotations

import gettext
import io
import os
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from decimal import localcontext
from functools import cache, cached_property, lru_cache
from pathlib import Path

from babel import Locale
from babel.dates import format_date, format_datetime, format_time, format_timedelta
from babel.lists import format_list
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.numbers import format_decimal
from babel.support import Translations

from bot.i18n.languages import ALIASES as _ALIASES
from bot.i18n.languages import SOURCE_LOCALE as SOURCE_LOCALE  # re-exported
from bot.i18n.languages import SUPPORTED_LOCALES as SUPPORTED_LOCALES

DOMAIN = "coachbot"

# Unicode "first strong isolate" and "pop directional isolate": a value wrapped in them
# cannot flip the direction of the sentence around it.
FSI = "\u2068"
PDI = "\u2069"
#: Characters that set or change direction (embeddings, overrides, isolates, marks): in a
#: client's text they would act on the bot's words around it, so they are taken out.
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
                          "\u2066\u2067\u2068\u2069")
_NEUTRALISE = {ord(c): None for c in BIDI_CONTROLS}


def neutralise_bidi(value: str) -> str:
    """``value`` without direction controls (a right-to-left override in a name, say)."""
    return value.translate(_NEUTRALISE)


_BUNDLED_LOCALES = Path(__file__).resolve().parents[2] / "locales"


def locales_dir() -> Path:
    configured = os.environ.get("COACHBOT_LOCALES")
    return Path(configured) if configured else _BUNDLED_LOCALES


def normalize_locale(code: str | None, default: str = SOURCE_LOCALE) -> str:
    """Map a Telegram language_code such as 'it-CH' or 'he' to a supported locale."""
    if not code:
        return default
    language = code.replace("_", "-").split("-")[0].lower()
    language = _ALIASES.get(language, language)
    return language if language in SUPPORTED_LOCALES else default


def _load_catalog(locale: str, directory: Path) -> gettext.NullTranslations:
    po_path = directory / locale / "LC_MESSAGES" / f"{DOMAIN}.po"
    if locale == SOURCE_LOCALE or not po_path.exists():
        return gettext.NullTranslations()
    with po_path.open("rb") as po_file:
        catalog = read_po(po_file, locale=locale)
    buffer = io.BytesIO()
    write_mo(buffer, catalog, use_fuzzy=False)
    buffer.seek(0)
    return Translations(buffer, domain=DOMAIN)


#: The gettext contexts (msgctxt) of a text's gendered variants, one per grammatical form a
#: client may choose to be addressed in (``AddressForm`` in bot/store/kinds.py names the same).
ADDRESS_CONTEXTS = ("feminine", "masculine")


@dataclass(frozen=True)
class Translator:
    locale: str
    catalog: gettext.NullTranslations = field(repr=False, compare=False)
    #: How the reader chose to be addressed: a context of ADDRESS_CONTEXTS, or None for the
    #: gender-neutral text everyone sees by default.
    address: str | None = None

    @cached_property
    def rtl(self) -> bool:
        return Locale.parse(self.locale).character_order == "right-to-left"

    def gettext(self, message: str) -> str:
        """``message`` in the reader's language; in their chosen grammatical gender where the
        catalog has that variant (msgctxt "feminine" or "masculine"), else gender-neutral."""
        if self.address is not None:
            variant = self.catalog.pgettext(self.address, message)
            if variant != message:  # a missing variant comes back as the English source
                return variant
        return self.catalog.gettext(message)

    def ngettext(self, singular: str, plural: str, count: int) -> str:
        if self.address is not None:
            variant = self.catalog.npgettext(self.address, singular, plural, count)
            if variant not in (singular, plural):
                return variant
        return self.catalog.ngettext(singular, plural, count)

    def isolate(self, value: str) -> str:
        """Keep a value the bot formats (a number, a date, a label) from turning a
        right-to-left line around. A person's words go through :meth:`words`."""
        return f"{FSI}{value}{PDI}" if self.rtl and value else value

    def words(self, value: str) -> str:
        """What a person wrote or calls themselves (a name, a goal, a reflection), in every
        language: direction controls taken out, the rest wrapped in an isolate, so that it
        cannot turn the bot's line around (a right-to-left override in a name, say)."""
        value = neutralise_bidi(value)
        return f"{FSI}{value}{PDI}" if value else value

    def person(self, first_name: str | None, user_id: int) -> str:
        """Someone as the reader sees them: their first name through :meth:`words`, or their
        Telegram number, in plain digits, when they have no name."""
        return self.words(first_name or str(user_id))

    def number(self, value: float) -> str:
        return _format_number(value, self.locale)

    def date(self, value: date, format: str = "medium") -> str:
        return format_date(value, format=format, locale=self.locale)

    def time(self, value: time | datetime, format: str = "short") -> str:
        return format_time(value, format=format, locale=self.locale)

    def datetime(self, value: datetime, format: str = "medium") -> str:
        return format_datetime(value, format=format, locale=self.locale)

    def duration(self, value: timedelta) -> str:
        """A length of time as Babel words it, to its largest unit ("15 minutes", "2 hours"),
        except exactly one hour or one day, which the catalog words: a Hebrew speaker writes
        "שעה" where Babel gives "1 שעה"."""
        one_unit = _ONE_UNIT.get(value)
        return self.gettext(one_unit) if one_unit else format_timedelta(value, locale=self.locale)

    def weekday(self, day: int, width: str = "wide") -> str:
        """The name of a weekday (Monday = 0) as a day on its own (``abbreviated``: short)."""
        return str(Locale.parse(self.locale).days["stand-alone"][width][day])

    def weekdays(self, days: Iterable[int], country: str | None) -> str:
        """Weekdays (Monday = 0) as a list in this language ("Monday, Tuesday and Friday"),
        in the order of ``country``'s week."""
        chosen = set(days)
        return format_list([self.weekday(day) for day in week_order(country) if day in chosen],
                           locale=self.locale)


@lru_cache(maxsize=256)
def _week(country: str | None) -> tuple[tuple[int, ...], frozenset[int]]:
    try:
        region = Locale.parse(f"und_{country}" if country else "und_001")
    except (ValueError, LookupError):
        region = Locale.parse("und_001")
    first, start, end = region.first_week_day, region.weekend_start, region.weekend_end
    weekend = frozenset((start + i) % 7 for i in range((end - start) % 7 + 1))
    return tuple((first + i) % 7 for i in range(7)), weekend


def week_order(country: str | None) -> tuple[int, ...]:
    """The weekdays (Monday = 0) in the order a calendar of ``country`` shows them: Israel's
    and the United States' week starts on Sunday, Italy's on Monday (CLDR, through Babel)."""
    return _week(country)[0]


def parse_weekdays(text: str, locale: str) -> list[int] | None:
    """The weekdays (Monday = 0) named in ``text`` ("Monday, Thu", "pon, sri"), in the
    language of ``locale`` or in English; None when a word names no day or none is named."""
    names: dict[str, int] = {}
    for code in (SOURCE_LOCALE, normalize_locale(locale)):
        days = Locale.parse(code).days
        for context in ("format", "stand-alone"):
            for width in ("wide", "abbreviated", "short"):
                for day, name in days[context][width].items():
                    names.setdefault(without_accents(str(name).casefold().rstrip(".")), day)
    found: set[int] = set()
    # Typed on a phone, "lunedi" and "cetvrtak" are as clear as "lunedì" and "četvrtak".
    for segment in _LIST_SEPARATORS.split(without_accents(text.casefold())):
        segment = segment.strip(" .")
        if not segment:
            continue
        for candidate in (segment, segment[1:] if segment.startswith("ו") else segment):
            if candidate in names:  # a whole name, even of two words ("יום שני")
                found.add(names[candidate])
                break
        else:
            words = [names.get(w.strip(".")) for w in segment.split()]
            if any(day is None for day in words):
                return None
            found.update(day for day in words if day is not None)
    return sorted(found) or None


def without_accents(text: str) -> str:
    """``text`` decomposed (compatibility forms too) without its combining marks: typed on a
    phone, "lunedi", "cetvrtak" and "si" are as clear as "lunedì", "četvrtak" and "sì"."""
    return "".join(c for c in unicodedata.normalize("NFKD", text)
                   if not unicodedata.combining(c))


_LIST_SEPARATORS = re.compile(r"[,;/]|\s+(?:and|i|и|e|y|&)\s+")


def working_days(country: str | None) -> tuple[int, ...]:
    """The working days of ``country``'s week, in its order: Sunday to Thursday in Israel,
    Monday to Friday in Croatia."""
    order, weekend = _week(country)
    return tuple(day for day in order if day not in weekend)


@lru_cache(maxsize=4096)
def _format_number(value: float, locale: str) -> str:
    # Babel rounds in the current decimal context (28 digits): a client's answer of 30 digits
    # would raise there. A float never has more than 309 digits before the point.
    with localcontext() as context:
        context.prec = 400
        return format_decimal(value, locale=locale)


@cache
def _catalog(locale: str, directory: Path) -> gettext.NullTranslations:
    return _load_catalog(locale, directory)


@cache
def _translator(locale: str, directory: Path, address: str | None) -> Translator:
    return Translator(locale, _catalog(locale, directory), address)


def translator_for(locale: str | None, address: str | None = None) -> Translator:
    """The translator for a user's language and, when they chose one, the grammatical gender
    they want to be addressed in (anything but a context of ADDRESS_CONTEXTS is neutral)."""
    form = address if address in ADDRESS_CONTEXTS else None
    return _translator(normalize_locale(locale), locales_dir(), form)


def N_(message: str) -> str:
    """Mark a text for extraction where it is defined; it is translated where it is shown."""
    return message


_ONE_UNIT = {
    # TRANSLATORS: exactly one hour, on a button beside "2 hours" and in
    # "Reminders: {duration} before".
    timedelta(hours=1): N_("1 hour"),
    # TRANSLATORS: a length of exactly one day, used as "1 hour" is.
    timedelta(days=1): N_("1 day"),
}
