"""Migrations are the schema's only source, and they match the models."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import String, Text, inspect
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from bot.store import Base, Store, ensure_schema
from bot.store.engine import make_engine
from bot.store.migrate import alembic_config, current_revision, head_revision, upgrade
from tests.store.store_helpers import count, raw


async def upgrade_with(url: str, revision: str, *statements: str) -> None:
    """The database at ``revision`` with ``statements`` run on it (the rows a migration must
    keep), then upgraded to the head."""
    await upgrade(url, revision)
    engine = make_engine(url)
    try:
        async with engine.begin() as conn:
            for sql in statements:
                await conn.exec_driver_sql(sql)
    finally:
        await engine.dispose()
    await upgrade(url)


def _downgrade(connection: Connection, revision: str) -> None:
    cfg = alembic_config()
    cfg.attributes["connection"] = connection
    command.downgrade(cfg, revision)


def _diff(connection: Connection) -> list[Any]:
    ctx = MigrationContext.configure(
        connection, opts={"compare_type": True, "compare_server_default": True}
    )
    return [d for d in compare_metadata(ctx, Base.metadata)
            if not _sqlite_text_width(connection, d)]


def _sqlite_text_width(connection: Connection, diff: Any) -> bool:
    """VARCHAR(n) against TEXT on SQLite: the same storage there (no length is enforced), and
    0005 leaves such columns alone on SQLite rather than recreate `users` (see 0005)."""
    if connection.dialect.name != "sqlite" or not isinstance(diff, list):
        return False
    return all(d[0] == "modify_type" and isinstance(d[5], String)
               and isinstance(getattr(d[6], "impl", d[6]), Text)
               for d in diff)


async def test_no_drift_between_migrations_and_models(empty_db_url: str) -> None:
    await upgrade(empty_db_url)
    engine = make_engine(empty_db_url)
    try:
        async with engine.connect() as conn:
            assert await conn.run_sync(_diff) == []
    finally:
        await engine.dispose()


async def test_ensure_schema_is_idempotent_and_concurrency_safe(empty_db_url: str) -> None:
    assert head_revision() == "0022"
    assert await current_revision(empty_db_url) is None
    await asyncio.gather(*(ensure_schema(empty_db_url) for _ in range(4)))
    await ensure_schema(empty_db_url)
    assert await current_revision(empty_db_url) == "0022"


async def test_start_creates_the_database_from_any_cwd(
    empty_db_url: str, tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    store = Store(empty_db_url)
    await store.start()
    await store.start()  # idempotent
    try:
        async with store.turn(1) as t:
            t.set_state({"ok": True})
        assert await count(store, "conversations") == 1
    finally:
        await store.close()


async def test_default_sqlite_url_is_relative_to_cwd(tmp_path: Path, monkeypatch: Any) -> None:
    from bot.store import DEFAULT_URL, database_url

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("COACHBOT_DATABASE_URL", raising=False)
    assert database_url() == DEFAULT_URL
    store = Store(database_url())
    await store.start()
    await store.close()
    assert (tmp_path / "coachbot.db").exists()
    assert os.environ.get("COACHBOT_DATABASE_URL") is None


async def test_0004_keeps_rows_and_adds_minutes_kinds_and_cancelled(empty_db_url: str) -> None:
    """0003 -> 0004: users keep their hour (minute 0), outbox rows become 'message' rows with
    no part sent, and 'cancelled' is a status from then on."""
    await upgrade_with(
        empty_db_url, "0003",
        "INSERT INTO users (id, checkin_hour, created_at) VALUES "
        "(1, 7, '2026-12-01 00:00:00')",
        "INSERT INTO outbox (user_id, chat_id, payload, created_at, next_attempt_at) "
        "VALUES (1, 1, '{}', '2026-12-01 00:00:00', '2026-12-01 00:00:00')",
    )
    store = Store(empty_db_url)
    await store.start()
    try:
        user = await store.get_user(1)
        assert user is not None and (user.checkin_hour, user.checkin_minute) == (7, 0)
        assert await count(store, "outbox", "kind = 'message' AND parts_sent = 0") == 1
        async with store.engine.begin() as conn:
            await conn.exec_driver_sql("UPDATE outbox SET status = 'cancelled'")
            await conn.exec_driver_sql("UPDATE users SET checkin_minute = 30")
        assert await count(store, "outbox", "status = 'cancelled'") == 1
        with pytest.raises(IntegrityError):
            async with store.engine.begin() as conn:
                await conn.exec_driver_sql("UPDATE users SET checkin_minute = 60")
    finally:
        await store.close()


async def test_0006_keeps_rows_and_allows_the_caring_check_in(empty_db_url: str) -> None:
    """0004 -> 0006: users and their planned check-ins stay (users is never recreated, which
    on SQLite would cascade-delete every row referring to it); 'care' is a kind from then on."""
    await upgrade_with(
        empty_db_url, "0004",
        "INSERT INTO users (id, created_at) VALUES (1, '2026-12-01 00:00:00')",
        "INSERT INTO planned_checkins (user_id, kind, ref, due_at, status) "
        "VALUES (1, 'daily', '', '2026-12-02 09:00:00', 'planned')",
    )
    store = Store(empty_db_url)
    await store.start()
    try:
        user = await store.get_user(1)
        assert user is not None and user.crisis_pause_until is None
        assert await count(store, "planned_checkins", "kind = 'daily'") == 1
        async with store.engine.begin() as conn:
            await conn.exec_driver_sql("UPDATE planned_checkins SET kind = 'care'")
        with pytest.raises(IntegrityError):
            async with store.engine.begin() as conn:
                await conn.exec_driver_sql("UPDATE planned_checkins SET kind = 'other'")
    finally:
        await store.close()


async def test_0007_keeps_rows_hashes_invites_and_marks_answers(empty_db_url: str) -> None:
    """0006 -> 0007: goals keep their ratings (now text), answers of lookup variables get
    their marker, invite codes are hashed (the code still works), notified crisis events go,
    and a client's last answer becomes when they were last seen."""
    import hashlib

    from sqlalchemy import select

    from bot.coaching import links
    from bot.store import Answer, Goal

    await upgrade_with(
        empty_db_url, "0006",
        "INSERT INTO users (id, created_at, consent_at, is_coach) VALUES "
        "(1, '2026-12-01 00:00:00', '2026-12-01 00:00:00', true), "
        "(2, '2026-12-01 00:00:00', '2026-12-01 00:00:00', false)",
        "INSERT INTO goals (user_id, title, baseline, current, target, status, "
        "created_at) VALUES (2, 'Run', 3, 4, 8, 'active', '2026-12-01 00:00:00')",
        "INSERT INTO answers (user_id, dialogue_id, step_id, variable, value, "
        "answered_at) VALUES (2, 'daily_checkin', 'mood', 'checkin.mood', '3', "
        "'2026-12-02 08:00:00'), (2, 'daily_checkin', 'low_mood', "
        "'checkin.stop_today', 'true', '2026-12-02 08:01:00')",
        "INSERT INTO invites (code, coach_id, created_at, expires_at) VALUES "
        "('the-code', 1, '2026-12-01 00:00:00', '2099-01-01 00:00:00')",
        "INSERT INTO coach_events (coach_id, client_id, kind, created_at, notified_at) "
        "VALUES (1, 2, 'crisis', '2026-12-01 00:00:00', '2026-12-01 00:01:00'), "
        "(1, 2, 'exercise_done', '2026-12-01 00:00:00', '2026-12-01 00:01:00')",
    )
    store = Store(empty_db_url)
    await store.start()
    try:
        async with store.sessionmaker() as s:
            goal = (await s.scalars(select(Goal))).one()
            assert (goal.baseline, goal.current, goal.target) == (3, 4, 8)
            markers = (await s.execute(select(Answer.variable, Answer.marker)
                                       .order_by(Answer.id))).all()
            assert [tuple(m) for m in markers] == [("checkin.mood", "checkin.mood"),
                                                   ("checkin.stop_today", None)]
            check = await links.invite_status(s, "the-code", 2, goal.created_at)
            assert check.valid and check.coach_id == 1
        stored = await raw(store, "SELECT code_hash FROM invites")
        assert stored == [(hashlib.sha256(b"the-code").hexdigest(),)]
        assert await count(store, "coach_events") == 1
        user = await store.get_user(2)
        assert user is not None and user.last_seen_at is not None
        assert user.last_seen_at.isoformat().startswith("2026-12-02T08:01")
    finally:
        await store.close()


async def test_0016_hashes_group_codes_and_plans_linked_chats_questions(empty_db_url: str) -> None:
    """0011 -> 0016: a group's join code is hashed (the link still works, for 14 days),
    and a group whose chat is linked gets its weekly question planned."""
    from datetime import UTC, datetime, timedelta

    from sqlalchemy import select

    from bot.coaching import groups
    from bot.store import Group, PlannedCheckin

    await upgrade_with(
        empty_db_url, "0011",
        "INSERT INTO users (id, created_at, consent_at, is_coach, time_zone) VALUES "
        "(1, '2026-12-01 00:00:00', '2026-12-01 00:00:00', true, 'Europe/Rome'), "
        "(2, '2026-12-01 00:00:00', '2026-12-01 00:00:00', false, 'UTC')",
        "INSERT INTO groups (coach_id, name, kind, invite_code, created_at, chat_id, "
        "chat_locale) VALUES (1, 'Team', 'team', 'the-code', '2026-12-01 00:00:00', "
        "-500, 'it'), (1, 'Cohort', 'cohort', 'other-code', '2026-12-01 00:00:00', "
        "NULL, 'en')",
    )
    store = Store(empty_db_url)
    await store.start()
    try:
        now = datetime.now(UTC)
        async with store.sessionmaker() as s, s.begin():
            team = await groups.group_for_code(s, "the-code", 2, now)
            assert team.name == "Team" and team.code_hash != "the-code"
            assert now + timedelta(days=13) < team.code_expires_at <= now + timedelta(days=14)
            planned = (await s.execute(select(PlannedCheckin.user_id, PlannedCheckin.ref,
                                              PlannedCheckin.due_at))).all()
            assert [(u, r) for u, r, _ in planned] == [(1, str(team.id))]
            assert planned[0][2] == groups.next_question_due(now, "Europe/Rome")
            assert (await s.scalars(select(Group.weekly_question))).all() == [True, True]
    finally:
        await store.close()


async def test_0017_gives_every_coach_an_hour_of_reminder_lead_and_keeps_it_in_range(
        empty_db_url: str) -> None:
    """0016 -> 0017: existing users keep their rows, with the one-hour lead; a lead out of
    range is refused by the database."""
    from sqlalchemy.exc import IntegrityError

    await upgrade_with(
        empty_db_url, "0016",
        "INSERT INTO users (id, created_at, is_coach) VALUES "
        "(1, '2026-12-01 00:00:00', true), (2, '2026-12-01 00:00:00', false)",
    )
    engine = make_engine(empty_db_url)
    try:
        async with engine.begin() as conn:
            leads = (await conn.exec_driver_sql(
                "SELECT id, session_reminder_minutes FROM users ORDER BY id")).all()
            assert [tuple(row) for row in leads] == [(1, 60), (2, 60)]
            await conn.exec_driver_sql(
                "UPDATE users SET session_reminder_minutes = 1440 WHERE id = 1")
        with pytest.raises(IntegrityError):
            async with engine.begin() as conn:
                await conn.exec_driver_sql(
                    "UPDATE users SET session_reminder_minutes = 0 WHERE id = 1")
    finally:
        await engine.dispose()


async def test_0018_keeps_goals_with_no_day_for_their_earlier_rating(empty_db_url: str) -> None:
    """0017 -> 0018: a goal rated before keeps its row, and no day is made up for its rating
    (the look back then says "latest", never "today")."""
    await upgrade_with(
        empty_db_url, "0017",
        "INSERT INTO users (id, created_at) VALUES (1, '2026-12-01 00:00:00')",
        "INSERT INTO goals (id, user_id, title, status, created_at) VALUES "
        "(1, 1, 'x', 'active', '2026-12-01 00:00:00')",
    )
    engine = make_engine(empty_db_url)
    try:
        async with engine.begin() as conn:
            rows = (await conn.exec_driver_sql("SELECT id, current_at FROM goals")).all()
            assert [tuple(row) for row in rows] == [(1, None)]
    finally:
        await engine.dispose()


async def test_0019_keeps_the_outbox_and_allows_held_rows(empty_db_url: str) -> None:
    """0018 -> 0019: queued rows stay as they were; 'held' is a status from then on, and
    the check still refuses any other."""
    await upgrade_with(
        empty_db_url, "0018",
        "INSERT INTO users (id, created_at) VALUES (1, '2026-12-01 00:00:00')",
        "INSERT INTO outbox (user_id, chat_id, payload, created_at, next_attempt_at) "
        "VALUES (1, 2, '{}', '2026-12-01 00:00:00', '2026-12-01 00:00:00')",
    )
    store = Store(empty_db_url)
    await store.start()
    try:
        assert await count(store, "outbox", "status = 'pending' AND chat_id = 2") == 1
        async with store.engine.begin() as conn:
            await conn.exec_driver_sql("UPDATE outbox SET status = 'held'")
        assert await count(store, "outbox", "status = 'held'") == 1
        with pytest.raises(IntegrityError):
            async with store.engine.begin() as conn:
                await conn.exec_driver_sql("UPDATE outbox SET status = 'waiting'")
    finally:
        await store.close()


async def test_0020_keeps_the_goals_none_of_them_held(empty_db_url: str) -> None:
    """0019 -> 0020: every goal stays; none is held until the client chooses it."""
    await upgrade_with(
        empty_db_url, "0019",
        "INSERT INTO users (id, created_at) VALUES (1, '2026-12-01 00:00:00')",
        "INSERT INTO goals (user_id, title, status, created_at) "
        "VALUES (1, 'sealed', 'active', '2026-12-01 00:00:00')",
    )
    store = Store(empty_db_url)
    await store.start()
    try:
        assert await count(store, "goals", "user_id = 1 AND NOT holding") == 1
    finally:
        await store.close()


async def test_0021_keeps_the_planned_rows_and_allows_coming_back_later(
        empty_db_url: str) -> None:
    """0020 -> 0021: planned rows stay; 'later' is a kind from then on, and the check still
    refuses any other; back down, the 'later' rows go and the check refuses it again."""
    await upgrade_with(
        empty_db_url, "0020",
        "INSERT INTO users (id, created_at) VALUES (1, '2026-12-01 00:00:00')",
        "INSERT INTO planned_checkins (user_id, kind, ref, due_at, status) "
        "VALUES (1, 'daily', '', '2026-12-02 08:00:00', 'planned')",
    )
    store = Store(empty_db_url)
    await store.start()
    try:
        assert await count(store, "planned_checkins", "kind = 'daily'") == 1
        async with store.engine.begin() as conn:
            await conn.exec_driver_sql(
                "INSERT INTO planned_checkins (user_id, kind, ref, due_at, status) "
                "VALUES (1, 'later', 'energy_audit:status', '2026-12-02 19:00:00', 'planned')")
        assert await count(store, "planned_checkins", "kind = 'later'") == 1
        with pytest.raises(IntegrityError):
            async with store.engine.begin() as conn:
                await conn.exec_driver_sql("UPDATE planned_checkins SET kind = 'soon'")
    finally:
        await store.close()
    engine = make_engine(empty_db_url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(_downgrade, "0020")
            left = (await conn.exec_driver_sql(
                "SELECT kind FROM planned_checkins")).scalars().all()
        assert left == ["daily"]
    finally:
        await engine.dispose()


async def test_0022_keeps_every_user_on_every_day_and_back(empty_db_url: str) -> None:
    """0021 -> 0022: every user keeps their row, with no chosen days (every day); a mask
    outside 1..127 is refused; back down, the column goes and the rows stay."""
    await upgrade_with(
        empty_db_url, "0021",
        "INSERT INTO users (id, created_at) VALUES (1, '2026-12-01 00:00:00'), "
        "(2, '2026-12-01 00:00:00')",
        "INSERT INTO goals (user_id, title, status, created_at) "
        "VALUES (1, 'sealed', 'active', '2026-12-01 00:00:00')",
    )
    engine = make_engine(empty_db_url)
    try:
        async with engine.begin() as conn:
            days = (await conn.exec_driver_sql(
                "SELECT id, checkin_days FROM users ORDER BY id")).all()
            assert [tuple(row) for row in days] == [(1, None), (2, None)]
            await conn.exec_driver_sql("UPDATE users SET checkin_days = 31 WHERE id = 1")
        for bad in (0, 128):
            with pytest.raises(IntegrityError):
                async with engine.begin() as conn:
                    await conn.exec_driver_sql(
                        f"UPDATE users SET checkin_days = {bad} WHERE id = 2")
        async with engine.begin() as conn:
            await conn.run_sync(_downgrade, "0021")
            users = (await conn.exec_driver_sql("SELECT id FROM users ORDER BY id")).all()
            assert [row[0] for row in users] == [1, 2]
            assert await count_in(conn, "goals") == 1
            columns = await conn.run_sync(
                lambda sync: [c["name"] for c in inspect(sync).get_columns("users")])
            assert "checkin_days" not in columns
        await upgrade(empty_db_url)
        async with engine.begin() as conn:
            days = (await conn.exec_driver_sql(
                "SELECT checkin_days FROM users WHERE id = 1")).scalar()
            assert days is None
    finally:
        await engine.dispose()


async def count_in(conn: Any, table: str) -> int:
    return int((await conn.exec_driver_sql(f"SELECT count(*) FROM {table}")).scalar())
