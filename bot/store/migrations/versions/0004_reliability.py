"""Reliability: check-in minutes, cancelled and urgent outbox rows, multi-part progress.

- ``users.checkin_minute`` (0..59): the check-in time keeps its minutes (07:30 is no longer
  stored as 7); with ``checkin_hour`` it is the minute of the local day.
- ``outbox.status`` may be ``cancelled`` (held back and never sent: superseded by a later
  reply or by an urgent message; ``last_error`` says why).
- ``outbox.kind``: ``message`` (scheduled, coach, digest), ``reply`` (a reply to the user's
  own message, superseded by a later one) or ``urgent`` (goes ahead of the chat's queue).
- ``outbox.parts_sent``: how many parts of a long message Telegram accepted, so a retry
  resumes at the part that failed.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-04
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_OLD_STATUS = "status IN ('pending', 'sending', 'sent', 'failed')"
_NEW_STATUS = "status IN ('pending', 'sending', 'sent', 'failed', 'cancelled')"
_KIND = "kind IN ('message', 'reply', 'urgent')"


_MINUTE = "checkin_minute BETWEEN 0 AND 59"


def _sqlite() -> bool:
    return bool(op.get_bind().dialect.name == "sqlite")


def upgrade() -> None:
    # Never recreate `users` on SQLite (batch mode would): dropping the old table deletes
    # every row that refers to it, by ON DELETE CASCADE. SQLite adds a column with its
    # CHECK in place.
    if _sqlite():
        op.execute("ALTER TABLE users ADD COLUMN checkin_minute INTEGER DEFAULT '0' NOT NULL "
                   f"CONSTRAINT ck_users_checkin_minute CHECK ({_MINUTE})")
    else:
        op.add_column("users", sa.Column("checkin_minute", sa.Integer(), server_default="0",
                                         nullable=False))
        op.create_check_constraint(op.f("ck_users_checkin_minute"), "users", _MINUTE)
    with op.batch_alter_table("outbox") as batch:
        batch.drop_constraint(op.f("ck_outbox_status"), type_="check")
    with op.batch_alter_table("outbox") as batch:
        batch.create_check_constraint(op.f("ck_outbox_status"), _NEW_STATUS)
        batch.add_column(sa.Column("kind", sa.String(length=16), server_default="message",
                                   nullable=False))
        batch.add_column(sa.Column("parts_sent", sa.Integer(), server_default="0",
                                   nullable=False))
        batch.create_check_constraint(op.f("ck_outbox_kind"), _KIND)


def downgrade() -> None:
    op.execute("UPDATE outbox SET status = 'failed' WHERE status = 'cancelled'")
    with op.batch_alter_table("outbox") as batch:
        batch.drop_constraint(op.f("ck_outbox_kind"), type_="check")
        batch.drop_constraint(op.f("ck_outbox_status"), type_="check")
    with op.batch_alter_table("outbox") as batch:
        batch.drop_column("parts_sent")
        batch.drop_column("kind")
        batch.create_check_constraint(op.f("ck_outbox_status"), _OLD_STATUS)
    if _sqlite():
        return  # the column stays (with its default it is harmless): see upgrade()
    op.drop_constraint(op.f("ck_users_checkin_minute"), "users", type_="check")
    op.drop_column("users", "checkin_minute")
