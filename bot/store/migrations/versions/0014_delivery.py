"""The send budget's spread, shared by the replicas.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-04

``send_budget.spread``: the largest spread of arrival times (seconds) a replica reported
while leasing in the last second, and ``spread_at`` when it was reported; every
replica spaces its release times by it, so that no window of one second at Telegram holds
more than the budget (``bot/telegram/pacing.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("send_budget") as batch:
        batch.add_column(sa.Column("spread", sa.Float(), nullable=False,
                                   server_default="0"))
        batch.add_column(sa.Column("spread_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("send_budget") as batch:
        batch.drop_column("spread_at")
        batch.drop_column("spread")
