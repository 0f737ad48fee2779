"""A coach sends a dialogue as a YAML file, in process: a broken one refused by line and
column, the fixed one kept, tried by the coach, assigned and delivered to a Croatian client;
a client's file and a forged "try" button get nowhere."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from bot.coaching.links import make_coach
from bot.store import Answer, Assignment, CoachDialogue, PlannedCheckin, User
from tests.coaching.test_coach_dialogues import GOOD
from tests.inprocess import InProcessBot

COACH, CLIENT, OTHER_COACH = 601, 602, 603


def forged(bot: InProcessBot, user_id: int, data: str) -> None:
    bot.fake.send_raw({"callback_query": {
        "id": data, "chat_instance": "1", "data": data,
        "from": {"id": user_id, "is_bot": False, "first_name": "X", "language_code": "en"},
        "message": {"message_id": 1, "date": 0, "text": "x",
                    "chat": {"id": user_id, "type": "private"}}}})


async def test_a_dialogue_file_refused_by_line_then_kept_tried_and_delivered_in_croatian(
        bot: InProcessBot) -> None:
    async with bot.store.sessionmaker() as session, session.begin():
        await make_coach(session, COACH)
        await make_coach(session, OTHER_COACH)
    coach = bot.user(COACH, first_name="Marta")
    client = bot.user(CLIENT, first_name="Ivo", language_code="hr")
    other = bot.user(OTHER_COACH, first_name="Eve")
    invite = (await coach.send("/invite"))[0].text or ""
    code = re.search(r"start=(invite_[A-Za-z0-9_-]+)", invite)
    assert code is not None
    await bot.agree(CLIENT)
    await client.send(f"/start {code.group(1)}")
    await client.press("Da, podijeli")

    broken = GOOD.replace("next: osjecaj", "next: nigdje")
    bot.fake.send_file(COACH, "stranice.yaml", broken.encode())
    refused = await coach.replies()
    lines = (refused[0].text or "").splitlines()
    assert lines[0] == "I did not keep this dialogue: there are 2 problems to fix."
    assert lines[2:] == [
        "stranice.yaml:16:11: goes to step 'nigdje', which does not exist in dialogue "
        "'jutarnje_stranice'",
        "stranice.yaml:17:3: step 'osjecaj' can never be reached from the start step 'uvod'"]
    async with bot.store.sessionmaker() as session:
        assert not (await session.execute(select(CoachDialogue))).all()

    bot.fake.send_file(COACH, "stranice.yaml", GOOD.encode())
    kept = await coach.replies()
    assert (kept[0].text or "").startswith(
        "Kept: “\u2068Jutarnje stranice\u2069”.\nLanguage: Hrvatski.")
    tried = await coach.press("Try it")
    assert tried[0].text == "Ujutro napiši tri stranice rukom, prije mobitela."
    await coach.press("Napravljeno")
    await coach.press("8")

    # A client's file is not taken for a dialogue; a forged "try" gets nothing.
    bot.fake.send_file(CLIENT, "x.yaml", GOOD.encode())
    assert "Kept" not in ((await client.replies())[0].text or "")
    async with bot.store.sessionmaker() as session:
        row = (await session.execute(select(CoachDialogue))).scalar_one()
    forged(bot, OTHER_COACH, f"cdtry:{row.id}")
    assert (await other.replies())[0].text == "That dialogue is not one of yours."

    await coach.send("/assign")
    await coach.press("\u2068Ivo\u2069")
    await coach.press("Jutarnje stranice")
    await coach.press("Every day for a week")
    done = await coach.press("8:00\u202fAM")
    assert (done[0].text or "").startswith(
        "Assigned “\u2068Jutarnje stranice\u2069” to \u2068Ivo\u2069.")
    async with bot.store.sessionmaker() as session:
        assignment = (await session.execute(select(Assignment))).scalar_one()
        assert assignment.exercise_slug == f"cd{row.id}"
        session.add(PlannedCheckin(user_id=CLIENT, kind="exercise", ref=str(assignment.id),
                                   due_at=datetime.now(UTC) - timedelta(minutes=1)))
        await session.commit()
    delivered = await client.replies()
    assert [m.text for m in delivered[:2]] == [
        "Ujutro napiši tri stranice rukom, prije mobitela.", "Kako je prošlo?"]
    await client.press("Djelomično")
    await client.press("6")
    async with bot.store.sessionmaker() as session:
        answers = [(a.user_id, a.variable, a.value) for a in
                   (await session.execute(select(Answer))).scalars()]
        assert (CLIENT, "stranice.lakse", 6) in answers
        assert (await session.get(User, CLIENT)) is not None
    listed = await client.send("/exercises")
    assert any("Jutarnje stranice" in (m.text or "") for m in listed)
