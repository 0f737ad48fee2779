"""Planned check-ins are 'started' (their first message is in the outbox), not 'sent'.

Revision ID: 0002
Revises: 0001
Create Date: 2027-01-10

Also indexes the outbox by (chat_id, status, id): the sender claims only the oldest
undelivered row of each chat.

A check-in row never knows whether Telegram accepted a message; the outbox row does.
So the status 'sent' becomes 'started', and ``started_at`` records when that happened.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_OLD = "status IN ('planned', 'claimed', 'sent', 'missed', 'cancelled')"
_NEW = "status IN ('planned', 'claimed', 'started', 'missed', 'cancelled')"


def _swap_check(old: str, new: str, before: str, after: str, add_column: bool) -> None:
    with op.batch_alter_table("planned_checkins") as batch:
        batch.drop_constraint(op.f("ck_planned_checkins_status"), type_="check")
    op.execute(f"UPDATE planned_checkins SET status = '{after}' WHERE status = '{before}'")
    with op.batch_alter_table("planned_checkins") as batch:
        batch.create_check_constraint(op.f("ck_planned_checkins_status"), new)
        if add_column:
            batch.add_column(sa.Column("started_at", sa.DateTime(timezone=True), nullable=True))
        else:
            batch.drop_column("started_at")
    del old


_OUTBOX_INDEX = "ix_outbox_chat_id_status_id"


def upgrade() -> None:
    _swap_check(_OLD, _NEW, "sent", "started", add_column=True)
    op.create_index(op.f(_OUTBOX_INDEX), "outbox", ["chat_id", "status", "id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f(_OUTBOX_INDEX), table_name="outbox")
    _swap_check(_NEW, _OLD, "started", "sent", add_column=False)
