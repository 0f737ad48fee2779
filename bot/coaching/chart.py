"""A client's weekly trend as a small PNG: mood from daily check-ins and the goal's scale value.

Drawn with matplotlib's Agg canvas on a private ``Figure`` (never ``pyplot``), so no global
state is touched and any number of charts can be drawn side by side.
"""

from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.coaching.checkins import user_zone
from bot.coaching.contracts import CHECKIN_MARKER, GOAL_BASELINE, REVIEW_CURRENT
from bot.i18n import N_, Translator
from bot.store import Answer, User

WEEKS = 12
WIDTH_PX, HEIGHT_PX, DPI = 800, 400, 100
#: Answers that give the goal's current place on its 1-10 scale.
GOAL_VALUE_VARIABLES = (GOAL_BASELINE, REVIEW_CURRENT)

Points = list[tuple[date, float]]


@dataclass(frozen=True)
class WeeklyPoints:
    """Weekly averages, one point per week with data, dated by the week's Monday."""

    mood: Points
    goal: Points


@dataclass(frozen=True)
class ChartLabels:
    """The chart's texts. English source texts; pass translated ones to show them."""

    mood: str = N_("Mood")
    goal: str = N_("Goal")
    no_data: str = N_("No check-ins yet")
    tick: Callable[[date], str] = date.isoformat
    rtl: bool = False  # a right-to-left language: texts shaped, the chart laid out mirrored


def shaped(text: str, rtl: bool) -> str:
    """``text`` as matplotlib must draw it: it lays glyphs out left to right, so a
    right-to-left line is given in visual order (python-bidi's Unicode bidi algorithm)."""
    if not rtl:
        return text
    from bidi import get_display  # type: ignore[import-untyped]

    return str(get_display(text, base_dir="R"))


def week_start(day: date) -> date:
    return day - timedelta(days=day.weekday())


def weekly_average(values: Iterable[tuple[date, float]]) -> Points:
    """Average the values of each week (Monday to Sunday), oldest week first."""
    weeks: dict[date, list[float]] = defaultdict(list)
    for day, value in values:
        weeks[week_start(day)].append(value)
    return [(week, sum(v) / len(v)) for week, v in sorted(weeks.items())]


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


async def weekly_points(
    session: AsyncSession, client_id: int, now: datetime, *, since: datetime | None = None
) -> WeeklyPoints:
    """The last twelve weeks (this one included) of mood and goal values, in the client's
    time zone; answers before ``since`` (e.g. before a coach's link) are left out."""
    client = await session.get(User, client_id)
    zone = user_zone(client) if client is not None else ZoneInfo("UTC")
    first_week = week_start(now.astimezone(zone).date()) - timedelta(weeks=WEEKS - 1)
    start = datetime.combine(first_week, datetime.min.time(), zone)
    if since is not None:
        start = max(start, since)
    rows = await session.execute(
        select(Answer.marker, Answer.value, Answer.answered_at).where(
            Answer.user_id == client_id,
            Answer.marker.in_((CHECKIN_MARKER, *GOAL_VALUE_VARIABLES)),
            Answer.answered_at >= start,
            Answer.answered_at <= now,
        )
    )
    mood: list[tuple[date, float]] = []
    goal: list[tuple[date, float]] = []
    for variable, value, at in rows:
        number = _number(value)
        if number is not None:
            series = mood if variable == CHECKIN_MARKER else goal
            series.append((at.astimezone(zone).date(), number))
    return WeeklyPoints(mood=weekly_average(mood), goal=weekly_average(goal))


async def own_trend_png(session: AsyncSession, user_id: int, now: datetime,
                        tr: Translator) -> bytes:
    """The client's own weekly chart (``/progress``), in their language."""
    points = await weekly_points(session, user_id, now)
    return weekly_trend_png(points.mood, tr.gettext("Your weekly averages"),
                            goal_points=points.goal, labels=translated_labels(tr))


def translated_labels(tr: Translator) -> ChartLabels:
    return ChartLabels(mood=tr.gettext("Mood"), goal=tr.gettext("Goal"),
                       no_data=tr.gettext("No check-ins yet"),
                       tick=lambda d: tr.date(d, "short"), rtl=tr.rtl)


def weekly_trend_png(
    points: Points,
    title: str,
    *,
    goal_points: Points | None = None,
    labels: ChartLabels | None = None,
) -> bytes:
    """An 800x400 PNG of the weekly mood (``points``) and, if given, the goal's values.
    With no data at all it still is a valid PNG, saying so."""
    # Imported on the first chart, not at start: matplotlib is 30-40 MB of a bot's memory.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    labels = labels or ChartLabels()
    rtl = labels.rtl
    figure = Figure(figsize=(WIDTH_PX / DPI, HEIGHT_PX / DPI), dpi=DPI)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    axes.set_title(shaped(title, rtl))
    axes.set_ylim(0, 10.5)
    series = [(points, labels.mood, "o-"), (goal_points or [], labels.goal, "s--")]
    drawn = [(pts, label, style) for pts, label, style in series if pts]
    for pts, label, style in drawn:
        axes.plot([d.toordinal() for d, _ in pts], [v for _, v in pts], style,
                  label=shaped(label, rtl))
    if drawn:
        weeks = sorted({d for pts, _, _ in drawn for d, _ in pts})
        axes.set_xticks([d.toordinal() for d in weeks],
                        [shaped(labels.tick(d), rtl) for d in weeks], rotation=30,
                        ha="left" if rtl else "right")
        axes.legend(loc="lower right" if rtl else "lower left")
        axes.grid(alpha=0.3)
    else:
        axes.set_xticks([])
        axes.text(0.5, 0.5, shaped(labels.no_data, rtl), ha="center", va="center",
                  transform=axes.transAxes)
    if rtl:  # read from the right: time runs leftwards, the scale stands on the right
        axes.invert_xaxis()
        axes.yaxis.tick_right()
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI)
    return buffer.getvalue()


def measure_png(points: Points, title: str, *, target: float | None, scale: bool,
                labels: ChartLabels | None = None, target_label: str = N_("Target")) -> bytes:
    """An 800x400 PNG of one measure's values by day, with its target as a dashed line; a
    1-10 scale keeps its whole range in view. Empty: a valid PNG saying so."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    labels = labels or ChartLabels()
    rtl = labels.rtl
    figure = Figure(figsize=(WIDTH_PX / DPI, HEIGHT_PX / DPI), dpi=DPI)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    axes.set_title(shaped(title, rtl))
    if scale:
        axes.set_ylim(0, 10.5)
    if points:
        days = [d.toordinal() for d, _ in points]
        axes.plot(days, [v for _, v in points], "o-")
        if target is not None:
            axes.axhline(target, linestyle="--", color="tab:green",
                         label=shaped(target_label, rtl))
            axes.legend(loc="lower right" if rtl else "lower left")
        shown = sorted(set(points[i][0] for i in range(0, len(points),
                                                        max(1, len(points) // 8))))
        axes.set_xticks([d.toordinal() for d in shown],
                        [shaped(labels.tick(d), rtl) for d in shown], rotation=30,
                        ha="left" if rtl else "right")
        axes.grid(alpha=0.3)
    else:
        axes.set_xticks([])
        axes.text(0.5, 0.5, shaped(labels.no_data, rtl), ha="center", va="center",
                  transform=axes.transAxes)
    if rtl:
        axes.invert_xaxis()
        axes.yaxis.tick_right()
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI)
    return buffer.getvalue()
