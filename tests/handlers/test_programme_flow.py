"""A programme on Telegram, in process: a coach gives one in a few presses, the client sees
where they are in /exercises, the coach pauses it from /assignments; forged buttons from a
client or another coach get nowhere."""

from __future__ import annotations

import re

from sqlalchemy import select

from bot.coaching.links import make_coach
from bot.store import Assignment, ProgrammeRun, User
from tests.inprocess import InProcessBot

COACH, CLIENT, OTHER_COACH = 701, 702, 703
NAMES = {COACH: "Marta", CLIENT: "Noa", OTHER_COACH: "Eve"}


def forged(bot: InProcessBot, user_id: int, data: str) -> None:
    bot.fake.send_raw({"callback_query": {
        "id": data, "chat_instance": "1", "data": data,
        "from": {"id": user_id, "is_bot": False, "first_name": NAMES[user_id],
                 "language_code": "en"},
        "message": {"message_id": 1, "date": 0, "text": "x",
                    "chat": {"id": user_id, "type": "private"}}}})


async def test_a_coach_gives_a_programme_and_both_see_where_the_client_is(
        bot: InProcessBot) -> None:
    async with bot.store.sessionmaker() as session, session.begin():
        await make_coach(session, COACH)
        await make_coach(session, OTHER_COACH)
    coach = bot.user(COACH, first_name="Marta")
    client = bot.user(CLIENT, first_name="Noa")
    other = bot.user(OTHER_COACH, first_name="Eve")
    invite = (await coach.send("/invite"))[0].text or ""
    code = re.search(r"start=(invite_[A-Za-z0-9_-]+)", invite)
    assert code is not None
    await bot.agree(CLIENT)
    await client.send(f"/start {code.group(1)}")
    await client.press("Yes, share")

    await coach.send("/programme")
    await coach.press("\u2068Noa\u2069")
    await coach.press("Values and goals, in four weeks")
    given = await coach.press("8:00\u202fAM")
    assert (given[0].text or "").startswith(
        "You have given the programme “Values and goals, in four weeks” to \u2068Noa\u2069."
        "\nFirst day: ")
    async with bot.store.sessionmaker() as session:
        run = (await session.execute(select(ProgrammeRun))).scalar_one()
        assert len((await session.execute(select(Assignment))).all()) == 4

    seen = await client.send("/exercises")
    text = next(m.text or "" for m in seen if (m.text or "").startswith("Programme:"))
    assert text.splitlines()[:2] == ["Programme: Values and goals, in four weeks",
                                     "Steps done: 0 of 4"]
    assert "Next step starts: " in text

    # Forged buttons: the client, another coach, nonsense.
    for user, bot_user, data in ((CLIENT, client, f"prg:{CLIENT}:values_and_goals:8"),
                                 (OTHER_COACH, other, f"prg:{CLIENT}"),
                                 (OTHER_COACH, other, f"prg:{CLIENT}:values_and_goals:8"),
                                 (COACH, coach, f"prg:{CLIENT}:nonsense:8")):
        forged(bot, user, data)
        reply = (await bot_user.replies())[0].text or ""
        assert "cannot find that client" in reply or "no longer valid" in reply, data
    for user, bot_user in ((OTHER_COACH, other), (CLIENT, client)):
        forged(bot, user, f"prgdo:cancel:{run.id}")
        reply = (await bot_user.replies())[0].text or ""
        assert "not one of yours" in reply or "Only coaches" in reply, user
    async with bot.store.sessionmaker() as session:
        assert len((await session.execute(select(ProgrammeRun))).all()) == 1
        assert (await session.get(ProgrammeRun, run.id)).status == "active"  # type: ignore[union-attr]

    listed = await coach.send("/assignments Noa")
    shown = next(m for m in listed if (m.text or "").startswith("Programme: Values"))
    assert shown.reply_markup is not None
    bot.fake.press_button(COACH, shown.message_id, f"prgdo:pause:{run.id}")
    paused = await coach.replies()
    assert paused[0].text == "Paused: nothing more of it is sent until you resume it."
    async with bot.store.sessionmaker() as session:
        assert (await session.get(ProgrammeRun, run.id)).status == "paused"  # type: ignore[union-attr]
        assert {a.paused for a in (await session.execute(select(Assignment))).scalars()} == {
            True}
        assert await session.get(User, CLIENT) is not None
