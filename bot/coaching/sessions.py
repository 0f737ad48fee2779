"""Agreed coaching sessions: a coach schedules one or a series with a linked client, moves or
cancels one or the rest of a series (moved by the same change of day and wall-clock time);
each change plans the reminders, the preparation and the recap again, and gives the client
the session's calendar file again (same UID, higher SEQUENCE, a cancelled event when
cancelled)."""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from sqlalchemy import and_, delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.coaching.actions import actions_summary, summary_lines
from bot.coaching.calendar import CalendarSession, session_ics
from bot.coaching.coach_errors import NotYourClient
from bot.coaching.engagements import plan_closing
from bot.coaching.links import active_link, clients_of, coaches_of, is_linked, linked_since
from bot.coaching.session_notes import brief_notes
from bot.dialogue.expr import Value
from bot.engine import Outcome, Reply
from bot.i18n import N_, Translator, translator_for
from bot.schedule.planning import Profile, zone_of
from bot.schedule.sessions import (
    BRIEF_BEFORE,
    GROUP_WORK,
    LEADS,
    MAX_SERIES,
    REMINDER_BEFORE,
    Repeat,
    group_plan,
    member_plan,
    moved_series,
    series,
    session_plan,
    start_utc,
)
from bot.store import (
    Answer,
    CoachingSession,
    CoachLink,
    Group,
    GroupSession,
    PlannedCheckin,
    SessionMode,
    SessionStatus,
    User,
    UserView,
)
from bot.store import Turn as StoreTurn
from bot.store.kinds import SESSION_KINDS, CheckinKind
from bot.store.models import SessionTime

UID_DOMAIN = "coachbot"
PREP_DIALOGUE = "session_prep"
#: Asks a client who can't make it which times would suit them (``cant.session``: which).
CANT_DIALOGUE = "session_cant"
CANT_SESSION = "cant.session"
RECAP_DIALOGUE = "session_recap"
#: Button data of the messages around a session: ``session:<what>:<session id>``.
BUTTON = "session"
#: The dialogue that asks a coach where a session happens; it ends by creating the sessions
#: from the choices the buttons handed it (``SESSION_CHOICES``).
PLACE_DIALOGUE = "session_place"
SESSION_CHOICES = ("session.client", "session.start", "session.minutes", "session.mode",
                   "session.repeat", "session.count")
#: Button data of a coach's group session actions: ``gsess:<cancel|rest>:<group session>``
#: (bot/coaching/group_sessions.py).
GROUP_BUTTON = "gsess"
#: ``session.client`` of the place dialogue names a group as ``g<group id>``.
GROUP_TARGET = "g"


class SessionNotFound(LookupError):
    """No such session of this coach (or it is over or cancelled)."""


def reminder_lead(coach: UserView) -> timedelta:
    """How long before each of the coach's sessions the reminders come (their choice)."""
    return timedelta(minutes=coach.session_reminder_minutes)


def profile_of(user: User) -> Profile:
    return Profile(time_zone=user.time_zone, checkin_hour=user.checkin_hour,
                   checkin_minute=user.checkin_minute, quiet_start=user.quiet_start,
                   quiet_end=user.quiet_end)


@dataclass(frozen=True)
class NewSessions:
    """What the coach chose: the first start on their wall clock, and the rest."""

    client_id: int  # 0 for a group's sessions
    first: datetime  # naive, in ``zone``
    zone: str
    minutes: int
    mode: SessionMode
    place: str | None
    repeat: Repeat = Repeat.ONCE
    count: int = 1
    group_id: int | None = None  # a session of the whole group (bot/coaching/group_sessions)


async def _people(session: AsyncSession, cs: CoachingSession) -> tuple[User, User]:
    coach = await session.get(User, cs.coach_id)
    client = await session.get(User, cs.client_id)
    if coach is None or client is None:
        raise SessionNotFound("a person of this session is gone")
    return coach, client


async def plan_rows(session: AsyncSession, cs: CoachingSession, now: datetime, *,
                    before: datetime | None = None) -> None:
    """Drop what the session had planned and still to come, then plan it anew (nothing
    for a session that is not scheduled)."""
    await session.execute(
        delete(PlannedCheckin)
        .where(PlannedCheckin.kind.in_(SESSION_KINDS), PlannedCheckin.ref == str(cs.id),
               PlannedCheckin.status == "planned")
        .execution_options(synchronize_session=False))
    if cs.status != SessionStatus.SCHEDULED:
        return
    coach, client = await _people(session, cs)
    if cs.group_session_id is not None:  # a member's copy: the coach's rows are the group's
        for row in member_plan(cs.starts_at, client_id=client.id, client=profile_of(client),
                               now=now, before=reminder_lead(coach)):
            session.add(PlannedCheckin(user_id=row.user_id, kind=row.work.value,
                                       ref=str(cs.id), due_at=row.due_at, status="planned"))
        await session.flush()
        return
    for row in session_plan(cs.starts_at, cs.minutes, coach_id=coach.id,
                            coach=profile_of(coach), client_id=client.id,
                            client=profile_of(client), now=now,
                            before=reminder_lead(coach)):
        session.add(PlannedCheckin(user_id=row.user_id, kind=row.work.value, ref=str(cs.id),
                                   due_at=row.due_at, status="planned"))
    await session.flush()


def group_ref(gs: GroupSession) -> str:
    """The planned rows of a group session refer to it as ``g<id>`` (never a session's)."""
    return f"g{gs.id}"


async def plan_group_rows(session: AsyncSession, gs: GroupSession, now: datetime) -> None:
    """The group session's own rows (the coach's reminder, the linked chat's), planned
    anew; nothing for one that is not scheduled. Its members' copies plan their own."""
    await session.execute(
        delete(PlannedCheckin)
        .where(PlannedCheckin.kind.in_(GROUP_WORK), PlannedCheckin.ref == group_ref(gs),
               PlannedCheckin.status == "planned")
        .execution_options(synchronize_session=False))
    if gs.status != SessionStatus.SCHEDULED:
        return
    coach = await session.get(User, gs.coach_id)
    if coach is None:
        return
    for row in group_plan(gs.starts_at, coach_id=coach.id, coach=profile_of(coach), now=now,
                          before=reminder_lead(coach)):
        session.add(PlannedCheckin(user_id=row.user_id, kind=row.work.value, ref=group_ref(gs),
                                   due_at=row.due_at, status="planned"))
    await session.flush()


async def replan_sessions(session: AsyncSession, user_id: int, now: datetime) -> None:
    """After someone's time zone, check-in time or quiet hours changed: their sessions to
    come plan their rows again (a coach's group sessions too)."""
    for cs in await upcoming(session, user_id, now, limit=MAX_SERIES):
        await plan_rows(session, cs, now)
    for gs in (await session.execute(
            select(GroupSession).where(GroupSession.coach_id == user_id,
                                       GroupSession.status == SessionStatus.SCHEDULED,
                                       GroupSession.starts_at > now)
            .order_by(GroupSession.starts_at).limit(MAX_SERIES))).scalars():
        await plan_group_rows(session, gs, now)


async def set_reminder_lead(session: AsyncSession, coach_id: int, minutes: int,
                            now: datetime) -> bool:
    """The coach chooses how long before their sessions the reminders come (one of
    ``LEADS``); every session of theirs to come is planned again. False for another value."""
    coach = await session.get(User, coach_id)
    if coach is None or not coach.is_coach or minutes not in LEADS:
        return False
    coach.session_reminder_minutes = minutes
    await session.flush()
    for cs in (await session.execute(
            select(CoachingSession).where(CoachingSession.coach_id == coach_id,
                                          CoachingSession.status == SessionStatus.SCHEDULED,
                                          CoachingSession.starts_at > now))).scalars():
        await plan_rows(session, cs, now)
    for gs in (await session.execute(
            select(GroupSession).where(GroupSession.coach_id == coach_id,
                                       GroupSession.status == SessionStatus.SCHEDULED,
                                       GroupSession.starts_at > now))).scalars():
        await plan_group_rows(session, gs, now)
    return True


async def schedule_sessions(session: AsyncSession, coach_id: int, chosen: NewSessions,
                            now: datetime) -> list[CoachingSession]:
    """Create the session or the series with a linked client, and plan around each one."""
    await linked_since(session, coach_id, chosen.client_id)
    group = secrets.token_hex(8) if chosen.repeat is not Repeat.ONCE else None
    created = []
    for local in series(chosen.first, chosen.repeat, chosen.count):
        starts_at = start_utc(local, chosen.zone)
        if starts_at <= now:
            continue
        cs = CoachingSession(
            uid=f"{secrets.token_hex(12)}@{UID_DOMAIN}", series=group, coach_id=coach_id,
            client_id=chosen.client_id, local_start=local, zone=chosen.zone,
            starts_at=starts_at, minutes=chosen.minutes, mode=chosen.mode,
            place=chosen.place, created_at=now, updated_at=now)
        session.add(cs)
        created.append(cs)
    await session.flush()
    for cs in created:
        await plan_rows(session, cs, now)
    return created


async def coach_session(session: AsyncSession, coach_id: int, session_id: int,
                        now: datetime) -> CoachingSession:
    """One of the coach's sessions still to come."""
    cs = await session.get(CoachingSession, session_id)
    if cs is None or cs.coach_id != coach_id or cs.status != SessionStatus.SCHEDULED \
            or cs.starts_at <= now or cs.group_session_id is not None:
        raise SessionNotFound("no such session to come")
    return cs


def wall_clock_in(local: datetime, zone: str, other: str) -> datetime:
    """The wall clock in zone ``other`` of the instant ``local`` names in ``zone``."""
    return start_utc(local, zone).astimezone(zone_of(other)).replace(tzinfo=None)


async def move_session(session: AsyncSession, coach_id: int, session_id: int,
                       new_local: datetime, zone: str, now: datetime) -> CoachingSession:
    """Move one session to another wall-clock time of ``zone`` (the mover's)."""
    cs = await coach_session(session, coach_id, session_id, now)
    starts_at = start_utc(new_local, zone)
    if starts_at <= now:
        raise ValueError("a session cannot move to the past")
    cs.zone = zone
    await _move_to(session, cs, new_local, starts_at, now)
    return cs


async def _move_to(session: AsyncSession, cs: CoachingSession, local: datetime,
                   starts_at: datetime, now: datetime) -> None:
    cs.local_start, cs.starts_at = local, starts_at
    cs.revise(now)
    await session.flush()
    await plan_rows(session, cs, now)


async def move_rest(session: AsyncSession, coach_id: int, session_id: int,
                    new_local: datetime, zone: str, now: datetime) -> list[CoachingSession]:
    """Move a session to another wall-clock time of ``zone`` (the mover's), and each later
    session of its series by the same change of day and time, in the zone it was set in."""
    cs = await coach_session(session, coach_id, session_id, now)
    chosen = await _rest_of_series(session, cs)
    new = wall_clock_in(new_local, zone, cs.zone)
    starts = moved_series([each.local_start for each in chosen], cs.local_start, new)
    instants = [start_utc(local, each.zone) for each, local in zip(chosen, starts, strict=True)]
    if min(instants) <= now:
        raise ValueError("a session cannot move to the past")
    for each, local, starts_at in zip(chosen, starts, instants, strict=True):
        await _move_to(session, each, local, starts_at, now)
    return chosen


async def _rest_of_series(session: AsyncSession, cs: CoachingSession) -> list[CoachingSession]:
    """The session and the later ones of its series still scheduled (itself alone when it
    is not part of one)."""
    if cs.series is None:
        return [cs]
    return list((await session.execute(
        select(CoachingSession)
        .where(CoachingSession.series == cs.series,
               CoachingSession.status == SessionStatus.SCHEDULED,
               CoachingSession.starts_at >= cs.starts_at)
        .order_by(CoachingSession.starts_at))).scalars())


async def cancel_sessions(session: AsyncSession, coach_id: int, session_id: int,
                          now: datetime, *, rest_of_series: bool = False
                          ) -> list[CoachingSession]:
    """Cancel one session, or it and the rest of its series."""
    cs = await coach_session(session, coach_id, session_id, now)
    chosen = await _rest_of_series(session, cs) if rest_of_series else [cs]
    for each in chosen:
        each.cancel(now)
        await plan_rows(session, each, now)
    await session.flush()
    return chosen


async def mark_outcome(session: AsyncSession, coach_id: int, session_id: int,
                       held: bool, now: datetime) -> CoachingSession:
    """The coach's one tap after a session: held or missed."""
    cs = await session.get(CoachingSession, session_id)
    if cs is None or cs.coach_id != coach_id or cs.status == SessionStatus.CANCELLED \
            or cs.starts_at > now or cs.group_session_id is not None:
        raise SessionNotFound("no such session that has started")
    cs.status = SessionStatus.HELD if held else SessionStatus.MISSED
    cs.updated_at = now
    await session.flush()
    return cs


async def upcoming(session: AsyncSession, user_id: int, now: datetime,
                   limit: int = 10) -> list[CoachingSession]:
    """The next scheduled sessions of a client or a coach, soonest first (a member's copies
    of group sessions are theirs; the coach's are the group sessions themselves)."""
    return list((await session.execute(
        select(CoachingSession)
        .where(CoachingSession.status == SessionStatus.SCHEDULED,
               CoachingSession.starts_at > now,
               (CoachingSession.client_id == user_id)
               | ((CoachingSession.coach_id == user_id)
                  & CoachingSession.group_session_id.is_(None)))
        .order_by(CoachingSession.starts_at).limit(limit))).scalars())


@dataclass(frozen=True)
class Engagement:
    """The sessions a coach and a client agreed on (the number they set, or else those
    scheduled since the link, held or missed), and how many were held, missed and are left."""

    agreed: int
    held: int
    missed: int
    set: bool = False  # the number was agreed, not counted from the sessions scheduled

    @property
    def left(self) -> int:
        return max(0, self.agreed - self.held - self.missed)

    @property
    def ended(self) -> bool:
        """The agreed number has been reached (the look back is due)."""
        return self.set and self.left == 0


#: The numbers of sessions a coach can choose as agreed.
AGREED_CHOICES = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24)


async def engagement(session: AsyncSession, coach_id: int, client_id: int) -> Engagement:
    link = (await session.execute(
        select(CoachLink).where(active_link(coach_id, client_id)))).scalar_one_or_none()
    query = select(CoachingSession.status).where(and_(
        CoachingSession.coach_id == coach_id, CoachingSession.client_id == client_id,
        CoachingSession.group_session_id.is_(None),
        CoachingSession.status != SessionStatus.CANCELLED))
    if link is not None:  # an earlier link's sessions were another engagement
        query = query.where(CoachingSession.created_at >= link.created_at)
    rows = list((await session.execute(query)).scalars())
    agreed = link.sessions_agreed if link is not None else None
    return Engagement(agreed=agreed or len(rows), held=rows.count(SessionStatus.HELD),
                      missed=rows.count(SessionStatus.MISSED), set=bool(agreed))


async def set_agreed(session: AsyncSession, coach_id: int, client_id: int,
                     count: int) -> bool:
    """The coach sets the number of sessions agreed with a linked client."""
    if count not in AGREED_CHOICES:
        return False
    link = (await session.execute(
        select(CoachLink).where(active_link(coach_id, client_id)))).scalar_one_or_none()
    if link is None or link.consent_at is None:
        return False
    link.sessions_agreed = count
    await session.flush()
    return True


# -- how a session reads -----------------------------------------------------------------


MODE_LABELS = {
    SessionMode.IN_PERSON: N_("In person"),
    SessionMode.PHONE: N_("By phone"),
    SessionMode.VIDEO: N_("By video"),
}


def when_text(cs: SessionTime, zone: str, tr: Translator) -> str:
    """The session's start in the reader's zone and language, with its length."""
    local = cs.starts_at.astimezone(zone_of(zone))
    return tr.gettext("{date}, {time} ({minutes} min)").format(
        date=tr.isolate(tr.date(local.date(), "full")), time=tr.isolate(tr.time(local)),
        minutes=tr.isolate(tr.number(cs.minutes)))


def calendar_file(sessions: Sequence[CoachingSession], tr: Translator, now: datetime,
                  summary: str | None = None) -> bytes:
    """The sessions' .ics in the client's language."""
    return session_ics(*(CalendarSession(
        uid=cs.uid, sequence=cs.sequence, local_start=cs.local_start, zone=cs.zone,
        minutes=cs.minutes, summary=summary or tr.gettext("Coaching session"),
        location=cs.place, cancelled=cs.status == SessionStatus.CANCELLED, stamp=now)
        for cs in sessions))


def calendar_payload(sessions: Sequence[CoachingSession], tr: Translator,
                     now: datetime, summary: str | None = None) -> dict[str, str]:
    """An outbox message carrying the calendar file (hex-encoded to stay JSON)."""
    return {"document": calendar_file(sessions, tr, now, summary).hex(),
            "filename": "session.ics",
            "caption": tr.gettext("Open the file to update your calendar.")}


def chosen_sessions(variables: Mapping[str, Value], zone: str) -> NewSessions | None:
    """The coach's choices handed to the place dialogue, or None when any is missing."""
    client, first = variables.get("session.client"), variables.get("session.start")
    minutes, count = variables.get("session.minutes"), variables.get("session.count")
    mode, repeat = variables.get("session.mode"), variables.get("session.repeat")
    place = variables.get("session.place")
    group = str(client).removeprefix(GROUP_TARGET) if str(client).startswith(GROUP_TARGET) \
        else None
    try:
        return NewSessions(
            group_id=None if group is None else int(group),
            client_id=0 if group is not None else int(str(client)),
            first=datetime.fromisoformat(str(first)), zone=zone,
            minutes=int(str(minutes)), mode=SessionMode(str(mode)), repeat=Repeat(str(repeat)),
            count=int(str(count)), place=place.strip() or None if isinstance(place, str) else None)
    except ValueError:
        return None


async def apply_new_sessions(t: StoreTurn, outcome: Outcome, now: datetime) -> list[Reply]:
    """A coach who finished choosing gets the sessions; the client hears of them with the
    calendar file. Returns what to tell the coach, after the dialogue's own last words (and,
    while no number of sessions is agreed with this client, the question of how many)."""
    if PLACE_DIALOGUE not in outcome.finished or not t.user.is_coach:
        return []
    tr = translator_for(t.user.locale)
    chosen = chosen_sessions(outcome.state.variables, t.user.time_zone)
    if chosen is None or chosen.group_id is not None:  # a group's: group_sessions
        return []
    try:
        created = await schedule_sessions(t.session, t.user_id, chosen, now)
    except NotYourClient:
        return [Reply(tr.gettext(
            "I cannot find that client among yours. Send /clients to see them."))]
    if not created:
        return [Reply(tr.gettext("That time has already passed. Send /schedule to choose "
                                 "another one."))]
    told = [Reply(await announce(t, created, SessionChange.NEW, now, tell_coach=False))]
    if not (await engagement(t.session, t.user_id, chosen.client_id)).set:
        client = await t.session.get(User, chosen.client_id)
        asked = agree_question(chosen.client_id, client.first_name or "?" if client else "?",
                               tr)
        told.append(Reply.from_payload(asked))
    return told


class SessionChange(StrEnum):
    NEW = "new"
    MOVED = "moved"
    CANCELLED = "cancelled"
    LINK_ENDED = "link_ended"  # cancelled because the client ended the link


def _heading(change: SessionChange, count: int, other: str, tr: Translator, *,
             to_client: bool) -> str:
    if to_client:
        texts = {
            # A label before the name, and the count in every plural form: Slavic languages
            # need not decline the name, and their "one" form also serves 21, 31. One
            # session alone has a text of its own, without a count (r73-bg).
            SessionChange.NEW: tr.gettext("New coaching session from {person}:")
            if count == 1 else tr.ngettext(
                "New coaching session from {person}: {count}",
                "New coaching sessions from {person}: {count}", count),
            SessionChange.MOVED: tr.gettext("Coaching session moved by {person}:")
            if count == 1 else tr.ngettext(
                "Coaching session moved by {person}: {count}",
                "Coaching sessions moved by {person}: {count}", count),
            SessionChange.CANCELLED: tr.gettext("Coaching session cancelled by {person}:")
            if count == 1 else tr.ngettext(
                "Coaching session cancelled by {person}: {count}",
                "Coaching sessions cancelled by {person}: {count}", count),
            SessionChange.LINK_ENDED: tr.gettext(
                "Coaching session cancelled because you stopped sharing your progress with "
                "{person}:") if count == 1 else tr.ngettext(
                "Coaching session cancelled because you stopped sharing your progress with "
                "{person}: {count}",
                "Coaching sessions cancelled because you stopped sharing your progress with "
                "{person}: {count}",
                count),
        }
    else:
        texts = {
            SessionChange.NEW: tr.ngettext("Session scheduled with {person}:",
                                           "{count} sessions scheduled with {person}:", count),
            SessionChange.MOVED: tr.gettext("Session with {person} moved:") if count == 1
            else tr.ngettext("{count} session with {person} moved:",
                             "{count} sessions with {person} moved:", count),
            SessionChange.CANCELLED: tr.ngettext(
                "Session with {person} cancelled:", "{count} sessions with {person} cancelled:",
                count),
            SessionChange.LINK_ENDED: tr.ngettext(
                "Session cancelled because {person} stopped sharing their progress with you: "
                "{count}",
                "Sessions cancelled because {person} stopped sharing their progress with you: "
                "{count}", count),
        }
    return texts[change].format(person=tr.words(other), count=tr.isolate(tr.number(count)))


async def announce(t: StoreTurn, sessions: Sequence[CoachingSession], change: SessionChange,
                   now: datetime, *, tell_coach: bool = True) -> str:
    """Tell the coach (the turn's user; or return it, ``tell_coach=False``) and the client,
    each in their zone and language; the client also gets the calendar file again (same
    UIDs, higher SEQUENCE). Returns the coach's text."""
    coach, client = await _people(t.session, sessions[0])
    told = ""
    for reader, other, to_client in ((coach, client, False), (client, coach, True)):
        tr = translator_for(reader.locale)
        name = other.first_name or (tr.gettext("your coach") if to_client
                                    else tr.gettext("your client"))
        text = (_heading(change, len(sessions), name, tr, to_client=to_client) + "\n"
                + session_lines(sessions, reader.time_zone, tr))
        if to_client:
            t.enqueue(reader.id, {"text": text})
            t.enqueue(reader.id, calendar_payload(sessions, tr, now))
        else:
            told = text
            if tell_coach:
                t.enqueue(reader.id, {"text": text}, subject=client.id)
    return told


@dataclass(frozen=True)
class Due:
    """What a planned row of a session does for its user: start a dialogue, or send them
    messages (a reminder, the held-or-missed prompt)."""

    dialogue: str | None = None
    messages: tuple[dict[str, object], ...] = ()
    subject: int | None = None  # the client, in a message to the coach
    chat_id: int | None = None  # where the messages go, when not the row's user's chat


def _buttons(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"label": label, "data": data} for label, data in pairs]


def _cant_button(cs: CoachingSession, tr: Translator,
                 label: str | None = None) -> list[dict[str, str]]:
    """The client's way to tell their coach they can't make it (``cant_make_it``)."""
    return _buttons((label or tr.gettext("I cannot make it"), f"{BUTTON}:cant:{cs.id}"))


async def session_work(t: StoreTurn, kind: str, ref: str, now: datetime) -> Due | None:
    """What a due row of a session does now, or None when it has nothing left to do (the
    session was cancelled or moved, or its time has passed)."""
    if kind in GROUP_WORK:
        return await _group_work(t, kind, ref, now)
    cs = await t.session.get(CoachingSession, int(ref)) if ref.isdigit() else None
    if cs is None or t.user_id not in (cs.coach_id, cs.client_id):
        return None
    coach, client = await _people(t.session, cs)
    to_client = t.user_id == client.id
    tr = translator_for(t.user.locale)
    if kind == CheckinKind.SESSION_RECAP:
        held_or_not_yet = cs.status in (SessionStatus.SCHEDULED, SessionStatus.HELD)
        return Due(dialogue=RECAP_DIALOGUE) if to_client and held_or_not_yet else None
    if cs.status != SessionStatus.SCHEDULED:
        return None
    when = session_lines([cs], t.user.time_zone, tr)
    if kind == CheckinKind.SESSION_PREP:
        return Due(dialogue=PREP_DIALOGUE, messages=({
            "text": tr.gettext("Your session tomorrow:") + "\n" + when,
            "buttons": _cant_button(cs, tr)},)) if to_client and now < cs.starts_at else None
    briefing = kind == CheckinKind.SESSION_BRIEF or (
        kind == CheckinKind.SESSION_REMINDER and reminder_lead(coach) == BRIEF_BEFORE)
    if kind in (CheckinKind.SESSION_REMINDER, CheckinKind.SESSION_BRIEF) \
            and now < cs.starts_at and not to_client:
        text = tr.gettext("A reminder: your session with {person} is coming up.").format(
            person=tr.person(client.first_name, client.id)) + "\n" + when
        brief = await brief_text(t.session, cs, tr, now) if briefing else None
        noted, copies = await brief_notes(t.session, client.id, tr, now) if briefing \
            else ([], [])
        if kind == CheckinKind.SESSION_BRIEF and not brief and not noted:
            return None  # the reminder came earlier; nothing shared to bring now
        for part in (brief, "\n".join(noted)):
            if part:
                text += "\n\n" + part
        return Due(messages=({"text": text}, *copies), subject=client.id)
    if kind == CheckinKind.SESSION_REMINDER and now < cs.starts_at:
        group = await group_of_copy(t.session, cs)
        text = (tr.gettext("A reminder: your coaching session is coming up.") if group is None
                else tr.gettext("A reminder: the session of your group “{group}” is coming "
                                "up.").format(group=tr.words(group.name))) + "\n" + when
        return Due(messages=({"text": text, "buttons": _cant_button(cs, tr)},))
    if kind == CheckinKind.SESSION_OUTCOME and not to_client and now >= cs.starts_at:
        text = tr.gettext("Did your session with {person} take place?").format(
            person=tr.person(client.first_name, client.id)) + "\n" + when
        return Due(messages=({"text": text, "buttons": _buttons(
            (tr.gettext("It took place"), f"{BUTTON}:held:{cs.id}"),
            (tr.gettext("It did not take place"), f"{BUTTON}:missed:{cs.id}"))},),
            subject=client.id)
    return None


async def group_of_copy(session: AsyncSession, cs: CoachingSession) -> Group | None:
    """The group whose session this member's copy is (None: a one-to-one session)."""
    if cs.group_session_id is None:
        return None
    group: Group | None = await session.scalar(
        select(Group).join(GroupSession, GroupSession.group_id == Group.id)
        .where(GroupSession.id == cs.group_session_id))
    return group


def _group_session_id(ref: str) -> int | None:
    rest = ref.removeprefix("g")
    return int(rest) if ref.startswith("g") and rest.isascii() and rest.isdigit() else None


async def _group_work(t: StoreTurn, kind: str, ref: str, now: datetime) -> Due | None:
    """A group session's own rows: the coach's reminder, and the one in the group's linked
    chat, which names no one (members get their own in private, with the time in their
    zone). None when the session is no longer to come, or there is no chat to post to."""
    gs_id = _group_session_id(ref)
    gs = await t.session.get(GroupSession, gs_id) if gs_id is not None else None
    if gs is None or gs.coach_id != t.user_id or gs.status != SessionStatus.SCHEDULED \
            or now >= gs.starts_at:
        return None
    group = await t.session.get(Group, gs.group_id)
    if group is None:
        return None
    if kind == CheckinKind.GROUP_CHAT:
        if group.chat_id is None or gs.starts_at - now < REMINDER_BEFORE / 2:
            return None  # no chat, or too late to say "within the hour"
        ctr = translator_for(group.chat_locale)
        return Due(chat_id=group.chat_id, messages=({"text": ctr.gettext(
            "A reminder for everyone: the group's session starts within the hour. Each of you "
            "has the details in our private chat.")},))
    tr = translator_for(t.user.locale)
    attending = await t.session.scalar(
        select(func.count()).select_from(CoachingSession)
        .where(CoachingSession.group_session_id == gs.id,
               CoachingSession.status == SessionStatus.SCHEDULED))
    text = tr.gettext("A reminder: your session with the group “{group}” is coming up.").format(
        group=tr.words(group.name)) + "\n" + session_lines([gs], t.user.time_zone, tr) \
        + "\n" + tr.gettext("Members invited: {count}").format(
            count=tr.isolate(tr.number(attending or 0)))
    return Due(messages=({"text": text},))


async def coach_group_sessions(session: AsyncSession, coach_id: int,
                               now: datetime) -> list[tuple[GroupSession, str]]:
    """The coach's group sessions to come with their group's name, soonest first."""
    rows = await session.execute(
        select(GroupSession, Group.name).join(Group, Group.id == GroupSession.group_id)
        .where(GroupSession.coach_id == coach_id,
               GroupSession.status == SessionStatus.SCHEDULED, GroupSession.starts_at > now)
        .order_by(GroupSession.starts_at).limit(20))
    return [(gs, name) for gs, name in rows]



async def coach_lines(t: StoreTurn, tr: Translator) -> tuple[list[str], list[dict[str, str]]]:
    """/sessions for a coach: their group sessions to come, with buttons to move or cancel
    them (or the rest of their series)."""
    lines: list[str] = []
    buttons: list[dict[str, str]] = []
    for gs, name in await coach_group_sessions(t.session, t.user_id, t.now):
        lines.append(tr.gettext("Group “{group}”:").format(group=tr.words(name)) + " "
                     + session_lines([gs], t.user.time_zone, tr).removeprefix("• "))
        day = tr.date(gs.starts_at.astimezone(zone_of(t.user.time_zone)).date(), "short")
        for label, one, rest in (
                (tr.gettext("Move: {group}, {date}"), "move", "mrest"),
                (tr.gettext("Cancel: {group}, {date}"), "cancel", "rest")):
            label = label.format(group=name, date=day)
            buttons.append({"label": label, "data": f"{GROUP_BUTTON}:{one}:{gs.id}"})
            if gs.series is not None:
                buttons.append({"label": tr.gettext("{label} and the rest").format(label=label),
                                "data": f"{GROUP_BUTTON}:{rest}:{gs.id}"})
    return lines, buttons



#: The preparation answers a brief shows, in order, with their labels.
BRIEF_ANSWERS = (
    ("prep.since", N_("Since the last session:")),
    ("prep.want", N_("What they want from this session:")),
    ("prep.scale", N_("Where they stand on their goal (1 to 10):")),
    ("prep.focus", N_("What they would like to work towards (no goal set):")),
)
#: How long before a session its preparation counts for the brief.
PREP_COUNTS_FOR = timedelta(days=3)


async def brief_text(session: AsyncSession, cs: CoachingSession, tr: Translator,
                     now: datetime) -> str | None:
    """The brief for the coach before a session, only if the client agreed to it: their
    preparation answers and their actions since the link. None without consent."""
    link = (await session.execute(
        select(CoachLink).where(active_link(cs.coach_id, cs.client_id)))).scalar_one_or_none()
    if link is None or link.brief_consent is not True or link.consent_at is None:
        return None
    since = max(link.consent_at, cs.starts_at - PREP_COUNTS_FOR)
    # Which dialogue an answer belongs to is encrypted: the few days' answers are read and
    # the preparation's picked out.
    answers = {a.variable: a.value for a in (await session.execute(
        select(Answer).where(Answer.user_id == cs.client_id,
                             Answer.answered_at >= since, Answer.answered_at <= now)
        .order_by(Answer.answered_at))).scalars() if a.dialogue_id == PREP_DIALOGUE}
    lines = [tr.gettext("Their preparation, shared with their agreement:")]
    shown = [(label, answers[name]) for name, label in BRIEF_ANSWERS
             if answers.get(name) is not None]
    if not shown:
        lines.append(tr.gettext("No preparation answers this time."))
    for label, value in shown:
        text = tr.isolate(tr.number(value)) if isinstance(value, int | float) \
            else tr.words(str(value))
        lines.append(f"{tr.gettext(label)} {text}")
    today = now.astimezone(zone_of(cs.zone)).date()
    lines += summary_lines(await actions_summary(session, cs.client_id, link.consent_at, today),
                           today, tr)
    return "\n".join(lines)


async def set_brief_consent(session: AsyncSession, client_id: int, coach_id: int,
                            agreed: bool) -> bool:
    """The client's yes or no to briefs for this coach; False without an active link."""
    link = (await session.execute(
        select(CoachLink).where(active_link(coach_id, client_id)))).scalar_one_or_none()
    if link is None:
        return False
    link.brief_consent = agreed
    await session.flush()
    return True


def brief_question(coach_id: int, coach_name: str, tr: Translator) -> dict[str, object]:
    """Asked when a client links with a coach, and by /brief."""
    return {"text": tr.gettext(
        "{coach} can get your session preparation an hour before each session: only your "
        "answers to it and your open actions. You can change this at any time with /brief. "
        "Would you like to share it?").format(coach=tr.words(coach_name)),
        "buttons": _buttons((tr.gettext("Yes, share it"), f"{BUTTON}:brief:yes:{coach_id}"),
                            (tr.gettext("No, keep it private"),
                             f"{BUTTON}:brief:no:{coach_id}"))}


async def ask_brief_once(t: StoreTurn, coach_id: int) -> None:
    """The brief question, when the turn's user shares their progress with this coach and
    was never asked (a link that joining a group with their progress made)."""
    link = (await t.session.execute(select(CoachLink).where(
        active_link(coach_id, t.user_id)))).scalar_one_or_none()
    coach = await t.session.get(User, coach_id)
    if link is not None and link.brief_consent is None and coach is not None:
        t.enqueue(t.user_id, brief_question(coach_id, coach.first_name or "",
                                            translator_for(t.user.locale)))


async def brief_answer(t: StoreTurn, rest: str) -> None:
    """A press on the brief question (``yes:<coach>`` or ``no:<coach>``)."""
    tr = translator_for(t.user.locale)
    answer, _, coach = rest.partition(":")
    agreed = answer == "yes"
    done = answer in ("yes", "no") and coach.isascii() and coach.isdigit() \
        and await set_brief_consent(t.session, t.user_id, int(coach), agreed)
    if not done:
        t.enqueue(t.user_id, {"text": tr.gettext(
            "You are not sharing your progress with any coach.")})
    elif agreed:
        t.enqueue(t.user_id, {"text": tr.gettext(
            "Done: your coach will get your preparation before each session. Send /brief "
            "to change it.")})
    else:
        t.enqueue(t.user_id, {"text": tr.gettext(
            "Done: your preparation stays with you. Send /brief to change it.")})


async def brief_questions(t: StoreTurn) -> None:
    """/brief: the question again for each coach the client shares with."""
    tr = translator_for(t.user.locale)
    coaches = await coaches_of(t.session, t.user_id)
    if not coaches:
        t.enqueue(t.user_id, {"text": tr.gettext(
            "You are not sharing your progress with any coach.")})
    for coach in coaches:
        t.enqueue(t.user_id, brief_question(coach.user_id, coach.first_name or "?", tr))


async def cant_make_it(t: StoreTurn, session_id: int, now: datetime) -> bool:
    """The client answered a reminder with "I cannot make it": their coach hears of it and is
    offered to move the session. True when the client is then asked which times would suit
    them instead (``CANT_DIALOGUE``)."""
    tr = translator_for(t.user.locale)
    cs = await t.session.get(CoachingSession, session_id)
    if cs is None or cs.client_id != t.user_id or cs.status != SessionStatus.SCHEDULED \
            or cs.starts_at <= now - timedelta(minutes=cs.minutes):
        t.enqueue(t.user_id, {"text": tr.gettext("This session is not planned any more.")})
        return False
    coach, client = await _people(t.session, cs)
    ctr = translator_for(coach.locale)
    group = await group_of_copy(t.session, cs)
    if group is not None:  # the group's session goes ahead: the coach is told, no more
        t.enqueue(coach.id, {"text": ctr.gettext(
            "Cannot make it to the session of the group “{group}”: {person}").format(
                person=ctr.person(client.first_name, client.id),
                group=ctr.words(group.name)) + "\n" + session_lines(
                    [cs], coach.time_zone, ctr)}, subject=client.id)
        t.enqueue(t.user_id, {"text": tr.gettext(
            "Thank you for letting me know. I told your coach.")})
        return False  # the group session is not moved: no other times asked for
    text = ctr.gettext("Cannot make it to this session: {person}").format(
        person=ctr.person(client.first_name, client.id)) + "\n" + session_lines(
            [cs], coach.time_zone, ctr)
    t.enqueue(coach.id, {"text": text, "buttons": _move_or_cancel(cs, ctr)}, subject=client.id)
    return True


def _move_or_cancel(cs: CoachingSession, tr: Translator) -> list[dict[str, str]]:
    return _buttons((tr.gettext("Find another time"), f"{BUTTON}:move:{cs.id}"),
                    (tr.gettext("Cancel the session"), f"{BUTTON}:cancel:{cs.id}"))


async def apply_another_time(t: StoreTurn, outcome: Outcome, now: datetime) -> list[str]:
    """The times a client who can't make it proposed go to their coach, with the buttons to
    move or cancel the session."""
    variables = outcome.state.variables
    session_id, when = variables.get(CANT_SESSION), variables.get("cant.when")
    if CANT_DIALOGUE not in outcome.finished or not isinstance(session_id, int) \
            or not isinstance(when, str) or not when.strip():
        return []
    cs = await t.session.get(CoachingSession, session_id)
    if cs is None or cs.client_id != t.user_id or cs.status != SessionStatus.SCHEDULED:
        return []
    coach, client = await _people(t.session, cs)
    ctr = translator_for(coach.locale)
    text = ctr.gettext("{person} could make it at these times instead:").format(
        person=ctr.person(client.first_name, client.id)) + "\n" + ctr.words(when)
    t.enqueue(coach.id, {"text": text, "buttons": _move_or_cancel(cs, ctr)}, subject=client.id)
    return []


async def record_outcome(t: StoreTurn, session_id: int, held: bool, now: datetime) -> None:
    """The coach's one tap after a session; they see the engagement's counts."""
    tr = translator_for(t.user.locale)
    try:
        cs = await mark_outcome(t.session, t.user_id, session_id, held, now)
    except SessionNotFound:
        t.enqueue(t.user_id, {"text": tr.gettext("This session is not planned any more.")})
        return
    counts = await engagement(t.session, cs.coach_id, cs.client_id)
    text = (tr.gettext("Noted: it took place.") if held
            else tr.gettext("Noted: it did not take place.")) + "\n" \
        + engagement_text(counts, tr)
    client = await t.session.get(User, cs.client_id)
    if counts.ended and client is not None and await plan_closing(
            t.session, cs.coach_id, cs.client_id, profile_of(client), now):
        text += "\n" + tr.gettext(
            "That was the last of the sessions you agreed on. I will invite {person} to look "
            "back on your sessions together and to choose whether to keep sharing their progress "
            "with you.").format(
            person=tr.person(client.first_name, client.id))
    t.enqueue(t.user_id, {"text": text}, subject=cs.client_id)


async def sessions_message(t: StoreTurn, now: datetime) -> dict[str, object]:
    """/sessions: the next sessions in the reader's zone and language, with the engagement's
    counts; a coach also gets buttons to move or cancel each (or the rest of a series), a
    client one to say they can't make it."""
    tr = translator_for(t.user.locale)
    coming = await upcoming(t.session, t.user_id, now)
    pairs = {(cs.coach_id, cs.client_id) for cs in coming if cs.group_session_id is None}
    pairs |= {(t.user_id, c.user_id) for c in await clients_of(t.session, t.user_id)}
    pairs |= {(c.user_id, t.user_id) for c in await coaches_of(t.session, t.user_id)}
    group_lines, buttons = await coach_lines(t, tr) if t.user.is_coach else ([], [])
    lines = [tr.gettext("Your next sessions:") if coming or group_lines else tr.gettext(
        "No sessions are planned. Coaches schedule them with /schedule."), *group_lines]
    for number, cs in enumerate(coming, start=1):
        coaching = cs.coach_id == t.user_id
        other = await t.session.get(User, cs.client_id if coaching else cs.coach_id)
        name = other.first_name if other is not None and other.first_name else "?"
        group = await group_of_copy(t.session, cs)
        if group is not None:
            name = group.name
        label = tr.number(number)
        lines.append(f"{label}. {tr.words(name)}: "
                     + session_lines([cs], t.user.time_zone, tr).removeprefix("• "))
        if coaching:
            buttons += _buttons(
                (tr.gettext("{number}: move").format(number=label), f"{BUTTON}:move:{cs.id}"),
                (tr.gettext("{number}: cancel").format(number=label),
                 f"{BUTTON}:cancel:{cs.id}"))
            if cs.series is not None:
                buttons += _buttons(
                    (tr.gettext("{number}: move this and the rest").format(number=label),
                     f"{BUTTON}:mrest:{cs.id}"),
                    (tr.gettext("{number}: cancel this and the rest").format(number=label),
                     f"{BUTTON}:rest:{cs.id}"))
        else:
            buttons += _cant_button(cs, tr, tr.gettext("{number}: I cannot make it").format(
                number=label))
    if t.user.is_coach:
        buttons += _buttons((tr.gettext("Reminders: {duration} before").format(
            duration=tr.duration(reminder_lead(t.user))), f"{BUTTON}:lead"))
    for coach_id, client_id in sorted(pairs):
        counts = await engagement(t.session, coach_id, client_id)
        other = await t.session.get(User, client_id if coach_id == t.user_id else coach_id)
        name = other.first_name if other is not None and other.first_name else "?"
        if counts.agreed:
            lines.append(f"{tr.words(name)}: {engagement_text(counts, tr)}")
        if coach_id == t.user_id:
            buttons += _buttons((tr.gettext("Sessions agreed with {person}").format(
                person=tr.words(name)), f"{BUTTON}:agree:{client_id}"))
    return {"text": "\n".join(lines), **({"buttons": buttons} if buttons else {})}


def agree_question(client_id: int, name: str, tr: Translator) -> dict[str, object]:
    """How many sessions the coach and this client agreed on, as buttons."""
    return {"text": tr.gettext("How many sessions have you agreed on with {person}?").format(
        person=tr.words(name)), "buttons": _buttons(*(
            (tr.number(n), f"{BUTTON}:agree:{client_id}:{n}") for n in AGREED_CHOICES))}


async def agree_button(t: StoreTurn, parts: Sequence[str]) -> None:
    """``agree:<client>`` asks the number; ``agree:<client>:<n>`` sets it."""
    tr = translator_for(t.user.locale)
    client = await t.session.get(User, int(parts[0])) if parts and parts[0].isdigit() \
        else None
    if client is None or not await is_linked(t.session, t.user_id, client.id):
        t.enqueue(t.user_id, {"text": tr.gettext(
            "I cannot find that client among yours. Send /clients to see them.")})
        return
    name = client.first_name or str(client.id)
    if len(parts) == 1:
        t.enqueue(t.user_id, agree_question(client.id, name, tr))
        return
    count = int(parts[1]) if len(parts) == 2 and parts[1].isdigit() else 0
    if not await set_agreed(t.session, t.user_id, client.id, count):
        t.enqueue(t.user_id, {"text": tr.gettext(
            "That choice is not valid any more. Send /schedule to start again.")})
        return
    counts = await engagement(t.session, t.user_id, client.id)
    t.enqueue(t.user_id, {"text": tr.words(name) + ": " + engagement_text(counts, tr)},
              subject=client.id)
    ctr = translator_for(client.locale)
    t.enqueue(client.id, {"text": ctr.gettext(
        "You and your coach agreed on the number of sessions: {count}. You can see how many "
        "are left with /sessions.").format(count=ctr.isolate(ctr.number(count)))})


def session_lines(sessions: Sequence[SessionTime], zone: str, tr: Translator) -> str:
    """One line a session (one to one, or a group's): when (in the reader's zone and
    language), how, and where."""
    lines = []
    for cs in sessions:
        line = f"• {when_text(cs, zone, tr)} · {tr.gettext(MODE_LABELS[cs.mode])}"
        if cs.place:
            line += f" · {tr.words(cs.place)}"
        lines.append(line)
    return "\n".join(lines)


def engagement_text(counts: Engagement, tr: Translator) -> str:
    return tr.gettext("Sessions agreed: {agreed} · held: {held} · not held: {missed} · left: "
                      "{left}").format(
        agreed=tr.isolate(tr.number(counts.agreed)), held=tr.isolate(tr.number(counts.held)),
        missed=tr.isolate(tr.number(counts.missed)), left=tr.isolate(tr.number(counts.left)))


__all__: Sequence[str] = (
    "Engagement", "NewSessions", "NotYourClient", "SessionNotFound", "calendar_payload",
    "cancel_sessions", "engagement", "mark_outcome", "move_rest", "move_session", "plan_rows",
    "schedule_sessions", "upcoming",
)
