"""Privacy: the user a message is about (export and erase follow it), when a user last
exported their data.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-04
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("outbox") as batch:
        batch.add_column(sa.Column("subject_user_id", sa.BigInteger(), nullable=True))
        batch.create_foreign_key(op.f("fk_outbox_subject_user_id_users"), "users",
                                 ["subject_user_id"], ["id"], ondelete="CASCADE")
        batch.create_index(op.f("ix_outbox_subject_user_id"), ["subject_user_id"],
                           unique=False)
    # In place, never batch mode: on SQLite that recreates `users`, and dropping the old
    # table deletes every row that refers to it (ON DELETE CASCADE).
    op.add_column("users", sa.Column("exported_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":  # the column stays there: see upgrade()
        op.drop_column("users", "exported_at")
    with op.batch_alter_table("outbox") as batch:
        batch.drop_index(op.f("ix_outbox_subject_user_id"))
        batch.drop_constraint(op.f("fk_outbox_subject_user_id_users"), type_="foreignkey")
        batch.drop_column("subject_user_id")
