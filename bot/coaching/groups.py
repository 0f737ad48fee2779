"""Teams and cohorts: a coach's groups, joining by one's own consent, leaving, the group's
assignments (one copy per member, planned in the member's own zone like any assignment),
and the group's linked Telegram chat.

Every function takes the caller's session and an explicit ``now`` and never commits. A
coach reaches a group only through ``coach_group`` (their own), a member only through
an active membership: forged ids get the same error as ids that do not exist.
"""

from __future__ import annotations

import secrets
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from sqlalchemy import String, and_, cast, exists, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bot.coaching import programmes
from bot.coaching.actions import date_answer
from bot.coaching.assignments import checked_exercise, checked_schedule
from bot.coaching.coach_errors import (
    InvalidGroupName,
    JoinError,
    JoinProblem,
    NotACoach,
    NotYourGroup,
    UnknownLanguage,
)
from bot.coaching.contracts import (
    GROUP_ANSWER,
    GROUP_CONTRIBUTION,
    GROUP_GOAL,
    GROUP_RENAME,
)
from bot.coaching.exercise_checkins import stop_assignments_where
from bot.coaching.links import Unlinked, active_link, invite_hash, is_coach, unlink
from bot.dialogue.model import Position
from bot.dialogue.programmes import Programme, ProgrammeStep
from bot.engine import Outcome, Reply
from bot.engine.state import Button
from bot.i18n import N_, SUPPORTED_LOCALES, translator_for
from bot.schedule.planning import local_date, wall_to_utc, zone_of
from bot.store import (
    Assignment,
    CoachingSession,
    CoachLink,
    Group,
    GroupAssignment,
    GroupContribution,
    GroupKind,
    GroupMember,
    GroupSession,
    PlannedCheckin,
    ProgrammeRun,
    SessionStatus,
    User,
    Visibility,
    rowcount,
)
from bot.store import Turn as StoreTurn
from bot.store.kinds import CheckinKind, CheckinStatus, ProgrammeStatus

MAX_NAME = 64
CODE_BYTES = 24  # as a one-to-one invite: 192 bits
#: How long a group's join link works; the coach can make a new one at any time.
CODE_TTL = timedelta(days=14)


@dataclass(frozen=True)
class GroupSummary:
    id: int
    name: str
    kind: GroupKind
    members: int
    chat_linked: bool


@dataclass(frozen=True)
class Member:
    user_id: int
    first_name: str | None
    visibility: Visibility
    joined_at: datetime


@dataclass(frozen=True)
class Membership:
    group_id: int
    group_name: str
    coach_name: str | None


def current(member: Any = GroupMember) -> Any:
    return member.left_at.is_(None)


# -- the coach's groups -------------------------------------------------------------------


def clean_name(name: str) -> str:
    name = " ".join(name.split())
    if not name or len(name) > MAX_NAME:
        raise InvalidGroupName(f"a group's name has 1 to {MAX_NAME} characters")
    return name


async def create_group(session: AsyncSession, coach_id: int, name: str, kind: GroupKind,
                       now: datetime) -> tuple[Group, str]:
    """The new group and its join link's code: shown to the coach once, stored hashed. Its
    chat's language is the coach's own until they choose another."""
    if not await is_coach(session, coach_id):
        raise NotACoach("only coaches can make groups")
    code = secrets.token_urlsafe(CODE_BYTES)
    locale = await session.scalar(select(User.locale).where(User.id == coach_id))
    group = Group(coach_id=coach_id, name=clean_name(name), kind=kind.value,
                  code_hash=invite_hash(code), code_expires_at=now + CODE_TTL, created_at=now,
                  chat_locale=locale)
    session.add(group)
    await session.flush()
    return group, code


async def new_code(session: AsyncSession, coach_id: int, group_id: int,
                   now: datetime) -> tuple[Group, str]:
    """A new join link for the coach's group; the old one stops working at once."""
    group = await coach_group(session, coach_id, group_id)
    code = secrets.token_urlsafe(CODE_BYTES)
    group.code_hash, group.code_expires_at = invite_hash(code), now + CODE_TTL
    await session.flush()
    return group, code


async def rename_group(session: AsyncSession, coach_id: int, group_id: int,
                       name: str) -> Group:
    group = await coach_group(session, coach_id, group_id)
    group.name = clean_name(name)
    await session.flush()
    return group


async def coach_group(session: AsyncSession, coach_id: int, group_id: int) -> Group:
    """The coach's own group, or NotYourGroup."""
    group = await session.scalar(select(Group).where(Group.id == group_id,
                                                     Group.coach_id == coach_id))
    if group is None:
        raise NotYourGroup("no such group of yours")
    return group


async def groups_of(session: AsyncSession, coach_id: int) -> list[GroupSummary]:
    members = (select(func.count()).where(GroupMember.group_id == Group.id, current())
               .scalar_subquery())
    rows = await session.execute(select(Group, members).where(Group.coach_id == coach_id)
                                 .order_by(Group.id))
    return [GroupSummary(g.id, g.name, GroupKind(g.kind), n, g.chat_id is not None)
            for g, n in rows]


async def members_of(session: AsyncSession, coach_id: int, group_id: int) -> list[Member]:
    await coach_group(session, coach_id, group_id)
    rows = await session.execute(
        select(User.id, User.first_name, GroupMember.visibility, GroupMember.joined_at)
        .join(GroupMember, GroupMember.user_id == User.id)
        .where(GroupMember.group_id == group_id, current())
        .order_by(GroupMember.joined_at, User.id))
    return [Member(uid, name, Visibility(v), at) for uid, name, v, at in rows]


# -- joining and leaving ------------------------------------------------------------------


async def group_for_code(session: AsyncSession, code: str, user_id: int,
                         now: datetime) -> Group:
    """The group this link invites ``user_id`` to, or JoinError (nothing changed). A link
    the coach replaced is unknown: only the latest one's hash is kept."""
    group = await session.scalar(
        select(Group).join(User, User.id == Group.coach_id)
        .where(Group.code_hash == invite_hash(code), User.is_coach.is_(True)))
    if group is None:
        raise JoinError(JoinProblem.UNKNOWN)
    if group.code_expires_at <= now:
        raise JoinError(JoinProblem.EXPIRED)
    if group.coach_id == user_id:
        raise JoinError(JoinProblem.OWN)
    if await session.scalar(select(exists().where(
            GroupMember.group_id == group.id, GroupMember.user_id == user_id, current()))):
        raise JoinError(JoinProblem.ALREADY_MEMBER)
    return group


async def join(session: AsyncSession, code: str, user_id: int, visibility: Visibility,
               now: datetime) -> Group:
    """Join by the group's link, consent given now. With ``Visibility.PROGRESS`` the coach
    also follows the member's own progress, through a one-to-one link made for it (unless
    one is there already). The group's current assignments are copied for the member."""
    group = await group_for_code(session, code, user_id, now)
    member = GroupMember(group_id=group.id, user_id=user_id, visibility=visibility.value,
                         joined_at=now)
    if visibility is Visibility.PROGRESS and not await session.scalar(
            select(exists().where(active_link(group.coach_id, user_id)))):
        link = CoachLink(coach_id=group.coach_id, client_id=user_id, created_at=now,
                         consent_at=now)
        session.add(link)
        await session.flush()
        member.link_id = link.id
    session.add(member)
    await session.flush()  # the partial unique index refuses a concurrent second join
    zone = await session.scalar(select(User.time_zone).where(User.id == user_id))
    for assignment in await _current_assignments(session, group.id, now.date()):
        if is_programme(assignment):
            await _programme_for(session, assignment, group.coach_id, user_id, zone, now)
        else:
            _copy_for(session, assignment, group.coach_id, user_id, now)
    await session.flush()
    return group


async def memberships(session: AsyncSession, user_id: int) -> list[Membership]:
    rows = await session.execute(
        select(Group.id, Group.name, User.first_name)
        .join(GroupMember, GroupMember.group_id == Group.id)
        .join(User, User.id == Group.coach_id)
        .where(GroupMember.user_id == user_id, current()).order_by(Group.id))
    return [Membership(gid, name, coach) for gid, name, coach in rows]


async def leave(session: AsyncSession, user_id: int, group_id: int,
                now: datetime) -> Unlinked | None:
    """Leave a group: its assignments stop for them, and a link the membership made ends
    (as /coach ends one: links.unlink) unless another of the coach's groups still asks for
    it. Returns what ending that link took with it (announcing it is the caller's); None:
    not a member."""
    member = await session.scalar(select(GroupMember).where(
        GroupMember.group_id == group_id, GroupMember.user_id == user_id, current()))
    if member is None:
        return None
    member.left_at = now
    group = await session.get(Group, group_id)
    assert group is not None
    of_the_group = Assignment.group_assignment_id.in_(
        select(GroupAssignment.id).where(GroupAssignment.group_id == group_id))
    await stop_assignments_where(session, user_id, of_the_group)
    await session.execute(
        update(ProgrammeRun).where(
            ProgrammeRun.client_id == user_id, ProgrammeRun.id.in_(
                select(Assignment.programme_run_id).where(
                    Assignment.client_id == user_id, of_the_group)))
        .values(status=ProgrammeStatus.CANCELLED).execution_options(synchronize_session=False))
    await _stop_sessions(session, user_id, group_id, now)
    ended = await _end_link(session, member, group.coach_id, now)
    await session.flush()
    return ended


async def remove_member(session: AsyncSession, coach_id: int, group_id: int, member_id: int,
                        now: datetime) -> Unlinked | None:
    """The coach ends someone's membership of their group: as if they had left (their
    exercises and sessions of the group stop, a link the membership made ends). None:
    not a member (or not the coach's group: NotYourGroup)."""
    await coach_group(session, coach_id, group_id)
    return await leave(session, member_id, group_id, now)


def member_sessions(user_id: int, group_id: int) -> Any:
    """The member's copies of the group's sessions (a WHERE clause)."""
    return and_(CoachingSession.client_id == user_id,
                CoachingSession.group_session_id.in_(
                    select(GroupSession.id).where(GroupSession.group_id == group_id)))


async def _stop_sessions(session: AsyncSession, user_id: int, group_id: int,
                         now: datetime) -> None:
    """The member's copies of the group's sessions to come are cancelled, with their
    reminders (what the member is sent about it is the caller's: group_sessions)."""
    ids = select(CoachingSession.id).where(
        member_sessions(user_id, group_id), CoachingSession.starts_at > now,
        CoachingSession.status == SessionStatus.SCHEDULED)
    await session.execute(
        update(PlannedCheckin)
        .where(PlannedCheckin.user_id == user_id,
               PlannedCheckin.kind.in_((CheckinKind.SESSION_REMINDER,
                                        CheckinKind.SESSION_PREP, CheckinKind.SESSION_RECAP)),
               PlannedCheckin.status == CheckinStatus.PLANNED,
               PlannedCheckin.ref.in_(select(cast(CoachingSession.id, String))
                                      .where(CoachingSession.id.in_(ids))))
        .values(status=CheckinStatus.CANCELLED).execution_options(synchronize_session=False))
    await session.execute(
        update(CoachingSession).where(CoachingSession.id.in_(ids))
        .values(status=SessionStatus.CANCELLED, sequence=CoachingSession.sequence + 1,
                updated_at=now).execution_options(synchronize_session=False))


async def _end_link(session: AsyncSession, member: GroupMember, coach_id: int,
                    now: datetime) -> Unlinked:
    """The link this membership made, ended, unless it ended already or another of the
    coach's groups still asks for it."""
    still_wanted = await session.scalar(select(exists().where(
        GroupMember.user_id == member.user_id, current(), GroupMember.id != member.id,
        GroupMember.visibility == Visibility.PROGRESS.value,
        GroupMember.group_id.in_(select(Group.id).where(Group.coach_id == coach_id)))))
    made_and_active = member.link_id is not None and await session.scalar(select(exists().where(
        CoachLink.id == member.link_id, CoachLink.unlinked_at.is_(None))))
    if still_wanted or not made_and_active:
        return Unlinked([], [])
    return await unlink(session, member.user_id, coach_id, now)


# -- the group's assignments --------------------------------------------------------------


async def assign_to_group(
    session: AsyncSession,
    coach_id: int,
    group_id: int,
    exercise_slug: str,
    schedule: Mapping[str, Any],
    starts_on: date,
    ends_on: date | None,
    now: datetime,
    known_exercises: Collection[str],
    custom_exercise_id: int | None = None,
) -> tuple[int, int]:
    """Assign an exercise to the whole group in one step: each current member gets their
    own copy, planned at the schedule's hour in their own zone. Returns (the group
    assignment's id, how many members got it)."""
    group = await coach_group(session, coach_id, group_id)
    exercise_slug = await checked_exercise(session, coach_id, exercise_slug, known_exercises,
                                           custom_exercise_id)
    clean = checked_schedule(schedule, starts_on, ends_on)
    assignment = GroupAssignment(group_id=group.id, exercise_slug=exercise_slug,
                                 exercise_id=custom_exercise_id, schedule=clean,
                                 starts_on=starts_on, ends_on=ends_on, created_at=now)
    session.add(assignment)
    await session.flush()
    members = (await session.scalars(select(GroupMember.user_id).where(
        GroupMember.group_id == group.id, current()))).all()
    for member in members:
        _copy_for(session, assignment, coach_id, member, now)
    await session.flush()
    return assignment.id, len(members)


#: A group assignment that is a whole programme (its schedule's kind): each member gets
#: their own run of it (bot/coaching/programmes.py) from their own tomorrow.
PROGRAMME_KIND = "programme"
_STORED = Position("group programme", 0, 0)


def is_programme(assignment: GroupAssignment) -> bool:
    return assignment.schedule.get("kind") == PROGRAMME_KIND


async def assign_programme_to_group(
    session: AsyncSession,
    coach_id: int,
    group_id: int,
    programme: Programme,
    hour: int,
    minute: int,
    now: datetime,
    known_exercises: Collection[str],
) -> tuple[int, int]:
    """Give the whole group a programme in one step: each current member gets their own
    run, from their own tomorrow, each step at ``hour:minute`` of their own day; whoever
    joins while it runs gets theirs from their tomorrow. The steps are kept with the
    group's assignment, so a late joiner gets the programme as it was given. Returns (the
    group assignment's id, how many members got it); NotYourGroup for another's group."""
    group = await coach_group(session, coach_id, group_id)
    steps: list[tuple[str, int, int]] = [
        (await checked_exercise(session, coach_id, step.exercise, known_exercises, None),
         step.day, step.days) for step in programme.steps]
    checked_schedule({"kind": "daily", "days": 1, "hour": hour, "minute": minute}, now.date(),
                     None)
    length = max(day + days for _, day, days in steps)
    assignment = GroupAssignment(
        group_id=group.id, exercise_slug=programme.id, exercise_id=None,
        schedule={"kind": PROGRAMME_KIND, "hour": hour, "minute": minute,
                  "steps": [list(step) for step in steps]},
        starts_on=now.date(), ends_on=now.date() + timedelta(days=length), created_at=now)
    session.add(assignment)
    await session.flush()
    members = (await session.execute(
        select(User.id, User.time_zone).join(GroupMember, GroupMember.user_id == User.id)
        .where(GroupMember.group_id == group.id, current()).order_by(User.id))).all()
    for member, zone in members:
        await _programme_for(session, assignment, coach_id, member, zone, now)
    return assignment.id, len(members)


async def _programme_for(session: AsyncSession, assignment: GroupAssignment, coach_id: int,
                         member_id: int, zone: str | None, now: datetime) -> int:
    """A member's own run of the group's programme, from their tomorrow."""
    schedule = assignment.schedule
    steps = tuple(ProgrammeStep(str(slug), int(day), int(days), _STORED)
                  for slug, day, days in schedule["steps"])
    programme = Programme(assignment.exercise_slug, "", steps, "", _STORED)
    starts_on = local_date(now, zone_of(zone or "UTC")) + timedelta(days=1)
    return await programmes.assign_programme(
        session, coach_id, member_id, programme, starts_on, int(schedule["hour"]),
        int(schedule["minute"]), now, {step.exercise for step in steps},
        group_assignment_id=assignment.id)


async def _current_assignments(session: AsyncSession, group_id: int,
                               today: date) -> list[GroupAssignment]:
    return list((await session.scalars(select(GroupAssignment).where(
        GroupAssignment.group_id == group_id, GroupAssignment.active.is_(True),
        (GroupAssignment.ends_on.is_(None)) | (GroupAssignment.ends_on >= today))
        .order_by(GroupAssignment.id))).all())


def _copy_for(session: AsyncSession, assignment: GroupAssignment, coach_id: int,
              member_id: int, now: datetime) -> None:
    """A member's own copy; a late joiner's starts today (the days before are past)."""
    session.add(Assignment(
        coach_id=coach_id, client_id=member_id, exercise_slug=assignment.exercise_slug,
        exercise_id=assignment.exercise_id, schedule=dict(assignment.schedule),
        starts_on=max(assignment.starts_on, now.date()), ends_on=assignment.ends_on,
        active=True, created_at=now, group_assignment_id=assignment.id))


async def group_exercise_refs(session: AsyncSession, group_id: int) -> list[int]:
    """The ids of the members' copies of this group's assignments."""
    return list((await session.scalars(select(Assignment.id).where(
        Assignment.group_assignment_id.in_(
            select(GroupAssignment.id).where(GroupAssignment.group_id == group_id))))).all())


# -- the group's own chat -----------------------------------------------------------------


async def link_chat(session: AsyncSession, group_id: int, coach_id: int, chat_id: int,
                    now: datetime) -> Group:
    """Link a Telegram group chat to the coach's group ``group_id``; only the group's coach
    can (whoever else adds the bot with the same link gets NotYourGroup). A chat serves one
    group at a time, in the language the coach chose for it. The week's question is planned
    there."""
    group = await coach_group(session, coach_id, group_id)
    if not await is_coach(session, coach_id):
        raise NotYourGroup("no such group of yours")
    await session.execute(update(Group).where(Group.chat_id == chat_id, Group.id != group.id)
                          .values(chat_id=None).execution_options(synchronize_session=False))
    group.chat_id = chat_id
    await session.flush()
    await plan_question(session, group, now)
    return group


async def set_chat_locale(session: AsyncSession, coach_id: int, group_id: int,
                          locale: str) -> Group:
    """The language the bot writes in in the group's chat; only the group's coach sets it."""
    group = await coach_group(session, coach_id, group_id)
    if locale not in SUPPORTED_LOCALES:
        raise UnknownLanguage(f"no catalog for {locale!r}")
    group.chat_locale = locale
    await session.flush()
    return group


async def group_of_chat(session: AsyncSession, chat_id: int) -> Group | None:
    group: Group | None = await session.scalar(select(Group).where(Group.chat_id == chat_id))
    return group


async def unlink_chat(session: AsyncSession, chat_id: int) -> bool:
    done = await session.execute(update(Group).where(Group.chat_id == chat_id)
                                 .values(chat_id=None)
                                 .execution_options(synchronize_session=False))
    return bool(rowcount(done))


async def move_chat(session: AsyncSession, old_chat_id: int, new_chat_id: int) -> bool:
    """A group became a supergroup (``migrate_to_chat_id``): its link follows."""
    done = await session.execute(update(Group).where(Group.chat_id == old_chat_id)
                                 .values(chat_id=new_chat_id)
                                 .execution_options(synchronize_session=False))
    return bool(rowcount(done))


async def session_attendees(session: AsyncSession, coach_id: int, group_id: int) -> list[int]:
    """Who a group session is for: the current members of the coach's own group, each of
    whom gets their own copy, planned at their own local time (bot/coaching/group_sessions)."""
    await coach_group(session, coach_id, group_id)
    return list((await session.scalars(select(GroupMember.user_id).where(
        GroupMember.group_id == group_id, current()).order_by(GroupMember.user_id))).all())


async def is_member(session: AsyncSession, user_id: int, group_id: int) -> bool:
    return bool(await session.scalar(select(exists().where(and_(
        GroupMember.group_id == group_id, GroupMember.user_id == user_id, current())))))



# -- a team's shared goal -----------------------------------------------------------------


#: The questions a group's chat gets, one a week in turn (by ISO week number).
GROUP_QUESTIONS = (
    # TRANSLATORS: posted in the group's chat, where nothing offers /skip (each member
    # answers in private, where /skip is offered); "if anything": do not assume they did.
    N_("What, if anything, did you learn from each other this week?"),
    N_("What went well for the group this week?"),
    N_("What would make next week easier for the group?"),
    # TRANSLATORS: as above: posted in the group's chat; do not assume there is something.
    N_("What, if anything, are you proud of this week, as a group?"),
)


def week_question(now: datetime) -> int:
    """The index of this week's question in ``GROUP_QUESTIONS``."""
    return now.isocalendar().week % len(GROUP_QUESTIONS)


#: When the week's question goes to a linked chat by itself: Monday at 10:00 on the
#: coach's clock (the chat has no zone of its own; its members may have several).
QUESTION_WEEKDAY = 0
QUESTION_MINUTE = 10 * 60


def next_question_due(now: datetime, zone: str) -> datetime:
    """The first Monday 10:00 in ``zone`` strictly after ``now`` (DST-safe)."""
    tz = zone_of(zone)
    day = local_date(now, tz)
    day += timedelta(days=(QUESTION_WEEKDAY - day.weekday()) % 7)
    due = wall_to_utc(day, QUESTION_MINUTE, tz)
    if due <= now:
        due = wall_to_utc(day + timedelta(days=7), QUESTION_MINUTE, tz)
    return due


async def plan_question(session: AsyncSession, group: Group, now: datetime) -> None:
    """Plan the group's next weekly question, once: only for a linked chat with the
    question on, and only when none is planned yet."""
    if group.chat_id is None or not group.weekly_question:
        return
    planned = await session.scalar(select(exists().where(
        PlannedCheckin.kind == CheckinKind.GROUP_QUESTION, PlannedCheckin.ref == str(group.id),
        PlannedCheckin.status.in_((CheckinStatus.PLANNED, CheckinStatus.CLAIMED)))))
    if planned:
        return
    zone = await session.scalar(select(User.time_zone).where(User.id == group.coach_id))
    session.add(PlannedCheckin(user_id=group.coach_id, kind=CheckinKind.GROUP_QUESTION,
                               ref=str(group.id), due_at=next_question_due(now, zone or "UTC"),
                               status=CheckinStatus.PLANNED))
    await session.flush()


async def set_weekly_question(session: AsyncSession, coach_id: int, group_id: int, on: bool,
                              now: datetime) -> Group:
    """The coach turns the automatic weekly question on or off."""
    group = await coach_group(session, coach_id, group_id)
    group.weekly_question = on
    if on:
        await plan_question(session, group, now)
    else:
        await session.execute(
            update(PlannedCheckin).where(PlannedCheckin.kind == CheckinKind.GROUP_QUESTION,
                                         PlannedCheckin.ref == str(group.id),
                                         PlannedCheckin.status == CheckinStatus.PLANNED)
            .values(status=CheckinStatus.CANCELLED)
            .execution_options(synchronize_session=False))
    await session.flush()
    return group


def question_payload(group: Group, index: int) -> dict[str, Any]:
    """The week's question for the group's chat, in its language: members answer in
    private (the button opens it there) and share only on their yes."""
    tr = translator_for(group.chat_locale)
    return Reply(
        tr.gettext("This week's question: {question}\nEach of you can answer me in "
                   "private: I share an answer here only if the person who wrote it says "
                   "so.").format(
            question=tr.gettext(GROUP_QUESTIONS[index])),
        (Button(tr.gettext("Answer in private"), f"gqa:{group.id}:{index}"),)).to_payload()


async def weekly_question_due(t: StoreTurn, ref: str, now: datetime) -> bool:
    """A due weekly question (the row's user is the coach): posted in the linked chat and
    the next week's planned. False when there is nothing to post (no such group of theirs,
    no chat linked, or the question turned off): the row is then cancelled."""
    group = await t.session.get(Group, int(ref)) if ref.isdigit() else None
    if group is None or group.coach_id != t.user_id or group.chat_id is None \
            or not group.weekly_question:
        return False
    t.enqueue(group.chat_id, question_payload(group, week_question(now)))
    # This row is still claimed, so plan_question would see it: plan past it directly.
    t.session.add(PlannedCheckin(user_id=group.coach_id, kind=CheckinKind.GROUP_QUESTION,
                                 ref=str(group.id),
                                 due_at=next_question_due(now, t.user.time_zone),
                                 status=CheckinStatus.PLANNED))
    await t.session.flush()
    return True


async def set_shared_goal(session: AsyncSession, coach_id: int, group_id: int, goal: str,
                          ) -> tuple[Group, list[tuple[int, str]]]:
    """The coach's team gets its shared goal; returns it with the (id, locale) of its
    members, who are then asked in private for their own contribution."""
    group = await coach_group(session, coach_id, group_id)
    group.shared_goal, group.goal_reached_at = goal, None
    rows = await session.execute(
        select(User.id, User.locale).join(GroupMember, GroupMember.user_id == User.id)
        .where(GroupMember.group_id == group.id, current()).order_by(User.id))
    await session.flush()
    return group, [(uid, locale) for uid, locale in rows]


async def member_goal(session: AsyncSession, user_id: int, group_id: int) -> str | None:
    """The shared goal of a group ``user_id`` is in, or None (no goal, or not a member)."""
    if not await is_member(session, user_id, group_id):
        return None
    goal: str | None = await session.scalar(select(Group.shared_goal)
                                            .where(Group.id == group_id))
    return goal


async def record_contribution(session: AsyncSession, user_id: int, group_id: int,
                              contribution: str, commitment: str, due_on: date | None,
                              shared: bool, now: datetime) -> bool:
    """A member's contribution and commitment, with the date they chose for it (the latest
    one counts); False when they are no member any more."""
    if not await is_member(session, user_id, group_id):
        return False
    session.add(GroupContribution(group_id=group_id, user_id=user_id,
                                  contribution=contribution, commitment=commitment,
                                  due_on=due_on, shared=shared, created_at=now))
    await session.flush()
    return True


@dataclass(frozen=True)
class SharedContribution:
    first_name: str | None
    contribution: str
    commitment: str
    due_on: date | None


async def shared_contributions(session: AsyncSession, coach_id: int,
                               group_id: int) -> list[SharedContribution]:
    """Each current member's latest contribution, only where they chose to share it."""
    await coach_group(session, coach_id, group_id)
    rows = await session.execute(
        select(GroupContribution, User.first_name)
        .join(User, User.id == GroupContribution.user_id)
        .join(GroupMember, and_(GroupMember.user_id == GroupContribution.user_id,
                                GroupMember.group_id == group_id, current()))
        .where(GroupContribution.group_id == group_id)
        .order_by(GroupContribution.user_id, GroupContribution.id))
    latest: dict[int, SharedContribution | None] = {}
    for contribution, name in rows:
        latest[contribution.user_id] = SharedContribution(
            name, contribution.contribution, contribution.commitment, contribution.due_on) \
            if contribution.shared else None
    return [c for c in latest.values() if c is not None]


async def reach_goal(session: AsyncSession, coach_id: int, group_id: int,
                     now: datetime) -> Group:
    group = await coach_group(session, coach_id, group_id)
    group.goal_reached_at = now
    await session.flush()
    return group


def contribution_offer(group_id: int, group_name: str, locale: str) -> Reply:
    """The invitation to say, in private, what one's own part in the team's goal is."""
    tr = translator_for(locale)
    return Reply(tr.gettext("The team “{group}” has a shared goal now. Only you decide whether "
                            "your coach sees your answers. Would you like to name your own part "
                            "in it?")
                 .format(group=tr.words(group_name)),
                 (Button(tr.gettext("Name my part"), f"gcontrib:{group_id}"),))


async def apply_group_dialogues(t: StoreTurn, outcome: Outcome) -> None:
    """A coach who saved their team's goal: it is stored and each member is asked, in
    their own language; a member who finished their contribution: it is stored."""
    variables = outcome.state.variables
    group_id = variables.get("group.id")
    if not isinstance(group_id, int) or isinstance(group_id, bool):
        return
    if GROUP_GOAL in outcome.finished and variables.get("group.goal_save") is True \
            and isinstance(variables.get("group.goal"), str):
        try:
            group, members = await set_shared_goal(t.session, t.user_id, group_id,
                                                   str(variables["group.goal"]))
        except NotYourGroup:
            return
        for member, locale in members:
            t.enqueue(member, contribution_offer(group.id, group.name, locale).to_payload())
    elif GROUP_ANSWER in outcome.finished and variables.get("group.answer_share") is True \
            and isinstance(variables.get("group.answer"), str):
        await _post_answer(t, group_id, str(variables["group.answer"]))
    elif GROUP_RENAME in outcome.finished and variables.get("group.new_name_save") is True \
            and isinstance(variables.get("group.new_name"), str):
        try:
            await rename_group(t.session, t.user_id, group_id, str(variables["group.new_name"]))
        except (NotYourGroup, InvalidGroupName):
            return
    elif GROUP_CONTRIBUTION in outcome.finished:
        await record_contribution(
            t.session, t.user_id, group_id, str(variables.get("contribution.what") or ""),
            str(variables.get("contribution.commitment") or ""),
            date_answer(variables.get("contribution.by")),
            variables.get("contribution.share") is True, t.now)


async def _post_answer(t: StoreTurn, group_id: int, answer: str) -> None:
    """A member's answer to the week's question, on their yes, in their group's chat."""
    group = await t.session.get(Group, group_id)
    if group is None or group.chat_id is None or not await is_member(t.session, t.user_id,
                                                                     group_id):
        return
    tr = translator_for(group.chat_locale)
    t.enqueue(group.chat_id, Reply(tr.gettext("{name} answers: {answer}").format(
        name=tr.words(t.user.first_name or ""), answer=tr.words(answer))).to_payload())
