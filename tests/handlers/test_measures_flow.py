"""A coach's measure on Telegram, in process: /measure, the client asked on schedule and
answering, the chart in both /progress; and the attacker's view of the new button."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from bot.coaching.links import make_coach
from bot.store import Assignment, Measure, MeasureValue, PlannedCheckin, User
from tests.inprocess import InProcessBot

COACH, CLIENT, OTHER_COACH = 501, 502, 503


def forged(bot: InProcessBot, user_id: int, data: str, language: str = "en") -> None:
    bot.fake.send_raw({"callback_query": {
        "id": data, "chat_instance": "1", "data": data,
        "from": {"id": user_id, "is_bot": False, "first_name": "X",
                 "language_code": language},
        "message": {"message_id": 1, "date": 0, "text": "x",
                    "chat": {"id": user_id, "type": "private"}}}})


async def test_a_measure_is_set_asked_on_schedule_answered_and_charted(
        bot: InProcessBot) -> None:
    async with bot.store.sessionmaker() as session, session.begin():
        await make_coach(session, COACH)
        await make_coach(session, OTHER_COACH)
    coach = bot.user(COACH, first_name="Marta")
    client = bot.user(CLIENT, first_name="Luca", language_code="it")
    other = bot.user(OTHER_COACH, first_name="Eve")
    invite = (await coach.send("/invite"))[0].text or ""
    code = re.search(r"start=(invite_[A-Za-z0-9_-]+)", invite)
    assert code is not None
    await bot.agree(CLIENT)
    async with bot.store.sessionmaker() as session, session.begin():
        luca = await session.get(User, CLIENT)
        assert luca is not None
        luca.locale, luca.time_zone = "it", "Europe/Rome"
    await client.send(f"/start {code.group(1)}")
    await client.press("Sì, condivido")

    await coach.send("/measure")
    await coach.press("\u2068Luca\u2069")
    await coach.send("Energy when you wake up")
    await coach.press("A scale from 1 to 10")
    await coach.send("8")
    await coach.press("Every day")
    await coach.send("07:30")
    await coach.send("0")
    done = await coach.send("4")
    assert done[-1].text == ("Done: I will ask \u2068Luca\u2069 on that schedule. You see the "
                             "answers in /progress, and /assignments pauses or changes it.")
    listed = await coach.send("/assignments Luca")
    assert any("\u2068Energy when you wake up\u2069" in (m.text or "") for m in listed)

    # The attacker's view: a client pressing the coach's button, another coach forging it.
    forged(bot, CLIENT, f"measure:{CLIENT}", "it")  # refused at the gate, in their language
    assert "Non trovo questa persona" in ((await client.replies())[0].text or "")
    forged(bot, OTHER_COACH, f"measure:{CLIENT}")
    assert "cannot find that client" in ((await other.replies())[0].text or "")
    for data in (f"measure:{COACH}", "measure:", "measure:abc", "measure:99999999999999999999"):
        forged(bot, OTHER_COACH, data)
        assert "cannot find that client" in ((await other.replies())[0].text or ""), data
    assert "cannot find that client" in ((await other.send("/measure Luca"))[0].text or "")

    async with bot.store.sessionmaker() as session:
        [assignment] = (await session.execute(select(Assignment))).scalars()
        [measure] = (await session.execute(select(Measure))).scalars()
        assert assignment.measure_id == measure.id and measure.coach_id == COACH
        # Due now, as the planner would have it: the running bot's tick starts it.
        session.add(PlannedCheckin(user_id=CLIENT, kind="exercise", ref=str(assignment.id),
                                   due_at=datetime.now(UTC) - timedelta(minutes=1)))
        await session.commit()
    asked = await client.replies()
    assert asked[0].text == ("Il tuo coach, che vedrà le tue risposte, ti chiede di tenere "
                             "traccia di questo: \u2068Energy when you wake up\u2069. Se "
                             "vuoi cambiare qualcosa o smettere, diglielo.")
    # The request told once, the first time:
    assert asked[1].text == "Che valutazione daresti oggi, da 1 (minimo) a 10 (massimo)?"
    thanks = await client.press("6")
    assert thanks[-1].text == "Grazie. Scrivi /progress per vedere l'andamento finora."
    async with bot.store.sessionmaker() as session:
        [value] = (await session.execute(select(MeasureValue))).scalars()
        assert (value.client_id, value.measure_id, value.value) == (CLIENT, measure.id, 6)

    own = await client.send("/progress")
    charts = [m for m in own if m.kind == "photo"]
    assert len(charts) == 2  # the weekly trend, and the measure
    assert (charts[1].caption or "").startswith(
        "Dall'inizio a oggi: \u2068Energy when you wake up\u2069")
    report = await coach.send("/progress Luca")
    measured = [m for m in report if m.kind == "photo" and "Then and now" in (m.caption or "")]
    assert len(measured) == 1 and "Target: 8" in (measured[0].caption or "")
    assert not [m for m in await other.send("/progress Luca") if m.kind == "photo"]

    # The client's erasure takes the measure and its values with it.
    async with bot.store.sessionmaker() as session:
        assert await session.get(User, CLIENT) is not None
    await bot.store.erase_user(CLIENT)
    async with bot.store.sessionmaker() as session:
        assert not (await session.execute(select(MeasureValue))).all()
        assert not (await session.execute(select(Measure))).all()
