"""Seeding users, goals and due rows for the scheduler tests."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import insert

from bot.dialogue import load_dialogues
from bot.dialogue.model import DialogueSet
from bot.store import Assignment, Goal, PlannedCheckin, Store, User

DIALOGUES = Path(__file__).parent / "dialogues"


def dialogues() -> DialogueSet:
    return load_dialogues(DIALOGUES)


def now_utc() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def noon_zone(now: datetime) -> str:
    """A fixed-offset zone where it is around noon at ``now`` (so "today" is robust)."""
    offset = 12 - now.hour
    offset = offset - 24 if offset > 12 else offset
    return f"Etc/GMT{-offset:+d}"


async def add_users(store: Store, ids: range | list[int], *, now: datetime, zone: str = "UTC",
                    goal: bool = True, **fields: Any) -> None:
    users = [{"id": i, "time_zone": zone, "consent_at": now - timedelta(days=30),
              "created_at": now - timedelta(days=30), "reachable": True, **fields}
             for i in ids]
    async with store.sessionmaker() as session, session.begin():
        await session.execute(insert(User), users)
        if goal:
            await session.execute(insert(Goal), [
                {"user_id": i, "title": "Walk", "status": "active",
                 "created_at": now - timedelta(days=3)} for i in ids])


async def add_due(store: Store, ids: range | list[int], due: datetime, kind: str = "daily",
                  ref: str = "") -> None:
    async with store.sessionmaker() as session, session.begin():
        await session.execute(insert(PlannedCheckin), [
            {"user_id": i, "kind": kind, "ref": ref, "due_at": due, "status": "planned"}
            for i in ids])


async def add_assignment(store: Store, client: int, coach: int, *, slug: str,
                         schedule: dict[str, Any], starts_on: date) -> int:
    async with store.sessionmaker() as session, session.begin():
        a = Assignment(coach_id=coach, client_id=client, exercise_slug=slug, schedule=schedule,
                       starts_on=starts_on)
        session.add(a)
        await session.flush()
        return a.id
