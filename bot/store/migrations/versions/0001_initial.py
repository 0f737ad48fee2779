"""Initial schema.

Revision ID: 0001
Revises:
Create Date: 2026-12-02

Encrypted columns (answers.value, conversations.state, outbox.payload, goals.title and
goals.why) are TEXT: the application encrypts them when a key is configured.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("first_name", sa.String(length=255), nullable=True),
        sa.Column("locale", sa.String(length=35), server_default="en", nullable=False),
        sa.Column("time_zone", sa.String(length=64), server_default="UTC", nullable=False),
        sa.Column("checkin_hour", sa.Integer(), server_default="9", nullable=False),
        sa.Column("quiet_start", sa.Integer(), nullable=True),
        sa.Column("quiet_end", sa.Integer(), nullable=True),
        sa.Column("paused_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("reachable", sa.Boolean(), server_default=sa.text("true"), nullable=False),
        sa.Column("consent_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("is_coach", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("checkin_hour BETWEEN 0 AND 23", name=op.f("ck_users_checkin_hour")),
        sa.CheckConstraint("quiet_end BETWEEN 0 AND 1439", name=op.f("ck_users_quiet_end")),
        sa.CheckConstraint("quiet_start BETWEEN 0 AND 1439", name=op.f("ck_users_quiet_start")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
    )
    op.create_table(
        "answers",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("dialogue_id", sa.String(length=128), nullable=False),
        sa.Column("step_id", sa.String(length=128), nullable=False),
        sa.Column("variable", sa.String(length=128), nullable=False),
        sa.Column("value", sa.Text(), nullable=True),
        sa.Column("answered_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_answers_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_answers")),
    )
    op.create_index(
        op.f("ix_answers_user_id_answered_at"), "answers", ["user_id", "answered_at"], unique=False
    )
    op.create_index(
        op.f("ix_answers_user_id_variable_answered_at"),
        "answers",
        ["user_id", "variable", "answered_at"],
        unique=False,
    )
    op.create_table(
        "coach_links",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("coach_id", sa.BigInteger(), nullable=False),
        sa.Column("client_id", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("consent_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("unlinked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["client_id"],
            ["users.id"],
            name=op.f("fk_coach_links_client_id_users"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["coach_id"],
            ["users.id"],
            name=op.f("fk_coach_links_coach_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_coach_links")),
    )
    op.create_index(op.f("ix_coach_links_client_id"), "coach_links", ["client_id"], unique=False)
    op.create_index(op.f("ix_coach_links_coach_id"), "coach_links", ["coach_id"], unique=False)
    op.create_index(
        "uq_coach_links_active",
        "coach_links",
        ["coach_id", "client_id"],
        unique=True,
        sqlite_where=sa.text("unlinked_at IS NULL"),
        postgresql_where=sa.text("unlinked_at IS NULL"),
    )
    op.create_table(
        "conversations",
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("state", sa.Text(), nullable=True),
        sa.Column("version", sa.Integer(), server_default="0", nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_conversations_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("user_id", name=op.f("pk_conversations")),
    )
    op.create_table(
        "exercises",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("coach_id", sa.BigInteger(), nullable=True),
        sa.Column("slug", sa.String(length=64), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("instructions", sa.Text(), server_default=sa.text("''"), nullable=False),
        sa.Column("questions", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["coach_id"], ["users.id"], name=op.f("fk_exercises_coach_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_exercises")),
        sa.UniqueConstraint("coach_id", "slug", name=op.f("uq_exercises_coach_id_slug")),
    )
    op.create_index(
        "uq_exercises_library_slug",
        "exercises",
        ["slug"],
        unique=True,
        sqlite_where=sa.text("coach_id IS NULL"),
        postgresql_where=sa.text("coach_id IS NULL"),
    )
    op.create_table(
        "goals",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("why", sa.Text(), nullable=True),
        sa.Column("baseline", sa.Integer(), nullable=True),
        sa.Column("current", sa.Integer(), nullable=True),
        sa.Column("target", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(length=16), server_default="active", nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("due_on", sa.Date(), nullable=True),
        sa.Column("completed_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("status IN ('active', 'done', 'dropped')", name=op.f("ck_goals_status")),
        sa.CheckConstraint("baseline BETWEEN 1 AND 10", name=op.f("ck_goals_baseline")),
        sa.CheckConstraint("current BETWEEN 1 AND 10", name=op.f("ck_goals_current")),
        sa.CheckConstraint("target BETWEEN 1 AND 10", name=op.f("ck_goals_target")),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_goals_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_goals")),
    )
    op.create_index(op.f("ix_goals_user_id_status"), "goals", ["user_id", "status"], unique=False)
    op.create_table(
        "invites",
        sa.Column("code", sa.String(length=64), nullable=False),
        sa.Column("coach_id", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_by", sa.BigInteger(), nullable=True),
        sa.Column("used_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["coach_id"], ["users.id"], name=op.f("fk_invites_coach_id_users"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["used_by"], ["users.id"], name=op.f("fk_invites_used_by_users"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("code", name=op.f("pk_invites")),
    )
    op.create_index(op.f("ix_invites_coach_id"), "invites", ["coach_id"], unique=False)
    op.create_index(op.f("ix_invites_used_by"), "invites", ["used_by"], unique=False)
    op.create_table(
        "outbox",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("chat_id", sa.BigInteger(), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("status", sa.String(length=16), server_default="pending", nullable=False),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.CheckConstraint(
            "status IN ('pending', 'sending', 'sent', 'failed')", name=op.f("ck_outbox_status")
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_outbox_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_outbox")),
    )
    op.create_index(
        op.f("ix_outbox_status_next_attempt_at"),
        "outbox",
        ["status", "next_attempt_at"],
        unique=False,
    )
    op.create_index(op.f("ix_outbox_user_id"), "outbox", ["user_id"], unique=False)
    op.create_table(
        "planned_checkins",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("ref", sa.String(length=64), server_default=sa.text("''"), nullable=False),
        sa.Column("due_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("status", sa.String(length=16), server_default="planned", nullable=False),
        sa.Column("claimed_by", sa.String(length=128), nullable=True),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "kind IN ('daily', 'weekly', 'exercise')", name=op.f("ck_planned_checkins_kind")
        ),
        sa.CheckConstraint(
            "status IN ('planned', 'claimed', 'sent', 'missed', 'cancelled')",
            name=op.f("ck_planned_checkins_status"),
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_planned_checkins_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_planned_checkins")),
        sa.UniqueConstraint(
            "user_id",
            "kind",
            "ref",
            "due_at",
            name=op.f("uq_planned_checkins_user_id_kind_ref_due_at"),
        ),
    )
    op.create_index(
        op.f("ix_planned_checkins_status_due_at"),
        "planned_checkins",
        ["status", "due_at"],
        unique=False,
    )
    op.create_table(
        "processed_updates",
        sa.Column("update_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=True),
        sa.Column("processed_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_processed_updates_user_id_users"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("update_id", name=op.f("pk_processed_updates")),
    )
    op.create_index(
        op.f("ix_processed_updates_processed_at"),
        "processed_updates",
        ["processed_at"],
        unique=False,
    )
    op.create_index(
        op.f("ix_processed_updates_user_id"), "processed_updates", ["user_id"], unique=False
    )
    op.create_table(
        "assignments",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("coach_id", sa.BigInteger(), nullable=False),
        sa.Column("client_id", sa.BigInteger(), nullable=False),
        sa.Column("exercise_slug", sa.String(length=64), nullable=True),
        sa.Column(
            "exercise_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True
        ),
        sa.Column("schedule", sa.JSON(), nullable=False),
        sa.Column("starts_on", sa.Date(), nullable=False),
        sa.Column("ends_on", sa.Date(), nullable=True),
        sa.Column("active", sa.Boolean(), server_default=sa.text("true"), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "exercise_slug IS NOT NULL OR exercise_id IS NOT NULL",
            name=op.f("ck_assignments_exercise_ref"),
        ),
        sa.ForeignKeyConstraint(
            ["client_id"],
            ["users.id"],
            name=op.f("fk_assignments_client_id_users"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["coach_id"],
            ["users.id"],
            name=op.f("fk_assignments_coach_id_users"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["exercise_id"],
            ["exercises.id"],
            name=op.f("fk_assignments_exercise_id_exercises"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_assignments")),
    )
    op.create_index(
        op.f("ix_assignments_client_id_active"),
        "assignments",
        ["client_id", "active"],
        unique=False,
    )
    op.create_index(op.f("ix_assignments_coach_id"), "assignments", ["coach_id"], unique=False)
    op.create_index(
        op.f("ix_assignments_exercise_id"), "assignments", ["exercise_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_assignments_exercise_id"), table_name="assignments")
    op.drop_index(op.f("ix_assignments_coach_id"), table_name="assignments")
    op.drop_index(op.f("ix_assignments_client_id_active"), table_name="assignments")
    op.drop_table("assignments")
    op.drop_index(op.f("ix_processed_updates_user_id"), table_name="processed_updates")
    op.drop_index(op.f("ix_processed_updates_processed_at"), table_name="processed_updates")
    op.drop_table("processed_updates")
    op.drop_index(op.f("ix_planned_checkins_status_due_at"), table_name="planned_checkins")
    op.drop_table("planned_checkins")
    op.drop_index(op.f("ix_outbox_user_id"), table_name="outbox")
    op.drop_index(op.f("ix_outbox_status_next_attempt_at"), table_name="outbox")
    op.drop_table("outbox")
    op.drop_index(op.f("ix_invites_used_by"), table_name="invites")
    op.drop_index(op.f("ix_invites_coach_id"), table_name="invites")
    op.drop_table("invites")
    op.drop_index(op.f("ix_goals_user_id_status"), table_name="goals")
    op.drop_table("goals")
    op.drop_index("uq_exercises_library_slug", table_name="exercises")
    op.drop_table("exercises")
    op.drop_table("conversations")
    op.drop_index("uq_coach_links_active", table_name="coach_links")
    op.drop_index(op.f("ix_coach_links_coach_id"), table_name="coach_links")
    op.drop_index(op.f("ix_coach_links_client_id"), table_name="coach_links")
    op.drop_table("coach_links")
    op.drop_index(op.f("ix_answers_user_id_variable_answered_at"), table_name="answers")
    op.drop_index(op.f("ix_answers_user_id_answered_at"), table_name="answers")
    op.drop_table("answers")
    op.drop_table("users")
