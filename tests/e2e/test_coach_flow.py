"""A coach and their clients on Telegram: invite, consent, progress, remote exercises, and
what a coach must never reach."""

from __future__ import annotations

import re

from sqlalchemy import select

from bot.coaching.coach import make_coach
from bot.store import Assignment, CoachLink
from tests.e2e.conftest import RunningBot

COACH, CLIENT, OTHER_COACH, STRANGER = 401, 402, 403, 404


async def make_coaches(bot: RunningBot, *user_ids: int) -> None:
    async with bot.store.sessionmaker() as session, session.begin():
        for user_id in user_ids:
            await make_coach(session, user_id)


async def test_invite_consent_progress_assign_and_unlink(running_bot: RunningBot) -> None:
    await make_coaches(running_bot, COACH, OTHER_COACH)
    coach = running_bot.user(COACH, first_name="Marta")
    client = running_bot.user(CLIENT, first_name="Luca")
    other = running_bot.user(OTHER_COACH, first_name="Eve")

    invite = (await coach.send("/invite"))[0].text or ""
    code = re.search(r"start=(invite_[A-Za-z0-9_-]+)", invite)
    assert code is not None and "coachbot_test_bot" in invite
    offer = await client.send(f"/start {code.group(1)}")
    assert "Marta invites you to share" in (offer[0].text or "")
    linked = await client.press("Yes, share")
    assert "your coach can now follow your progress" in (linked[0].text or "")
    assert linked[1].text is not None and linked[1].text.startswith("Hello Luca")

    reused = await running_bot.user(STRANGER).send(f"/start {code.group(1)}")
    assert "not valid any more" in (reused[0].text or "")

    listing = await coach.send("/clients")
    assert listing[0].reply_markup is not None
    report = await coach.press("Luca")
    assert report[0].text is not None and "Luca" in report[0].text
    assert report[1].kind == "photo"
    assert running_bot.fake.photos[-1].content.startswith(b"\x89PNG")

    await coach.send("/assign")
    await coach.press("Luca")
    await coach.press("Three good things")
    done = await coach.press("Every day for a week")
    assert done[0].text == "Assigned “Three good things” to Luca: every day for a week."
    async with running_bot.store.sessionmaker() as session:
        assignment = (await session.execute(select(Assignment))).scalar_one()
    assert (assignment.coach_id, assignment.client_id, assignment.exercise_slug) == (
        COACH, CLIENT, "three_good_things")

    # Another coach, with forged buttons and commands, gets nowhere.
    for forged in (f"assign:{CLIENT}", f"assign:{CLIENT}:three_good_things:d7",
                   f"client:{CLIENT}"):
        running_bot.fake.send_raw({"callback_query": {
            "id": forged, "chat_instance": "1", "data": forged,
            "from": {"id": OTHER_COACH, "is_bot": False, "first_name": "Eve"},
            "message": {"message_id": 1, "date": 0, "text": "x",
                        "chat": {"id": OTHER_COACH, "type": "private"}}}})
        refused = await other.replies()
        assert "can't find that client" in (refused[0].text or "")
    assert "can't find that client" in ((await other.send("/progress Luca"))[0].text or "")
    assert "no linked clients" in ((await other.send("/clients"))[0].text or "")

    # The client stops sharing: the coach loses access at once.
    await client.send("/cancel")
    await client.send("/coach")
    gone = await client.press("Marta")
    assert "no longer sees your progress" in (gone[0].text or "")
    assert "can't find that client" in ((await coach.send("/progress Luca"))[0].text or "")
    async with running_bot.store.sessionmaker() as session:
        link = (await session.execute(select(CoachLink))).scalar_one()
        assignment = (await session.execute(select(Assignment))).scalar_one()
    assert link.unlinked_at is not None and not assignment.active


async def test_only_coaches_invite(running_bot: RunningBot) -> None:
    someone = running_bot.user(405)
    answer = (await someone.send("/invite"))[0].text or ""
    assert "Only coaches can invite clients" in answer
    assert "can't find that client" in ((await someone.send("/progress 402"))[0].text or "")
