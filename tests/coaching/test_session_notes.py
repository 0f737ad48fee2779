"""A client's notes for their next session, on both backends: the brief carries only the notes
the client said the coach may see (a file as a copy of the client's message), once; the
preparation lists them, and still makes sense for a client without an active goal."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import select

from bot.coaching.conversation import Start, converse
from bot.coaching.sessions import NewSessions, schedule_sessions, session_work
from bot.dialogue import load_dialogues
from bot.engine import Outcome, Turn
from bot.i18n import translator_for
from bot.schedule.sessions import Repeat
from bot.store import (
    Answer,
    CoachingSession,
    CoachLink,
    Goal,
    NoteMedia,
    NoteShare,
    SessionMode,
    SessionNote,
    Store,
    User,
)

REPO = Path(__file__).parents[2]
NOW = datetime(2026, 3, 20, 12, 0, tzinfo=UTC)
COACH, CLIENT = 1, 2


async def _people(store: Store, *, brief_consent: bool | None = None) -> None:
    async with store.sessionmaker() as s, s.begin():
        s.add(User(id=COACH, is_coach=True, time_zone="Europe/Rome", locale="it",
                   first_name="Marta", consent_at=NOW))
        s.add(User(id=CLIENT, time_zone="Asia/Jerusalem", locale="he", first_name="Noa",
                   consent_at=NOW))
        await s.flush()
        s.add(CoachLink(coach_id=COACH, client_id=CLIENT, created_at=NOW, consent_at=NOW,
                        brief_consent=brief_consent))


async def _session(store: Store) -> datetime:
    async with store.sessionmaker() as s, s.begin():
        [cs] = await schedule_sessions(s, COACH, NewSessions(
            client_id=CLIENT, first=datetime(2026, 3, 23, 18, 0), zone="Europe/Rome",
            minutes=60, mode=SessionMode.VIDEO, place=None, repeat=Repeat.ONCE), NOW)
        for words, media, share in (("For me only", None, NoteShare.PRIVATE),
                                    ("Ask about the new role", None, NoteShare.BRIEF),
                                    ("my voice", NoteMedia.VOICE, NoteShare.BRIEF)):
            s.add(SessionNote(user_id=CLIENT, words=words, media=media,
                              file_id="file" if media else None,
                              message_id=41 if media else None, share=share,
                              created_at=NOW + timedelta(minutes=1)))
        return cs.starts_at


async def test_the_brief_carries_only_the_notes_the_client_shared_once(store: Store) -> None:
    await _people(store)  # no consent to the brief itself: only the notes said yes to
    starts = await _session(store)
    before = starts - timedelta(hours=1)
    async with store.sessionmaker() as s:
        cs_id = (await s.execute(select(CoachingSession.id))).scalar_one()
    due = await store.run_turn(COACH, lambda t: session_work(
        t, "session_reminder", str(cs_id), before))
    assert due is not None
    text, *copies = due.messages
    body = str(text["text"])
    assert "\u2068Ask about the new role\u2069" in body and "For me only" not in body
    assert "[un messaggio vocale] \u2068my voice\u2069" in body  # in the coach's Italian
    preparation = translator_for("it").gettext(
        "Their preparation, shared with their agreement:")
    assert preparation not in body  # no consent to the brief: no preparation answers
    assert copies == [{"copy": {"from_chat": CLIENT, "message_id": 41}}]
    again = await store.run_turn(COACH, lambda t: session_work(
        t, "session_reminder", str(cs_id), before))
    assert again is not None and len(again.messages) == 1  # passed on once
    assert "Ask about the new role" not in str(again.messages[0]["text"])


async def _prep(store: Store, *texts: str) -> list[str]:
    dialogues = load_dialogues(REPO / "dialogues")
    said: list[str] = []

    async def run(t, action):  # type: ignore[no-untyped-def]
        outcome: Outcome = await converse(t, dialogues, action, NOW + timedelta(hours=2))
        said.extend(r.text for r in outcome.replies)
        return outcome

    await store.run_turn(CLIENT, lambda t: run(t, Start("session_prep")))
    for words in texts:
        await store.run_turn(CLIENT, lambda t, w=words: run(t, Turn(text=w)))  # type: ignore[misc]
    return said


async def test_the_preparation_without_a_goal_asks_what_to_work_towards(store: Store) -> None:
    await _people(store)
    await _session(store)
    said = await _prep(store, "A hard week", "Clarity", "Speaking up at work")
    joined = "\n".join(said)
    assert "1 עד 10" not in joined and "1 to 10" not in joined  # no goal: no scale
    assert "For me only" in joined and "Ask about the new role" in joined
    assert said[-1].startswith("תודה")  # the closing, in Hebrew
    async with store.sessionmaker() as s:
        saved = {a.variable: a.value for a in (await s.execute(select(Answer))).scalars()}
    assert saved["prep.focus"] == "Speaking up at work"


async def test_the_preparation_with_a_goal_asks_where_they_stand(store: Store) -> None:
    await _people(store)
    async with store.sessionmaker() as s, s.begin():
        s.add(Goal(user_id=CLIENT, title="Run 10 km", status="active", created_at=NOW))
    said = await _prep(store, "A hard week", "Clarity")
    assert "\u2068Run 10 km\u2069" in said[-1]  # the scale question names the active goal
