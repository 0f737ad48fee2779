"""Privacy, the remainder (issue 23): encryption keys recorded by fingerprint; which question
an answer belongs to, and a goal's ratings, become (encrypted) text.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-04

``key_fingerprints``: the keys the data may be under (``bot/store/keys.py``).
``users.last_seen_at``: when a client last wrote (or a coach's link with them ended), from
which the retention of their history counts; filled from their last answer.
``answers.marker``: the variable's name in plain text for the few answers the platform looks
up (``bot/coaching/markers.py``), filled here from the rows already there; ``dialogue_id``,
``step_id`` and ``variable`` become text, encrypted from now on (``coachbot admin reencrypt``
encrypts the rows already there). ``goals.baseline/current/target`` become text (encrypted)
and lose their range checks (the scale answer keeps them in range). ``coach_events.kind``
becomes (encrypted) text without its check, and crisis events already notified go.
``invites.code`` becomes ``code_hash``: the SHA-256 of each code. A downgrade works only on a
database without encrypted values in those columns, and leaves invites hashed (unusable).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: bot/coaching/markers.py ANSWER_MARKERS as of this revision.
_MARKERS = ("checkin.mood", "goal.baseline", "review.current", "exercise.status")
_RATINGS = ("baseline", "current", "target")
_EVENT_KINDS = "kind IN ('exercise_done', 'exercise_partly', 'exercise_skipped', 'crisis')"


def upgrade() -> None:
    op.create_table(
        "key_fingerprints",
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("fingerprint", name=op.f("pk_key_fingerprints")),
    )
    sqlite = op.get_bind().dialect.name == "sqlite"
    # In place, never batch mode: on SQLite that recreates `users`, and dropping the old
    # table deletes every row that refers to it (ON DELETE CASCADE).
    op.add_column("users", sa.Column("last_seen_at", sa.DateTime(timezone=True),
                                     nullable=True))
    op.execute("UPDATE users SET last_seen_at = (SELECT max(answered_at) FROM answers "
               "WHERE answers.user_id = users.id) WHERE consent_at IS NOT NULL")
    op.add_column("answers", sa.Column("marker", sa.String(64), nullable=True))
    answers = sa.table("answers", sa.column("marker", sa.String), sa.column("variable",
                                                                               sa.String))
    op.execute(answers.update().where(answers.c.variable.in_(_MARKERS))
               .values(marker=answers.c.variable))
    op.drop_index(op.f("ix_answers_user_id_variable_answered_at"), table_name="answers")
    op.create_index(op.f("ix_answers_user_id_marker_answered_at"), "answers",
                    ["user_id", "marker", "answered_at"])
    if not sqlite:  # SQLite does not hold a VARCHAR to its length: nothing to change there
        for column in ("dialogue_id", "step_id", "variable"):
            op.alter_column("answers", column, type_=sa.Text(), existing_type=sa.String(128),
                            existing_nullable=False)
    # Nothing refers to goals, so batch mode may recreate it on SQLite.
    with op.batch_alter_table("goals") as batch:
        for column in _RATINGS:
            batch.drop_constraint(op.f(f"ck_goals_{column}"), type_="check")
            batch.alter_column(column, type_=sa.Text(), existing_type=sa.Integer(),
                               existing_nullable=True,
                               postgresql_using=f"{column}::text")
    # Nothing refers to coach_events or invites either.
    op.execute("DELETE FROM coach_events WHERE kind = 'crisis' AND notified_at IS NOT NULL")
    with op.batch_alter_table("coach_events") as batch:
        batch.drop_constraint(op.f("ck_coach_events_kind"), type_="check")
        batch.alter_column("kind", type_=sa.Text(), existing_type=sa.String(32),
                           existing_nullable=False)
    bind = op.get_bind()
    invites = sa.table("invites", sa.column("code", sa.String))
    for (code,) in bind.execute(sa.select(invites.c.code)).all():
        bind.execute(invites.update().where(invites.c.code == code)
                     .values(code=hashlib.sha256(code.encode("utf-8")).hexdigest()))
    with op.batch_alter_table("invites") as batch:
        batch.alter_column("code", new_column_name="code_hash", existing_type=sa.String(64),
                           existing_nullable=False)


def downgrade() -> None:
    with op.batch_alter_table("invites") as batch:
        batch.alter_column("code_hash", new_column_name="code", existing_type=sa.String(64),
                           existing_nullable=False)
    with op.batch_alter_table("coach_events") as batch:
        batch.alter_column("kind", type_=sa.String(32), existing_type=sa.Text(),
                           existing_nullable=False)
        batch.create_check_constraint(op.f("ck_coach_events_kind"), _EVENT_KINDS)
    with op.batch_alter_table("goals") as batch:
        for column in _RATINGS:
            batch.alter_column(column, type_=sa.Integer(), existing_type=sa.Text(),
                               existing_nullable=True,
                               postgresql_using=f"{column}::integer")
            batch.create_check_constraint(op.f(f"ck_goals_{column}"),
                                          f"{column} BETWEEN 1 AND 10")
    if op.get_bind().dialect.name != "sqlite":
        for column in ("dialogue_id", "step_id", "variable"):
            op.alter_column("answers", column, type_=sa.String(128), existing_type=sa.Text(),
                            existing_nullable=False)
    op.drop_index(op.f("ix_answers_user_id_marker_answered_at"), table_name="answers")
    op.create_index(op.f("ix_answers_user_id_variable_answered_at"), "answers",
                    ["user_id", "variable", "answered_at"])
    with op.batch_alter_table("answers") as batch:
        batch.drop_column("marker")
    if op.get_bind().dialect.name != "sqlite":  # the column stays there: see upgrade()
        op.drop_column("users", "last_seen_at")
    op.drop_table("key_fingerprints")
