"""One send budget for all replicas, and replies before bulk.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-04

``send_budget``: one row per budget, the first release time no replica has leased yet
(``bot/telegram/pacing.py``). ``ix_outbox_kind_status_chat_id``: the sender finds the chats
with a reply waiting and sends their messages before scheduled bulk.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "send_budget",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("next_slot", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_send_budget")),
    )
    op.create_index(op.f("ix_outbox_kind_status_chat_id"), "outbox",
                    ["kind", "status", "chat_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_outbox_kind_status_chat_id"), table_name="outbox")
    op.drop_table("send_budget")
