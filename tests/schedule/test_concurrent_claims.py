"""Two processes' worth of claimers (two Stores) on PostgreSQL: each due row starts once."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import timedelta

import pytest

from bot.schedule.starting import claim_and_start
from bot.store import Store
from tests.schedule.helpers import add_due, add_users, dialogues, noon_zone, now_utc
from tests.store.store_helpers import count, raw


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
async def test_two_claimers_start_500_rows_exactly_once(db_url: str) -> None:
    a, b = Store(db_url), Store(db_url)
    await a.start()
    await b.start()
    try:
        now = now_utc()
        await add_users(a, range(1, 501), now=now, zone=noon_zone(now))
        await add_due(a, range(1, 501), now - timedelta(minutes=1))
        d = dialogues()

        async def worker(store: Store, name: str) -> Counter[str]:
            total: Counter[str] = Counter()
            while True:
                got = await claim_and_start(store, d, now, worker_id=name, batch=25)
                if not got:
                    return total
                total += got

        ra, rb = await asyncio.gather(worker(a, "a"), worker(b, "b"))
        assert ra["started"] + rb["started"] == 500
        assert ra["started"] > 0 and rb["started"] > 0
        assert await count(a, "planned_checkins", "status = 'started'") == 500
        per_user = await raw(a, "SELECT user_id, count(*) FROM outbox GROUP BY user_id")
        assert len(per_user) == 500 and all(n == 1 for _, n in per_user)
    finally:
        await a.close()
        await b.close()
