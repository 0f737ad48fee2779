"""Privacy: the user a message is about (export and erase follow it), when a user last
exported their data; first names and coaches' exercise texts become (encrypted) text.

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
    # In place, never batch mode: on SQLite that recreates `users` (and `exercises`), and
    # dropping the old table deletes every row that refers to it (ON DELETE CASCADE). SQLite
    # does not hold a VARCHAR to its length, so the wider columns (encrypted text) need no
    # change there.
    op.add_column("users", sa.Column("exported_at", sa.DateTime(timezone=True), nullable=True))
    if op.get_bind().dialect.name != "sqlite":
        op.alter_column("users", "first_name", type_=sa.Text(), existing_type=sa.String(255),
                        existing_nullable=True)
        op.alter_column("exercises", "title", type_=sa.Text(), existing_type=sa.String(200),
                        existing_nullable=False)


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":  # the column stays there: see upgrade()
        op.alter_column("exercises", "title", type_=sa.String(200), existing_type=sa.Text(),
                        existing_nullable=False)
        op.alter_column("users", "first_name", type_=sa.String(255), existing_type=sa.Text(),
                        existing_nullable=True)
        op.drop_column("users", "exported_at")
    with op.batch_alter_table("outbox") as batch:
        batch.drop_index(op.f("ix_outbox_subject_user_id"))
        batch.drop_constraint(op.f("fk_outbox_subject_user_id_users"), type_="foreignkey")
        batch.drop_column("subject_user_id")
