"""``users.checkin_days``: on which weekdays the client wants their daily check-in, as a
7-bit mask (Monday = bit 0); NULL or 127 is every day, as it was for everyone before.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-05
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_DAYS = "checkin_days BETWEEN 1 AND 127"


def upgrade() -> None:
    # Never recreate `users` on SQLite (batch mode would): dropping the old table deletes
    # every row that refers to it, by ON DELETE CASCADE. SQLite adds a column with its
    # CHECK in place.
    if op.get_bind().dialect.name == "sqlite":
        op.execute("ALTER TABLE users ADD COLUMN checkin_days INTEGER "
                   f"CONSTRAINT ck_users_checkin_days CHECK ({_DAYS})")
    else:
        op.add_column("users", sa.Column("checkin_days", sa.Integer(), nullable=True))
        op.create_check_constraint(op.f("ck_users_checkin_days"), "users", _DAYS)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        # In place too: SQLite drops a column whose only CHECK is its own.
        op.execute("ALTER TABLE users DROP COLUMN checkin_days")
        return
    op.drop_constraint(op.f("ck_users_checkin_days"), "users", type_="check")
    op.drop_column("users", "checkin_days")
