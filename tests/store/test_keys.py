"""Key fingerprints (replicas whose keys share none refuse to start) and re-encryption under
the first key (``coachbot admin reencrypt``), on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet, MultiFernet
from sqlalchemy import select

from bot.store import Goal, KeyMismatchError, Store
from bot.store.reencrypt import encrypted_columns, reencrypt
from bot.store.types import ENC_PREFIX, fingerprint
from tests.store.store_helpers import raw

OLD, NEW, OTHER = (Fernet.generate_key().decode() for _ in range(3))
SECRET = "I am afraid of my manager"


async def _started(url: str, key: str | None) -> Store:
    store = Store(url, encryption_key=key)
    await store.start()
    return store


async def _write(store: Store, user_id: int, text: str = SECRET) -> None:
    async with store.turn(user_id) as t:
        t.user.first_name = f"Name {user_id}"
        t.set_state({"variables": {"note": text}})
        t.record_answer("daily_checkin", "commit", "checkin.commitment", text)
        t.enqueue(user_id, {"text": text})
        t.session.add(Goal(user_id=user_id, title=text, why=text, baseline=3, target=8))


async def _read(store: Store, user_id: int) -> None:
    async with store.turn(user_id) as t:
        assert t.state == {"variables": {"note": SECRET}}
        assert t.user.first_name == f"Name {user_id}"
        goal = (await t.session.scalars(select(Goal).where(Goal.user_id == user_id))).one()
        assert (goal.title, goal.baseline, goal.target) == (SECRET, 3, 8)


async def _fingerprints(store: Store) -> set[str]:
    return {r[0] for r in await raw(store, "SELECT fingerprint FROM key_fingerprints")}


def test_a_fingerprint_names_a_key_without_revealing_it() -> None:
    assert fingerprint(OLD) == fingerprint(OLD) != fingerprint(NEW)
    assert len(fingerprint(OLD)) == 64 and OLD not in fingerprint(OLD)


async def test_replicas_whose_keys_share_none_refuse_to_start(db_url: str) -> None:
    first = await _started(db_url, OLD)
    try:
        await _write(first, 1)
        assert await _fingerprints(first) == {fingerprint(OLD)}
        with pytest.raises(KeyMismatchError, match="shares no key") as refused:
            await _started(db_url, OTHER)
        assert OTHER not in str(refused.value) and OLD not in str(refused.value)
        assert fingerprint(OLD)[:8] in str(refused.value)
        with pytest.raises(KeyMismatchError, match="not set"):
            await _started(db_url, None)
        assert await _fingerprints(first) == {fingerprint(OLD)}  # nothing recorded by them
    finally:
        await first.close()


async def test_a_plain_database_takes_a_key_and_then_holds_to_it(db_url: str) -> None:
    plain = await _started(db_url, None)
    await _write(plain, 1)
    await plain.close()
    keyed = await _started(db_url, OLD)  # plain text written before stays readable
    try:
        await _read(keyed, 1)
        assert await _fingerprints(keyed) == {fingerprint(OLD)}
    finally:
        await keyed.close()
    with pytest.raises(KeyMismatchError):
        await _started(db_url, None)


async def test_rotation_then_reencryption_then_the_old_key_goes(db_url: str) -> None:
    old = await _started(db_url, OLD)
    for user in range(1, 8):
        await _write(old, user)
    await old.close()

    # A new key first, the old one after: it starts beside the old key's replicas, reads
    # what they wrote and writes under the new key.
    rotated = await _started(db_url, f"{NEW},{OLD}")
    try:
        assert await _fingerprints(rotated) == {fingerprint(OLD), fingerprint(NEW)}
        await _read(rotated, 1)
        await _write(rotated, 8)
        still_old = await _started(db_url, OLD)  # shares OLD: may still run (with a warning)
        await still_old.close()

        # Interrupted after a first batch of one column, then run again to the end.
        class Stop(Exception):
            pass

        def stop(_: object) -> None:
            raise Stop

        with pytest.raises(Stop):
            await reencrypt(rotated.engine, f"{NEW},{OLD}", batch=3, report=stop)
        assert await _fingerprints(rotated) == {fingerprint(OLD), fingerprint(NEW)}
        results = await reencrypt(rotated.engine, f"{NEW},{OLD}", batch=3)
        assert all(r.unreadable == 0 for r in results)
        assert sum(r.rewritten for r in results) > 0
        again = await reencrypt(rotated.engine, f"{NEW},{OLD}", batch=3)
        assert sum(r.rewritten for r in again) == 0  # nothing left to do
        assert await _fingerprints(rotated) == {fingerprint(NEW)}
    finally:
        await rotated.close()

    # Every value is under the new key: the new key alone reads everything ...
    alone = await _started(db_url, NEW)
    try:
        for user in range(1, 9):
            await _read(alone, user)
        new = Fernet(NEW.encode())
        for table, column in encrypted_columns():
            for (value,) in await raw(alone, f"SELECT {column.name} FROM {table.name} "
                                             f"WHERE {column.name} IS NOT NULL"):
                assert value.startswith(ENC_PREFIX), (table.name, column.name)
                new.decrypt(value[len(ENC_PREFIX):].encode())
    finally:
        await alone.close()
    # ... and a replica left with the old key alone is refused.
    with pytest.raises(KeyMismatchError):
        await _started(db_url, OLD)


async def test_reencryption_encrypts_plain_text_written_before_the_key(db_url: str) -> None:
    plain = await _started(db_url, None)
    await _write(plain, 1)
    await plain.close()
    keyed = await _started(db_url, OLD)
    try:
        results = await reencrypt(keyed.engine, OLD, batch=2)
        assert {(r.table, r.column) for r in results if r.rewritten} >= {
            ("users", "first_name"), ("goals", "title"), ("goals", "baseline"),
            ("answers", "value"), ("answers", "step_id"),
            ("conversations", "state"), ("outbox", "payload")}
        stored = await raw(keyed, "SELECT title FROM goals")
        assert stored[0][0].startswith(ENC_PREFIX)
        await _read(keyed, 1)
    finally:
        await keyed.close()


async def test_reencryption_never_overwrites_a_newer_write(db_url: str) -> None:
    """A value the bot rewrites while a batch is being re-encrypted keeps the bot's value."""
    if db_url.startswith("sqlite"):
        pytest.skip("SQLite lets one writer in at a time: nothing can come in between")
    import asyncio
    import threading

    import bot.store.reencrypt as module

    old = await _started(db_url, OLD)
    await _write(old, 1)
    await old.close()
    rotated = await _started(db_url, f"{NEW},{OLD}")

    async def bot_writes() -> None:
        other = await _started(db_url, f"{NEW},{OLD}")
        try:
            async with other.turn(1) as t:
                t.set_state({"variables": {"note": "written meanwhile"}})
        finally:
            await other.close()

    def write_in_between() -> None:  # another process, in effect: its own loop and engine
        thread = threading.Thread(target=asyncio.run, args=(bot_writes(),))
        thread.start()
        thread.join()

    original = module.reseal
    wrote = False

    def reseal(stored: str, cipher: MultiFernet) -> str:
        nonlocal wrote
        plain = cipher.decrypt(stored[len(ENC_PREFIX):].encode())
        if not wrote and plain.startswith(b'{"variables"'):  # the conversation's state
            wrote = True
            write_in_between()
        return original(stored, cipher)

    try:
        module.reseal = reseal  # type: ignore[assignment]
        await reencrypt(rotated.engine, f"{NEW},{OLD}", batch=50)
        module.reseal = original
        assert wrote
        async with rotated.turn(1) as t:
            assert t.state == {"variables": {"note": "written meanwhile"}}
        results = await reencrypt(rotated.engine, f"{NEW},{OLD}")
        assert sum(r.rewritten for r in results) == 0  # the bot wrote under the new key
    finally:
        module.reseal = original
        await rotated.close()
