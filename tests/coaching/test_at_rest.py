"""What the database shows of coaching to someone who reads it (review M7): not that a client
had a crisis, and no usable invite code."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

from cryptography.fernet import Fernet
from sqlalchemy.ext.asyncio import AsyncSession

from bot.coaching import events, links
from bot.store import Store, User
from tests.store.store_helpers import raw

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
COACH, CLIENT = 1, 2


async def _keyed(db_url: str) -> Store:
    store = Store(db_url, encryption_key=Fernet.generate_key().decode())
    await store.start()
    return store


async def _linked(store: Store) -> str:
    async with store.sessionmaker() as s, s.begin():
        s.add_all([User(id=COACH, first_name="Carla", is_coach=True, consent_at=NOW),
                   User(id=CLIENT, first_name="Ana", consent_at=NOW)])
        await s.flush()
        code = await links.create_invite(s, COACH, NOW)
        await links.accept_invite(s, code, CLIENT, NOW)
    return code


async def test_the_events_table_does_not_say_a_client_had_a_crisis(db_url: str) -> None:
    store = await _keyed(db_url)
    try:
        await _linked(store)

        async def happenings(s: AsyncSession) -> None:
            await events.notify_coaches(s, CLIENT, "exercise_done", NOW)
            await events.notify_coaches(s, CLIENT, "crisis", NOW)

        async with store.sessionmaker() as s, s.begin():
            await happenings(s)
        pending = await raw(store, "SELECT kind FROM coach_events")
        assert len(pending) == 2 and "crisis" not in repr(pending)
        assert all(kind.startswith("enc:v1:") for (kind,) in pending)
        async with store.sessionmaker() as s, s.begin():
            digests = await events.due_digests(s, NOW)
        assert sorted(d.crisis for d in digests) == [False, True]
        # Told: the crisis event is gone, the exercise one stays (notified) for its lifetime.
        left = await raw(store, "SELECT notified_at FROM coach_events")
        assert len(left) == 1 and left[0][0] is not None
        async with store.sessionmaker() as s, s.begin():
            await events.notify_coaches(s, CLIENT, "exercise_partly", NOW)
        async with store.sessionmaker() as s, s.begin():
            assert await events.due_digests(s, NOW + timedelta(minutes=5)) == []  # batched
        async with store.sessionmaker() as s, s.begin():
            [later] = await events.due_digests(s, NOW + timedelta(hours=1))
        assert dict(later.names_by_kind) == {"exercise_partly": ("Ana",)}
    finally:
        await store.close()


async def test_invite_codes_are_stored_hashed(db_url: str) -> None:
    store = await _keyed(db_url)
    try:
        used = await _linked(store)
        async with store.sessionmaker() as s, s.begin():
            fresh = await links.create_invite(s, COACH, NOW)
        stored = {h for (h,) in await raw(store, "SELECT code_hash FROM invites")}
        assert stored == {hashlib.sha256(c.encode()).hexdigest() for c in (used, fresh)}
        async with store.sessionmaker() as s, s.begin():
            check = await links.invite_status(s, fresh, 3, NOW)
            assert check.valid and check.coach_id == COACH
            stolen = await links.invite_status(s, next(iter(stored)), 3, NOW)
            assert not stolen.valid  # what the database holds does not work as a code
    finally:
        await store.close()
