"""The catalogs: current with the source, complete, placeholders intact, every message renders."""

from __future__ import annotations

from pathlib import Path

import pytest
from babel.messages.pofile import read_po

from bot.dialogue import load_dialogues
from bot.dialogue.loader import texts_of
from bot.dialogue.template import placeholders, render
from bot.i18n import SOURCE_LOCALE, SUPPORTED_LOCALES, translator_for
from bot.i18n.catalogs import catalog_path, check_catalog, extract_sources, read_catalog
from bot.i18n.languages import LANGUAGE_NAMES

REPO = Path(__file__).parents[2]
LOCALES_DIR = REPO / "locales"
TRANSLATED = [locale for locale in SUPPORTED_LOCALES if locale != SOURCE_LOCALE]
# Texts that are the same in every language: each language's own name in the picker.
SAME_EVERYWHERE = set(LANGUAGE_NAMES.values())
COUNTS = (0, 1, 2, 3, 4, 5, 11, 12, 21, 22, 25, 100, 101, 1_000_000)


def ids(catalog: object) -> set[str]:
    return {m.id if isinstance(m.id, str) else m.id[0] for m in catalog if m.id}  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def sources() -> set[str]:
    return ids(extract_sources(REPO))


def test_the_template_is_current(sources: set[str]) -> None:
    with (LOCALES_DIR / "coachbot.pot").open("rb") as file:
        template = ids(read_po(file))
    assert sources - template == set(), "new texts: run pybabel extract (docs/translating.md)"
    assert template - sources == set(), "texts no longer used: run pybabel extract and update"


@pytest.mark.parametrize("locale", TRANSLATED)
def test_each_catalog_is_complete_and_keeps_placeholders(locale: str,
                                                         sources: set[str]) -> None:
    assert check_catalog(catalog_path(LOCALES_DIR, locale), locale, sources) == []


@pytest.mark.parametrize("locale", TRANSLATED)
def test_every_message_renders_with_sample_values(locale: str) -> None:
    tr = translator_for(locale)
    for message in read_catalog(catalog_path(LOCALES_DIR, locale), locale):
        if not message.id:
            continue
        if isinstance(message.id, str):
            rendered = [tr.gettext(message.id)]
            names = placeholders(message.id)
        else:
            rendered = [tr.ngettext(message.id[0], message.id[1], n) for n in COUNTS]
            names = placeholders(message.id[1])
        values = {name: f"<{name}>" for name in names}
        for text in rendered:
            filled = render(text, values, tr.isolate)
            assert filled.strip(), f"{locale}: {message.id!r} renders empty"
            assert "{" not in filled.replace("{{", ""), f"{locale}: {filled!r}"
            for name in names:
                if isinstance(message.id, str):
                    assert f"<{name}>" in filled, f"{locale}: {name} lost in {filled!r}"


@pytest.mark.parametrize("locale", TRANSLATED)
def test_every_dialogue_text_is_translated(locale: str) -> None:
    tr = translator_for(locale)
    untranslated = []
    for dialogue in load_dialogues(REPO / "dialogues").dialogues.values():
        for _, text in texts_of(dialogue):
            source = text if isinstance(text, str) else text[1]
            shown = tr.gettext(text) if isinstance(text, str) else tr.ngettext(*text, 5)
            only_placeholders = not render(source, {}).strip()  # the coach's own words
            if shown == source and source not in SAME_EVERYWHERE and not only_placeholders:
                untranslated.append(f"{dialogue.id}: {source}")
    assert untranslated == []
