"""Gendered variants (issue 29): a text listed in locales/gendered.yaml may have a feminine and
a masculine translation (msgctxt); a client who chose one gets it, everyone else the neutral
text, and a variant a language leaves empty falls back to the neutral translation."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import yaml

from bot.dialogue import load_dialogues
from bot.engine.runner import safety_question
from bot.engine.state import Context
from bot.i18n import ADDRESS_CONTEXTS, translator_for
from bot.i18n.catalogs import check_catalog, extract_sources
from bot.store.kinds import AddressForm
from bot.telegram.handlers import ADDRESS_OPTIONS, ADDRESS_QUESTION

REPO = Path(__file__).parents[2]
MOOD = "Hello {name}. How are you feeling today, from 1 (very low) to 10 (very good)?"
HELPED = "What helped you move forward?"  # listed nowhere: no variants


def test_a_hebrew_client_gets_the_form_they_chose() -> None:
    assert translator_for("he", "feminine").gettext(MOOD) == \
        "היי {name}. איך את מרגישה היום, מ-1 (רע מאוד) עד 10 (טוב מאוד)?"
    assert translator_for("he", "masculine").gettext(MOOD) == \
        "היי {name}. איך אתה מרגיש היום, מ-1 (רע מאוד) עד 10 (טוב מאוד)?"
    neutral = "היי {name}. איך ההרגשה היום, מ-1 (רע מאוד) עד 10 (טוב מאוד)?"
    assert translator_for("he").gettext(MOOD) == neutral
    assert translator_for("he", "neutral").gettext(MOOD) == neutral
    assert translator_for("he", "something else").gettext(MOOD) == neutral


def test_a_missing_variant_falls_back_to_the_neutral_translation() -> None:
    neutral = translator_for("he").gettext(HELPED)
    assert neutral != HELPED  # translated, not the English
    assert translator_for("he", "feminine").gettext(HELPED) == neutral
    # listed, but Catalan does not mark gender in this sentence: its variants stay empty
    listed = "What did you get done?"
    assert translator_for("ca", "feminine").gettext(listed) == \
        translator_for("ca").gettext(listed) == "Què has pogut fer?"
    assert translator_for("it", "masculine").gettext(listed) == \
        "Cosa sei riuscito a fare?"
    assert translator_for("en", "feminine").gettext(MOOD) == MOOD
    assert translator_for("he", "feminine").ngettext(
        "{count} day", "{count} days", 3) == translator_for("he").ngettext(
        "{count} day", "{count} days", 3)


def test_the_safety_question_follows_the_choice() -> None:
    def asked(address: str | None) -> str:
        context = Context(translator=translator_for("he", address), today=date(2026, 12, 4))
        return safety_question(context, True).text

    assert "את בסכנה עכשיו, או חוששת" in asked("feminine")
    assert "אתה בסכנה עכשיו, או חושש" in asked("masculine")
    assert "האם יש סכנה לשלומך כרגע" in asked(None)


def test_every_listed_text_is_a_source_text_with_both_variants() -> None:
    listed = yaml.safe_load((REPO / "locales" / "gendered.yaml").read_text(encoding="utf-8"))
    catalog = extract_sources(REPO)
    neutral = {m.id if isinstance(m.id, str) else m.id[0] for m in catalog
               if m.id and m.context is None}
    for text in listed:
        singular = text if isinstance(text, str) else text[0]
        assert singular in neutral, f"not a source text: {singular!r}"
        for context in ADDRESS_CONTEXTS:
            assert catalog.get(text if isinstance(text, str) else tuple(text),
                               context=context) is not None


def test_the_address_forms_are_one_list() -> None:
    assert set(ADDRESS_CONTEXTS) == set(AddressForm) - {AddressForm.NEUTRAL}
    step = load_dialogues(REPO / "dialogues").dialogues["onboarding"].steps["address"]
    assert step.say == ADDRESS_QUESTION
    assert {o.key: o.label for o in step.ask.options} == ADDRESS_OPTIONS


def test_an_empty_variant_is_fine_and_a_broken_one_is_not(tmp_path: Path) -> None:
    header = ('msgid ""\nmsgstr ""\n"Language: he\\n"\n"Content-Type: text/plain; '
              'charset=UTF-8\\n"\n"Plural-Forms: nplurals=3; plural=(n == 1 ? 0 : n == 2 ? 1 : '
              '2);\\n"\n\n')
    good = header + (f'msgid "{HELPED}"\nmsgstr "מה עזר?"\n\n'
                     f'msgctxt "feminine"\nmsgid "{HELPED}"\nmsgstr ""\n')
    path = tmp_path / "good.po"
    path.write_text(good, encoding="utf-8")
    assert check_catalog(path, "he") == []
    broken = header + (f'msgid "{HELPED}"\nmsgstr "מה עזר?"\n\n'
                       f'msgctxt "feminine"\nmsgid "{HELPED}"\nmsgstr "מה עזר לך, {{name}}?"\n\n'
                       'msgctxt "masculine"\nmsgid "Gone"\nmsgstr "איננו"\n')
    path.write_text(broken, encoding="utf-8")
    errors = check_catalog(path, "he")
    assert any("adds {name}" in e for e in errors)
    assert any("no gender-neutral entry" in e for e in errors)
