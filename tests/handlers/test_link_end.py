"""A client who ends their one-to-one link (with /coach, or by leaving the group whose
membership made it): only the one-to-one sessions to come are cancelled (their copies of a
group's sessions come with the membership and stay), and they are announced as any
cancellation is: the client gets the calendar file again with the same UIDs, a higher
SEQUENCE and the events cancelled; the coach is told which sessions went, in their language
and zone. On SQLite and PostgreSQL."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from icalendar import Calendar
from sqlalchemy import select

from bot.coaching.group_sessions import schedule_group_sessions
from bot.coaching.links import coaches_of
from bot.coaching.sessions import NewSessions, schedule_sessions, when_text
from bot.i18n import translator_for
from bot.schedule.sessions import Repeat
from bot.store import (
    CoachingSession,
    Group,
    PlannedCheckin,
    SessionMode,
    SessionStatus,
    User,
)
from tests.fakes.bot_api import FakeBotApi
from tests.flows import make_coaches, remove_member, text_of
from tests.inprocess import ClientUser, InProcessBot, client_settings, in_process

COACH, CLIENT = 701, 702
ROME, NEW_YORK = "Europe/Rome", "America/New_York"


@pytest.fixture
async def link_bot(tmp_path: Path, db_url: str) -> AsyncIterator[InProcessBot]:
    """The bot on SQLite and on PostgreSQL."""
    fake = FakeBotApi()
    settings = client_settings(fake, tmp_path, database_url=db_url, allow_plaintext=True)
    async with in_process(fake, settings) as bot:
        yield bot


def weekly(group_id: int | None = None) -> NewSessions:
    first = (datetime.now(ZoneInfo(ROME)) + timedelta(days=3)).replace(
        hour=18, minute=0, second=0, microsecond=0, tzinfo=None)
    return NewSessions(client_id=0 if group_id else CLIENT, group_id=group_id, first=first,
                       zone=ROME, minutes=60, mode=SessionMode.VIDEO, place=None,
                       repeat=Repeat.WEEKLY, count=2)


async def joined_sharing(bot: InProcessBot) -> tuple[ClientUser, ClientUser]:
    """Marta, a coach, and Luca, who joined her group sharing his progress (the membership
    makes the link)."""
    await make_coaches(bot, COACH)
    coach, luca = bot.user(COACH, first_name="Marta"), bot.user(CLIENT, first_name="Luca")
    made = await coach.send("/newgroup Runners")
    await coach.press("Cohort")
    code = re.search(r"start=(group_[\w-]+)", made[0].text or "")
    assert code is not None
    await bot.agree(CLIENT)
    await luca.send(f"/start {code.group(1)}")
    await luca.press("Join and share my progress")
    return coach, luca


async def test_ending_the_link_cancels_and_announces_only_the_one_to_one_sessions(
        link_bot: InProcessBot) -> None:
    bot = link_bot
    coach, luca = await joined_sharing(bot)
    now = datetime.now(UTC)
    async with bot.store.sessionmaker() as s, s.begin():
        for user_id, locale, zone in ((COACH, "it", ROME), (CLIENT, "en", NEW_YORK)):
            person = await s.get(User, user_id)
            assert person is not None
            person.locale, person.time_zone = locale, zone
        group = (await s.execute(select(Group))).scalar_one()
        _, copies = await schedule_group_sessions(s, COACH, weekly(group.id), now)
        own = await schedule_sessions(s, COACH, weekly(), now)
    before = {cs.uid: cs.sequence for cs in own}
    seen = len(coach.messages)

    await luca.send("/coach")
    ended = await luca.press("\u2068Marta\u2069")
    assert ended[0].text == ("Done: that coach no longer sees your progress. I have let them "
                             "know.")
    assert ended[1].text is not None and ended[1].text.startswith(
        "Coaching sessions cancelled because you stopped sharing your progress with "
        "\u2068Marta\u2069: ")
    en = translator_for("en")
    for cs in own:  # at the client's time in New York
        assert en.time(cs.starts_at.astimezone(ZoneInfo(NEW_YORK))) in ended[1].text
    [ics] = [d for d in bot.fake.documents if d.chat_id == CLIENT][-1:]
    events = Calendar.from_ical(ics.content).walk("VEVENT")
    assert {str(e["uid"]): int(e["sequence"]) for e in events} == {
        uid: sequence + 1 for uid, sequence in before.items()}
    assert {str(e["status"]) for e in events} == {"CANCELLED"}

    await bot.pump()
    told = text_of(coach.messages[seen:])
    it = translator_for("it")
    assert it.ngettext("Session cancelled because {person} stopped sharing their progress "
                       "with you: {count}",
                       "Sessions cancelled because {person} stopped sharing their progress "
                       "with you: {count}", 2
                       ).format(person=it.words("Luca"), count=it.isolate(it.number(2))) in told
    for cs in own:  # in Italian, at the coach's time in Rome
        assert when_text(cs, ROME, it) in told and "18:00" in when_text(cs, ROME, it)
    assert "non condivide più" not in told  # the cancelled sessions said it already

    async with bot.store.sessionmaker() as s:
        statuses = {cs.id: cs.status for cs in (await s.execute(
            select(CoachingSession))).scalars()}
        planned = set((await s.execute(select(PlannedCheckin.ref).where(
            PlannedCheckin.status == "planned"))).scalars())
    assert {statuses[cs.id] for cs in own} == {SessionStatus.CANCELLED}
    assert {statuses[cs.id] for cs in copies} == {SessionStatus.SCHEDULED}
    assert {str(cs.id) for cs in copies} <= planned
    assert not {str(cs.id) for cs in own} & planned
    listed = text_of(await luca.send("/sessions"))
    assert en.time(copies[0].starts_at.astimezone(ZoneInfo(NEW_YORK))) in listed


async def shared_member(bot: InProcessBot) -> tuple[ClientUser, ClientUser, dict[str, int]]:
    """Luca joined Marta's group sharing his progress (the link it made), and has two
    one-to-one sessions with her to come: the coach, Luca, and the sessions' sequences."""
    coach, luca = await joined_sharing(bot)
    async with bot.store.sessionmaker() as s, s.begin():
        own = await schedule_sessions(s, COACH, weekly(), datetime.now(UTC))
    return coach, luca, {cs.uid: cs.sequence for cs in own}


async def assert_cancelled(bot: InProcessBot, before: dict[str, int]) -> None:
    """The client's last calendar file cancels those sessions; the link and they are gone."""
    [ics] = [d for d in bot.fake.documents if d.chat_id == CLIENT][-1:]
    events = Calendar.from_ical(ics.content).walk("VEVENT")
    assert {str(e["uid"]): int(e["sequence"]) for e in events} == {
        uid: sequence + 1 for uid, sequence in before.items()}
    assert {str(e["status"]) for e in events} == {"CANCELLED"}
    async with bot.store.sessionmaker() as s:
        assert [c.user_id for c in await coaches_of(s, CLIENT)] == []
        statuses = set((await s.execute(select(CoachingSession.status))).scalars())
        planned = (await s.execute(select(PlannedCheckin.ref).where(
            PlannedCheckin.status == "planned"))).first()
    assert statuses == {SessionStatus.CANCELLED} and planned is None


async def test_leaving_the_group_that_made_the_link_ends_it_and_its_sessions_too(
        link_bot: InProcessBot) -> None:
    coach, luca, before = await shared_member(link_bot)
    await luca.send("/leave")
    left = await luca.press("\u2068Runners\u2069")
    assert left[0].text == ("Done: you have left “\u2068Runners\u2069”. Its exercises and "
                            "sessions stop for you, and so does the sharing of your progress "
                            "with your coach that began when you joined it.")
    assert "because you stopped sharing your progress with \u2068Marta\u2069" in text_of(left)
    await assert_cancelled(link_bot, before)
    await link_bot.pump()
    assert "Sessions cancelled because \u2068Luca\u2069 stopped sharing" in text_of(
        coach.messages)


async def test_a_member_removed_by_the_coach_hears_the_sessions_went_as_the_coachs_doing(
        link_bot: InProcessBot) -> None:
    coach, luca, before = await shared_member(link_bot)
    done = await remove_member(coach, "\u2068Runners\u2069 (1)", "\u2068Luca\u2069")
    assert "2 sessions with \u2068Luca\u2069 cancelled:" in text_of(done)
    told = await luca.replies()
    assert told[0].text == ("Your coach has removed you from the group “\u2068Runners\u2069”. "
                            "Its exercises and sessions stop for you, and so does the sharing "
                            "of your progress with your coach that began when you joined it. "
                            "Thank you for taking part, and all the best.")
    assert "Coaching sessions cancelled by \u2068Marta\u2069" in text_of(told)
    await assert_cancelled(link_bot, before)


STOPPED_SHARING = ("{person} has stopped sharing their progress with you: you no longer see "
                   "it, and the exercises you assigned them have stopped.")


async def test_a_coach_with_no_session_to_lose_is_told_the_client_stopped_sharing(
        link_bot: InProcessBot) -> None:
    coach, luca = await joined_sharing(link_bot)
    async with link_bot.store.sessionmaker() as s, s.begin():
        marta = await s.get(User, COACH)
        assert marta is not None
        marta.locale = "hr"
    seen = len(coach.messages)
    await luca.send("/coach")
    await luca.press("\u2068Marta\u2069")
    await link_bot.pump()
    hr = translator_for("hr")
    told = text_of(coach.messages[seen:])
    assert hr.gettext(STOPPED_SHARING).format(person=hr.words("Luca")) in told
    assert told.count(hr.words("Luca")) == 1  # once, and nothing of what Luca wrote


async def test_a_coach_who_removes_a_member_is_not_told_what_they_did(
        link_bot: InProcessBot) -> None:
    coach, _ = await joined_sharing(link_bot)
    await remove_member(coach, "\u2068Runners\u2069 (1)", "\u2068Luca\u2069")
    await link_bot.pump()
    assert "stopped sharing" not in text_of(coach.messages)
