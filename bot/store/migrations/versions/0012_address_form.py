"""How a client chose to be addressed (issue 29): ``users.address``.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-04

Where a language marks grammatical gender, a client may choose feminine or masculine forms
instead of the gender-neutral text everyone sees by default (asked after consent, and in
/language). NULL until they answer.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_CHECK = "address IN ('neutral', 'feminine', 'masculine')"


def upgrade() -> None:
    # A plain ADD COLUMN, never batch mode: on SQLite that recreates `users`, and dropping
    # the old table deletes every row that refers to it (ON DELETE CASCADE). SQLite takes
    # the CHECK inline with the column; elsewhere it is a named constraint like the others.
    sqlite = op.get_bind().dialect.name == "sqlite"
    column = sa.Column("address", sa.String(16), nullable=True)
    if sqlite:
        column = sa.Column("address", sa.String(16),
                           sa.CheckConstraint(_CHECK, name=op.f("ck_users_address")),
                           nullable=True)
    op.add_column("users", column)
    if not sqlite:
        op.create_check_constraint(op.f("ck_users_address"), "users", _CHECK)


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":  # the column stays there: see upgrade()
        op.drop_constraint(op.f("ck_users_address"), "users", type_="check")
        op.drop_column("users", "address")
