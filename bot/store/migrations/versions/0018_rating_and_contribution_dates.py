"""``goals.current_at``: when the client last rated the goal (so the look back at the end of
an engagement says when, not "today"; empty for ratings given before); and
``group_contributions.due_on``: the date a member commits to for their part in the team's
goal (empty for the contributions said before it was asked as a date).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-05
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Plain ADD COLUMN (no batch mode): SQLite adds a nullable column in place.
    op.add_column("goals", sa.Column("current_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("group_contributions", sa.Column("due_on", sa.Date(), nullable=True))


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        return  # the columns stay (empty, they are harmless), as 0017's does
    op.drop_column("group_contributions", "due_on")
    op.drop_column("goals", "current_at")
