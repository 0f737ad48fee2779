from __future__ import annotations

from datetime import date

import pytest

from bot.dialogue.model import Ask, Option
from bot.engine.answers import Invalid, parse_answer
from bot.i18n import translator_for

TODAY = date(2026, 12, 2)
EN = translator_for("en")


def parse(ask: Ask, raw: str, locale: str = "en") -> object:
    return parse_answer(ask, raw, translator_for(locale), TODAY)


@pytest.mark.parametrize(("raw", "expected"), [
    ("7", 7), (" 7 ", 7), ("3.5", 3.5), ("3,5", 3.5), ("0", 0), ("100", 100), ("1e2", 100),
])
def test_number_accepts(raw: str, expected: float) -> None:
    assert parse(Ask("number", "n", min=0, max=100), raw) == expected


@pytest.mark.parametrize("raw", ["", "abc", "101", "-1", "nan", "inf", "1" * 500, "7 days"])
def test_number_refuses_with_the_range(raw: str) -> None:
    result = parse(Ask("number", "n", min=0, max=100), raw)
    assert result == Invalid("Please answer with a number from 0 to 100.")


@pytest.mark.parametrize(("raw", "ok"), [("1", True), ("10", True), ("11", False),
                                         ("0", False), ("5.5", False), ("five", False)])
def test_scale(raw: str, ok: bool) -> None:
    result = parse(Ask("scale", "s", min=1, max=10), raw)
    assert (result == int(raw)) if ok else isinstance(result, Invalid)


def test_choice_by_key_number_or_label() -> None:
    ask = Ask("choice", "c", options=(Option("done", "I did it"), Option("not_yet", "Not yet")))
    assert parse(ask, "done") == "done"
    assert parse(ask, "2") == "not_yet"
    assert parse(ask, "  i did IT ") == "done"
    assert isinstance(parse(ask, "3"), Invalid)
    assert isinstance(parse(ask, "maybe"), Invalid)


@pytest.mark.parametrize(("raw", "expected"), [("yes", True), ("Y", True), ("no", False),
                                               ("No.", False)])
def test_yes_no(raw: str, expected: bool) -> None:
    assert parse(Ask("yes_no", "y"), raw) is expected


def test_yes_no_refuses_other_words() -> None:
    assert parse(Ask("yes_no", "y"), "perhaps") == Invalid("Please answer yes or no.")


@pytest.mark.parametrize(("raw", "expected"), [
    ("7", "07:00"), ("07:30", "07:30"), ("19.45", "19:45"), ("7pm", "19:00"),
    ("12am", "00:00"), ("12 pm", "12:00"), ("8h30", "08:30"),
])
def test_time(raw: str, expected: str) -> None:
    assert parse(Ask("time", "t"), raw) == expected


@pytest.mark.parametrize("raw", ["24:00", "7:60", "13pm", "noonish", ""])
def test_time_refuses(raw: str) -> None:
    assert isinstance(parse(Ask("time", "t"), raw), Invalid)


@pytest.mark.parametrize(("raw", "locale", "expected"), [
    ("2026-12-24", "en", "2026-12-24"),
    ("today", "en", "2026-12-02"),
    ("Tomorrow", "en", "2026-12-03"),
    ("12/24/2026", "en", "2026-12-24"),
    ("24/12/2026", "en", "2026-12-24"),
    ("24.12.2026", "it", "2026-12-24"),
    ("24.12.2026.", "hr", "2026-12-24"),
    ("24.12.", "hr", "2026-12-24"),
])
def test_date(raw: str, locale: str, expected: str) -> None:
    assert parse(Ask("date", "d"), raw, locale) == expected


@pytest.mark.parametrize("raw", ["31.02.2026", "someday", "99/99/99", "2026-13-01"])
def test_date_refuses_with_an_example(raw: str) -> None:
    result = parse(Ask("date", "d"), raw)
    assert isinstance(result, Invalid)
    assert "2026-12-09" in result.hint


def test_text_limits_count_and_keep_it_short() -> None:
    ask = Ask("text", "t", min_length=2, max_length=500)
    assert parse(ask, "  fine  ") == "fine"
    too_long = parse(ask, "x" * 5000)
    assert too_long == Invalid("That is 5,000 characters; please keep it to 500 at most. "
                               "The heart of it is enough.")
    assert isinstance(parse(ask, "x"), Invalid)
    assert isinstance(parse(ask, "   "), Invalid)


def test_placeholders_in_answers_stay_as_typed() -> None:
    assert parse(Ask("text", "t", max_length=100), "{name} {{x}} %s") == "{name} {{x}} %s"


@pytest.mark.parametrize(("raw", "expected"), [
    ("Rome", "Europe/Rome"), ("roma", "Europe/Rome"), ("Рим", "Europe/Rome"),
    ("רומא", "Europe/Rome"), ("Italia", "Europe/Rome"), ("Barcelona", "Europe/Madrid"),
    ("zagreb", "Europe/Zagreb"), ("София", "Europe/Sofia"), ("תל אביב", "Asia/Jerusalem"),
    ("Israel", "Asia/Jerusalem"), ("new york", "America/New_York"), ("Europe/Rome", "Europe/Rome"),
    ("UTC", "UTC"), ("  Milano ", "Europe/Rome"),
])
def test_timezone_from_a_city_or_country(raw: str, expected: str) -> None:
    assert parse(Ask("timezone", "z"), raw) == expected


def test_timezone_asks_for_a_city_when_unsure() -> None:
    assert "several time zones" in parse(Ask("timezone", "z"), "Espanya").hint  # type: ignore[attr-defined]
    assert "do not know that place" in parse(Ask("timezone", "z"), "Atlantis").hint  # type: ignore[attr-defined]


@pytest.mark.parametrize(("raw", "locale", "expected"), [
    ("sì", "it", True), ("si", "it", True), ("Sì!", "it", True), ("no", "it", False),
    ("yes", "it", True),
])
def test_yes_no_in_the_client_s_language_with_or_without_accents(
    raw: str, locale: str, expected: bool
) -> None:
    assert parse(Ask("yes_no", "y"), raw, locale) is expected


def test_every_answer_type_has_its_unit() -> None:
    from bot.dialogue.model import ANSWER_TYPES
    from bot.engine.answers import ANSWER_UNITS

    assert set(ANSWER_UNITS) == set(ANSWER_TYPES)
