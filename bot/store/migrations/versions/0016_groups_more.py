"""Groups, the rest of issue 27: group sessions, hashed and expiring join links, the week's
question by itself.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-04

``group_sessions`` (a session of a whole group; each member's own copy is a
``coaching_sessions`` row with ``group_session_id``); ``planned_checkins.kind`` gains the
group session's rows and the week's question; ``groups.invite_code`` becomes ``code_hash``
(the SHA-256 of each code, as invites became in 0007) with ``code_expires_at`` (existing
links work 14 more days); ``groups.weekly_question``, and for each group whose chat is
linked, its first weekly question (the next Monday, 10:00 on its coach's clock).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_KINDS = ("'daily', 'weekly', 'exercise', 'care', 'session_reminder', 'session_prep', "
          "'session_recap', 'session_outcome', 'engagement_close'")
_OLD_KINDS = f"kind IN ({_KINDS})"
_NEW_KINDS = f"kind IN ({_KINDS}, 'group_session', 'group_chat', 'group_question')"
_EXISTING_LINKS_LAST = timedelta(days=14)


def _when(name: str, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _next_monday_ten(now: datetime, zone_name: str | None) -> datetime:
    """As ``groups.next_question_due`` (kept here: a migration does not import the app)."""
    try:
        zone = ZoneInfo(zone_name or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        zone = ZoneInfo("UTC")
    today: date = now.astimezone(zone).date()
    for ahead in range(8):
        day = today + timedelta(days=ahead)
        due = datetime.combine(day, time(10), zone).astimezone(UTC)
        if day.weekday() == 0 and due > now:
            return due
    raise AssertionError("a Monday comes within eight days")


def _swap_kind_check(check: str) -> None:
    with op.batch_alter_table("planned_checkins") as batch:
        batch.drop_constraint(op.f("ck_planned_checkins_kind"), type_="check")
        batch.create_check_constraint(op.f("ck_planned_checkins_kind"), check)


def upgrade() -> None:
    op.create_table(
        "group_sessions",
        sa.Column("id", _ID, nullable=False),
        sa.Column("group_id", _ID, nullable=False),
        sa.Column("coach_id", sa.BigInteger(), nullable=False),
        sa.Column("series", sa.String(length=32), nullable=True),
        sa.Column("local_start", sa.DateTime(timezone=False), nullable=False),
        sa.Column("zone", sa.String(length=64), nullable=False),
        _when("starts_at"),
        sa.Column("minutes", sa.Integer(), server_default="60", nullable=False),
        sa.Column("mode", sa.String(length=16), nullable=False),
        sa.Column("place", sa.Text(), nullable=True),
        sa.Column("status", sa.String(length=16), server_default="scheduled", nullable=False),
        _when("created_at"),
        sa.CheckConstraint("mode IN ('in_person', 'phone', 'video')",
                           name=op.f("ck_group_sessions_mode")),
        sa.CheckConstraint("status IN ('scheduled', 'cancelled', 'held', 'missed')",
                           name=op.f("ck_group_sessions_status")),
        sa.CheckConstraint("minutes BETWEEN 5 AND 600", name=op.f("ck_group_sessions_minutes")),
        sa.ForeignKeyConstraint(["group_id"], ["groups.id"],
                                name=op.f("fk_group_sessions_group_id_groups"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["coach_id"], ["users.id"],
                                name=op.f("fk_group_sessions_coach_id_users"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_group_sessions")),
    )
    op.create_index(op.f("ix_group_sessions_group_id"), "group_sessions", ["group_id"])
    op.create_index(op.f("ix_group_sessions_coach_id"), "group_sessions", ["coach_id"])
    op.create_index(op.f("ix_group_sessions_series"), "group_sessions", ["series"])
    op.create_index(op.f("ix_group_sessions_status_starts_at"), "group_sessions",
                    ["status", "starts_at"])
    # Batch mode for the foreign key on SQLite; the table is small (agreed sessions).
    with op.batch_alter_table("coaching_sessions") as batch:
        batch.add_column(sa.Column("group_session_id", _ID, nullable=True))
        batch.create_foreign_key(op.f("fk_coaching_sessions_group_session_id_group_sessions"),
                                 "group_sessions", ["group_session_id"], ["id"],
                                 ondelete="CASCADE")
        batch.create_index(op.f("ix_coaching_sessions_group_session_id"),
                           ["group_session_id"])
    _swap_kind_check(_NEW_KINDS)

    bind = op.get_bind()
    groups = sa.table("groups", sa.column("id", sa.BigInteger),
                      sa.column("invite_code", sa.String))
    expires = datetime.now(UTC) + _EXISTING_LINKS_LAST
    with op.batch_alter_table("groups") as batch:
        batch.add_column(_when("code_expires_at", nullable=True))
        batch.add_column(sa.Column("weekly_question", sa.Boolean(),
                                   server_default=sa.text("true"), nullable=False))
    for group_id, code in bind.execute(sa.select(groups.c.id, groups.c.invite_code)).all():
        bind.execute(sa.text("UPDATE groups SET invite_code = :hash, code_expires_at = :at "
                             "WHERE id = :id"),
                     {"hash": hashlib.sha256(code.encode("utf-8")).hexdigest(), "at": expires,
                      "id": group_id})
    with op.batch_alter_table("groups") as batch:
        batch.drop_constraint(op.f("uq_groups_invite_code"), type_="unique")
        batch.alter_column("invite_code", new_column_name="code_hash",
                           existing_type=sa.String(64), existing_nullable=False)
        batch.alter_column("code_expires_at", existing_type=sa.DateTime(timezone=True),
                           nullable=False)
    with op.batch_alter_table("groups") as batch:
        batch.create_unique_constraint(op.f("uq_groups_code_hash"), ["code_hash"])
    now = datetime.now(UTC)
    linked = bind.execute(sa.text(
        "SELECT groups.id, groups.coach_id, users.time_zone FROM groups "
        "JOIN users ON users.id = groups.coach_id WHERE groups.chat_id IS NOT NULL")).all()
    planned = sa.table("planned_checkins", sa.column("user_id", sa.BigInteger),
                       sa.column("kind", sa.String), sa.column("ref", sa.String),
                       sa.column("due_at", sa.DateTime(timezone=True)),
                       sa.column("status", sa.String))
    for group_id, coach_id, zone in linked:
        bind.execute(planned.insert().values(
            user_id=coach_id, kind="group_question", ref=str(group_id),
            due_at=_next_monday_ten(now, zone), status="planned"))


def downgrade() -> None:
    # Codes stay hashed: the old links do not work again (the coach makes new ones).
    with op.batch_alter_table("groups") as batch:
        batch.drop_constraint(op.f("uq_groups_code_hash"), type_="unique")
        batch.alter_column("code_hash", new_column_name="invite_code",
                           existing_type=sa.String(64), existing_nullable=False)
    with op.batch_alter_table("groups") as batch:
        batch.create_unique_constraint(op.f("uq_groups_invite_code"), ["invite_code"])
        batch.drop_column("weekly_question")
        batch.drop_column("code_expires_at")
    op.execute("DELETE FROM planned_checkins WHERE kind LIKE 'group_%'")
    _swap_kind_check(_OLD_KINDS)
    with op.batch_alter_table("coaching_sessions") as batch:
        batch.drop_index(op.f("ix_coaching_sessions_group_session_id"))
        batch.drop_constraint(op.f("fk_coaching_sessions_group_session_id_group_sessions"),
                              type_="foreignkey")
        batch.drop_column("group_session_id")
    op.drop_table("group_sessions")
