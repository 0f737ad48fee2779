"""Statuses and kinds: one enum each, and the database refuses any other value."""

from __future__ import annotations

from enum import StrEnum

import pytest
from sqlalchemy import CheckConstraint, insert
from sqlalchemy.exc import IntegrityError

from bot.store import ActionSource, ActionStatus, SessionMode, SessionStatus, Store
from bot.store.kinds import (
    AddressForm,
    CheckinKind,
    CheckinStatus,
    GoalStatus,
    GroupKind,
    MeasureKind,
    NoteMedia,
    NoteShare,
    OutboxKind,
    OutboxStatus,
    ProgrammeStatus,
    Visibility,
    one_of,
)
from bot.store.models import Base, Outbox, User

COLUMNS: dict[tuple[str, str], type[StrEnum]] = {
    ("goals", "status"): GoalStatus,
    ("planned_checkins", "kind"): CheckinKind,
    ("planned_checkins", "status"): CheckinStatus,
    ("outbox", "status"): OutboxStatus,
    ("outbox", "kind"): OutboxKind,
    ("actions", "status"): ActionStatus,
    ("actions", "source"): ActionSource,
    ("coaching_sessions", "mode"): SessionMode,
    ("coaching_sessions", "status"): SessionStatus,
    ("group_sessions", "mode"): SessionMode,
    ("group_sessions", "status"): SessionStatus,
    ("groups", "kind"): GroupKind,
    ("group_members", "visibility"): Visibility,
    ("session_notes", "media"): NoteMedia,
    ("session_notes", "share"): NoteShare,
    ("measures", "kind"): MeasureKind,
    ("programme_runs", "status"): ProgrammeStatus,
    ("users", "address"): AddressForm,
}
# coach_events.kind (CoachEventKind) is encrypted at rest, so that a crisis event does not
# show as one: the code that records it checks it, the database cannot.


def test_every_status_and_kind_column_is_checked_against_its_enum() -> None:
    checks = {}
    for table in Base.metadata.tables.values():
        for constraint in table.constraints:
            if isinstance(constraint, CheckConstraint) and " IN (" in str(constraint.sqltext):
                column = str(constraint.sqltext).split(" IN (")[0]
                checks[(table.name, column)] = str(constraint.sqltext)
    assert checks == {key: one_of(key[1], enum) for key, enum in COLUMNS.items()}


def test_one_of_renders_the_enum_in_order() -> None:
    assert one_of("kind", OutboxKind) == "kind IN ('message', 'reply', 'urgent')"


async def test_the_database_refuses_a_status_outside_the_enum(store: Store) -> None:
    async with store.engine.begin() as connection:
        await connection.execute(insert(User).values(id=1, locale="en"))
    with pytest.raises(IntegrityError):
        async with store.engine.begin() as connection:
            await connection.execute(insert(Outbox).values(
                user_id=1, chat_id=1, payload={"text": "x"}, status="lost"))
    async with store.engine.begin() as connection:  # a member is its string
        await connection.execute(insert(Outbox).values(
            user_id=1, chat_id=1, payload={"text": "x"}, status=OutboxStatus.SENT))


async def test_the_database_refuses_an_address_form_outside_the_enum(store: Store) -> None:
    async with store.engine.begin() as connection:
        await connection.execute(insert(User).values(id=1, locale="he",
                                                     address=AddressForm.FEMININE))
        await connection.execute(insert(User).values(id=2, locale="he"))  # not chosen: NULL
    with pytest.raises(IntegrityError):
        async with store.engine.begin() as connection:
            await connection.execute(insert(User).values(id=3, locale="he", address="other"))
