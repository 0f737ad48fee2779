"""The coach's side, the rest (issue 26): measures and their values, programmes given to a
client, and dialogues a coach uploaded.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-04

``measures`` (a coach's scale or count for a client, asked by an assignment that points to it
through ``assignments.measure_id``), ``measure_values`` (the client's ratings, and the scores
the wheel of life and the values exercise ask for), ``programme_runs`` (a programme given to a
client; each step an assignment with ``assignments.programme_run_id``), ``coach_dialogues``
(YAML a coach sent, validated, for their own clients only). Columns are added with a plain ADD
COLUMN (see 0009).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _when(name: str, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _user(table: str, column: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint([column], ["users.id"],
                                   name=op.f(f"fk_{table}_{column}_users"), ondelete="CASCADE")


def upgrade() -> None:
    for column in ("measure_id", "programme_run_id"):
        op.add_column("assignments", sa.Column(column, sa.BigInteger(), nullable=True))
        op.create_index(op.f(f"ix_assignments_{column}"), "assignments", [column])
    op.add_column("assignments", _when("done_at", nullable=True))
    op.create_table(
        "measures",
        sa.Column("id", _ID, nullable=False),
        sa.Column("coach_id", sa.BigInteger(), nullable=False),
        sa.Column("client_id", sa.BigInteger(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("target", sa.Text(), nullable=True),
        sa.Column("summary_weeks", sa.Integer(), server_default="4", nullable=False),
        _when("last_summary_at", nullable=True),
        _when("created_at"),
        sa.CheckConstraint("kind IN ('scale', 'number')", name=op.f("ck_measures_kind")),
        sa.CheckConstraint("summary_weeks BETWEEN 0 AND 52",
                           name=op.f("ck_measures_summary_weeks")),
        _user("measures", "coach_id"), _user("measures", "client_id"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_measures")),
    )
    op.create_table(
        "measure_values",
        sa.Column("id", _ID, nullable=False),
        sa.Column("client_id", sa.BigInteger(), nullable=False),
        sa.Column("measure_id", _ID, nullable=True),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        _when("answered_at"),
        _user("measure_values", "client_id"),
        sa.ForeignKeyConstraint(["measure_id"], ["measures.id"],
                                name=op.f("fk_measure_values_measure_id_measures"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_measure_values")),
    )
    op.create_table(
        "programme_runs",
        sa.Column("id", _ID, nullable=False),
        sa.Column("coach_id", sa.BigInteger(), nullable=False),
        sa.Column("client_id", sa.BigInteger(), nullable=False),
        sa.Column("programme", sa.String(length=64), nullable=False),
        sa.Column("starts_on", sa.Date(), nullable=False),
        sa.Column("status", sa.String(length=16), server_default="active", nullable=False),
        _when("created_at"),
        sa.CheckConstraint("status IN ('active', 'paused', 'cancelled')",
                           name=op.f("ck_programme_runs_status")),
        _user("programme_runs", "coach_id"), _user("programme_runs", "client_id"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_programme_runs")),
    )
    op.create_table(
        "coach_dialogues",
        sa.Column("id", _ID, nullable=False),
        sa.Column("coach_id", sa.BigInteger(), nullable=False),
        sa.Column("dialogue_id", sa.String(length=64), nullable=False),
        sa.Column("locale", sa.String(length=35), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        _when("created_at"),
        _user("coach_dialogues", "coach_id"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_coach_dialogues")),
        sa.UniqueConstraint("coach_id", "dialogue_id",
                            name=op.f("uq_coach_dialogues_coach_id_dialogue_id")),
    )
    for table, column in (("measures", "coach_id"), ("measures", "client_id"),
                          ("measure_values", "client_id"), ("measure_values", "measure_id"),
                          ("programme_runs", "coach_id"), ("programme_runs", "client_id"),
                          ("coach_dialogues", "coach_id")):
        op.create_index(op.f(f"ix_{table}_{column}"), table, [column])


def downgrade() -> None:
    for table in ("coach_dialogues", "programme_runs", "measure_values", "measures"):
        op.drop_table(table)
    if op.get_bind().dialect.name != "sqlite":  # see 0009: the columns stay there
        op.drop_column("assignments", "done_at")
        for column in ("programme_run_id", "measure_id"):
            op.drop_index(op.f(f"ix_assignments_{column}"), "assignments")
            op.drop_column("assignments", column)
