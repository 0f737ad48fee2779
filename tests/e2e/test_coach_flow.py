"""A coach and their clients on Telegram: invite, consent, progress, remote exercises, and
what a coach must never reach."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import select, update

from bot.coaching.links import make_coach
from bot.i18n import SUPPORTED_LOCALES, translator_for
from bot.store import Assignment, CoachLink, Exercise, PlannedCheckin, Store, User
from tests.e2e.conftest import RunningBot, bot_running, settings_for
from tests.fakes.bot_api import FakeBotApi

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
    before = await client.send(f"/start {code.group(1)}")  # consent comes first
    assert before[-1].text == "I am made for adults. Are you 18 or older?"
    await running_bot.agree(CLIENT)
    offer = await client.send(f"/start {code.group(1)}")
    assert "\u2068Marta\u2069 invites you to share" in (offer[0].text or "")
    linked = await client.press("Yes, share")
    assert "your coach can now follow your progress" in (linked[0].text or "")

    await running_bot.agree(STRANGER)
    reused = await running_bot.user(STRANGER).send(f"/start {code.group(1)}")
    assert "not valid any more" in (reused[0].text or "")

    listing = await coach.send("/clients")
    assert listing[0].reply_markup is not None
    report = await coach.press("\u2068Luca\u2069")
    assert report[0].text is not None and "Luca" in report[0].text
    assert report[1].kind == "photo"
    assert running_bot.fake.photos[-1].content.startswith(b"\x89PNG")

    await coach.send("/assign")
    await coach.press("\u2068Luca\u2069")
    await coach.press("Three good things")
    await coach.press("Every day for a week")
    done = await coach.press("8:00\u202fAM")
    assert done[0].text == ("Assigned “\u2068Three good things\u2069” to \u2068Luca\u2069.\n"
                            "Every day for a week · 8:00\u202fAM")
    async with running_bot.store.sessionmaker() as session:
        assignment = (await session.execute(select(Assignment))).scalar_one()
    assert (assignment.coach_id, assignment.client_id, assignment.exercise_slug) == (
        COACH, CLIENT, "three_good_things")

    # Another coach, with forged buttons and commands, gets nowhere.
    for forged in (f"assign:{CLIENT}", f"assign:{CLIENT}:three_good_things:d7:8",
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
    gone = await client.press("\u2068Marta\u2069")
    assert "no longer sees your progress" in (gone[0].text or "")
    assert "can't find that client" in ((await coach.send("/progress Luca"))[0].text or "")
    async with running_bot.store.sessionmaker() as session:
        link = (await session.execute(select(CoachLink))).scalar_one()
        assignment = (await session.execute(select(Assignment))).scalar_one()
    assert link.unlinked_at is not None and not assignment.active


async def test_only_coaches_invite(running_bot: RunningBot) -> None:
    someone = running_bot.user(405)
    await running_bot.agree(405)
    answer = (await someone.send("/invite"))[0].text or ""
    assert "Only coaches can invite clients" in answer
    assert "can't find that client" in ((await someone.send("/progress 402"))[0].text or "")


async def test_a_coach_writes_an_exercise_and_the_client_gets_it(
    running_bot: RunningBot,
) -> None:
    await make_coaches(running_bot, COACH, OTHER_COACH)
    coach = running_bot.user(COACH, first_name="Marta")
    client = running_bot.user(CLIENT, first_name="Luca")
    other = running_bot.user(OTHER_COACH, first_name="Eve")
    invite = (await coach.send("/invite"))[0].text or ""
    code = re.search(r"start=(invite_[A-Za-z0-9_-]+)", invite)
    assert code is not None
    await running_bot.agree(CLIENT)
    await client.send(f"/start {code.group(1)}")
    await client.press("Yes, share")

    await coach.send("/newexercise")
    await coach.send("Morning pages")
    await coach.send("Write three pages by hand every morning, before you check your phone.")
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
    await other.press("Yes")
    async with running_bot.store.sessionmaker() as session:
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
    exercise = await client.replies(timeout=30)
    assert exercise[0].text == "An exercise from your coach: \u2068Morning pages\u2069"
    assert exercise[1].text == ("\u2068Write three pages by hand every morning, before you "
                                "check your phone.\u2069")
    await client.press("I did it")
    await client.send("My head felt lighter")
    closing = await client.send("Keep going")
    assert closing[-1].text == "Thank you, \u2068Luca\u2069. Your coach will see how it went."


async def test_coaches_get_the_coach_commands_in_their_own_menu(
        fake_bot_api: FakeBotApi, tmp_path: Path) -> None:
    admin_id = 409
    settings = settings_for(fake_bot_api, tmp_path, admin_ids=frozenset({admin_id}))
    coach_menu = {"type": "chat", "chat_id": COACH}
    async with bot_running(fake_bot_api, settings) as bot:
        clients = [c["command"] for c in fake_bot_api.commands_for()]
        assert clients[:3] == ["sos", "checkin", "goal"] and "invite" not in clients
        assert fake_bot_api.commands_for(scope=coach_menu) == []  # not a coach yet
        calls = len(fake_bot_api.calls("setMyCommands"))
        done = await bot.user(admin_id).send(f"/makecoach {COACH}")
        assert f"user {COACH} can now invite clients" in (done[0].text or "")
        await fake_bot_api.wait_for_calls("setMyCommands", calls + 1)
        names = [c["command"] for c in fake_bot_api.commands_for(scope=coach_menu)]
        assert names[:6] == ["invite", "clients", "assign", "newexercise", "newgroup", "groups"]
        assert names[6:] == clients  # and the client's commands: a coach uses them too
        coach = bot.user(COACH)
        await coach.send("/language")
        calls = len(fake_bot_api.calls("setMyCommands"))
        await coach.press("Hrvatski")
        await fake_bot_api.wait_for_calls("setMyCommands", calls + 1)
        assert fake_bot_api.commands_for(scope=coach_menu)[0]["description"] == \
            translator_for("hr").gettext("Invite a client (a link that works once)")

    fake_bot_api.commands.clear()
    calls = len(fake_bot_api.calls("setMyCommands"))
    store = Store(settings.database_url)
    await store.start()
    async with store.sessionmaker() as session, session.begin():
        await session.execute(update(User).where(User.id == COACH).values(locale="it"))
    await store.close()
    async with bot_running(fake_bot_api, settings):  # at start, every coach, in their language
        # (the fake counts the first run's getUpdates too: wait for this run's menus)
        await fake_bot_api.wait_for_calls("setMyCommands", calls + len(SUPPORTED_LOCALES) + 1)
        menu = fake_bot_api.commands_for(scope=coach_menu)
        assert menu[0] == {"command": "invite", "description": translator_for("it").gettext(
            "Invite a client (a link that works once)")}
        assert fake_bot_api.commands_for(scope={"type": "chat", "chat_id": admin_id}) == []
