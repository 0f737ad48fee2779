"""``planned_checkins.kind`` gains ``later``: a dialogue coming back on its own at the step
a ``later`` step of it named (ref ``<dialogue id>:<step id>``), such as a day-long exercise
asking in the evening how it went.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-05
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_KINDS = ("'daily', 'weekly', 'exercise', 'care', 'session_reminder', 'session_prep', "
          "'session_recap', 'session_outcome', 'session_brief', 'engagement_close', "
          "'group_session', 'group_chat', 'group_question'")
_OLD_KINDS = f"kind IN ({_KINDS})"
_NEW_KINDS = f"kind IN ({_KINDS}, 'later')"


def _swap_kind_check(check: str) -> None:
    with op.batch_alter_table("planned_checkins") as batch:
        batch.drop_constraint(op.f("ck_planned_checkins_kind"), type_="check")
        batch.create_check_constraint(op.f("ck_planned_checkins_kind"), check)


def upgrade() -> None:
    _swap_kind_check(_NEW_KINDS)


def downgrade() -> None:
    op.execute("DELETE FROM planned_checkins WHERE kind = 'later'")
    _swap_kind_check(_OLD_KINDS)
