"""plan() and claim_and_start() on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import insert, select, update

from bot.schedule.claims import claim
from bot.schedule.planner import RHYTHM_LOOKBACK, Rhythm, plan, planning_rhythm
from bot.schedule.planning import Profile, exercises, next_daily, weekly_reviews
from bot.schedule.starting import START_CONCURRENCY, claim_and_start, start_one
from bot.store import Answer, Assignment, Conversation, Goal, Outbox, PlannedCheckin, Store, User
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
        out = (await session.execute(select(Outbox).order_by(Outbox.chat_id, Outbox.id))
               ).scalars().all()  # users start concurrently: order within a chat only
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
                           variable="checkin.mood", marker="checkin.mood", value=7,
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


@pytest.mark.parametrize("now", [
    datetime(2026, 3, 28, 11, 17, tzinfo=UTC),  # Europe's spring-forward is tomorrow
    datetime(2026, 10, 24, 23, 40, tzinfo=UTC),  # Europe falls back tonight
    datetime(2026, 10, 31, 13, 5, tzinfo=UTC),  # New York falls back tomorrow
])
async def test_plan_proposes_exactly_what_the_rules_say_for_each_user(store: Store,
                                                                      now: datetime) -> None:
    """plan() reads in batches, reuses answers between users and aggregates the rhythm in
    SQL: for a varied population (zones on a DST weekend, quiet hours, pauses, rhythms,
    several goals created at any time of day, exercises) its rows are the rules' answers
    computed user by user."""
    horizon = timedelta(days=2)
    zones = ["Europe/Rome", "America/New_York", "Asia/Kolkata", "UTC", "Australia/Sydney"]
    users: list[dict[str, Any]] = []
    for i in range(1, 121):
        quiet = [(22 * 60, 7 * 60), (8 * 60, 10 * 60), (None, None), (None, None)][i % 4]
        paused = now + timedelta(hours=(i % 5) * 12) if i % 7 == 0 else None
        users.append({"id": i, "time_zone": zones[i % len(zones)], "checkin_hour": 1 + i % 23,
                      "quiet_start": quiet[0], "quiet_end": quiet[1], "paused_until": paused,
                      "consent_at": now - timedelta(days=90), "created_at": now,
                      "reachable": i % 31 != 0})
    async with store.sessionmaker() as session, session.begin():
        await session.execute(insert(User), users)
        await session.execute(insert(Goal), [
            {"user_id": u["id"], "title": "Walk", "status": "active",
             "created_at": now - timedelta(days=u["id"] % 20, hours=u["id"] % 11 + n * 7,
                                           minutes=u["id"] * 13 % 60)}
            for u in users for n in range(1 + u["id"] % 2) if u["id"] % 9 != 0])
        await session.execute(insert(Assignment), [
            {"coach_id": 1, "client_id": u["id"], "exercise_slug": "breathing",
             "schedule": {"kind": "weekdays", "hour": 7, "weekdays": [5, 6]} if u["id"] % 2
             else {"kind": "daily", "hour": 20, "days": 5} if u["id"] % 3
             else {"days": 5, "hour": 20, "kind": "daily", "minute": 30},
             "starts_on": (now - timedelta(days=2)).date()} for u in users if u["id"] % 5 == 0])
        for u in users:  # 0 to 7 started dailies, some answered, some answers very old
            started = [now - timedelta(days=d, hours=u["id"] % 6)
                       for d in range(u["id"] % 8, 0, -1)]
            session.add_all(PlannedCheckin(user_id=u["id"], kind="daily", status="started",
                                           due_at=s, started_at=s) for s in started)
            if u["id"] % 3 == 0 and started:
                session.add(Answer(user_id=u["id"], dialogue_id="daily_checkin", step_id="mood",
                                   variable="checkin.mood", marker="checkin.mood", value=5,
                                   answered_at=started[len(started) // 2] + timedelta(hours=1)))
            if u["id"] % 3 == 1:
                session.add(Answer(user_id=u["id"], dialogue_id="daily_checkin", step_id="mood",
                                   variable="checkin.mood", marker="checkin.mood", value=5,
                                   answered_at=now - timedelta(days=200)))
        session.add(PlannedCheckin(user_id=11, kind="daily", status="planned",
                                   due_at=now + timedelta(hours=5)))  # an open daily
    await plan(store, now, horizon=horizon, batch=17)
    got = {(r[0], r[1], r[2], as_utc(r[3])) for r in await raw(
        store, "SELECT user_id, kind, ref, due_at FROM planned_checkins WHERE status = 'planned'")}

    async with store.sessionmaker() as session:
        goals = (await session.execute(select(Goal))).scalars().all()
        assignments = (await session.execute(select(Assignment))).scalars().all()
        checkins = (await session.execute(select(PlannedCheckin))).scalars().all()
        answers = (await session.execute(select(Answer))).scalars().all()
    expected = {(11, "daily", "", now + timedelta(hours=5))}
    for u in users:
        uid = u["id"]
        profile = Profile(u["time_zone"], u["checkin_hour"], u["quiet_start"], u["quiet_end"],
                          u["paused_until"])
        if not u["reachable"] or (profile.paused_until and profile.paused_until > now + horizon):
            continue
        mine = [g for g in goals if g.user_id == uid]
        if mine and uid != 11:
            started = sorted(c.started_at for c in checkins if c.user_id == uid
                             and c.started_at is not None and c.started_at > now - RHYTHM_LOOKBACK)
            last_answer = max((a.answered_at for a in answers if a.user_id == uid), default=None)
            unanswered = sum(1 for s in started if last_answer is None or s > last_answer)
            rhythm = planning_rhythm(Rhythm(started[-1] if started else None, unanswered), now,
                                     profile)
            due = next_daily(profile, now, last_started=rhythm.last_started,
                             unanswered=rhythm.unanswered, horizon=horizon)
            if due is not None:
                expected.add((uid, "daily", "", due))
        for g in mine:
            expected |= {(uid, "weekly", str(g.id), due)
                         for due in weekly_reviews(profile, g.created_at, now, horizon)}
        for a in (a for a in assignments if a.client_id == uid):
            expected |= {(uid, "exercise", str(a.id), due) for due in exercises(
                profile, a.schedule, a.starts_on, a.ends_on, now, horizon)}
    assert got == expected
    assert {k for _, k, _, _ in got} == {"daily", "weekly", "exercise"}


async def test_claim_takes_at_most_a_batch(store: Store) -> None:
    """On PostgreSQL an ``id IN (SELECT … LIMIT n FOR UPDATE SKIP LOCKED)`` can claim
    several batches at once (the subquery rerun per row, skipping what it just locked)."""
    now = now_utc()
    await add_users(store, range(1, 31), now=now)
    await add_due(store, range(1, 31), now - timedelta(minutes=1))
    rows = await claim(store, now, worker_id="w", batch=10)
    assert len(rows) == 10
    assert await count(store, "planned_checkins", "status = 'claimed'") == 10
    assert [r.user_id for r in rows] == list(range(1, 11))  # oldest first, then by id


async def test_claimed_check_ins_start_several_at_a_time(store: Store,
                                                         monkeypatch: Any) -> None:
    now = now_utc()
    users = list(range(1, 21))
    await add_users(store, users, now=now, zone=noon_zone(now))
    await add_due(store, users, now - timedelta(minutes=5))
    running = most = 0
    run_turn = store.run_turn

    async def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal running, most
        running += 1
        most = max(most, running)
        try:
            await asyncio.sleep(0.01)  # a database that makes turns wait (inline SQLite does not)
            return await run_turn(*args, **kwargs)
        finally:
            running -= 1

    monkeypatch.setattr(store, "run_turn", counted)
    assert await claim_and_start(store, dialogues(), now, worker_id="w1") == {"started": 20}
    assert most == START_CONCURRENCY


async def test_a_start_that_fails_logs_ids_and_kind_never_the_text(
        store: Store, monkeypatch: Any, caplog: Any) -> None:
    from bot.schedule import starting

    now = now_utc()
    await add_users(store, [1], now=now, zone=noon_zone(now))
    await add_due(store, [1], now - timedelta(minutes=5))

    async def failing(*args: Any, **kwargs: Any) -> str:
        raise ValueError("invalid literal for int(): 'Tell my wife about the debts'")

    monkeypatch.setattr(starting, "start_one", failing)
    with caplog.at_level("ERROR"):
        assert await claim_and_start(store, dialogues(), now, worker_id="w1") == {"error": 1}
    (record,) = [r for r in caplog.records if r.name == "bot.schedule.starting"]
    assert record.getMessage().startswith("check-in 1 of user 1 could not be started: ValueError")
    assert record.exc_info is None and "debts" not in caplog.text


async def test_a_user_erased_after_the_claim_is_not_recreated(
        store: Store, monkeypatch: Any) -> None:
    from bot.schedule import claims

    now = now_utc()
    await add_users(store, [1], now=now, zone=noon_zone(now))
    await add_due(store, [1], now - timedelta(minutes=5))
    real_claim = claims.claim

    async def claim_then_erase(*args: Any, **kwargs: Any) -> Any:
        rows = await real_claim(*args, **kwargs)
        await store.erase_user(1)  # "Yes, delete everything", pressed just then
        return rows

    monkeypatch.setattr(claims, "claim", claim_then_erase)
    assert await claim_and_start(store, dialogues(), now, worker_id="w1") == {"lost": 1}
    for table, column in (("users", "id"), ("conversations", "user_id"),
                          ("outbox", "user_id"), ("planned_checkins", "user_id")):
        assert await count(store, table, f"{column} = 1") == 0, table
