"""The coach's side of issue 26, in process: a coach writing to a client, the
client replying (and a reply in crisis never reaching the coach), the /clients overview,
pausing, changing and cancelling an assignment, a quiet client noticed in the digest, a
private note; and another coach trying every new button and command with forged data."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from sqlalchemy import select

from bot.schedule.digests import notice_quiet_clients
from bot.store import Assignment, CoachLink, CoachNote, PlannedCheckin, User
from tests.flows import forge, link, make_coaches
from tests.inprocess import ClientUser, InProcessBot

COACH, CLIENT, OTHER_COACH = 501, 502, 503
LUCA, MARTA = "\u2068Luca\u2069", "\u2068Marta\u2069"


async def linked(bot: InProcessBot) -> tuple[ClientUser, ClientUser, ClientUser]:
    """Marta coaches Luca; Eve is another coach."""
    await make_coaches(bot, COACH, OTHER_COACH)
    coach = bot.user(COACH, first_name="Marta")
    client = bot.user(CLIENT, first_name="Luca")
    other = bot.user(OTHER_COACH, first_name="Eve")
    await bot.agree(CLIENT)
    await link(coach, client)
    return coach, client, other


async def test_a_coach_writes_and_the_client_replies(bot: InProcessBot) -> None:
    coach, client, other = await linked(bot)
    await coach.send("/message")
    asked = await coach.press(LUCA)
    assert "What would you like to tell" in (asked[0].text or "")
    sent = await coach.send("How did the talk with your manager go?")
    assert (sent[0].text or "").startswith("Done.")
    got = await client.replies()
    assert got[0].text == (f"A message from your coach {MARTA}:\n\n"
                           "\u2068How did the talk with your manager go?\u2069")
    await client.press("Reply to my coach")
    await client.send("Better than I feared")
    confirmed = await client.press("Yes")
    assert confirmed[0].text == f"Sent to {MARTA}."
    reply = await coach.replies()
    assert reply[0].text == f"{LUCA} replied:\n\n\u2068Better than I feared\u2069"
    # The coach answers straight from the reply.
    await coach.press("Answer")
    await coach.send("Glad to hear it")
    assert "Glad to hear it" in ((await client.replies())[0].text or "")

    # Another coach, forging every new button and naming the client, gets nowhere.
    for data in (f"message:{CLIENT}", f"note:{CLIENT}", f"asg:{CLIENT}", "message:abc",
                 f"message:{CLIENT}:x", "asg:-1"):
        forge(bot, OTHER_COACH, data)
        assert "cannot find that client" in ((await other.replies())[0].text or "")
    for command in ("/message Luca", f"/note {CLIENT}", "/assignments Luca"):
        assert "cannot find that client" in ((await other.send(command))[0].text or "")
    # A client who forges a reply to a coach they do not share with reaches no one.
    forge(bot, CLIENT, f"coachreply:{OTHER_COACH}")
    refused = await client.replies()
    assert "no longer share your progress with that coach" in (refused[0].text or "")
    assert other.messages[-1].text is not None and "Luca" not in other.messages[-1].text


async def test_a_reply_in_crisis_never_reaches_the_coach(bot: InProcessBot) -> None:
    coach, client, _ = await linked(bot)
    await coach.send("/message Luca")
    await coach.send("Thinking about our last session")
    await client.replies()
    await client.press("Reply to my coach")
    help_lines = await client.send("I want to end my life")
    assert any("help" in (m.text or "").lower() for m in help_lines)
    # The client is told what their coach is told, and why.
    assert "I have let your coach know, without any of your words, so that they can reach " \
           "out to you." in (help_lines[-1].text or "")
    assert "or your coach if you have one" not in (help_lines[-1].text or "")
    notice = await coach.replies()  # the crisis digest, without the words
    assert len(notice) == 1 and (notice[0].text or "").startswith(
        f"Please reach {LUCA} as soon as you can, in the way you have agreed on with them (by "
        "phone if you have agreed on none): I noticed signs that they may be in crisis. They "
        "know that I told you, without any of their words.")
    assert "the help lines I gave them (/sos shows them the lines again)" in (notice[0].text or "")
    assert "Messages you send through me wait until it resumes" in (notice[0].text or "")
    # The coach who answers through the bot is told, before writing, that it waits.
    asked = await coach.send("/message Luca")
    assert (asked[0].text or "").startswith(
        f"Coaching with {LUCA} is paused: I noticed signs that they may be in crisis. A "
        "message you write here waits until the pause ends.")
    kept = await coach.send("Thinking of you")
    assert kept[-1].text == f"Kept. It goes out to {LUCA} when the pause ends."
    seen = len(client.messages)
    await bot.pump()
    assert len(client.messages) == seen  # nothing reaches the client during the pause
    assert all("end my life" not in (m.text or "") for m in coach.messages)


async def test_assignments_are_paused_changed_and_cancelled(bot: InProcessBot) -> None:
    coach, client, other = await linked(bot)
    await coach.send("/assign")
    await coach.press(LUCA)
    await coach.press("Three good things")
    await coach.press("Every day for a week")
    await coach.press("8:00\u202fAM")
    async with bot.store.sessionmaker() as session, session.begin():
        assignment = (await session.execute(select(Assignment))).scalar_one()
        session.add(PlannedCheckin(user_id=CLIENT, kind="exercise", ref=str(assignment.id),
                                   due_at=datetime.now(UTC) + timedelta(hours=3)))
    listed = await coach.send("/assignments Luca")
    assert listed[0].text == (f"I tell you when {LUCA} has not answered for 4 days. "
                              "To change it, pick the number of days:")
    assert listed[1].text == f"Assignments of {LUCA}:"
    assert (listed[2].text or "").startswith("Three good things\nEvery day at 8:00\u202fAM")
    assert (await coach.press("7"))[0].text == "Done: I tell you after 7 quiet days."
    forge(bot, OTHER_COACH, f"quiet:{CLIENT}:1")
    assert "cannot find that client" in ((await other.replies())[0].text or "")
    async with bot.store.sessionmaker() as session:
        assert (await session.execute(select(CoachLink.silent_days))).scalar_one() == 7
    for data in (f"asgdo:pause:{assignment.id}", f"asgdo:cancel:{assignment.id}",
                 f"asgchange:{assignment.id}", "asgdo:explode:1", "asgdo:pause:x"):
        forge(bot, OTHER_COACH, data)
        assert "not one of yours" in ((await other.replies())[0].text or "")
    paused = await coach.press("Pause")
    assert (paused[0].text or "").startswith("Paused")
    async with bot.store.sessionmaker() as session:
        row = await session.get(Assignment, assignment.id)
        planned = (await session.execute(select(PlannedCheckin))).scalar_one()
        assert row is not None and row.paused and row.active
        assert planned.status == "cancelled"
    await coach.press("Resume")
    await coach.press("Change")
    await coach.press("On the days I name")
    await coach.send("Tuesday, Friday")
    await coach.send("18:30")
    await coach.send("2030-01-07")
    done = await coach.send("0")
    assert [m.text for m in done][-2:] == [
        "Got it.", "Done. The new schedule: Tuesday, Friday at 6:30\u202fPM, "
                   "from 1/7/30 until cancelled."]
    await coach.send("/assignments Luca")
    cancelled = await coach.press("Cancel")
    assert (cancelled[0].text or "").startswith("Cancelled")
    async with bot.store.sessionmaker() as session:
        row = await session.get(Assignment, assignment.id)
        assert row is not None and not row.active
        assert row.schedule == {"kind": "weekdays", "hour": 18, "minute": 30,
                                "weekdays": [1, 4]}
        assert row.starts_on == date(2030, 1, 7) and row.ends_on is None
    none_left = await coach.send("/assignments Luca")
    assert "has no assignments from you" in (none_left[1].text or "")
    assert client.messages[-1].text is not None  # the client saw nothing of all this


async def test_a_quiet_client_is_named_in_the_digest_and_the_overview(
        bot: InProcessBot) -> None:
    coach, _, _ = await linked(bot)
    async with bot.store.sessionmaker() as session, session.begin():
        link = (await session.execute(select(CoachLink))).scalar_one()
        link.consent_at = datetime.now(UTC) - timedelta(days=5)
    await notice_quiet_clients(bot.store, datetime.now(UTC))  # the loop's work
    digest = await coach.replies()
    assert digest[0].text == f"News from your clients:\n• No answer for a few days: {LUCA}"
    overview = await coach.send("/clients")
    assert (overview[0].text or "").startswith(f"Your clients:\n• {LUCA} · no answer yet")
    assert "⚠ quiet for 5 days" in (overview[0].text or "")


async def test_a_private_note_shows_in_the_coachs_report(bot: InProcessBot) -> None:
    coach, client, _ = await linked(bot)
    await coach.send("/note")
    await coach.press(LUCA)
    kept = await coach.send("Wants to change jobs by summer")
    assert kept[0].text == "Noted."
    report = await coach.send("/progress Luca")
    assert "Wants to change jobs by summer" in (report[0].text or "")
    async with bot.store.sessionmaker() as session:
        note = (await session.execute(select(CoachNote))).scalar_one()
        assert (note.coach_id, note.client_id) == (COACH, CLIENT)
        luca = await session.get(User, CLIENT)
        assert luca is not None
    assert all("Wants to change" not in (m.text or "") for m in client.messages)


async def test_the_client_sees_their_coachs_exercises_and_their_own_chart(
        bot: InProcessBot) -> None:
    coach, client, _ = await linked(bot)
    client.language_code = "he"
    await client.send("/language")
    await client.press("עברית")
    await coach.send("/assign")
    await coach.press(LUCA)
    await coach.press("Three good things")
    await coach.press("Another schedule…")
    await coach.press("On working days")
    await coach.send("07:30")
    await coach.send("2030-01-06")
    done = await coach.send("3")
    # A Hebrew-speaking client (no time zone set: Israel): Sunday to Thursday, from Sunday.
    assert done[-1].text == ("Done. The new schedule: Sunday, Monday, Tuesday, Wednesday, "
                             "Thursday at 7:30\u202fAM, from 1/6/30 to 1/26/30.")
    listed = await client.send("/exercises")
    assert (listed[0].text or "").startswith("תרגילים מהקואצ'ר שלך:\n• ")
    assert MARTA in (listed[0].text or "")
    progress = await client.send("/progress")
    assert progress[-1].kind == "photo"
    assert bot.fake.photos[-1].content.startswith(b"\x89PNG")
