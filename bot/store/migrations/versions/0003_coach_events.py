"""Coach events: what a coach is told about in batched digests (kind and time, no content).

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-03
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "coach_events",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("coach_id", sa.BigInteger(), nullable=False),
        sa.Column("client_id", sa.BigInteger(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("notified_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "kind IN ('exercise_done', 'exercise_partly', 'exercise_skipped', 'crisis')",
            name=op.f("ck_coach_events_kind"),
        ),
        sa.ForeignKeyConstraint(
            ["client_id"],
            ["users.id"],
            name=op.f("fk_coach_events_client_id_users"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["coach_id"],
            ["users.id"],
            name=op.f("fk_coach_events_coach_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_coach_events")),
    )
    op.create_index(
        op.f("ix_coach_events_client_id"), "coach_events", ["client_id"], unique=False
    )
    op.create_index(
        op.f("ix_coach_events_coach_id_notified_at"),
        "coach_events",
        ["coach_id", "notified_at"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_coach_events_coach_id_notified_at"), table_name="coach_events")
    op.drop_index(op.f("ix_coach_events_client_id"), table_name="coach_events")
    op.drop_table("coach_events")
