"""A coach's private notes about a client: encrypted at rest, shown only in that coach's
report. They are about the client, so the client's copy of their data includes them and
their erasure deletes them (docs/privacy.md)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.coaching.coach_errors import NotYourClient
from bot.coaching.links import is_linked
from bot.engine import Outcome, Reply
from bot.i18n import Translator, translator_for
from bot.store import CoachNote
from bot.store import Turn as StoreTurn

MAX_NOTE = 2000
NOTES_SHOWN = 5
COACH_NOTE = "coach_note"  # the dialogue in which a coach writes one
NOTE_CLIENT, NOTE_CLIENT_NAME, NOTE_TEXT = "note.client", "note.client_name", "note.text"

__all__ = ["COACH_NOTE", "MAX_NOTE", "NotYourClient", "Note", "add_note", "apply_note",
           "note_lines", "notes_about"]


@dataclass(frozen=True)
class Note:
    text: str
    written_at: datetime


async def add_note(session: AsyncSession, coach_id: int, client_id: int, text: str,
                   now: datetime) -> None:
    """Keep a note of this coach's about their client; ValueError for an empty or overlong
    one, NotYourClient without an active link."""
    text = text.strip()
    if not text or len(text) > MAX_NOTE:
        raise ValueError(f"a note has 1 to {MAX_NOTE} characters")
    if not await is_linked(session, coach_id, client_id):
        raise NotYourClient("no active link to this client")
    session.add(CoachNote(coach_id=coach_id, client_id=client_id, text=text, created_at=now))
    await session.flush()


async def notes_about(session: AsyncSession, coach_id: int, client_id: int,
                      limit: int = NOTES_SHOWN) -> list[Note]:
    """This coach's latest notes about their client, newest first."""
    if not await is_linked(session, coach_id, client_id):
        raise NotYourClient("no active link to this client")
    rows = await session.execute(
        select(CoachNote.text, CoachNote.created_at)
        .where(CoachNote.coach_id == coach_id, CoachNote.client_id == client_id)
        .order_by(CoachNote.created_at.desc(), CoachNote.id.desc()).limit(limit))
    return [Note(text, at) for text, at in rows]


async def apply_note(t: StoreTurn, outcome: Outcome, now: datetime) -> list[Reply]:
    """A coach who finished ``coach_note`` gets the note kept (if the client is still theirs);
    returns what to tell them after the dialogue's replies."""
    if COACH_NOTE not in outcome.finished:
        return []
    client, text = outcome.state.variables.get(NOTE_CLIENT), \
        outcome.state.variables.get(NOTE_TEXT)
    if not isinstance(client, int) or not isinstance(text, str):
        return []
    try:
        await add_note(t.session, t.user_id, client, text, now)
    except (NotYourClient, ValueError):
        tr = translator_for(t.user.locale)
        return [Reply(tr.gettext(
            "That client no longer shares their progress with you: the note was not kept."))]
    return []


def note_lines(found: list[Note], tr: Translator) -> list[str]:
    """The coach's notes as lines of their report on the client (none: no lines)."""
    if not found:
        return []
    return [tr.gettext("Your private notes:")] + [
        f"• {tr.date(n.written_at.date(), 'short')}: {tr.words(n.text)}" for n in found]
