"""Notes for the next session, in process: free text with no question open is offered to be
kept (after the crisis check, an open question and an open safety question have had their
turn); a voice message or a photo the same way, passed to the coach with copyMessage only on
the client's yes for that note; nothing stored before the client says "keep it"."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from bot.coaching.links import make_coach
from bot.coaching.sessions import NewSessions, schedule_sessions
from bot.engine import runner
from bot.engine.crisis import CrisisCategory, CrisisLevel, CrisisSignal
from bot.schedule.sessions import Repeat
from bot.store import CoachLink, NoteShare, SessionMode, SessionNote
from bot.store.types import utcnow
from bot.telegram import handlers
from tests.inprocess import ClientUser, InProcessBot

COACH, CLIENT, ALONE = 501, 502, 503
POSSIBLE = "MARKER sometimes I just want to disappear"
URGENT = "MARKER I took all the pills"
VERDICTS = {
    POSSIBLE: CrisisSignal(CrisisLevel.CHECK, CrisisCategory.INDIRECT_IDEATION, 0.8, ("t",)),
    URGENT: CrisisSignal(CrisisLevel.URGENT, CrisisCategory.PLAN_MEANS, 0.99, ("t",)),
}
KEEP = "Keep it as a note"


@pytest.fixture
def fixed_detector(monkeypatch: pytest.MonkeyPatch) -> None:
    def detect(words: str) -> CrisisSignal | None:
        return VERDICTS.get(words.strip())

    monkeypatch.setattr(runner, "detect_crisis", detect)
    monkeypatch.setattr(handlers, "detect_crisis", detect)


async def linked(bot: InProcessBot) -> tuple[ClientUser, ClientUser]:
    coach = bot.user(COACH, first_name="Marta")
    client = bot.user(CLIENT, first_name="Luca")
    await bot.agree(CLIENT)
    async with bot.store.sessionmaker() as session, session.begin():
        await make_coach(session, COACH)
    await coach.send("/help")
    async with bot.store.sessionmaker() as session, session.begin():
        session.add(CoachLink(coach_id=COACH, client_id=CLIENT, consent_at=utcnow()))
    return coach, client


def labels(messages: list) -> list[str]:  # type: ignore[type-arg]
    return [button["text"] for m in messages for row in (m.reply_markup or {}).get(
        "inline_keyboard", []) for button in row]


async def notes(bot: InProcessBot) -> list[SessionNote]:
    async with bot.store.sessionmaker() as session:
        return list((await session.execute(select(SessionNote).order_by(SessionNote.id))
                     ).scalars())


@pytest.mark.usefixtures("fixed_detector")
async def test_crisis_then_open_question_then_safety_question_then_the_offer(
        bot: InProcessBot) -> None:
    await bot.agree(ALONE)
    ana = bot.user(ALONE, first_name="Ana")
    helped = await ana.send(URGENT)  # no question open: the crisis path, no offer
    assert KEEP not in labels(helped) and any("pills" not in (m.text or "") for m in helped)
    assert "help" in "\n".join(m.text or "" for m in helped).lower()

    await ana.send("/goal")
    answered = await ana.send("Run a marathon")  # the open question takes it
    assert KEEP not in labels(answered)
    await ana.send("/cancel")

    asked = await ana.send(POSSIBLE)  # no question open: the safety question
    assert "ending your life" in (asked[0].text or "") and KEEP not in labels(asked)
    again = await ana.send("what a day")  # not an answer: the safety question again
    assert "ending your life" in (again[0].text or "") and KEEP not in labels(again)
    await ana.press("No")

    offered = await ana.send("I want to talk about my sister")
    assert KEEP in labels(offered) and "Start a check-in" in labels(offered)
    assert "a note for yourself, start a check-in now, or not keep it?" in (offered[0].text or "")
    assert await notes(bot) == []  # nothing kept before the client says so
    kept = await ana.press(KEEP)
    # No session to prepare:
    assert kept[0].text == "Kept for you. /export includes it with the rest of your data."
    [note] = await notes(bot)
    assert note.words == "I want to talk about my sister" and note.share == NoteShare.PRIVATE


@pytest.mark.usefixtures("fixed_detector")
async def test_text_kept_for_the_brief_and_a_voice_message_copied_only_on_yes(
        bot: InProcessBot) -> None:
    coach, client = await linked(bot)
    idle = await coach.send("just a thought")  # a coach with no coach of their own
    assert KEEP not in labels(idle) and "no open question" in (idle[0].text or "")
    offered = await client.send("I keep putting off the hard call")
    more = await client.send("and I know why")  # joins the note on offer
    assert KEEP in labels(more) and "next session with your coach" in (offered[0].text or "")
    await client.press(KEEP)
    share = labels(client.messages)
    assert "Yes, send it now" in share
    told = await client.press("Yes, before the session")
    assert (told[0].text or "").startswith(  # no session planned: no promise of one
        "Kept. No session with your coach is planned yet: they receive it an hour before "
        "the next one")
    [note] = await notes(bot)
    assert note.words == "I keep putting off the hard call\nand I know why"
    assert note.share == NoteShare.BRIEF and note.shared_at is None
    assert bot.fake.copies == []

    # A voice message kept only for the client: never copied.
    bot.fake.send_media(CLIENT, "voice")
    voice_offer = await client.replies()
    assert KEEP in labels(voice_offer)
    await client.press(KEEP)
    await client.press("No, it is for me")
    assert bot.fake.copies == []
    # A photo with a caption the client sends now: copied to the coach at once.
    bot.fake.send_media(CLIENT, "document", caption="my plan")
    await client.replies()
    await client.press(KEEP)
    sent = await client.press("Yes, send it now")
    assert "sent to your coach" in (sent[0].text or "")
    coach_got = await coach.replies()
    assert "Luca" in (coach_got[0].text or "") and "my plan" in (coach_got[0].text or "")
    [(to_chat, from_chat, message_id)] = bot.fake.copies
    assert (to_chat, from_chat) == (COACH, CLIENT)
    kept = await notes(bot)
    assert [n.media for n in kept] == [None, "voice", "document"]
    assert kept[2].message_id == message_id and kept[2].share == NoteShare.SENT
    assert kept[1].file_id is not None and kept[1].file_id.startswith("AwACAgIAAxkBfakevoice")

    # With a session planned, the note waits for that session's brief.
    async with bot.store.sessionmaker() as session, session.begin():
        await schedule_sessions(session, COACH, NewSessions(
            client_id=CLIENT, first=(datetime.now(UTC) + timedelta(days=2)).replace(
                hour=18, minute=0, second=0, microsecond=0, tzinfo=None),
            zone="UTC", minutes=60, mode=SessionMode.PHONE, place=None, repeat=Repeat.ONCE,
            count=1), utcnow())
    await client.send("One more thing for our session")
    await client.press(KEEP)
    told = await client.press("Yes, before the session")
    assert told[0].text == "Kept. Your coach receives it an hour before your next session."


async def test_a_note_sent_now_after_the_sharing_ended_is_kept_and_the_client_told(
        bot: InProcessBot) -> None:
    coach, client = await linked(bot)
    await client.send("I want to raise the deadline question")
    await client.press(KEEP)
    seen = len(coach.messages)
    async with bot.store.sessionmaker() as session, session.begin():  # ended meanwhile
        link = (await session.execute(select(CoachLink))).scalar_one()
        link.unlinked_at = utcnow()
    told = [m.text or "" for m in await client.press("Yes, send it now")]
    assert told[-1] == ("Your progress is no longer shared with a coach, so I could not send "
                        "the note after all. It is kept for you.")
    [note] = await notes(bot)
    assert note.share == NoteShare.PRIVATE and note.shared_at is None
    await bot.pump()
    assert coach.messages[seen:] == [] and bot.fake.copies == []


@pytest.mark.usefixtures("fixed_detector")
async def test_a_dropped_note_and_a_sticker_keep_nothing(bot: InProcessBot) -> None:
    await bot.agree(ALONE)
    ana = bot.user(ALONE, first_name="Ana")
    await ana.send("just thinking aloud")
    dropped = await ana.press("Do not keep it")
    assert "not kept it" in (dropped[0].text or "")
    bot.fake.send_sticker(ALONE)
    sticker = await ana.replies()
    assert "/sos" in (sticker[0].text or "") and KEEP not in labels(sticker)
    assert await notes(bot) == []
    checkin = await ana.send("hello")
    assert KEEP in labels(checkin)
    started = await ana.press("Start a check-in")
    assert "goal" in (started[1].text or "")  # no goal yet: goal setting first
    assert await notes(bot) == []
