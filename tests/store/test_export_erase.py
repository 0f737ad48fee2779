"""Export and erase of one user, in every role."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta

from sqlalchemy import ForeignKey

from bot.store import (
    Assignment,
    Base,
    CoachEvent,
    CoachLink,
    Exercise,
    Goal,
    Invite,
    PlannedCheckin,
    Store,
)
from bot.store.models import ADDRESS_COLUMNS, USER_COLUMNS
from tests.store.store_helpers import count

ME, MY_COACH, MY_CLIENT = 31, 32, 33
NOW = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)


def _user_refs() -> set[tuple[str, str]]:
    """Every column in the schema that refers to a user, found from the metadata."""
    refs = {("users", "id")}
    for table in Base.metadata.sorted_tables:
        for col in table.columns:
            fks: set[ForeignKey] = col.foreign_keys
            if any(fk.column.table.name == "users" for fk in fks):
                refs.add((table.name, col.name))
    return refs


def test_user_columns_cover_the_schema() -> None:
    assert set(USER_COLUMNS) == _user_refs() | set(ADDRESS_COLUMNS)


async def _populate(store: Store) -> None:
    for uid in (MY_COACH, MY_CLIENT):
        async with store.turn(uid, update_id=uid * 100) as t:
            t.set_state({"who": uid})
    async with store.turn(ME, update_id=1) as t:
        t.user.first_name = "Me"
        t.user.is_coach = True
        t.set_state({"vars": {"goal.title": "run"}})
        t.record_answer("goal", "title", "goal.title", "run a 10k")
        t.enqueue(ME, {"text": "Great goal"})
        s = t.session
        s.add(Goal(user_id=ME, title="run a 10k", why="health", due_on=date(2026, 6, 1)))
        s.add(CoachLink(coach_id=MY_COACH, client_id=ME, consent_at=NOW))
        s.add(CoachLink(coach_id=ME, client_id=MY_CLIENT, consent_at=NOW))
        s.add(Invite(code_hash="mine", coach_id=ME, expires_at=NOW + timedelta(days=7)))
        s.add(Invite(code_hash="used", coach_id=MY_COACH, expires_at=NOW, used_by=ME, used_at=NOW))
        ex = Exercise(coach_id=ME, slug="gratitude", title="Gratitude", questions=["q1"])
        s.add(ex)
        await t.flush()
        schedule = {"kind": "daily", "hour": 8, "days": 14}
        given = Assignment(
            coach_id=ME,
            client_id=MY_CLIENT,
            exercise_id=ex.id,
            schedule=schedule,
            starts_on=date(2026, 1, 5),
        )
        received = Assignment(
            coach_id=MY_COACH,
            client_id=ME,
            exercise_slug="breathing",
            schedule=schedule,
            starts_on=date(2026, 1, 5),
        )
        s.add_all([given, received])
        await t.flush()
        s.add(PlannedCheckin(user_id=ME, kind="daily", due_at=NOW))
        s.add(PlannedCheckin(user_id=ME, kind="exercise", ref=str(received.id), due_at=NOW))
        s.add(PlannedCheckin(user_id=MY_CLIENT, kind="exercise", ref=str(given.id), due_at=NOW))
        s.add(CoachEvent(coach_id=MY_COACH, client_id=ME, kind="crisis", created_at=NOW))
        s.add(CoachEvent(coach_id=ME, client_id=MY_CLIENT, kind="exercise_done", created_at=NOW))
    async with store.turn(ME, update_id=2) as t:
        pass


async def _rows_about(store: Store, uid: int) -> int:
    total = 0
    for table, col in sorted(_user_refs()):
        total += await count(store, table, f"{col} = :uid", uid=uid)
    return total


async def test_export_erase_export(store: Store) -> None:
    await _populate(store)
    before = await store.export_user(ME)
    json.dumps(before)  # JSON-serialisable
    assert before["users"][0]["first_name"] == "Me"
    assert before["conversations"][0]["state"] == {"vars": {"goal.title": "run"}}
    assert before["answers"][0]["value"] == "run a 10k"
    assert before["goals"][0]["title"] == "run a 10k"
    assert before["goals"][0]["due_on"] == "2026-06-01"
    assert len(before["coach_links"]) == 2
    assert {i["code_hash"] for i in before["invites"]} == {"mine", "used"}
    assert len(before["exercises"]) == 1
    assert len(before["assignments"]) == 2
    assert len(before["planned_checkins"]) == 2
    assert len(before["outbox"]) == 1
    assert {e["kind"] for e in before["coach_events"]} == {"crisis", "exercise_done"}
    assert {u["update_id"] for u in before["processed_updates"]} == {1, 2}
    assert await _rows_about(store, ME) > 0

    await store.erase_user(ME)

    after = await store.export_user(ME)
    assert all(after[name] == [] for name in dict.fromkeys(t for t, _ in USER_COLUMNS))
    assert await _rows_about(store, ME) == 0
    assert await store.get_user(ME) is None
    # Other people keep their own data; check-ins for the erased coach's exercise stop.
    for uid in (MY_COACH, MY_CLIENT):
        assert await store.get_user(uid) is not None
        async with store.turn(uid) as t:
            assert t.state == {"who": uid}
    assert await count(store, "planned_checkins", "status = 'cancelled'") == 1
    assert await count(store, "invites") == 0
    assert await count(store, "coach_events") == 0
    # Processed update ids stay (without the user) so redeliveries are still ignored.
    assert await count(store, "processed_updates", "update_id IN (1, 2)") == 2
    async with store.turn(ME, update_id=1) as t:
        assert t.duplicate
    assert await store.get_user(ME) is None


async def test_erase_unknown_user_is_a_no_op(store: Store) -> None:
    await store.erase_user(999)
    assert (await store.export_user(999))["users"] == []
