"""A crisis pauses the client's scheduled coaching, and a caring check-in follows.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-04

``users.crisis_pause_until``: nothing scheduled starts for the client before it (unless they
write first, which ends it). ``planned_checkins.kind`` gains ``care``: the gentle check-in
planned for the day after an urgent crisis.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_OLD = "kind IN ('daily', 'weekly', 'exercise')"
_NEW = "kind IN ('daily', 'weekly', 'exercise', 'care')"


def _swap_kind_check(check: str) -> None:
    with op.batch_alter_table("planned_checkins") as batch:
        batch.drop_constraint(op.f("ck_planned_checkins_kind"), type_="check")
        batch.create_check_constraint(op.f("ck_planned_checkins_kind"), check)


def upgrade() -> None:
    # A plain ADD COLUMN, never batch mode: on SQLite that recreates `users`, and dropping
    # the old table deletes every row that refers to it (ON DELETE CASCADE).
    op.add_column("users", sa.Column("crisis_pause_until", sa.DateTime(timezone=True),
                                     nullable=True))
    _swap_kind_check(_NEW)


def downgrade() -> None:
    op.execute("DELETE FROM planned_checkins WHERE kind = 'care'")
    _swap_kind_check(_OLD)
    if op.get_bind().dialect.name != "sqlite":  # the column stays there: see upgrade()
        op.drop_column("users", "crisis_pause_until")
