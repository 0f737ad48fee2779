"""Encryption at rest of the client's free text."""

from __future__ import annotations

import json

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import select, text

from bot.store import DecryptionError, Goal, KeyMismatchError, Outbox, Store
from tests.store.store_helpers import raw

SECRET = "I feel anxious about my sister"


async def _write_secret(store: Store) -> None:
    async with store.turn(21, update_id=1) as t:
        t.set_state({"vars": {"checkin.note": SECRET}})
        t.record_answer("checkin", "note", "checkin.note", SECRET)
        t.enqueue(21, {"text": f"You said: {SECRET}"})
        t.session.add(Goal(user_id=21, title=SECRET, why=SECRET + " (why)", baseline=3))


async def _raw_values(store: Store) -> list[str]:
    rows = await raw(store, "SELECT state FROM conversations WHERE user_id = 21")
    rows += await raw(store, "SELECT value FROM answers WHERE user_id = 21")
    rows += await raw(store, "SELECT payload FROM outbox WHERE user_id = 21")
    rows += await raw(store, "SELECT title FROM goals WHERE user_id = 21")
    rows += await raw(store, "SELECT why FROM goals WHERE user_id = 21")
    return [r[0] for r in rows]


async def _read_back(store: Store) -> None:
    async with store.turn(21) as t:
        assert t.state == {"vars": {"checkin.note": SECRET}}
        goal = (await t.session.scalars(select(Goal))).one()
        assert (goal.title, goal.why) == (SECRET, SECRET + " (why)")
        outbox = (await t.session.scalars(select(Outbox))).one()
        assert outbox.payload == {"text": f"You said: {SECRET}"}
    export = await store.export_user(21)
    assert export["answers"][0]["value"] == SECRET


async def test_encrypted_at_rest_and_transparent(db_url: str) -> None:
    key = Fernet.generate_key().decode()
    store = Store(db_url, encryption_key=key)
    await store.start()
    try:
        assert key not in repr(store)
        await _write_secret(store)
        values = await _raw_values(store)
        assert len(values) == 5
        for value in values:
            assert value.startswith("enc:v1:")
            assert "anxious" not in value
        await _read_back(store)
    finally:
        await store.close()

    # Without the key, or with another, the store does not start (tests/store/test_keys.py).
    other = Fernet.generate_key().decode()
    for wrong_key in (None, other):
        with pytest.raises(KeyMismatchError):
            await Store(db_url, encryption_key=wrong_key).start()
    # Past that check (the fingerprints lost), data still cannot be read rather than
    # returning ciphertext.
    keyed = Store(db_url, encryption_key=key)
    await keyed.start()
    async with keyed.engine.begin() as conn:
        await conn.execute(text("DELETE FROM key_fingerprints"))
    await keyed.close()
    for wrong_key in (None, other):
        wrong = Store(db_url, encryption_key=wrong_key)
        await wrong.start()
        try:
            with pytest.raises(DecryptionError):
                async with wrong.turn(21):
                    pass
        finally:
            await wrong.close()
    # A rotated key list (new, old) still reads old data.
    rotated = Store(db_url, encryption_key=f"{other},{key}")
    await rotated.start()
    try:
        await _read_back(rotated)
    finally:
        await rotated.close()


async def test_plain_without_key(store: Store) -> None:
    await _write_secret(store)
    state, answer, payload, title, why = await _raw_values(store)
    assert json.loads(state) == {"vars": {"checkin.note": SECRET}}
    assert json.loads(answer) == SECRET
    assert json.loads(payload) == {"text": f"You said: {SECRET}"}
    assert (title, why) == (SECRET, SECRET + " (why)")
    await _read_back(store)


async def test_plaintext_written_before_a_key_stays_readable(db_url: str) -> None:
    plain = Store(db_url)
    await plain.start()
    await _write_secret(plain)
    await plain.close()
    keyed = Store(db_url, encryption_key=Fernet.generate_key().decode())
    await keyed.start()
    try:
        await _read_back(keyed)
    finally:
        await keyed.close()


async def test_names_and_coaches_texts_are_encrypted_too(db_url: str) -> None:
    """Review M7: first names and a coach's own exercises were plain text."""
    from bot.store import Exercise

    store = Store(db_url, encryption_key=Fernet.generate_key().decode())
    await store.start()
    try:
        async with store.turn(22) as t:
            t.user.first_name = "Zoravka"
            t.session.add(Exercise(coach_id=22, slug="mine", title="About Zoravka's divorce",
                                   instructions="Write to Zoravka's sister", questions=[]))
        stored = await raw(store, "SELECT first_name FROM users WHERE id = 22")
        stored += await raw(store, "SELECT title, instructions FROM exercises")
        assert "Zoravka" not in repr(stored)
        assert (await store.get_user(22)).first_name == "Zoravka"  # type: ignore[union-attr]
        async with store.sessionmaker() as session:
            exercise = (await session.scalars(select(Exercise))).one()
        assert (exercise.title, exercise.instructions) == (
            "About Zoravka's divorce", "Write to Zoravka's sister")
    finally:
        await store.close()


async def test_sqlite_overwrites_what_is_deleted(tmp_path: object) -> None:
    """Review M7: an erased client's words must not linger in the file's free pages."""
    store = Store(f"sqlite+aiosqlite:///{tmp_path}/c.db")
    await store.start()
    try:
        assert (await raw(store, "PRAGMA secure_delete")) == [(1,)]
    finally:
        await store.close()
