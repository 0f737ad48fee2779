"""The ``weekdays`` answer: day names in the client's language or English, saved as numbers
(Monday = 0), shown back in words in the order of the client's week."""

from __future__ import annotations

from datetime import date

from bot.dialogue.model import Ask
from bot.engine.answers import Invalid, parse_answer, weekdays_of, weekdays_value
from bot.i18n import translator_for

TODAY = date(2026, 12, 4)


def test_names_in_the_clients_language_or_english() -> None:
    ask = Ask("weekdays", "profile.checkin_weekdays")
    assert parse_answer(ask, "Monday, Thursday", translator_for("en"), TODAY) == "0,3"
    assert parse_answer(ask, "pon, sri i petak", translator_for("hr"), TODAY) == "0,2,4"
    assert parse_answer(ask, "Friday", translator_for("hr"), TODAY) == "4"
    assert parse_answer(ask, "lunedì e venerdì", translator_for("it"), TODAY) == "0,4"
    wrong = parse_answer(ask, "soon", translator_for("en"), TODAY)
    assert isinstance(wrong, Invalid) and "days of the week" in wrong.hint
    assert isinstance(parse_answer(ask, "", translator_for("en"), TODAY), Invalid)


def test_saved_and_read_back() -> None:
    assert weekdays_value([4, 0, 4]) == "0,4"
    assert weekdays_of("0,4") == (0, 4)
    assert weekdays_of("0,9") is None and weekdays_of("x") is None and weekdays_of(3) is None


def test_shown_in_words_in_the_order_of_the_clients_week() -> None:
    en = translator_for("en")
    assert en.weekdays([6, 0, 3], "IL") == "Sunday, Monday, and Thursday"
    assert en.weekdays([6, 0, 3], "GB") == "Monday, Thursday, and Sunday"
    assert translator_for("it").weekdays([0, 4], "IT") == "lunedì e venerdì"
    assert translator_for("hr").weekdays([0, 4], "HR") == "ponedjeljak i petak"
