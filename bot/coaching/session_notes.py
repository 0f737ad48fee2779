"""Notes for the client's next session: words sent when no question is open, or a voice
message, photo, document or video, offered to be kept (``session_note``, a dialogue that
holds the words in the conversation, encrypted, until the client chooses). Nothing is stored
before the client says "keep it"; a note reaches the coach only on the client's yes for that
note: at once, or with the brief before the next session. A voice message or a photo is
kept by its Telegram file id and reaches the coach with ``copyMessage``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import exists, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.coaching.contracts import SESSION_NOTE
from bot.coaching.links import coaches_of
from bot.dialogue.expr import Value
from bot.engine import Outcome
from bot.i18n import N_, Translator, translator_for
from bot.store import CoachingSession, NoteMedia, NoteShare, SessionNote, SessionStatus, User
from bot.store import Turn as StoreTurn

#: The carried variables of the offer (never kept as answers; see conversation.CARRIED).
PREFIX = "jot."
WORDS, MEDIA, FILE_ID, MESSAGE_ID = "jot.words", "jot.media", "jot.file_id", "jot.message_id"
HAS_COACH, CHOICE, SHARE = "jot.coach", "jot.choice", "jot.share"
HAS_SESSION = "jot.session"  # a one-to-one session to come, whose brief would carry the note
PAUSED = "jot.paused"  # coaching is paused after a crisis: the offer says so, with no check-in
KEEP, CHECKIN = "keep", "checkin"
#: The steps at which the offer waits for the client's choice.
OFFER_STEPS = frozenset({"offer", "offer_alone", "offer_paused", "offer_paused_alone"})
#: What the preparation reads of the notes kept since the last session.
NOTES_VARIABLES = frozenset({"notes.count", "notes.list"})
LISTED = 10
MAX_WORDS = 3000

MEDIA_LABELS = {
    NoteMedia.VOICE: N_("a voice message"),
    NoteMedia.AUDIO: N_("an audio file"),
    NoteMedia.PHOTO: N_("a photo"),
    NoteMedia.DOCUMENT: N_("a document"),
    NoteMedia.VIDEO: N_("a video"),
    NoteMedia.VIDEO_NOTE: N_("a video message"),
}


@dataclass(frozen=True)
class Jotted:
    """What the client sent that may become a note."""

    words: str | None = None
    media: NoteMedia | None = None
    file_id: str | None = None
    message_id: int | None = None

    def variables(self) -> dict[str, Value]:
        values: dict[str, Value] = {WORDS: self.words or ""}
        if self.media is not None:
            values.update({MEDIA: self.media.value, FILE_ID: self.file_id or "",
                           MESSAGE_ID: self.message_id})
        return values

    @classmethod
    def from_variables(cls, variables: Mapping[str, Value]) -> Jotted:
        media, message_id = variables.get(MEDIA), variables.get(MESSAGE_ID)
        try:
            kind = NoteMedia(str(media)) if media else None
        except ValueError:
            kind = None
        words = variables.get(WORDS)
        file_id = variables.get(FILE_ID)
        return cls(words=str(words) if words else None, media=kind,
                   file_id=str(file_id) if kind is not None and file_id else None,
                   message_id=message_id if kind is not None and isinstance(message_id, int)
                   and not isinstance(message_id, bool) else None)

    def joined(self, later: Jotted) -> Jotted | None:
        """This and a later message as one note, or None when both carry a file."""
        if self.media is not None and later.media is not None:
            return None
        words = "\n".join(w for w in (self.words, later.words) if w)[:MAX_WORDS] or None
        first = self if self.media is not None else later
        return Jotted(words, first.media, first.file_id, first.message_id)


def offer_open(state_stack_top: tuple[str, str] | None) -> bool:
    """Whether the conversation waits for the client's choice on a note offer."""
    return state_stack_top is not None and state_stack_top[0] == SESSION_NOTE \
        and state_stack_top[1] in OFFER_STEPS


async def offer_variables(session: AsyncSession, client_id: int, jotted: Jotted,
                          now: datetime, *, paused: bool) -> dict[str, Value]:
    """What the offer starts with: the words (or the file), whether there is a coach,
    whether a session with one is planned (its brief would carry the note), and whether
    coaching is ``paused`` after a crisis."""
    planned = await session.scalar(select(exists().where(
        CoachingSession.client_id == client_id, CoachingSession.group_session_id.is_(None),
        CoachingSession.status == SessionStatus.SCHEDULED, CoachingSession.starts_at > now)))
    return {**jotted.variables(), HAS_COACH: bool(await coaches_of(session, client_id)),
            HAS_SESSION: bool(planned), PAUSED: paused}


def copy_payload(client_id: int, note: SessionNote) -> dict[str, object] | None:
    """An outbox message copying the note's file from the client's chat, if it has one."""
    if note.media is None or note.message_id is None:
        return None
    return {"copy": {"from_chat": client_id, "message_id": note.message_id}}


def note_line(note: SessionNote, tr: Translator) -> str:
    """One line of a list of notes: the words, or what the file is (with its caption)."""
    parts = []
    if note.media is not None:
        parts.append("[" + tr.gettext(MEDIA_LABELS[NoteMedia(note.media)]) + "]")
    if note.words:
        parts.append(tr.words(note.words))
    return "• " + " ".join(parts)


async def _tell_coaches_now(t: StoreTurn, note: SessionNote, now: datetime) -> bool:
    """The note to each of the client's coaches, at once; False without a coach."""
    coaches = await coaches_of(t.session, t.user_id)
    for coach in coaches:
        reader = await t.session.get(User, coach.user_id)
        if reader is None:
            continue
        ctr = translator_for(reader.locale)
        heading = ctr.gettext("{person} sent you a note for your next session:").format(
            person=ctr.person(t.user.first_name, t.user_id))
        text = heading + ("\n" + ctr.words(note.words) if note.words else "")
        t.enqueue(reader.id, {"text": text}, subject=t.user_id)
        copied = copy_payload(t.user_id, note)
        if copied is not None:
            t.enqueue(reader.id, copied, subject=t.user_id)
    if coaches:
        note.share, note.shared_at = NoteShare.SENT, now
    return bool(coaches)


async def apply_session_note(t: StoreTurn, outcome: Outcome, now: datetime) -> list[str]:
    """When the offer ends: keep the note if the client said so, and pass it on if they said
    so for it (the dialogue has told them). Returns what else to tell them."""
    variables = outcome.state.variables
    if SESSION_NOTE not in outcome.finished or variables.get(CHOICE) != KEEP:
        return []
    jotted = Jotted.from_variables(variables)
    if jotted.words is None and jotted.media is None:
        return []
    share = variables.get(SHARE)
    note = SessionNote(user_id=t.user_id, words=jotted.words, media=jotted.media,
                       file_id=jotted.file_id, message_id=jotted.message_id,
                       share=NoteShare.BRIEF if share == NoteShare.BRIEF else NoteShare.PRIVATE,
                       created_at=now)
    t.session.add(note)
    await t.session.flush()
    if share == "now" and not await _tell_coaches_now(t, note, now):
        tr = translator_for(t.user.locale)
        return [tr.gettext("Your progress is no longer shared with a coach, so I could not "
                           "send the note after all. It is kept for you.")]
    return []


async def _since_last_session(session: AsyncSession, client_id: int,
                              now: datetime) -> datetime | None:
    """When the client's last session began (the notes after it are for the next one)."""
    return (await session.execute(
        select(CoachingSession.starts_at)
        .where(CoachingSession.client_id == client_id,
               CoachingSession.status != SessionStatus.CANCELLED,
               CoachingSession.starts_at <= now)
        .order_by(CoachingSession.starts_at.desc()).limit(1))).scalar_one_or_none()


async def notes_for_next(session: AsyncSession, client_id: int,
                         now: datetime) -> list[SessionNote]:
    """The notes kept since the client's last session began, oldest first."""
    since = await _since_last_session(session, client_id, now)
    query = select(SessionNote).where(SessionNote.user_id == client_id)
    if since is not None:
        query = query.where(SessionNote.created_at > since)
    return list((await session.execute(query.order_by(SessionNote.created_at,
                                                      SessionNote.id))).scalars())


async def notes_variables(session: AsyncSession, client_id: int, now: datetime,
                          tr: Translator) -> Mapping[str, Value]:
    """What the preparation reads: how many notes there are for this session, and a list
    that says which the coach will see."""
    notes = await notes_for_next(session, client_id, now)
    provided: dict[str, Value] = {"notes.count": len(notes)}
    if notes:
        lines = []
        for note in notes[-LISTED:]:
            line = note_line(note, tr)
            if note.share == NoteShare.BRIEF:
                line += " · " + tr.gettext("your coach will see it")
            elif note.share == NoteShare.SENT:
                line += " · " + tr.gettext("sent to your coach")
            lines.append(line)
        provided["notes.list"] = "\n".join(lines)
    return provided


async def brief_notes(session: AsyncSession, client_id: int, tr: Translator,
                      now: datetime) -> tuple[list[str], list[dict[str, object]]]:
    """The notes the client said their coach may see with the brief, not passed on yet:
    their lines and the copies of their files. They count as passed on from now."""
    notes = [note for note in await notes_for_next(session, client_id, now)
             if note.share == NoteShare.BRIEF and note.shared_at is None]
    if not notes:
        return [], []
    lines = [tr.gettext("Notes they kept for this session, shared with their agreement:")]
    copies = []
    for note in notes:
        lines.append(note_line(note, tr))
        copied = copy_payload(client_id, note)
        if copied is not None:
            copies.append(copied)
        note.shared_at = now
    await session.flush()
    return lines, copies


__all__: Sequence[str] = (
    "Jotted", "apply_session_note", "brief_notes", "notes_for_next", "notes_variables",
    "offer_open", "offer_variables",
)
