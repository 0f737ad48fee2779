"""Turns: first contact, atomic commit/rollback, duplicates, concurrency."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import fields
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import event, select, text, update

from bot.store import Answer, ConflictError, Conversation, Outbox, Store, Turn, TurnUser, User
from bot.store.types import utcnow
from tests.store.store_helpers import count


@contextmanager
def statements_run(store: Store) -> Iterator[list[list[str]]]:
    """The first three words of each statement the store runs inside the block."""
    statements: list[list[str]] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement.split()[:3])

    event.listen(store.engine.sync_engine, "before_cursor_execute", record)
    try:
        yield statements
    finally:
        event.remove(store.engine.sync_engine, "before_cursor_execute", record)


class Boom(Exception):
    pass


async def test_first_contact_creates_user(store: Store) -> None:
    assert await store.get_user(42) is None
    async with store.turn(42, update_id=1) as t:
        assert not t.duplicate
        assert t.user.id == 42
        assert t.state is None
    user = await store.get_user(42)
    assert user is not None
    assert (user.locale, user.time_zone, user.checkin_hour) == ("en", "UTC", 9)
    assert user.reachable is True and user.is_coach is False
    assert user.consent_at is None and user.paused_until is None
    assert user.created_at.tzinfo is not None and user.created_at.utcoffset() is not None
    assert user.created_at.tzinfo == UTC


async def test_times_come_back_in_utc_whatever_the_session_time_zone(store: Store) -> None:
    """On PostgreSQL the column type relies on the driver handing timestamptz back in UTC
    (it converts nothing per value): a session set to another zone must not change that."""
    async with store.turn(43) as t:
        t.user.paused_until = datetime(2026, 6, 1, 12, 30, tzinfo=UTC)
    async with store.engine.connect() as conn:
        if conn.dialect.name == "postgresql":
            await conn.execute(text("SET TIME ZONE 'Asia/Tokyo'"))
        paused, created = (await conn.execute(
            select(User.paused_until, User.created_at).where(User.id == 43))).one()
    assert paused == datetime(2026, 6, 1, 12, 30, tzinfo=UTC)
    assert paused.tzinfo is UTC and created.tzinfo is UTC


async def test_terminal_user_zero(store: Store) -> None:
    async with store.turn(0) as t:
        t.set_state({"hello": "terminal"})
    async with store.turn(0) as t:
        assert t.state == {"hello": "terminal"}
    assert await count(store, "users", "id = 0") == 1


async def test_user_changes_are_committed(store: Store) -> None:
    async with store.turn(5) as t:
        t.user.first_name = "Ada"
        t.user.time_zone = "Europe/Paris"
    user = await store.get_user(5)
    assert user is not None and (user.first_name, user.time_zone) == ("Ada", "Europe/Paris")


def test_turn_user_has_every_users_column() -> None:
    assert [f.name for f in fields(TurnUser)] == [c.name for c in User.__table__.c]


async def test_turn_writes_only_the_user_columns_it_changed(store: Store) -> None:
    async with store.turn(6):
        pass
    async with store.turn(6) as t:
        t.user.first_name = "Ada"
        # Someone else's write to another column in the same transaction (as making
        # yourself a coach does through the ORM) is not overwritten by the turn's read.
        await t.session.execute(update(User).where(User.id == 6).values(is_coach=True))
    user = await store.get_user(6)
    assert user is not None and (user.first_name, user.is_coach) == ("Ada", True)


async def test_turn_without_user_changes_writes_no_user_row(store: Store) -> None:
    async with store.turn(8) as t:
        t.user.first_name = "Ada"
    statements: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    event.listen(store.engine.sync_engine, "before_cursor_execute", record)
    try:
        async with store.turn(8) as t:
            t.user.first_name = "Ada"  # the same name again
            t.set_state({"step": 1})
    finally:
        event.remove(store.engine.sync_engine, "before_cursor_execute", record)
    assert not [s for s in statements if s.lstrip().upper().startswith("UPDATE USERS")]
    assert [s for s in statements if s.lstrip().upper().startswith("UPDATE CONVERSATIONS")]


async def test_turn_commits_state_answers_outbox_and_update_together(store: Store) -> None:
    async with store.turn(7, update_id=100) as t:
        t.set_state({"dialogue": "checkin", "vars": {"checkin.mood": 4}})
        t.record_answer("checkin", "mood", "checkin.mood", 4)
        t.record_answer("checkin", "note", "checkin.note", {"text": "tired ünïcode"})
        t.enqueue(7, {"text": "Thanks!", "buttons": [["ok"]]})
    async with store.turn(7) as t:  # not an update: it supersedes no reply
        assert t.state == {"dialogue": "checkin", "vars": {"checkin.mood": 4}}
        answers = (await t.session.scalars(select(Answer).order_by(Answer.id))).all()
        assert [(a.variable, a.value) for a in answers] == [
            ("checkin.mood", 4),
            ("checkin.note", {"text": "tired ünïcode"}),
        ]
        assert answers[0].answered_at.tzinfo == UTC
        outbox = (await t.session.scalars(select(Outbox))).one()
        assert (outbox.chat_id, outbox.payload, outbox.status, outbox.attempts) == (
            7,
            {"text": "Thanks!", "buttons": [["ok"]]},
            "pending",
            0,
        )
    assert await count(store, "processed_updates", "update_id = 100") == 1
    assert await count(store, "conversations", "user_id = 7 AND version = 1") == 1


async def test_state_is_a_private_copy(store: Store) -> None:
    async with store.turn(8) as t:
        t.set_state({"n": 1})
    async with store.turn(8) as t:
        assert t.state is not None
        t.state["n"] = 99  # mutating without set_state writes nothing
    async with store.turn(8) as t:
        assert t.state == {"n": 1}


async def test_exception_rolls_back_everything(store: Store) -> None:
    async with store.turn(9, update_id=1) as t:
        t.set_state({"n": 1})
        t.record_answer("d", "s", "d.x", 1)
        t.enqueue(9, {"text": "one"})
    with pytest.raises(Boom):
        async with store.turn(9, update_id=2) as t:
            t.set_state({"n": 2})
            t.record_answer("d", "s", "d.x", 2)
            t.enqueue(9, {"text": "two"})
            t.user.first_name = "changed"
            await t.flush()
            raise Boom
    assert await count(store, "answers") == 1
    assert await count(store, "outbox") == 1
    assert await count(store, "processed_updates", "update_id = 2") == 0
    user = await store.get_user(9)
    assert user is not None and user.first_name is None
    # The update was not processed, so its redelivery is handled normally.
    async with store.turn(9, update_id=2) as t:
        assert not t.duplicate
        assert t.state == {"n": 1}


async def test_failed_first_contact_leaves_no_user(store: Store) -> None:
    with pytest.raises(Boom):
        async with store.turn(10, update_id=1):
            raise Boom
    assert await store.get_user(10) is None
    assert await count(store, "conversations") == 0


async def test_duplicate_update_does_nothing(store: Store) -> None:
    async with store.turn(11, update_id=555) as t:
        t.set_state({"n": 1})
        t.record_answer("d", "s", "d.x", 1)
        t.enqueue(11, {"text": "hi"})
    async with store.turn(11, update_id=555) as t:
        assert t.duplicate
        assert t.user.id == 11
        with pytest.raises(RuntimeError):
            t.set_state({"n": 2})
        with pytest.raises(RuntimeError):
            t.enqueue(11, {"text": "again"})
        with pytest.raises(RuntimeError):
            t.record_answer("d", "s", "d.x", 2)

    called = False

    async def fn(t: Turn) -> str:
        nonlocal called
        called = True
        return "ran"

    assert await store.run_turn(11, fn, update_id=555) is None
    assert not called
    assert await store.run_turn(11, fn, update_id=556) == "ran"
    assert await count(store, "answers") == 1
    assert await count(store, "outbox") == 1
    async with store.turn(11) as t:
        assert t.state == {"n": 1}


async def test_concurrent_redelivery_is_processed_once(store: Store) -> None:
    async def handle(t: Turn) -> None:
        await asyncio.sleep(0.01)
        t.enqueue(12, {"text": "once"})

    await asyncio.gather(*(store.run_turn(12, handle, update_id=9) for _ in range(5)))
    assert await count(store, "outbox") == 1
    assert await count(store, "processed_updates") == 1


async def _increment(t: Turn) -> int:
    state = t.state or {"counter": 0}
    await asyncio.sleep(0)  # let the other task run between read and write
    n = int(state["counter"]) + 1
    t.set_state({"counter": n})
    t.record_answer("count", "inc", "count.n", n)
    return n


async def test_concurrent_turns_never_lose_an_update(db_url: str) -> None:
    # Two Store instances behave like two bot processes sharing one database.
    a, b = Store(db_url), Store(db_url)
    await a.start()
    await b.start()
    try:

        async def worker(s: Store, base: int) -> None:
            for i in range(20):
                # attempts=1: the per-user lock alone must prevent lost updates, no retry.
                await s.run_turn(13, _increment, update_id=base + i, attempts=1)

        await asyncio.gather(worker(a, 1000), worker(b, 2000))
        async with a.turn(13) as t:
            assert t.state == {"counter": 40}
        assert await count(a, "answers", "user_id = 13") == 40
        assert await count(a, "conversations", "user_id = 13 AND version = 40") == 1
    finally:
        await a.close()
        await b.close()


async def test_concurrent_first_contact(store: Store) -> None:
    await asyncio.gather(*(store.run_turn(14, _increment, update_id=i) for i in range(10)))
    assert await count(store, "users", "id = 14") == 1
    async with store.turn(14) as t:
        assert t.state == {"counter": 10}


async def _bump_version_behind_the_turns_back(t: Turn) -> None:
    # Simulates a writer that did not take the lock (never happens through the Store).
    await t.session.execute(
        update(Conversation)
        .where(Conversation.user_id == t.user_id)
        .values(version=Conversation.version + 1)
    )


async def test_version_conflict_is_detected(store: Store) -> None:
    async with store.turn(15) as t:
        t.set_state({"counter": 0})
    with pytest.raises(ConflictError):
        async with store.turn(15) as t:
            await _bump_version_behind_the_turns_back(t)
            t.set_state({"counter": -1})
    async with store.turn(15) as t:
        assert t.state == {"counter": 0}


async def test_a_usual_turn_writes_state_answer_and_message_in_one_statement_on_postgresql(
        store: Store) -> None:
    """The state, one answer and one message (most updates): one statement on PostgreSQL,
    one round trip, writing every column the separate statements write."""
    async with store.turn(19):
        pass
    with statements_run(store) as statements:
        async with store.turn(19, update_id=190, hold_for=timedelta(seconds=30)) as t:
            t.set_state({"step": "why"})
            t.record_answer("goal_setting", "goal", "goal_setting.goal", "Run a 10k",
                            marker="goal")
            t.enqueue(19, {"text": "Why does it matter?"})
    writes = statements[2:]  # after the locking SELECT and the processed update
    if store.engine.dialect.name == "postgresql":
        assert writes == [["WITH", "written_answer", "AS"]]
    else:
        assert len(writes) == 3
    [held] = t.held
    async with store.sessionmaker() as session:
        message = await session.get_one(Outbox, held.id)
        answer = (await session.scalars(select(Answer).where(Answer.user_id == 19))).one()
        conversation = await session.get_one(Conversation, 19)
    assert (message.user_id, message.chat_id, message.subject_user_id, message.payload,
            message.status, message.attempts, message.kind, message.last_error,
            message.parts_sent, message.created_at) == (
        19, 19, None, {"text": "Why does it matter?"}, "sending", 1, "reply", None, 0, t.now)
    assert message.next_attempt_at == t.now + timedelta(seconds=30)
    assert (answer.dialogue_id, answer.step_id, answer.variable, answer.value, answer.marker,
            answer.answered_at) == ("goal_setting", "goal", "goal_setting.goal", "Run a 10k",
                                    "goal", t.now)
    assert (conversation.state, conversation.version) == ({"step": "why"}, 1)


async def test_the_users_changes_go_in_the_one_statement_on_postgresql(store: Store) -> None:
    """The day's first message (the user's last_seen_at) or a name given: still one
    statement on PostgreSQL, writing the user's changed columns and keeping the others."""
    async with store.turn(21) as t:
        t.user.time_zone = "Europe/Rome"
    with statements_run(store) as statements:
        async with store.turn(21, update_id=210, hold_for=timedelta(seconds=30)) as t:
            t.user.first_name = "Ada"
            t.user.reachable = False
            t.set_state({"step": "goal"})
            t.enqueue(21, {"text": "What would you like to achieve?"})
            t.record_answer("goal_setting", "start", "goal_setting.start", "yes")
    writes = statements[2:]
    if store.engine.dialect.name == "postgresql":
        assert writes == [["WITH", "written_answer", "AS"]]
    else:  # the answer, the message, the user and the state, each on its own
        assert [w[:2] for w in writes] == [["INSERT", "INTO"]] * 2 + [["UPDATE", "users"],
                                                                       ["UPDATE", "conversations"]]
    async with store.sessionmaker() as session:
        [sent] = (await session.scalars(select(Outbox).where(Outbox.user_id == 21))).all()
        [answer] = (await session.scalars(select(Answer).where(Answer.user_id == 21))).all()
        user = await session.get_one(User, 21)
        conversation = await session.get_one(Conversation, 21)
    assert [(sent.id, sent.payload)] == [(held.id, held.payload) for held in t.held]
    assert (answer.variable, answer.value) == ("goal_setting.start", "yes")
    assert (user.first_name, user.reachable, user.time_zone) == ("Ada", False, "Europe/Rome")
    assert (conversation.state, conversation.version) == ({"step": "goal"}, 1)


async def test_a_turn_with_several_messages_and_answers_writes_them_all_in_order(
        store: Store) -> None:
    async with store.turn(22) as t:
        t.set_state({"step": "report"})
        for n in range(7):
            t.enqueue(22, {"text": f"part {n}"})
        t.record_answer("d", "a", "d.a", 1)
        t.record_answer("d", "b", "d.b", 2)
    async with store.sessionmaker() as session:
        sent = (await session.scalars(select(Outbox).where(Outbox.user_id == 22)
                                      .order_by(Outbox.id))).all()
        answers = (await session.scalars(select(Answer).where(Answer.user_id == 22)
                                         .order_by(Answer.id))).all()
    assert [m.payload["text"] for m in sent] == [f"part {n}" for n in range(7)]
    assert [a.value for a in answers] == [1, 2]


def test_the_one_statement_is_cached_whatever_it_writes() -> None:
    """Compiled once: a statement SQLAlchemy cannot cache (a multi-row VALUES, tried) is
    compiled at every turn, which cost more than the round trips it saved."""
    from bot.store.store import _write_turn

    for answer in (False, True):
        for user_columns in ((), ("last_seen_at",), ("first_name", "reachable")):
            assert _write_turn(answer, user_columns)._generate_cache_key() is not None


def test_the_one_statement_binds_every_column_a_turn_gives() -> None:
    from bot.store.store import _ANSWER_COLUMNS, _MESSAGE_COLUMNS

    t = Turn(None, TurnUser(*(None for _ in fields(TurnUser))),  # type: ignore[arg-type]
             state=None, version=0, duplicate=False, now=utcnow())
    t.user.id = 1
    t.record_answer("d", "s", "d.v", 1)
    t.enqueue(1, {"text": "hi"})
    assert set(t._answers[0]) == set(_ANSWER_COLUMNS)
    assert set(t._messages[0]) == set(_MESSAGE_COLUMNS)


async def test_a_conflict_writes_neither_the_answer_nor_the_message(store: Store) -> None:
    async with store.turn(20) as t:
        t.set_state({"counter": 0})
    with pytest.raises(ConflictError):
        async with store.turn(20) as t:
            await _bump_version_behind_the_turns_back(t)
            t.set_state({"counter": -1})
            t.record_answer("d", "s", "d.counter", -1)
            t.enqueue(20, {"text": "minus one"})
    assert await count(store, "answers", "user_id = 20") == 0
    assert await count(store, "outbox", "user_id = 20") == 0
    async with store.turn(20) as t:
        assert t.state == {"counter": 0}


async def test_run_turn_retries_a_conflict(store: Store) -> None:
    attempts = 0

    async def conflicting_once(t: Turn) -> int:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            await _bump_version_behind_the_turns_back(t)
        return await _increment(t)

    assert await store.run_turn(15, conflicting_once) == 1
    assert attempts == 2
    assert await count(store, "answers", "user_id = 15") == 1


async def test_run_turn_gives_up_after_attempts(store: Store) -> None:
    calls = 0

    async def always_conflicts(t: Turn) -> Any:
        nonlocal calls
        calls += 1
        raise ConflictError("forced")

    with pytest.raises(ConflictError):
        await store.run_turn(16, always_conflicts, attempts=3)
    assert calls == 3


async def test_non_retryable_errors_are_not_retried(store: Store) -> None:
    calls = 0

    async def fails(t: Turn) -> None:
        nonlocal calls
        calls += 1
        raise Boom

    with pytest.raises(Boom):
        await store.run_turn(17, fails)
    assert calls == 1


async def test_prune_processed_updates(store: Store) -> None:
    async with store.turn(18, update_id=1):
        pass
    assert await store.prune_processed_updates(utcnow() - timedelta(days=2)) == 0
    assert await store.prune_processed_updates(utcnow() + timedelta(seconds=1)) == 1
    assert await count(store, "processed_updates") == 0


@pytest.mark.parametrize("writes_state", [False, True])
async def test_a_turn_that_waited_for_the_lock_sees_what_the_turn_before_it_wrote(
        db_url: str, writes_state: bool) -> None:
    # Two processes: the second turn of a user waits for the first's lock; once it has it,
    # it must read the user as the first turn left it (on PostgreSQL the locking statement's
    # snapshot predates the wait; only the rows it locks are read again after it).
    a, b = Store(db_url), Store(db_url)
    await a.start()
    await b.start()
    try:
        async with a.turn(16) as t:
            t.user.time_zone = "Europe/Rome"
        first_holds_the_lock, seen = asyncio.Event(), []

        async def first(t: Turn) -> None:
            t.user.time_zone = "Asia/Jerusalem"
            if writes_state:
                t.set_state({"step": 1})
            first_holds_the_lock.set()
            await asyncio.sleep(0.3)  # the second turn is now waiting for the lock

        async def second(t: Turn) -> None:
            seen.append((t.user.time_zone, t.state))

        async def after_the_first_locked() -> None:
            await first_holds_the_lock.wait()
            await b.run_turn(16, second, update_id=2, attempts=1)

        await asyncio.gather(a.run_turn(16, first, update_id=1, attempts=1),
                             after_the_first_locked())
        assert seen == [("Asia/Jerusalem", {"step": 1} if writes_state else None)]
    finally:
        await a.close()
        await b.close()
