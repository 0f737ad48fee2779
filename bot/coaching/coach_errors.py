"""The errors of the coach's side: a coaching rule refused the action; nothing was changed."""

from __future__ import annotations

from enum import Enum


class CoachError(Exception):
    """A coaching rule refused the action; nothing was changed."""


class NotACoach(CoachError):
    """Only coaches may do this."""


class NotYourClient(CoachError):
    """No active link between this coach and this client (or no such client: same error)."""


class InviteProblem(Enum):
    UNKNOWN = "unknown"  # never existed, or its coach is no coach any more
    EXPIRED = "expired"
    USED = "used"
    OWN = "own"  # a coach opening their own invite
    ALREADY_LINKED = "already_linked"


class InviteError(CoachError):
    def __init__(self, problem: InviteProblem) -> None:
        super().__init__(f"invite refused: {problem.value}")
        self.problem = problem


class InvalidSchedule(CoachError, ValueError):
    """The schedule or the dates of an assignment are not valid."""


class UnknownExercise(CoachError, ValueError):
    """The exercise is not one of the known exercise dialogues."""



class NotYourGroup(CoachError):
    """No such group of this coach (or no such group at all: same error)."""


class JoinProblem(Enum):
    UNKNOWN = "unknown"  # no such group, or its coach is no coach any more
    OWN = "own"  # the group's coach opening its own link
    EXPIRED = "expired"  # the link's time is over (a replaced link is UNKNOWN)
    ALREADY_MEMBER = "already_member"


class JoinError(CoachError):
    def __init__(self, problem: JoinProblem) -> None:
        super().__init__(f"join refused: {problem.value}")
        self.problem = problem


class UnknownLanguage(CoachError, ValueError):
    """Not one of the languages the bot speaks."""


class InvalidGroupName(CoachError, ValueError):
    """A group's name is empty or too long."""
