"""Lengths of time (a session reminder's lead) read as a native writes them."""

from datetime import timedelta

import pytest

from bot.i18n import translator_for


@pytest.mark.parametrize(("locale", "minutes", "expected"), [
    ("he", 60, "שעה"),
    ("he", 1440, "יום"),
    ("he", 120, "שעתיים"),
    ("he", 15, "15 דקות"),
    ("en", 60, "1 hour"),
    ("en", 1440, "1 day"),
    ("en", 180, "3 hours"),
    ("it", 60, "un'ora"),
])
def test_one_unit_is_the_catalogs_and_the_rest_babels(locale: str, minutes: int,
                                                       expected: str) -> None:
    assert translator_for(locale).duration(timedelta(minutes=minutes)) == expected

