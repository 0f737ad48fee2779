"""The answers the platform looks up by their variable: check-in days and streaks, the weekly
chart, how a coach's exercises went.

Which question an answer belongs to is encrypted like the answer itself, because a question
asked only after some answers gives those away (a ``low_mood`` step means a mood of 3 or
less). Only these variables keep their name in plain text (``answers.marker``), so that they
can be found with an index; each is asked on every path through the dialogues that ask it
(a test checks this), so a row's presence says nothing about any answer.
"""

from __future__ import annotations

from bot.coaching.contracts import CHECKIN_MARKER, EXERCISE_STATUS, GOAL_BASELINE, REVIEW_CURRENT

ANSWER_MARKERS = frozenset({CHECKIN_MARKER, GOAL_BASELINE, REVIEW_CURRENT, EXERCISE_STATUS})


def marker_of(variable: str) -> str | None:
    """The plain-text marker an answer to ``variable`` is stored with, if any."""
    return variable if variable in ANSWER_MARKERS else None
