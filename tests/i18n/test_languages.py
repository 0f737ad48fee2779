"""The language registry: every language the bot speaks has every part it needs, and every
list of languages agrees with it."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.dialogue import load_dialogues
from bot.engine import crisis
from bot.i18n import SOURCE_LOCALE, SUPPORTED_LOCALES, normalize_locale
from bot.i18n.catalogs import catalog_path, read_catalog
from bot.i18n.languages import BY_CODE, LANGUAGE_NAMES, LANGUAGES, Language

REPO = Path(__file__).parents[2]


def problems(language: Language, locales: Path = REPO / "locales") -> list[str]:
    """What `language` lacks of what the bot needs to speak it."""
    found = []
    if language.code != SOURCE_LOCALE:
        path = catalog_path(locales, language.code)
        if not path.exists():
            found.append(f"no catalog at {path}")
        elif read_catalog(path, language.code).num_plurals != language.plural_forms:
            found.append(f"its catalog does not have Babel's {language.plural_forms} plural forms")
    if language.code not in crisis.phrase_languages():
        found.append("no crisis phrases in bot/engine/data/crisis_phrases.yaml")
    if language.country is not None and \
            crisis.helplines_for(language.country) == crisis.helplines_for(None):
        found.append(f"no help lines for {language.country} in bot/engine/data/helplines.yaml")
    return found


@pytest.mark.parametrize("language", LANGUAGES, ids=lambda lang: lang.code)
def test_every_language_has_its_catalog_crisis_phrases_and_help_lines(
        language: Language) -> None:
    assert problems(language) == []


def test_a_language_added_to_the_registry_alone_is_caught() -> None:
    """The recipe in docs/architecture.md, done once: an entry without its files fails."""
    german = Language("de", "Deutsch", "DE")
    assert problems(german) == [
        f"no catalog at {catalog_path(REPO / 'locales', 'de')}",
        "no crisis phrases in bot/engine/data/crisis_phrases.yaml",
        "no help lines for DE in bot/engine/data/helplines.yaml",
    ]


def test_every_list_of_languages_is_the_registry() -> None:
    assert tuple(language.code for language in LANGUAGES) == SUPPORTED_LOCALES
    assert crisis.LANGUAGES == SUPPORTED_LOCALES
    assert crisis.phrase_languages() == set(SUPPORTED_LOCALES)
    assert list(LANGUAGE_NAMES) == list(SUPPORTED_LOCALES)
    for language in LANGUAGES:
        assert normalize_locale(language.code) == language.code
        for alias in language.aliases:
            assert normalize_locale(alias) == language.code
        if language.country is not None:
            assert crisis.default_country_for_locale(language.code) == language.country


def test_the_onboarding_offers_every_language_by_its_own_name() -> None:
    onboarding = load_dialogues(REPO / "dialogues")["onboarding"]
    [ask] = [step.ask for step in onboarding.steps.values() if step.ask.save == "profile.locale"]
    assert {option.key: option.label for option in ask.options} == LANGUAGE_NAMES


def test_direction_and_plural_forms_are_babels() -> None:
    assert [code for code, lang in BY_CODE.items() if lang.rtl] == ["he"]
    assert {code: lang.plural_forms for code, lang in BY_CODE.items()} == {
        "en": 2, "ca": 3, "bg": 2, "hr": 3, "it": 3, "he": 3}
