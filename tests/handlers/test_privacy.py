"""Privacy as the bot promises it, end to end: what /delete leaves (nothing of the client,
wherever it was addressed), what /export holds, and how often it may be asked for."""

from __future__ import annotations

import json
import re
from typing import Any

from sqlalchemy import text

from tests.flows import consented, link, make_coaches
from tests.inprocess import ClientUser, InProcessBot

COACH, CLIENT = 8001, 8002
NAME = "Clarimonda"
SECRET_WORDS = "I hid the betting app from my wife"


async def all_rows(bot: InProcessBot) -> dict[str, list[str]]:
    """Every row of every table, as text (no key: what is stored is what is written)."""
    async with bot.store.engine.connect() as connection:
        tables = [r[0] for r in await connection.execute(text(
            "SELECT name FROM sqlite_master WHERE type = 'table'"))]
        return {t: [repr(tuple(r)) for r in await connection.execute(text(f"SELECT * FROM {t}"))]
                for t in tables}


async def linked_client(bot: InProcessBot) -> tuple[ClientUser, ClientUser]:
    await make_coaches(bot, COACH)
    coach = bot.user(COACH, first_name="Cora")
    client = bot.user(CLIENT, first_name=NAME)
    await consented(client)
    await link(coach, client)
    return coach, client


async def test_delete_leaves_nothing_of_the_client_in_their_coachs_rows(
        bot: InProcessBot) -> None:
    coach, client = await linked_client(bot)
    await client.send("/exercises")
    await client.press("A gratitude note")
    await client.press("I did it")
    await client.send(SECRET_WORDS)
    await client.send("I want to die")
    # the scheduler's tick (in every pump) has sent the coach the crisis notice
    assert any(NAME in (m.text or "") and "crisis" in (m.text or "") for m in coach.messages)
    report = await coach.send(f"/progress {NAME}")
    assert any(SECRET_WORDS in (m.text or "") for m in report)
    assert any(m.kind == "photo" for m in report)
    before = await all_rows(bot)
    assert sum(NAME in r for r in before["outbox"]) >= 2  # the report, the crisis notice

    exported = await client.send("/export")
    assert exported[0].kind == "document"
    document = next(d for d in bot.fake.documents if d.chat_id == CLIENT)
    data: dict[str, Any] = json.loads(document.content)
    about_them = [r for r in data["outbox"] if r["user_id"] == COACH]
    assert {r["subject_user_id"] for r in about_them} == {CLIENT}
    texts = [r["payload"].get("text", "") for r in about_them]
    assert any(SECRET_WORDS in t for t in texts) and any("crisis" in t for t in texts)
    assert any("photo" in r["payload"] for r in about_them)  # the chart with their name
    assert set(data["about"]) >= {"outbox", "answers", "coach_events", "users"}

    await client.send("/delete")
    await client.press("Yes, delete everything")
    after = await all_rows(bot)
    # the id as a whole number: a timestamp's microseconds may hold its digits
    client_id = re.compile(rf"\b{CLIENT}\b")
    left = {t: [r[:120] for r in rows if NAME in r or "betting" in r or client_id.search(r)]
            for t, rows in after.items()}
    # Only processed update ids remain, without the user: a late redelivery stays ignored.
    assert {t: rows for t, rows in left.items() if rows and t != "processed_updates"} == {}
    assert not [r for r in after["processed_updates"] if f", {CLIENT}," in r]
    assert any("Cora" in r or str(COACH) in r for r in after["users"])  # the coach stays


async def test_export_is_labelled_and_limited_per_user(bot: InProcessBot) -> None:
    ana = bot.user(8101)
    await consented(ana)
    first = await ana.send("/export")
    assert first[0].kind == "document"
    data = json.loads(bot.fake.documents[-1].content)
    assert data["about"]["answers"].startswith("Every answer you gave me")
    assert data["users"][0]["exported_at"] is not None
    again = await ana.send("/export")
    assert again[0].kind != "document"
    assert "You can ask for a new one from" in (again[0].text or "")
    assert len([d for d in bot.fake.documents if d.chat_id == 8101]) == 1
