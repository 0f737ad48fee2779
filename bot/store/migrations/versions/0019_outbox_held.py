"""``outbox.status`` may be ``held``: a message someone else queued for a person during their
crisis pause (a coach's session count, a notice, a celebration; or one already queued at the
crisis moment) waits, neither sent nor counted as undelivered, until the pause is over.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-05
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_STATUSES = "'pending', 'sending', 'sent', 'failed', 'cancelled'"
_OLD_STATUS = f"status IN ({_STATUSES})"
_NEW_STATUS = f"status IN ({_STATUSES}, 'held')"


def _swap_status_check(check: str) -> None:
    with op.batch_alter_table("outbox") as batch:
        batch.drop_constraint(op.f("ck_outbox_status"), type_="check")
    with op.batch_alter_table("outbox") as batch:
        batch.create_check_constraint(op.f("ck_outbox_status"), check)


def upgrade() -> None:
    _swap_status_check(_NEW_STATUS)


def downgrade() -> None:
    # What still waits goes out (the pause it waited for is forgotten with the status).
    op.execute("UPDATE outbox SET status = 'pending' WHERE status = 'held'")
    _swap_status_check(_OLD_STATUS)
