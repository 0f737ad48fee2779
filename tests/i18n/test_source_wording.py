"""Issue 29: texts whose plural forms or spliced names read wrong for some counts."""
from __future__ import annotations

from datetime import date

import pytest

from bot.coaching.managing import describe_schedule
from bot.coaching.sessions import SessionChange, _heading
from bot.i18n import translator_for

LOCALES = ["en", "ca", "it", "he", "hr", "bg"]


@pytest.mark.parametrize("locale", LOCALES)
def test_every_one_day_reads_as_every_day(locale: str) -> None:
    tr = translator_for(locale)
    one = describe_schedule({"kind": "every", "every": 1, "hour": 8}, date(2027, 1, 4), None,
                            None, tr)
    daily = describe_schedule({"kind": "weekdays", "weekdays": list(range(7)), "hour": 8},
                              date(2027, 1, 4), None, None, tr)
    assert one == daily
    three = describe_schedule({"kind": "every", "every": 3, "hour": 8}, date(2027, 1, 4), None,
                              None, tr)
    assert "3" in three and three != daily


@pytest.mark.parametrize("locale", LOCALES)
@pytest.mark.parametrize("change", [SessionChange.NEW, SessionChange.CANCELLED])
@pytest.mark.parametrize("count", [1, 2, 5, 21])
def test_session_headings_give_the_count_and_keep_the_name_whole(
        locale: str, change: SessionChange, count: int) -> None:
    tr = translator_for(locale)
    text = _heading(change, count, "Noa", tr, to_client=True)
    assert "\u2068Noa\u2069" in text
    # One session alone is said without a count ("…: 1" after a sentence about one, r73-bg).
    assert (str(count) in text) is (count != 1)


def test_english_headings_put_a_label_before_the_name() -> None:
    tr = translator_for("en")
    assert _heading(SessionChange.NEW, 1, "Noa", tr, to_client=True) == (
        "New coaching session from \u2068Noa\u2069:")
