"""A coach and their clients on Telegram: invite, consent, progress, remote exercises, and
what a coach must never reach."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from bot.coaching.links import INVITE_TTL
from bot.i18n import translator_for
from bot.schedule.planning import zone_of
from bot.store import Assignment, CoachLink, Exercise, PlannedCheckin, User
from tests.flows import make_coaches, text_of
from tests.inprocess import InProcessBot

COACH, CLIENT, OTHER_COACH, STRANGER = 401, 402, 403, 404


async def test_invite_consent_progress_assign_and_unlink(bot: InProcessBot) -> None:
    await make_coaches(bot, COACH, OTHER_COACH)
    coach = bot.user(COACH, first_name="Marta")
    client = bot.user(CLIENT, first_name="Luca")
    other = bot.user(OTHER_COACH, first_name="Eve")

    invite = (await coach.send("/invite"))[0].text or ""
    code = re.search(r"start=(invite_[A-Za-z0-9_-]+)", invite)
    assert code is not None and "coachbot_test_bot" in invite
    before = await client.send(f"/start {code.group(1)}")  # consent comes first
    assert before[-1].text == "I work only with people aged 18 and over. Are you 18 or older?"
    await bot.agree(CLIENT)
    offer = await client.send(f"/start {code.group(1)}")
    assert "\u2068Marta\u2069 invites you to share" in (offer[0].text or "")
    assert "in crisis, I tell \u2068Marta\u2069, without any of your words" in (offer[0].text or "")
    linked = await client.press("Yes, share")
    assert "your coach can now follow your progress" in (linked[0].text or "")

    await bot.agree(STRANGER)
    reused = await bot.user(STRANGER).send(f"/start {code.group(1)}")
    assert "not valid any more" in (reused[0].text or "")

    listing = await coach.send("/clients")
    assert listing[0].reply_markup is not None
    report = await coach.press("\u2068Luca\u2069")
    assert report[0].text is not None and "Luca" in report[0].text
    assert report[1].kind == "photo"
    assert bot.fake.photos[-1].content.startswith(b"\x89PNG")

    await coach.send("/assign")
    await coach.press("\u2068Luca\u2069")
    await coach.press("Three good things")
    await coach.press("Every day for a week")
    done = await coach.press("8:00\u202fAM")
    assert done[0].text == ("Assigned “\u2068Three good things\u2069” to \u2068Luca\u2069.\n"
                            "Every day for a week · 8:00\u202fAM")
    async with bot.store.sessionmaker() as session:
        assignment = (await session.execute(select(Assignment))).scalar_one()
    assert (assignment.coach_id, assignment.client_id, assignment.exercise_slug) == (
        COACH, CLIENT, "three_good_things")

    # Another coach, with forged buttons and commands, gets nowhere.
    for forged in (f"assign:{CLIENT}", f"assign:{CLIENT}:three_good_things:d7:8",
                   f"client:{CLIENT}"):
        bot.fake.send_raw({"callback_query": {
            "id": forged, "chat_instance": "1", "data": forged,
            "from": {"id": OTHER_COACH, "is_bot": False, "first_name": "Eve"},
            "message": {"message_id": 1, "date": 0, "text": "x",
                        "chat": {"id": OTHER_COACH, "type": "private"}}}})
        refused = await other.replies()
        assert "cannot find that client" in (refused[0].text or "")
    assert "cannot find that client" in ((await other.send("/progress Luca"))[0].text or "")
    assert "Nobody shares their progress" in ((await other.send("/clients"))[0].text or "")

    # The client stops sharing: the coach loses access at once.
    await client.send("/cancel")
    await client.send("/coach")
    gone = await client.press("\u2068Marta\u2069")
    assert "no longer sees your progress" in (gone[0].text or "")
    assert "has stopped sharing their progress with you" in text_of(await coach.replies())
    assert "cannot find that client" in ((await coach.send("/progress Luca"))[0].text or "")
    async with bot.store.sessionmaker() as session:
        link = (await session.execute(select(CoachLink))).scalar_one()
        assignment = (await session.execute(select(Assignment))).scalar_one()
    assert link.unlinked_at is not None and not assignment.active


async def test_an_invite_gives_its_expiry_on_the_coachs_own_calendar(bot: InProcessBot) -> None:
    # A zone whose date differs from UTC's right now, so that a date taken in UTC would show.
    zone = "Pacific/Kiritimati" if datetime.now(UTC).hour >= 10 else "Pacific/Pago_Pago"
    await make_coaches(bot, COACH)
    async with bot.store.sessionmaker() as session, session.begin():
        coach = await session.get(User, COACH)
        assert coach is not None
        coach.time_zone = zone
    before = datetime.now(UTC)
    invite = (await bot.user(COACH).send("/invite"))[0].text or ""
    after = datetime.now(UTC)
    expiries = {translator_for("en").date((moment + INVITE_TTL).astimezone(zone_of(zone)).date(),
                                          "long") for moment in (before, after)}
    assert any(f"Expires: {expiry}\n" in invite for expiry in expiries), invite
    utc_expiry = translator_for("en").date((before + INVITE_TTL).date(), "long")
    assert utc_expiry not in expiries and utc_expiry not in invite


async def test_only_coaches_invite(bot: InProcessBot) -> None:
    someone = bot.user(405)
    await bot.agree(405)
    answer = (await someone.send("/invite"))[0].text or ""
    assert "Only coaches can invite clients" in answer
    assert "cannot find that client" in ((await someone.send("/progress 402"))[0].text or "")


async def test_a_coach_writes_an_exercise_and_the_client_gets_it(
    bot: InProcessBot,
) -> None:
    await make_coaches(bot, COACH, OTHER_COACH)
    coach = bot.user(COACH, first_name="Marta")
    client = bot.user(CLIENT, first_name="Luca")
    other = bot.user(OTHER_COACH, first_name="Eve")
    invite = (await coach.send("/invite"))[0].text or ""
    code = re.search(r"start=(invite_[A-Za-z0-9_-]+)", invite)
    assert code is not None
    await bot.agree(CLIENT)
    await client.send(f"/start {code.group(1)}")
    await client.press("Yes, share")

    await coach.send("/newexercise")
    await coach.send("Morning pages")
    await coach.send("Write three pages by hand every morning, before you check your phone.")
    await coach.press("No")  # no questions of their own
    saved = await coach.press("Yes")
    assert saved[0].text is not None and saved[0].text.startswith("Saved.")
    await coach.send("/assign")
    await coach.press("\u2068Luca\u2069")
    await coach.press("Morning pages")
    await coach.press("Monday to Friday for two weeks")
    done = await coach.press("At their check-in time")
    assert done[0].text == ("Assigned “\u2068Morning pages\u2069” to \u2068Luca\u2069.\n"
                            "Monday to Friday for two weeks · At their check-in time")
    # Another coach sees neither the exercise nor a way to assign it.
    await other.send("/newexercise")
    await other.send("Mine")
    await other.send("Do it")
    await other.press("No")
    await other.press("Yes")
    async with bot.store.sessionmaker() as session:
        theirs = (await session.execute(select(Exercise.id).where(
            Exercise.coach_id == COACH))).scalar_one()
        assignment = (await session.execute(select(Assignment))).scalar_one()
        assert assignment.exercise_id == theirs
        # Due now, as the scheduler would plan it: the running bot's tick starts it.
        client_row = await session.get(User, CLIENT)
        assert client_row is not None
        client_row.consent_at = datetime.now(UTC)
        session.add(PlannedCheckin(user_id=CLIENT, kind="exercise", ref=str(assignment.id),
                                   due_at=datetime.now(UTC) - timedelta(minutes=1)))
        await session.commit()
    exercise = await client.replies()
    assert exercise[0].text == "An exercise from your coach: \u2068Morning pages\u2069"
    assert exercise[1].text == ("\u2068Write three pages by hand every morning, before you "
                                "check your phone.\u2069")
    await client.press("I did it")
    await client.send("My head felt lighter")
    closing = await client.send("Keep going")
    assert closing[-1].text == "Thank you, \u2068Luca\u2069."
