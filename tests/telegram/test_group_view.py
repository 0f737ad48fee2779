"""A week's line in the coach's view of a group: each figure, or — where the rule withholds
it, and the movement on the goal scale with its sign."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.coaching.group_figures import WeekFigures, Window
from bot.i18n import translator_for
from bot.telegram.groups import _week_line

WEEK = Window(datetime(2026, 3, 2, tzinfo=UTC), datetime(2026, 3, 9, tzinfo=UTC))


def test_a_week_shows_each_figure_and_the_movement_with_its_sign() -> None:
    line = _week_line(WeekFigures(WEEK, 5, 4, 0.75, 6.25, 1.5), translator_for("en"))
    assert line == ("3/2/26 · answered: 4 of 5 · exercises done: 75% · average mood: 6.2 · "
                    "goal rating (1–10), average change: +1.5")
    italian = _week_line(WeekFigures(WEEK, 5, 4, 0.75, 6.25, -0.46), translator_for("it"))
    assert italian.endswith("valutazione dell'obiettivo (1–10), variazione media: -0,5")


def test_a_withheld_figure_is_a_dash_and_no_change_is_zero() -> None:
    line = _week_line(WeekFigures(WEEK, 5, None, None, None, -0.04), translator_for("en"))
    assert line == ("3/2/26 · answered: — of 5 · exercises done: — · average mood: — · "
                    "goal rating (1–10), average change: 0")
    hebrew = _week_line(WeekFigures(WEEK, 3, None, None, None, None), translator_for("he"))
    assert hebrew.endswith("דירוג המטרה (1–10), שינוי ממוצע: —")
