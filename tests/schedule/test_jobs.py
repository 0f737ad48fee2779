"""plan() and claim_and_start() on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import select, update

from bot.schedule.jobs import claim, claim_and_start, plan, start_one
from bot.store import Answer, Conversation, Outbox, PlannedCheckin, Store, User
from tests.schedule.helpers import (
    add_assignment,
    add_due,
    add_users,
    dialogues,
    noon_zone,
    now_utc,
)
from tests.store.store_helpers import count, raw


def as_utc(value: Any) -> datetime:
    if isinstance(value, str):  # SQLite hands raw text back
        value = datetime.fromisoformat(value)
    assert isinstance(value, datetime)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


async def test_plan_creates_next_check_ins_once(store: Store) -> None:
    now = now_utc()
    await add_users(store, [1, 2], now=now)
    await add_users(store, [3], now=now, reachable=False)
    await add_users(store, [4], now=now, consent_at=None)
    await add_users(store, [5], now=now, paused_until=now + timedelta(days=30))
    await add_users(store, [6], now=now, goal=False)
    await add_users(store, [99], now=now, goal=False, is_coach=True)
    await add_assignment(store, 1, 99, slug="breathing", starts_on=now.date(),
                         schedule={"kind": "daily", "hour": 8, "days": 14})
    await plan(store, now, batch=2)
    assert await count(store, "planned_checkins", "kind = 'daily'") == 2
    # Goals are 3 days old: the first weekly review is beyond the 2-day horizon.
    assert await count(store, "planned_checkins", "kind = 'weekly'") == 0
    assert await count(store, "planned_checkins", "kind = 'exercise'") in (2, 3)
    users = {r[0] for r in await raw(store, "SELECT user_id FROM planned_checkins")}
    assert users == {1, 2}
    before = await count(store, "planned_checkins")
    await plan(store, now)
    await plan(store, now + timedelta(minutes=1))
    assert await count(store, "planned_checkins") == before
    await plan(store, now, horizon=timedelta(days=5))
    assert await count(store, "planned_checkins", "kind = 'weekly'") == 2


async def test_claim_and_start_writes_the_outbox_in_the_turn(store: Store) -> None:
    now = now_utc()
    zone = noon_zone(now)
    await add_users(store, [1, 2], now=now, zone=zone)
    await add_users(store, [3], now=now, zone=zone, goal=False)
    await add_due(store, [1, 3], now - timedelta(minutes=5))
    await add_due(store, [2], now - timedelta(minutes=5), kind="weekly", ref="2")
    await add_due(store, [2], now + timedelta(minutes=5))  # not due yet
    result = await claim_and_start(store, dialogues(), now, worker_id="w1")
    assert result == {"started": 2, "cancelled": 1}
    rows = await raw(store, "SELECT user_id, kind, status FROM planned_checkins ORDER BY id")
    assert [tuple(r) for r in rows] == [(1, "daily", "started"), (3, "daily", "cancelled"),
                                        (2, "weekly", "started"), (2, "daily", "planned")]
    async with store.sessionmaker() as session:
        out = (await session.execute(select(Outbox).order_by(Outbox.id))).scalars().all()
    assert [(o.chat_id, o.status) for o in out] == [(1, "pending"), (2, "pending"),
                                                    (2, "pending")]
    assert out[0].payload["text"].startswith("How are you feeling")
    assert [b["data"] for b in out[0].payload["buttons"]][:1]  # the scale's buttons
    assert out[1].payload == {"text": "Time for your weekly review."}
    assert await claim_and_start(store, dialogues(), now, worker_id="w1") == {}


async def test_exercise_starts_the_assignment_dialogue(store: Store) -> None:
    now = now_utc()
    await add_users(store, [1], now=now, zone=noon_zone(now))
    await add_users(store, [99], now=now, goal=False)
    aid = await add_assignment(store, 1, 99, slug="breathing", starts_on=now.date(),
                               schedule={"kind": "daily", "hour": 8, "days": 1})
    await add_due(store, [1], now, kind="exercise", ref=str(aid))
    await add_due(store, [1], now, kind="exercise", ref="12345")
    assert await claim_and_start(store, dialogues(), now, worker_id="w") == {
        "started": 1, "cancelled": 1}
    state = await raw(store, "SELECT count(*) FROM outbox WHERE user_id = 1")
    assert state[0][0] == 1


async def test_busy_user_is_postponed_not_interrupted(store: Store) -> None:
    now = now_utc()
    await add_users(store, [1], now=now, zone=noon_zone(now))
    async with store.turn(1) as t:  # in the middle of another dialogue, just now
        t.set_state({"stack": [{"dialogue": "chat", "step": "q", "hash": ""}], "variables": {}})
    await add_due(store, [1], now)
    assert await claim_and_start(store, dialogues(), now, worker_id="w") == {"postponed": 1}
    rows = await raw(store, "SELECT status, due_at FROM planned_checkins")
    assert rows[0][0] == "planned"
    assert await count(store, "outbox") == 0
    # Half an hour later they are still mid-dialogue, but idle: the check-in starts.
    later = now + timedelta(minutes=31)
    async with store.sessionmaker() as session, session.begin():
        await session.execute(update(Conversation).values(updated_at=now))
    assert await claim_and_start(store, dialogues(), later, worker_id="w") == {"started": 1}


async def test_after_downtime_same_local_day_starts_else_missed(store: Store) -> None:
    now = now_utc()
    await add_users(store, [1, 2], now=now, zone=noon_zone(now))
    await add_due(store, [1], now - timedelta(hours=3))  # still today, local time
    await add_due(store, [2], now - timedelta(hours=20))  # yesterday, local time
    assert await claim_and_start(store, dialogues(), now, worker_id="w") == {
        "started": 1, "missed": 1}


async def test_expired_claims_return_and_the_old_worker_loses(store: Store) -> None:
    now = now_utc()
    await add_users(store, [1], now=now, zone=noon_zone(now))
    await add_due(store, [1], now - timedelta(minutes=1))
    [row] = await claim(store, now, worker_id="dead", batch=10)  # then the process died
    assert await claim_and_start(store, dialogues(), now, worker_id="w") == {}
    later = now + timedelta(minutes=6)
    assert await claim_and_start(store, dialogues(), later, worker_id="w") == {"started": 1}

    async def resume_dead(t: Any) -> str:
        return await start_one(t, row, dialogues(), now, "dead")

    assert await store.run_turn(1, resume_dead) == "lost"
    assert await count(store, "outbox") == 1


async def test_gentler_rhythm_after_three_unanswered(store: Store) -> None:
    now = now_utc()
    zone = noon_zone(now)
    await add_users(store, [1, 2], now=now, zone=zone, checkin_hour=18)
    async with store.sessionmaker() as session, session.begin():
        for user in (1, 2):
            for days in (3, 2, 1):
                session.add(PlannedCheckin(user_id=user, kind="daily", status="started",
                                           due_at=now - timedelta(days=days),
                                           started_at=now - timedelta(days=days)))
        session.add(Answer(user_id=2, dialogue_id="daily_checkin", step_id="mood",
                           variable="checkin.mood", value=7,
                           answered_at=now - timedelta(days=1, hours=-1)))
    await plan(store, now, horizon=timedelta(days=3))
    rows = await raw(store, "SELECT user_id, due_at FROM planned_checkins "
                            "WHERE status = 'planned' ORDER BY user_id")
    local = {r[0]: as_utc(r[1]).astimezone(ZoneInfo(zone)) for r in rows}
    today = now.astimezone(ZoneInfo(zone)).date()
    assert (local[2].date(), local[2].hour) == (today, 18)  # answered: daily as usual
    # User 1 ignored three in a row: not today, two days after the last one.
    assert (local[1].date(), local[1].hour) == (today + timedelta(days=1), 18)
    # A daily planned at the old rhythm is skipped when it comes due.
    await add_users(store, [3], now=now, zone=zone)
    async with store.sessionmaker() as session, session.begin():
        for days in (3, 2, 1):
            session.add(PlannedCheckin(user_id=3, kind="daily", status="started",
                                       due_at=now - timedelta(days=days, minutes=1),
                                       started_at=now - timedelta(days=days, minutes=1)))
    await add_due(store, [3], now - timedelta(minutes=1))
    got = await claim_and_start(store, dialogues(), now, worker_id="w")
    assert got["cancelled"] == 1


async def test_unreachable_or_paused_users_are_cancelled(store: Store) -> None:
    now = now_utc()
    await add_users(store, [1], now=now, zone=noon_zone(now))
    await add_users(store, [2], now=now, zone=noon_zone(now))
    await add_due(store, [1, 2], now)
    async with store.sessionmaker() as session, session.begin():
        await session.execute(update(User).where(User.id == 1).values(reachable=False))
        await session.execute(update(User).where(User.id == 2)
                              .values(paused_until=now + timedelta(days=1)))
    assert await claim_and_start(store, dialogues(), now, worker_id="w") == {"cancelled": 2}
