"""A client's notes for their next session (``session_notes``); ``coach_links.sessions_agreed``:
the number of sessions a coach and a client agreed on; ``planned_checkins.kind`` gains
``engagement_close``, the client's look back when the agreed sessions are held.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-04
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_OLD_KINDS = ("kind IN ('daily', 'weekly', 'exercise', 'care', 'session_reminder', "
              "'session_prep', 'session_recap', 'session_outcome')")
_NEW_KINDS = ("kind IN ('daily', 'weekly', 'exercise', 'care', 'session_reminder', "
              "'session_prep', 'session_recap', 'session_outcome', 'engagement_close')")


def _swap_kind_check(check: str) -> None:
    with op.batch_alter_table("planned_checkins") as batch:
        batch.drop_constraint(op.f("ck_planned_checkins_kind"), type_="check")
        batch.create_check_constraint(op.f("ck_planned_checkins_kind"), check)


def upgrade() -> None:
    # A plain ADD COLUMN, never batch mode (which would recreate coach_links).
    op.add_column("coach_links", sa.Column("sessions_agreed", sa.Integer(), nullable=True))
    op.create_table(
        "session_notes",
        sa.Column("id", BigId, nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("words", sa.Text(), nullable=True),
        sa.Column("media", sa.String(length=16), nullable=True),
        sa.Column("file_id", sa.Text(), nullable=True),
        sa.Column("message_id", sa.BigInteger(), nullable=True),
        sa.Column("share", sa.String(length=16), server_default="private", nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("shared_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("share IN ('private', 'brief', 'sent')",
                           name=op.f("ck_session_notes_share")),
        sa.CheckConstraint("media IN ('voice', 'audio', 'photo', 'document', 'video', "
                           "'video_note')", name=op.f("ck_session_notes_media")),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"],
                                name=op.f("fk_session_notes_user_id_users"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_session_notes")),
    )
    op.create_index(op.f("ix_session_notes_user_id"), "session_notes", ["user_id"])
    _swap_kind_check(_NEW_KINDS)


def downgrade() -> None:
    op.execute("DELETE FROM planned_checkins WHERE kind = 'engagement_close'")
    _swap_kind_check(_OLD_KINDS)
    op.drop_index(op.f("ix_session_notes_user_id"), table_name="session_notes")
    op.drop_table("session_notes")
    with op.batch_alter_table("coach_links") as batch:
        batch.drop_column("sessions_agreed")
