from __future__ import annotations

import io
from pathlib import Path

import pytest

from bot.i18n import FSI, PDI, normalize_locale, translator_for
from bot.i18n.catalogs import check_catalog
from bot.i18n.extract import extract_dialogue_yaml


@pytest.mark.parametrize(("code", "expected"), [
    ("it", "it"), ("it-CH", "it"), ("he", "he"), ("iw", "he"), ("he-IL", "he"), ("ca-ES", "ca"),
    ("bg", "bg"), ("hr-HR", "hr"), ("en-GB", "en"), ("de", "en"), ("pt-BR", "en"), (None, "en"),
    ("", "en"), ("HR", "hr"), ("ca_ES", "ca"),
])
def test_locales_from_telegram_language_codes(code: str | None, expected: str) -> None:
    assert normalize_locale(code) == expected


def test_only_right_to_left_locales_isolate_values() -> None:
    assert translator_for("he").isolate("Run 10k") == f"{FSI}Run 10k{PDI}"
    assert translator_for("it").isolate("Run 10k") == "Run 10k"
    assert translator_for("he").isolate("") == ""


def test_dates_and_numbers_follow_the_locale() -> None:
    from datetime import date

    assert translator_for("it").number(1234.5) == "1.234,5"
    assert translator_for("bg").date(date(2026, 12, 24), "long") == "24 декември 2026\u202fг."
    assert translator_for("hr").date(date(2026, 12, 24), "long") == "24. prosinca 2026."


@pytest.mark.parametrize("value", [123456789012345678901234567890.0, 1e308, -1e200, 1e-300])
def test_a_number_of_any_size_a_client_can_answer_is_written(value: float) -> None:
    written = translator_for("it").number(value)
    assert written.replace(".", "").lstrip("-").isdigit() or written == "0"


def test_the_yaml_extractor_finds_every_text() -> None:
    source = (
        b"id: demo\ntitle: Demo\nstart: a\nsteps:\n  a:\n    say: 'Hello {name}'\n"
        b"    ask: {type: choice, save: a.x, options: {one: 'First', two: 'Second'}}\n"
        b"    next: b\n  b:\n    say_plural: {one: '{streak.days} day',"
        b" other: '{streak.days} days', count: streak.days}\n    next: end\n"
    )
    found = list(extract_dialogue_yaml(io.BytesIO(source), {}, (), {}))
    texts = [text for _, _, text, _ in found]
    assert texts == ["Demo", "Hello {name}", "First", "Second",
                     ("{streak.days} day", "{streak.days} days")]
    assert found[4][1] == "ngettext"
    assert "Keep {name} exactly as written" in found[1][3][1]


def test_the_extractor_refuses_an_invalid_dialogue() -> None:
    with pytest.raises(ValueError, match="cannot extract"):
        list(extract_dialogue_yaml(io.BytesIO(b"id: x\n"), {}, (), {}))


HEADER = '''msgid ""
msgstr ""
"Content-Type: text/plain; charset=utf-8\\n"
"Plural-Forms: {plural}\\n"

'''


def write_po(tmp_path: Path, body: str, plural: str) -> Path:
    path = tmp_path / "coachbot.po"
    path.write_text(HEADER.format(plural=plural) + body, encoding="utf-8")
    return path


HR = "nplurals=3; plural=(n%10==1 && n%100!=11 ? 0 : n%10>=2 && n%10<=4 && (n%100<10 || n%100>=20) ? 1 : 2);"  # noqa: E501


def test_a_good_catalog_passes(tmp_path: Path) -> None:
    path = write_po(tmp_path, '''msgid "Hello {name}"
msgstr "Bok {name}"

msgid "{n} day"
msgid_plural "{n} days"
msgstr[0] "{n} dan"
msgstr[1] "{n} dana"
msgstr[2] "{n} dana"
''', "nplurals=3; plural=n % 10 == 1 && n % 100 != 11 ? 0 : n % 10 >= 2 && n % 10 <= 4 && (n % 100 < 12 || n % 100 > 14) ? 1 : 2;")  # noqa: E501
    assert check_catalog(path, "hr", {"Hello {name}", "{n} day"}) == []


def test_catalog_problems_are_all_reported_with_lines(tmp_path: Path) -> None:
    path = write_po(tmp_path, '''msgid "Hello {name}"
msgstr "Bok"

msgid "Your goal"
msgstr "Tvoj cilj {goal.title}"

#, fuzzy
msgid "Fuzzy"
msgstr "Nejasno"

msgid "Empty"
msgstr ""

msgid "{n} day"
msgid_plural "{n} days"
msgstr[0] "{n} dan"
msgstr[1] "{n} dana"
''', HR)
    errors = check_catalog(path, "hr", {"Hello {name}", "Missing text"})
    text = "\n".join(errors)
    assert f"{path}:1:1: Plural-Forms is" in text
    assert f"{path}:6:1: the translation drops {{name}}" in text
    assert f"{path}:9:1: the translation adds {{goal.title}}" in text
    assert f"{path}:13:1: marked fuzzy" in text
    assert f"{path}:16:1: not translated" in text
    assert f"{path}:19:1: not translated: '{{n}} day'" in text
    assert "missing the text 'Missing text'" in text


def test_a_persons_words_are_isolated_in_every_language_without_direction_controls() -> None:
    """A right-to-left override in a name must not flip an English line (review L5)."""
    from bot.coaching.events import Digest, digest_text
    from bot.i18n import BIDI_CONTROLS, SUPPORTED_LOCALES

    for locale in SUPPORTED_LOCALES:
        tr = translator_for(locale)
        assert tr.words("\u202eanA\u202c") == f"{FSI}anA{PDI}"
        assert tr.words("a\u2066b\u200fc\u061c") == f"{FSI}abc{PDI}"
        assert tr.words("") == ""
        notice = digest_text(Digest(1, locale, crisis=True, crisis_clients=("\u202eanA",)), tr)
        assert f"{FSI}anA{PDI}" in notice
        assert not set(notice) & (BIDI_CONTROLS - {FSI, PDI}), locale
