"""Group sessions, the week's question by itself, removing a member and the join links
(issue 27, the rest) on SQLite and PostgreSQL: members in three zones and languages
reminded at their own local time across a daylight-saving change, a late joiner, a
removed member getting nothing more, an expired and a replaced link, and the coach's
actions tried by someone else."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from icalendar import Calendar
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.coaching import coach_errors, group_sessions, groups
from bot.coaching.sessions import (
    NewSessions,
    SessionChange,
    SessionNotFound,
    cant_make_it,
    set_reminder_lead,
)
from bot.i18n import translator_for
from bot.schedule.planning import zone_of
from bot.schedule.sessions import Repeat
from bot.schedule.starting import claim_and_start
from bot.store import (
    CoachingSession,
    Group,
    GroupSession,
    Outbox,
    PlannedCheckin,
    SessionMode,
    SessionStatus,
    Store,
    Turn,
    User,
)
from tests.coaching.test_groups import (
    ANA,
    BO,
    CI,
    COACH,
    CODES,
    DAN,
    DIALOGUES,
    NOW,
    OTHER_COACH,
    db,  # noqa: F401  (the fixture)
    join,
    join_code,
    new_group,
    tx,
)

# The coach in Rome sets Thursdays at 18:00 for four weeks from 5 March 2026: New York moves
# to summer time on 8 March, Rome and Jerusalem only at the end of the month.
FIRST = datetime(2026, 3, 5, 18, 0)
CHOSEN = dict(client_id=0, first=FIRST, zone="Europe/Rome", minutes=90,
              mode=SessionMode.VIDEO, place="https://meet.example/team",
              repeat=Repeat.WEEKLY, count=4)


async def rome_coach(store: Store) -> None:
    async def go(s: AsyncSession) -> None:
        coach = await s.get(User, COACH)
        assert coach is not None
        coach.time_zone, coach.locale = "Europe/Rome", "en"

    await tx(store, go)


async def schedule(store: Store, group: Group, coach: int = COACH,
                   ) -> tuple[list[Any], list[CoachingSession]]:
    chosen = NewSessions(**CHOSEN, group_id=group.id)  # type: ignore[arg-type]
    made = await tx(store, lambda s: group_sessions.schedule_group_sessions(s, coach, chosen,
                                                                            NOW))
    await store.run_turn(coach, lambda t: group_sessions.tell_members(t, group, made[1], NOW))
    return made


async def outbox(store: Store, chat: int) -> list[dict[str, Any]]:
    return list((await tx(store, lambda s: s.scalars(
        select(Outbox.payload).where(Outbox.chat_id == chat).order_by(Outbox.id)))).all())


async def rows(store: Store, user: int, kind: str) -> list[PlannedCheckin]:
    return list((await tx(store, lambda s: s.scalars(
        select(PlannedCheckin).where(PlannedCheckin.user_id == user, PlannedCheckin.kind == kind)
        .order_by(PlannedCheckin.due_at)))).all())


async def test_members_in_three_zones_hear_at_their_own_time_in_their_language(
        db: Store) -> None:  # noqa: F811
    await rome_coach(db)
    team = await new_group(db)
    for member in (ANA, BO, CI):
        await join(db, team, member)
    created, copies = await schedule(db, team)
    assert len(created) == 4 and len(copies) == 12
    starts = [gs.starts_at for gs in created]
    assert starts == [datetime(2026, 3, d, 17, tzinfo=UTC) for d in (5, 12, 19, 26)]

    # Each member got the sessions in their language, at their local time, and the .ics.
    for member, locale, zone in ((ANA, "it", "Europe/Rome"), (BO, "he", "Asia/Jerusalem"),
                                 (CI, "hr", "America/New_York")):
        tr = translator_for(locale)
        told, ics = await outbox(db, member)
        for start in starts:  # 12:00 in New York before 8 March, 13:00 after
            assert tr.time(start.astimezone(zone_of(zone))) in told["text"]
        assert told["text"].startswith(tr.ngettext(
            "Your group “{group}” has a session planned:",
            "Your group “{group}” has {count} sessions planned:", 4).format(
                group=tr.words("Sales team"), count=tr.isolate(tr.number(4))))
        events = Calendar.from_ical(bytes.fromhex(ics["document"])).walk("VEVENT")
        assert len(events) == 4
        assert str(events[0]["summary"]) == tr.gettext("Group session: {group}").format(
            group="Sales team")
    ci_told = (await outbox(db, CI))[0]["text"]
    hr = translator_for("hr")
    assert hr.time(datetime(2026, 3, 5, 12)) in ci_told
    assert hr.time(datetime(2026, 3, 12, 13)) in ci_told

    # One reminder a member a session, an hour before; the coach's and the chat's once.
    for member in (ANA, BO, CI):
        assert [r.due_at for r in await rows(db, member, "session_reminder")] == [
            s - timedelta(hours=1) for s in starts]
    assert len(await rows(db, COACH, "group_session")) == 4
    assert len(await rows(db, COACH, "group_chat")) == 4
    assert await rows(db, ANA, "session_prep") == []  # one-to-one preparation: not for groups

    await tx(db, lambda s: groups.link_chat(s, team.id, COACH, -500, NOW))
    await tx(db, lambda s: groups.set_chat_locale(s, COACH, team.id, "he"))
    second_reminder = starts[1] - timedelta(hours=1)
    await claim_and_start(db, DIALOGUES, second_reminder, worker_id="w1")
    await claim_and_start(db, DIALOGUES, second_reminder, worker_id="w2")  # exactly once
    for member, locale, zone in ((ANA, "it", "Europe/Rome"), (BO, "he", "Asia/Jerusalem"),
                                 (CI, "hr", "America/New_York")):
        tr = translator_for(locale)
        reminders = [p for p in await outbox(db, member) if "buttons" in p]
        assert len(reminders) == 1
        text = reminders[0]["text"]
        assert text.startswith(tr.gettext(
            "A reminder: the session of your group “{group}” is coming up.").split("{")[0])
        assert tr.time(starts[1].astimezone(zone_of(zone))) in text
        assert reminders[0]["buttons"][0]["label"] == tr.gettext("I cannot make it")
    in_chat = [p for p in await outbox(db, -500) if "buttons" not in p]  # not the question
    assert [p["text"] for p in in_chat] == [translator_for("he").gettext(
        "A reminder for everyone: the group's session starts within the hour. Each of you has "
        "the details in our private chat.")]
    coach_reminder = [p["text"] for p in await outbox(db, COACH)]
    assert len(coach_reminder) == 1 and "Sales team" in coach_reminder[0]
    assert "Members invited: 3" in coach_reminder[0]
    # A tick that comes late (the bot was down): the chat is not told "in an hour" with
    # twenty minutes to go; members still get theirs.
    await claim_and_start(db, DIALOGUES, starts[2] - timedelta(minutes=20), worker_id="w1")
    assert len([p for p in await outbox(db, -500) if "buttons" not in p]) == 1
    assert len([p for p in await outbox(db, CI) if "buttons" in p]) == 2


async def test_a_members_cant_make_it_reaches_the_coach_and_no_one_else(db: Store) -> None:  # noqa: F811
    await rome_coach(db)
    team = await new_group(db)
    for member in (ANA, BO, CI):
        await join(db, team, member)
    _, copies = await schedule(db, team)
    ana_first = next(c for c in copies if c.client_id == ANA)

    async def cant(t: Turn) -> None:
        await cant_make_it(t, ana_first.id, NOW)

    await db.run_turn(ANA, cant)
    to_coach = (await outbox(db, COACH))[-1]["text"]
    assert "P10" in to_coach and "Sales team" in to_coach
    assert "Cannot make it to the session" in to_coach
    assert "Grazie" in (await outbox(db, ANA))[-1]["text"]
    # BO cannot say it for ANA's copy: nothing reaches the coach.
    before = len(await outbox(db, COACH))

    async def forged(t: Turn) -> None:
        await cant_make_it(t, ana_first.id, NOW)

    await db.run_turn(BO, forged)
    assert len(await outbox(db, COACH)) == before


async def test_a_late_joiner_gets_the_sessions_to_come_and_a_leaver_nothing_more(
        db: Store) -> None:  # noqa: F811
    await rome_coach(db)
    team = await new_group(db)
    for member in (ANA, BO):
        await join(db, team, member)
    created, _ = await schedule(db, team)
    later = created[1].starts_at + timedelta(hours=3)  # after the second session
    await join(db, team, DAN, at=later)
    dans = await tx(db, lambda s: group_sessions.copies_for_joiner(s, team.id, DAN, later))
    assert [c.starts_at for c in dans] == [gs.starts_at for gs in created[2:]]
    # Joining again changes nothing (no copy twice).
    assert await tx(db, lambda s: group_sessions.copies_for_joiner(s, team.id, DAN,
                                                                   later)) == []
    assert len(await rows(db, DAN, "session_reminder")) == 2

    # The coach removes ANA: her copies are cancelled and nothing more reaches her.
    assert await tx(db, lambda s: groups.remove_member(s, COACH, team.id, ANA, later))
    ana_copies = (await tx(db, lambda s: s.scalars(select(CoachingSession).where(
        CoachingSession.client_id == ANA, CoachingSession.starts_at > later)))).all()
    assert {c.status for c in ana_copies} == {SessionStatus.CANCELLED}
    sent_before = len(await outbox(db, ANA))
    for gs in created[2:]:
        await claim_and_start(db, DIALOGUES, gs.starts_at - timedelta(hours=1), worker_id="w")
    assert len(await outbox(db, ANA)) == sent_before
    assert len([p for p in await outbox(db, DAN) if "buttons" in p]) == 2
    assert len([p for p in await outbox(db, BO) if "buttons" in p]) == 2
    # Coming back later gives her the sessions still to come again.
    await join(db, team, ANA, at=later)
    back = await tx(db, lambda s: group_sessions.copies_for_joiner(s, team.id, ANA, later))
    assert len(back) == 2


async def test_the_coach_cancels_a_series_and_each_member_gets_the_cancellation(
        db: Store) -> None:  # noqa: F811
    await rome_coach(db)
    team = await new_group(db)
    for member in (ANA, CI):
        await join(db, team, member)
    created, _ = await schedule(db, team)
    with pytest.raises(SessionNotFound):  # another coach, with the id
        await tx(db, lambda s: group_sessions.cancel_group_sessions(s, OTHER_COACH,
                                                                    created[1].id, NOW))
    gone, copies = await tx(db, lambda s: group_sessions.cancel_group_sessions(
        s, COACH, created[1].id, NOW, rest_of_series=True))
    assert [g.id for g in gone] == [g.id for g in created[1:]] and len(copies) == 6
    left = [r for r in await rows(db, ANA, "session_reminder") if r.status == "planned"]
    assert [r.due_at for r in left] == [created[0].starts_at - timedelta(hours=1)]
    assert [r for r in await rows(db, COACH, "group_chat") if r.status == "planned"] != []
    assert len([r for r in await rows(db, COACH, "group_chat")]) == 1


async def test_the_coach_moves_the_rest_of_a_series_and_each_member_hears_in_their_zone(
        db: Store) -> None:  # noqa: F811
    await rome_coach(db)
    team = await new_group(db)
    for member in (ANA, CI):
        await join(db, team, member)
    created, _ = await schedule(db, team)
    before = {member: await outbox(db, member) for member in (ANA, CI)}
    with pytest.raises(SessionNotFound):  # another coach, with the id
        await tx(db, lambda s: group_sessions.move_group_sessions(
            s, OTHER_COACH, created[1].id, datetime(2026, 3, 16, 19, 30), "Europe/Rome", NOW))
    with pytest.raises(ValueError):  # to the past
        await tx(db, lambda s: group_sessions.move_group_sessions(
            s, COACH, created[1].id, datetime(2026, 3, 3, 19, 30), "Europe/Rome", NOW,
            rest_of_series=True))

    # Thursday 12 March 18:00 and the rest, to Monday 16 March 19:30 (Rome): the last one
    # falls after Rome's change to summer time on 29 March and keeps its 19:30.
    async def move(t: Turn) -> tuple[list[Any], list[CoachingSession]]:
        moved = await group_sessions.move_group_sessions(
            t.session, COACH, created[1].id, datetime(2026, 3, 16, 19, 30), "Europe/Rome",
            NOW, rest_of_series=True)
        await group_sessions.announce(t, *moved, SessionChange.MOVED)
        return moved

    gone, copies = await db.run_turn(COACH, move)
    assert [g.id for g in gone] == [g.id for g in created[1:]] and len(copies) == 6
    assert [g.local_start for g in gone] == [datetime(2026, 3, d, 19, 30) for d in (16, 23, 30)]
    starts = [datetime(2026, 3, 16, 18, 30, tzinfo=UTC), datetime(2026, 3, 23, 18, 30,
              tzinfo=UTC), datetime(2026, 3, 30, 17, 30, tzinfo=UTC)]
    assert [g.starts_at for g in gone] == starts
    for member, locale, zone in ((ANA, "it", "Europe/Rome"), (CI, "hr", "America/New_York")):
        tr = translator_for(locale)
        told, ics = (await outbox(db, member))[len(before[member]):]
        assert told["text"].startswith(tr.ngettext(
            "This session of your group “{group}” has moved:",
            "These {count} sessions of your group “{group}” have moved:", 3).format(
                group=tr.words("Sales team"), count=tr.isolate(tr.number(3))))
        for start in starts:  # 14:30 in New York, 13:30 once Rome is on summer time too
            assert tr.time(start.astimezone(zone_of(zone))) in told["text"]
        events = Calendar.from_ical(bytes.fromhex(ics["document"])).walk("VEVENT")
        old = Calendar.from_ical(bytes.fromhex(before[member][1]["document"])).walk("VEVENT")
        assert [(str(e["uid"]), int(e["sequence"])) for e in events] == [
            (str(e["uid"]), 1) for e in old[1:]]  # the same events, a version on
        assert [e.decoded("dtstart").astimezone(UTC) for e in events] == starts
        planned = [r.due_at for r in await rows(db, member, "session_reminder")
                   if r.status == "planned"]
        assert planned == [at - timedelta(hours=1) for at in (created[0].starts_at, *starts)]
    [coach_told] = (await outbox(db, COACH))[-1:]
    assert coach_told["text"].startswith("3 sessions with the group “\u2068Sales team\u2069” "
                                         "moved:\n• Monday, March 16, 2026, 7:30\u202fPM")
    chat = [r.due_at for r in await rows(db, COACH, "group_chat") if r.status == "planned"]
    assert chat == [at - timedelta(hours=1) for at in (created[0].starts_at, *starts)]

    # One session alone moves by itself; the rest of its series stays.
    [one], [ana_copy, _] = await tx(db, lambda s: group_sessions.move_group_sessions(
        s, COACH, created[2].id, datetime(2026, 3, 24, 8, 0), "Europe/Rome", NOW))
    assert one.starts_at == datetime(2026, 3, 24, 7, tzinfo=UTC) and ana_copy.sequence == 2
    assert await tx(db, lambda s: s.scalar(select(GroupSession.starts_at).where(
        GroupSession.id == created[3].id))) == starts[2]


async def test_the_coachs_reminder_lead_replans_each_members_copy_and_their_own(
        db: Store) -> None:  # noqa: F811
    await rome_coach(db)
    team = await new_group(db)
    await join(db, team, CI)  # New York
    created, _ = await schedule(db, team)
    assert not await tx(db, lambda s: set_reminder_lead(s, COACH, 45, NOW))  # not offered
    assert not await tx(db, lambda s: set_reminder_lead(s, CI, 180, NOW))  # not a coach
    assert await tx(db, lambda s: set_reminder_lead(s, COACH, 180, NOW))
    three_hours = [gs.starts_at - timedelta(hours=3) for gs in created]
    for user, kind in ((CI, "session_reminder"), (COACH, "group_session")):
        assert [r.due_at for r in await rows(db, user, kind) if r.status == "planned"] == \
            three_hours
    assert [r.due_at for r in await rows(db, COACH, "group_chat") if r.status == "planned"] == [
        gs.starts_at - timedelta(hours=1) for gs in created]  # "in an hour", as it says


async def test_a_group_of_another_coach_cannot_get_sessions(db: Store) -> None:  # noqa: F811
    team = await new_group(db)
    chosen = NewSessions(**CHOSEN, group_id=team.id)  # type: ignore[arg-type]
    with pytest.raises(coach_errors.NotYourGroup):
        await tx(db, lambda s: group_sessions.schedule_group_sessions(s, OTHER_COACH, chosen,
                                                                      NOW))


# -- join links ------------------------------------------------------------------------------


async def test_join_codes_are_hashed_expire_and_a_new_one_revokes_the_old(db: Store) -> None:  # noqa: F811
    team = await new_group(db)
    old = CODES[team.id]
    stored = await tx(db, lambda s: s.scalar(select(Group.code_hash).where(Group.id == team.id)))
    assert stored != old and old not in str(stored) and len(stored) == 64
    expired_at = NOW + groups.CODE_TTL
    with pytest.raises(coach_errors.JoinError) as refused:
        await join_code(db, old, ANA, at=expired_at)
    assert refused.value.problem is coach_errors.JoinProblem.EXPIRED
    _, new = await tx(db, lambda s: groups.new_code(s, COACH, team.id, expired_at))
    with pytest.raises(coach_errors.JoinError) as revoked:
        await join_code(db, old, ANA, at=NOW)  # before it expired: revoked all the same
    assert revoked.value.problem is coach_errors.JoinProblem.UNKNOWN
    await join_code(db, new, ANA, at=expired_at + timedelta(days=1))
    with pytest.raises(coach_errors.NotYourGroup):
        await tx(db, lambda s: groups.new_code(s, OTHER_COACH, team.id, NOW))


# -- the week's question by itself ------------------------------------------------------------


def test_the_weekly_question_is_due_monday_at_ten_on_the_coachs_clock() -> None:
    wednesday = datetime(2026, 3, 25, 12, tzinfo=UTC)
    # Monday 30 March, Rome on summer time since the 29th: 10:00 is 08:00 UTC.
    assert groups.next_question_due(wednesday, "Europe/Rome") == datetime(
        2026, 3, 30, 8, tzinfo=UTC)
    monday_early = datetime(2026, 3, 23, 8, 59, tzinfo=UTC)  # 09:59 in Rome
    assert groups.next_question_due(monday_early, "Europe/Rome") == datetime(
        2026, 3, 23, 9, tzinfo=UTC)
    assert groups.next_question_due(datetime(2026, 3, 23, 9, tzinfo=UTC), "Europe/Rome") == \
        datetime(2026, 3, 30, 8, tzinfo=UTC)


async def test_the_weekly_question_posts_itself_once_a_week_and_stops_when_off(
        db: Store) -> None:  # noqa: F811
    await rome_coach(db)
    team = await new_group(db)
    await join(db, team, ANA)
    await tx(db, lambda s: groups.set_chat_locale(s, COACH, team.id, "it"))
    await tx(db, lambda s: groups.link_chat(s, team.id, COACH, -500, NOW))
    await tx(db, lambda s: groups.link_chat(s, team.id, COACH, -500, NOW))  # again
    planned = await rows(db, COACH, "group_question")
    assert [r.due_at for r in planned] == [datetime(2026, 3, 9, 9, tzinfo=UTC)]
    for worker in ("w1", "w2"):
        await claim_and_start(db, DIALOGUES, planned[0].due_at, worker_id=worker)
    posted = await outbox(db, -500)
    assert len(posted) == 1
    it = translator_for("it")
    question = groups.GROUP_QUESTIONS[groups.week_question(planned[0].due_at)]
    assert posted[0]["text"] == it.gettext(
        "This week's question: {question}\nEach of you can answer me in private: I share an "
        "answer here only if the person who wrote it says so.").format(
            question=it.gettext(question))
    assert posted[0]["buttons"][0]["data"].startswith(f"gqa:{team.id}:")
    assert "P10" not in posted[0]["text"]
    following = [r for r in await rows(db, COACH, "group_question") if r.status == "planned"]
    assert [r.due_at for r in following] == [datetime(2026, 3, 16, 9, tzinfo=UTC)]
    await tx(db, lambda s: groups.set_weekly_question(s, COACH, team.id, False, NOW))
    await claim_and_start(db, DIALOGUES, following[0].due_at, worker_id="w1")
    assert len(await outbox(db, -500)) == 1
