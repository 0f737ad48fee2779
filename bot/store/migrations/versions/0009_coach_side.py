"""The coach's side (issue 26): messages between coach and client, private notes, a coach-set
silence threshold per link, and pausing an assignment. (The new kinds of coach alerts need no
change: since 0007 the kind is encrypted text, checked by the code that records it.)

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-04

Columns are added with a plain ADD COLUMN, never in batch mode: on SQLite that would recreate
the table, and dropping the old one deletes every row that refers to it (ON DELETE CASCADE).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _people(table: str) -> list[Any]:
    return [
        sa.Column("id", _ID, nullable=False),
        sa.Column("coach_id", sa.BigInteger(), nullable=False),
        sa.Column("client_id", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["coach_id"], ["users.id"],
                                name=op.f(f"fk_{table}_coach_id_users"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["client_id"], ["users.id"],
                                name=op.f(f"fk_{table}_client_id_users"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f(f"pk_{table}")),
    ]


def upgrade() -> None:
    op.add_column("coach_links", sa.Column("silent_days", sa.Integer(), nullable=False,
                                           server_default="4"))
    op.add_column("assignments", sa.Column("paused", sa.Boolean(), nullable=False,
                                           server_default=sa.text("false")))
    op.create_table(
        "coach_messages", *_people("coach_messages"),
        sa.Column("from_coach", sa.Boolean(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("delivered_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_table(
        "coach_notes", *_people("coach_notes"),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    for table in ("coach_messages", "coach_notes"):
        for column in ("coach_id", "client_id"):
            op.create_index(op.f(f"ix_{table}_{column}"), table, [column])
    op.create_index(op.f("ix_coach_messages_delivered_at_created_at"), "coach_messages",
                    ["delivered_at", "created_at"])


def downgrade() -> None:
    op.drop_table("coach_notes")
    op.drop_table("coach_messages")
    if op.get_bind().dialect.name != "sqlite":  # see upgrade(): the columns stay there
        op.drop_column("assignments", "paused")
        op.drop_column("coach_links", "silent_days")
