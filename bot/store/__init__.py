"""Persistence: models, transactions per update, migrations, export and erase of a user.

Imports only SQLAlchemy, Alembic, cryptography and the standard library.
"""

from .engine import DEFAULT_URL, database_url
from .keys import KeyMismatchError
from .kinds import GroupKind, Visibility
from .migrate import ensure_schema, upgrade
from .models import (
    Answer,
    Assignment,
    Base,
    CoachEvent,
    CoachLink,
    CoachMessage,
    CoachNote,
    Conversation,
    Exercise,
    Goal,
    Group,
    GroupAssignment,
    GroupContribution,
    GroupMember,
    Invite,
    KeyFingerprint,
    Outbox,
    PlannedCheckin,
    ProcessedUpdate,
    SendBudget,
    User,
    undelivered,
)
from .sqlite_async import off_the_loop
from .store import (
    SUPERSEDED_BY_REPLY,
    SUPERSEDED_BY_URGENT,
    ConflictError,
    Retention,
    Store,
    Turn,
    TurnUser,
    UserGone,
    UserView,
    is_outage,
    is_retryable,
)
from .types import DecryptionError

__all__ = [
    "DEFAULT_URL",
    "SUPERSEDED_BY_REPLY",
    "SUPERSEDED_BY_URGENT",
    "Answer",
    "Assignment",
    "Base",
    "CoachEvent",
    "CoachLink",
    "CoachMessage",
    "CoachNote",
    "ConflictError",
    "Conversation",
    "DecryptionError",
    "Exercise",
    "Goal",
    "Group",
    "GroupAssignment",
    "GroupContribution",
    "GroupKind",
    "GroupMember",
    "Invite",
    "KeyFingerprint",
    "KeyMismatchError",
    "Outbox",
    "PlannedCheckin",
    "ProcessedUpdate",
    "Retention",
    "SendBudget",
    "Store",
    "Turn",
    "TurnUser",
    "User",
    "UserGone",
    "UserView",
    "Visibility",
    "database_url",
    "ensure_schema",
    "is_outage",
    "is_retryable",
    "off_the_loop",
    "undelivered",
    "upgrade",
]
