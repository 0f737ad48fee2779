"""A client's own chart in a right-to-left language: Hebrew labels in visual order, drawn
with glyphs matplotlib has (no missing-glyph boxes), the chart mirrored."""

from __future__ import annotations

import warnings
from datetime import date

from bot.coaching.chart import ChartLabels, shaped, translated_labels, weekly_trend_png
from bot.i18n import translator_for

PNG = b"\x89PNG\r\n\x1a\n"


def test_hebrew_is_given_to_matplotlib_in_visual_order() -> None:
    assert shaped("מצב רוח", rtl=True) == "חור בצמ"
    # A Latin name inside keeps its own order, placed where a Hebrew reader expects it.
    assert shaped("הממוצע של Ana", rtl=True) == "Ana לש עצוממה"
    assert shaped("Mood of Ana", rtl=False) == "Mood of Ana"


def test_a_hebrew_chart_draws_every_glyph() -> None:
    tr = translator_for("he")
    labels = translated_labels(tr)
    assert labels.rtl and labels.mood != "Mood"
    points = [(date(2026, 11, 2), 5.0), (date(2026, 11, 9), 7.5)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        png = weekly_trend_png(points, tr.gettext("Your weekly averages"),
                               goal_points=[(date(2026, 11, 9), 6.0)], labels=labels)
    assert png.startswith(PNG)
    assert not [w for w in caught if "Glyph" in str(w.message)]


def test_a_left_to_right_chart_is_unchanged() -> None:
    png = weekly_trend_png([], "Your weekly averages", labels=ChartLabels())
    assert png.startswith(PNG)
