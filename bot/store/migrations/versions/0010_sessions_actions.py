"""Commitments as rows (``actions``) and agreed coaching sessions (``coaching_sessions``);
``planned_checkins.kind`` gains the session kinds (reminder, preparation, recap, the
coach's held-or-missed prompt); ``coach_links.brief_consent``: whether the coach gets the
client's preparation before a session.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-04
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_OLD_KINDS = "kind IN ('daily', 'weekly', 'exercise', 'care')"
_NEW_KINDS = ("kind IN ('daily', 'weekly', 'exercise', 'care', 'session_reminder', "
              "'session_prep', 'session_recap', 'session_outcome')")


def _swap_kind_check(check: str) -> None:
    with op.batch_alter_table("planned_checkins") as batch:
        batch.drop_constraint(op.f("ck_planned_checkins_kind"), type_="check")
        batch.create_check_constraint(op.f("ck_planned_checkins_kind"), check)


def _user_fk(column: str, table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint([column], ["users.id"], name=op.f(f"fk_{table}_{column}_users"),
                                   ondelete="CASCADE")


def upgrade() -> None:
    # A plain ADD COLUMN, never batch mode (which would recreate coach_links).
    op.add_column("coach_links", sa.Column("brief_consent", sa.Boolean(), nullable=True))
    op.create_table(
        "actions",
        sa.Column("id", BigId, nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("words", sa.Text(), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("due_on", sa.Date(), nullable=False),
        sa.Column("status", sa.String(length=16), server_default="open", nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("closed_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("status IN ('open', 'done', 'partly', 'dropped')",
                           name=op.f("ck_actions_status")),
        sa.CheckConstraint("source IN ('daily', 'weekly', 'first_step', 'session')",
                           name=op.f("ck_actions_source")),
        _user_fk("user_id", "actions"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_actions")),
    )
    op.create_index(op.f("ix_actions_user_id_status_due_on"), "actions",
                    ["user_id", "status", "due_on"], unique=False)
    op.create_table(
        "coaching_sessions",
        sa.Column("id", BigId, nullable=False),
        sa.Column("uid", sa.String(length=64), nullable=False),
        sa.Column("series", sa.String(length=32), nullable=True),
        sa.Column("coach_id", sa.BigInteger(), nullable=False),
        sa.Column("client_id", sa.BigInteger(), nullable=False),
        sa.Column("local_start", sa.DateTime(timezone=False), nullable=False),
        sa.Column("zone", sa.String(length=64), nullable=False),
        sa.Column("starts_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("minutes", sa.Integer(), server_default="60", nullable=False),
        sa.Column("mode", sa.String(length=16), nullable=False),
        sa.Column("place", sa.Text(), nullable=True),
        sa.Column("status", sa.String(length=16), server_default="scheduled", nullable=False),
        sa.Column("sequence", sa.Integer(), server_default="0", nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("mode IN ('in_person', 'phone', 'video')",
                           name=op.f("ck_coaching_sessions_mode")),
        sa.CheckConstraint("status IN ('scheduled', 'cancelled', 'held', 'missed')",
                           name=op.f("ck_coaching_sessions_status")),
        sa.CheckConstraint("minutes BETWEEN 5 AND 600", name=op.f("ck_coaching_sessions_minutes")),
        _user_fk("coach_id", "coaching_sessions"),
        _user_fk("client_id", "coaching_sessions"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_coaching_sessions")),
        sa.UniqueConstraint("uid", name=op.f("uq_coaching_sessions_uid")),
    )
    for columns in (["series"], ["coach_id"], ["client_id"], ["status", "starts_at"]):
        op.create_index(op.f(f"ix_coaching_sessions_{'_'.join(columns)}"), "coaching_sessions",
                        columns, unique=False)
    _swap_kind_check(_NEW_KINDS)


def downgrade() -> None:
    op.execute("DELETE FROM planned_checkins WHERE kind LIKE 'session_%'")
    _swap_kind_check(_OLD_KINDS)
    op.drop_table("coaching_sessions")
    op.drop_table("actions")
    with op.batch_alter_table("coach_links") as batch:
        batch.drop_column("brief_consent")
