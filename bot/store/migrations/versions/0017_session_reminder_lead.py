"""``users.session_reminder_minutes``: how long before each session its reminders come, as
the coach chose it (for both reminders of their sessions, and their group sessions');
one hour until they choose. ``planned_checkins.kind`` gains ``session_brief``: the coach's
brief, still an hour before, when their reminder comes at another time.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-05
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_LEAD = "session_reminder_minutes BETWEEN 5 AND 2880"
_KINDS = ("'daily', 'weekly', 'exercise', 'care', 'session_reminder', 'session_prep', "
          "'session_recap', 'session_outcome', 'engagement_close', 'group_session', "
          "'group_chat', 'group_question'")
_OLD_KINDS = f"kind IN ({_KINDS})"
_NEW_KINDS = f"kind IN ({_KINDS}, 'session_brief')"


def _swap_kind_check(check: str) -> None:
    with op.batch_alter_table("planned_checkins") as batch:
        batch.drop_constraint(op.f("ck_planned_checkins_kind"), type_="check")
        batch.create_check_constraint(op.f("ck_planned_checkins_kind"), check)


def upgrade() -> None:
    # Never recreate `users` on SQLite (batch mode would): dropping the old table deletes
    # every row that refers to it, by ON DELETE CASCADE. SQLite adds a column with its
    # CHECK in place.
    if op.get_bind().dialect.name == "sqlite":
        op.execute("ALTER TABLE users ADD COLUMN session_reminder_minutes INTEGER DEFAULT '60' "
                   f"NOT NULL CONSTRAINT ck_users_session_reminder_minutes CHECK ({_LEAD})")
    else:
        op.add_column("users", sa.Column("session_reminder_minutes", sa.Integer(),
                                         server_default="60", nullable=False))
        op.create_check_constraint(op.f("ck_users_session_reminder_minutes"), "users", _LEAD)
    _swap_kind_check(_NEW_KINDS)


def downgrade() -> None:
    op.execute("DELETE FROM planned_checkins WHERE kind = 'session_brief'")
    _swap_kind_check(_OLD_KINDS)
    if op.get_bind().dialect.name == "sqlite":
        return  # the column stays (with its default it is harmless), as 0004's does
    op.drop_constraint(op.f("ck_users_session_reminder_minutes"), "users", type_="check")
    op.drop_column("users", "session_reminder_minutes")
