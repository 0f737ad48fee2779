"""Team and group coaching (issue 27): groups, their members, group assignments.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-04

``groups`` (a coach's team or cohort, its invite code and optionally its linked Telegram
chat), ``group_members`` (each joined by their own consent, with what the coach may see),
``group_contributions`` (a member's part in a team's shared goal, said in private),
``group_assignments`` (an exercise for the whole group) and ``assignments.group_assignment_id``
(a member's own copy of one).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _when(name: str, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "groups",
        sa.Column("id", _ID, nullable=False),
        sa.Column("coach_id", sa.BigInteger(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("invite_code", sa.String(length=64), nullable=False),
        _when("created_at"),
        sa.Column("chat_id", sa.BigInteger(), nullable=True),
        sa.Column("chat_locale", sa.String(length=35), server_default="en", nullable=False),
        _when("withheld_before", nullable=True),
        sa.Column("shared_goal", sa.Text(), nullable=True),
        _when("goal_reached_at", nullable=True),
        sa.CheckConstraint("kind IN ('team', 'cohort')", name=op.f("ck_groups_kind")),
        sa.ForeignKeyConstraint(["coach_id"], ["users.id"], name=op.f("fk_groups_coach_id_users"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_groups")),
        sa.UniqueConstraint("chat_id", name=op.f("uq_groups_chat_id")),
        sa.UniqueConstraint("invite_code", name=op.f("uq_groups_invite_code")),
    )
    op.create_index(op.f("ix_groups_coach_id"), "groups", ["coach_id"], unique=False)
    op.create_table(
        "group_members",
        sa.Column("id", _ID, nullable=False),
        sa.Column("group_id", _ID, nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("visibility", sa.String(length=16), nullable=False),
        _when("joined_at"),
        _when("left_at", nullable=True),
        sa.Column("link_id", sa.BigInteger(), nullable=True),
        sa.CheckConstraint("visibility IN ('figures', 'progress')",
                           name=op.f("ck_group_members_visibility")),
        sa.ForeignKeyConstraint(["group_id"], ["groups.id"],
                                name=op.f("fk_group_members_group_id_groups"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"],
                                name=op.f("fk_group_members_user_id_users"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_group_members")),
    )
    op.create_index(op.f("ix_group_members_group_id"), "group_members", ["group_id"])
    op.create_index(op.f("ix_group_members_user_id"), "group_members", ["user_id"])
    op.create_index("uq_group_members_active", "group_members", ["group_id", "user_id"],
                    unique=True, sqlite_where=sa.text("left_at IS NULL"),
                    postgresql_where=sa.text("left_at IS NULL"))
    op.create_table(
        "group_contributions",
        sa.Column("id", _ID, nullable=False),
        sa.Column("group_id", _ID, nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("contribution", sa.Text(), nullable=False),
        sa.Column("commitment", sa.Text(), nullable=False),
        sa.Column("shared", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        _when("created_at"),
        sa.ForeignKeyConstraint(["group_id"], ["groups.id"],
                                name=op.f("fk_group_contributions_group_id_groups"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"],
                                name=op.f("fk_group_contributions_user_id_users"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_group_contributions")),
    )
    op.create_index(op.f("ix_group_contributions_group_id"), "group_contributions",
                    ["group_id"])
    op.create_index(op.f("ix_group_contributions_user_id"), "group_contributions",
                    ["user_id"])
    op.create_table(
        "group_assignments",
        sa.Column("id", _ID, nullable=False),
        sa.Column("group_id", _ID, nullable=False),
        sa.Column("exercise_slug", sa.String(length=64), nullable=False),
        sa.Column("exercise_id", _ID, nullable=True),
        sa.Column("schedule", sa.JSON(), nullable=False),
        sa.Column("starts_on", sa.Date(), nullable=False),
        sa.Column("ends_on", sa.Date(), nullable=True),
        sa.Column("active", sa.Boolean(), server_default=sa.text("true"), nullable=False),
        _when("created_at"),
        sa.ForeignKeyConstraint(["exercise_id"], ["exercises.id"],
                                name=op.f("fk_group_assignments_exercise_id_exercises"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["group_id"], ["groups.id"],
                                name=op.f("fk_group_assignments_group_id_groups"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_group_assignments")),
    )
    op.create_index(op.f("ix_group_assignments_group_id"), "group_assignments", ["group_id"])
    # A plain ADD COLUMN, never batch mode (which would recreate `assignments` on SQLite).
    op.add_column("assignments", sa.Column("group_assignment_id", sa.BigInteger(),
                                           nullable=True))
    op.create_index(op.f("ix_assignments_group_assignment_id"), "assignments",
                    ["group_assignment_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_assignments_group_assignment_id"), table_name="assignments")
    if op.get_bind().dialect.name != "sqlite":  # the column stays there: see upgrade()
        op.drop_column("assignments", "group_assignment_id")
    op.drop_table("group_assignments")
    op.drop_table("group_contributions")
    op.drop_table("group_members")
    op.drop_table("groups")
