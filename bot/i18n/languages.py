"""The languages the bot speaks: one entry each, and every list of them derived from here.

Adding a language is one entry below, its catalog under ``locales/`` and its crisis phrases
in ``bot/engine/data/crisis_phrases.yaml`` (and its country's help lines in
``bot/engine/data/helplines.yaml``); ``tests/i18n/test_languages.py`` fails while any part is
missing. Direction and plural forms are not written here: they are CLDR's facts, read from
Babel, so they cannot disagree with the catalogs' headers or with how dates are formatted.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from babel import Locale
from babel.messages.plurals import get_plural


@dataclass(frozen=True)
class Language:
    code: str  # ISO 639-1, as Telegram's language_code starts
    native_name: str  # how its speakers name it: the label of its button in any language
    #: The country whose help lines and emergency number a speaker most likely needs when
    #: Telegram gives no region; None when the language alone does not tell (English).
    country: str | None
    #: Old codes some clients still send for it (Hebrew's "iw").
    aliases: tuple[str, ...] = ()

    @cached_property
    def _cldr(self) -> Locale:
        return Locale.parse(self.code)

    @property
    def rtl(self) -> bool:
        return self._cldr.character_order == "right-to-left"

    @property
    def plural_forms(self) -> int:
        """How many plural forms its catalog has (Babel's CLDR data: bg 2; ca, it, he, hr 3)."""
        return get_plural(self.code).num_plurals


LANGUAGES: tuple[Language, ...] = (
    Language("en", "English", None),
    Language("ca", "Català", "ES"),
    Language("bg", "Български", "BG"),
    Language("hr", "Hrvatski", "HR"),
    Language("it", "Italiano", "IT"),
    Language("he", "עברית", "IL", aliases=("iw",)),
)
SOURCE_LOCALE = "en"  # the language of the msgids: it has no catalog

BY_CODE: dict[str, Language] = {language.code: language for language in LANGUAGES}
SUPPORTED_LOCALES: tuple[str, ...] = tuple(BY_CODE)
LANGUAGE_NAMES: dict[str, str] = {code: lang.native_name for code, lang in BY_CODE.items()}
ALIASES: dict[str, str] = {alias: lang.code for lang in LANGUAGES for alias in lang.aliases}
#: A bare language code (or an alias) -> the country its speakers most likely live in.
LOCALE_COUNTRY: dict[str, str] = {
    code: lang.country for lang in LANGUAGES if lang.country is not None
    for code in (lang.code, *lang.aliases)
}
