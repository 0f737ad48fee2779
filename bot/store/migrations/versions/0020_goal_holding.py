"""``goals.holding``: the client chose to hold this goal at its target (at or below where they
stood when they chose it, in goal setting or a weekly review), so that reaching the target is
holding it, not completing it. False for every goal until then; a new target without that
choice clears it.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-05
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("goals", sa.Column("holding", sa.Boolean(), nullable=False,
                                     server_default=sa.text("false")))


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":  # SQLite keeps it, as 0009's columns
        op.drop_column("goals", "holding")
