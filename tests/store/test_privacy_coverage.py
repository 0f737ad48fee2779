"""Export and erase cover the whole schema: a database where every column of every table
holds a value, and where a client's words sit in rows addressed to others (their coach's
reports, charts and crisis notices). Adding a table or a column fails here until the
population below fills it, so whoever adds one decides how export and erase treat it
(review finding H3)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

from sqlalchemy import text

from bot.coaching.privacy import TABLE_LABELS
from bot.store import (
    ActionSource,
    ActionStatus,
    Answer,
    Assignment,
    Base,
    CoachDialogue,
    CoachEvent,
    CoachingSession,
    CoachLink,
    CoachMessage,
    CoachNote,
    CommitmentAction,
    Conversation,
    Exercise,
    Goal,
    Group,
    GroupAssignment,
    GroupContribution,
    GroupMember,
    GroupSession,
    Invite,
    KeyFingerprint,
    Measure,
    MeasureValue,
    NoteMedia,
    NoteShare,
    Outbox,
    PlannedCheckin,
    ProcessedUpdate,
    ProgrammeRun,
    SendBudget,
    SessionMode,
    SessionNote,
    SessionStatus,
    Store,
    User,
)
from bot.store.models import USER_COLUMNS

CLIENT, COACH, OTHER = 41, 42, 43
NOW = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
WORDS = "CLIENT-WORDS"  # in every value that is the client's, or about them
COACH_WORDS = "COACH-WORDS"
#: Tables that hold nothing about a person: key fingerprints, the shared send budget; which
#: exercise a group does (it goes with its group, which goes with its coach).
NOT_PERSONAL: frozenset[str] = frozenset({"key_fingerprints", "send_budget",
                                          "group_assignments"})


async def _populate(store: Store) -> None:
    async with store.sessionmaker() as s, s.begin():
        for uid, name in ((CLIENT, WORDS), (COACH, COACH_WORDS), (OTHER, "Other")):
            s.add(User(id=uid, first_name=name, locale="it", time_zone="Europe/Rome",
                       checkin_hour=8, checkin_days=0b0011111, quiet_start=1300, quiet_end=420,
                       paused_until=NOW, crisis_pause_until=NOW, reachable=True,
                       consent_at=NOW,
                       is_coach=uid == COACH, created_at=NOW, exported_at=NOW,
                       last_seen_at=NOW, address="feminine",
                       session_reminder_minutes=180))
        await s.flush()
        s.add(Goal(user_id=CLIENT, title=f"{WORDS} goal", why=f"{WORDS} why", baseline=2,
                   current=3, current_at=NOW, target=8, status="active", created_at=NOW,
                   due_on=date(2026, 6, 1), completed_at=NOW))
        s.add(Answer(user_id=CLIENT, dialogue_id="d", step_id="s", variable="v", marker="v",
                     value=f"{WORDS} answer", answered_at=NOW))
        s.add(Conversation(user_id=CLIENT, state={"variables": {"goal.title": WORDS}},
                           version=3, updated_at=NOW))
        s.add(ProcessedUpdate(update_id=4101, user_id=CLIENT, processed_at=NOW))
        s.add(CoachLink(coach_id=COACH, client_id=CLIENT, created_at=NOW, consent_at=NOW,
                        unlinked_at=NOW, brief_consent=True, sessions_agreed=6))
        s.add(CoachLink(coach_id=COACH, client_id=CLIENT, created_at=NOW, consent_at=NOW))
        s.add(Invite(code_hash="code-used", coach_id=COACH, created_at=NOW,
                     expires_at=NOW + timedelta(days=7), used_by=CLIENT, used_at=NOW))
        exercise = Exercise(coach_id=COACH, slug="mine", title=f"{COACH_WORDS} title",
                            instructions=f"{COACH_WORDS} how", questions=["q"])
        s.add(exercise)
        await s.flush()
        group = Group(coach_id=COACH, name=f"{COACH_WORDS} team", kind="team",
                      code_hash="g-code", code_expires_at=NOW, created_at=NOW, chat_id=-100,
                      chat_locale="it",
                      withheld_before=NOW, shared_goal=f"{COACH_WORDS} goal",
                      goal_reached_at=NOW)
        s.add(group)
        await s.flush()
        s.add(GroupMember(group_id=group.id, user_id=CLIENT, visibility="progress",
                          joined_at=NOW, left_at=NOW, link_id=1))
        s.add(GroupMember(group_id=group.id, user_id=OTHER, visibility="figures",
                          joined_at=NOW))
        s.add(GroupContribution(group_id=group.id, user_id=CLIENT, contribution=f"{WORDS} part",
                                commitment=f"{WORDS} by Friday", due_on=date(2026, 1, 9),
                                shared=True, created_at=NOW))
        for_group = GroupAssignment(group_id=group.id, exercise_slug="breathing",
                                    exercise_id=exercise.id, schedule={"kind": "daily"},
                                    starts_on=date(2026, 1, 5), ends_on=date(2026, 1, 9),
                                    active=True, created_at=NOW)
        s.add(for_group)
        await s.flush()
        measure = Measure(coach_id=COACH, client_id=CLIENT, name=f"{WORDS} energy",
                          kind="scale", target=8, summary_weeks=4, last_summary_at=NOW,
                          created_at=NOW)
        run = ProgrammeRun(coach_id=COACH, client_id=CLIENT, programme="values_and_goals",
                           starts_on=date(2026, 1, 5), status="active", created_at=NOW)
        s.add_all([measure, run])
        await s.flush()
        s.add(MeasureValue(client_id=CLIENT, measure_id=measure.id, key=f"{WORDS} scale",
                           value=7, answered_at=NOW))
        s.add(CoachDialogue(coach_id=COACH, dialogue_id="mine", locale="it",
                            title=f"{COACH_WORDS} title", source=f"{COACH_WORDS} yaml",
                            created_at=NOW))
        assignment = Assignment(coach_id=COACH, client_id=CLIENT, exercise_slug="breathing",
                                exercise_id=exercise.id, schedule={"kind": "daily"},
                                starts_on=date(2026, 1, 5), ends_on=date(2026, 1, 9),
                                active=True, paused=True, created_at=NOW,
                                group_assignment_id=for_group.id, measure_id=measure.id,
                                programme_run_id=run.id, done_at=NOW)
        s.add(assignment)
        await s.flush()
        s.add(PlannedCheckin(user_id=CLIENT, kind="exercise", ref=str(assignment.id),
                             due_at=NOW, status="claimed", claimed_by="w", claimed_at=NOW,
                             started_at=NOW))
        outbox = dict(created_at=NOW, attempts=1, next_attempt_at=NOW, sent_at=NOW,
                      last_error="E")
        # The client's own message; the coach's report about the client (sent); a crisis
        # notice about the client (pending); a list of clients the coach was shown (sent,
        # several names, so no one subject); and the coach's own unrelated message.
        s.add(Outbox(user_id=CLIENT, chat_id=CLIENT, subject_user_id=CLIENT,
                     payload={"text": f"you said {WORDS}"}, status="sent", **outbox))
        s.add(Outbox(user_id=COACH, chat_id=COACH, subject_user_id=CLIENT,
                     payload={"text": f"Progress of {WORDS}"}, status="sent", **outbox))
        s.add(Outbox(user_id=COACH, chat_id=COACH, subject_user_id=CLIENT,
                     payload={"text": f"{WORDS} may be in crisis"}, status="pending",
                     **outbox))
        s.add(Outbox(user_id=COACH, chat_id=COACH, subject_user_id=None,
                     payload={"text": f"Your clients: {WORDS}, Other"}, status="sent",
                     **outbox))
        s.add(Outbox(user_id=COACH, chat_id=COACH, subject_user_id=None,
                     payload={"text": COACH_WORDS}, status="pending", **outbox))
        s.add(CoachEvent(coach_id=COACH, client_id=CLIENT, kind="crisis", created_at=NOW,
                         notified_at=NOW))
        s.add(CommitmentAction(user_id=CLIENT, words=f"{WORDS} action",
                               source=ActionSource.DAILY, due_on=date(2026, 1, 5),
                               status=ActionStatus.DONE, created_at=NOW, closed_at=NOW))
        for_all = GroupSession(group_id=group.id, coach_id=COACH, series="gs1",
                               local_start=datetime(2026, 1, 7, 18, 0), zone="Europe/Rome",
                               starts_at=NOW, minutes=90, mode=SessionMode.VIDEO,
                               place=f"{COACH_WORDS} room", status=SessionStatus.SCHEDULED,
                               created_at=NOW)
        s.add(for_all)
        await s.flush()
        s.add(CoachingSession(uid="uid-1@coachbot", series="s1", coach_id=COACH,
                              client_id=CLIENT, local_start=datetime(2026, 1, 6, 18, 0),
                              zone="Europe/Rome", starts_at=NOW, minutes=60,
                              mode=SessionMode.IN_PERSON, place=f"{WORDS} home",
                              status=SessionStatus.SCHEDULED, sequence=1, created_at=NOW,
                              updated_at=NOW, group_session_id=for_all.id))
        s.add(CoachMessage(coach_id=COACH, client_id=CLIENT, from_coach=True,
                           text=f"to {WORDS}", created_at=NOW, delivered_at=NOW))
        s.add(CoachMessage(coach_id=COACH, client_id=CLIENT, from_coach=False,
                           text=f"{WORDS} replied", created_at=NOW, delivered_at=NOW))
        s.add(CoachNote(coach_id=COACH, client_id=CLIENT, text=f"{WORDS} note",
                        created_at=NOW))
        s.add(SessionNote(user_id=CLIENT, words=f"{WORDS} for my session",
                          media=NoteMedia.VOICE, file_id=f"{WORDS}-file-id", message_id=7,
                          share=NoteShare.SENT, created_at=NOW, shared_at=NOW))
        s.add(SendBudget(id=1, next_slot=NOW, spread=0.02, spread_at=NOW))
        s.add(KeyFingerprint(fingerprint="f" * 64, recorded_at=NOW))


async def _all_rows(store: Store) -> dict[str, list[dict[str, Any]]]:
    async with store.engine.connect() as connection:
        return {table.name: [dict(r._mapping) for r in await connection.execute(
            text(f"SELECT * FROM {table.name}"))] for table in Base.metadata.sorted_tables}


async def test_every_column_is_exported_labelled_and_erased(store: Store) -> None:
    await _populate(store)
    before = await _all_rows(store)
    # The population fills every column of every table: a new one fails here first.
    empty = [(t.name, c.name) for t in Base.metadata.sorted_tables for c in t.columns
             if all(row[c.name] is None for row in before[t.name])]
    assert empty == [], f"fill these in _populate, then cover them in export and erase: {empty}"
    personal = {t.name for t in Base.metadata.sorted_tables} - NOT_PERSONAL
    assert {name for name, _ in USER_COLUMNS} == personal
    assert set(TABLE_LABELS) == personal

    exported = await store.export_user(CLIENT)
    for name, column in USER_COLUMNS:  # every row that refers to the client, whole
        theirs = [r for r in before[name] if r[column] == CLIENT]
        assert len([r for r in exported[name] if r[column] == CLIENT]) == len(theirs), name
        for row in exported[name]:
            assert set(row) == set(before[name][0]), name
    about = {row["payload"]["text"] for row in exported["outbox"]}
    assert {f"Progress of {WORDS}", f"{WORDS} may be in crisis"} <= about

    await store.erase_user(CLIENT)
    after = await _all_rows(store)
    leftovers = {name: rows for name, rows in after.items()
                 if any(WORDS in repr(row) for row in rows)}
    assert leftovers == {}
    for name, column in USER_COLUMNS:
        assert not [r for r in after[name] if r[column] == CLIENT], (name, column)
    # Others keep what is only theirs: the coach's own message and exercise, and the
    # processed update id (with no user), so a late redelivery is still recognised.
    assert any(COACH_WORDS in repr(r) for r in after["outbox"])
    assert any(COACH_WORDS in repr(r) for r in after["exercises"])
    assert [r["user_id"] for r in after["processed_updates"]] == [None]


async def test_people_who_never_agreed_are_forgotten_after_the_set_time(store: Store) -> None:
    old, recent = NOW - timedelta(days=8), NOW - timedelta(days=1)
    async with store.sessionmaker() as s, s.begin():
        s.add_all([User(id=1, created_at=old), User(id=2, created_at=recent),
                   User(id=3, created_at=old, consent_at=old),
                   User(id=4, created_at=old, is_coach=True)])
        await s.flush()
        s.add(Conversation(user_id=1, state={"stack": []}, updated_at=old))
        s.add(Outbox(user_id=1, chat_id=1, payload={"text": "Hello"}, created_at=old,
                     next_attempt_at=old, status="sent"))
    assert await store.purge_unconsented(NOW - timedelta(days=7)) == 1
    remaining = {r["id"] for r in (await _all_rows(store))["users"]}
    assert remaining == {2, 3, 4}
    rows = await _all_rows(store)
    assert rows["conversations"] == [] and rows["outbox"] == []


async def test_rows_past_their_lifetime_go_and_a_clients_history_stays(store: Store) -> None:
    from dataclasses import fields

    from bot.config import DEFAULT_RETENTION_DAYS
    from bot.store import Retention

    assert {f.name: f.default for f in fields(Retention)} == {
        kind: timedelta(days=days) for kind, days in DEFAULT_RETENTION_DAYS.items()}
    await _populate(store)  # everything dated NOW
    later = NOW + timedelta(days=1, minutes=1)
    counts = await store.prune(later, Retention())
    assert counts == {"sent_messages": 3, "coach_events": 0, "finished_checkins": 0,
                      "invites": 0, "ended_links": 0, "client_history": 0, "left_groups": 0}
    rows = await _all_rows(store)
    assert [r["status"] for r in rows["outbox"]] == ["pending", "pending"]  # not yet sent
    much_later = NOW + timedelta(days=61)
    async with store.sessionmaker() as s, s.begin():
        s.add(PlannedCheckin(user_id=CLIENT, kind="daily", due_at=NOW, status="missed"))
        s.add(PlannedCheckin(user_id=CLIENT, kind="daily", due_at=much_later,
                             status="planned"))
    counts = await store.prune(much_later, Retention())
    assert counts == {"sent_messages": 0, "coach_events": 1, "finished_checkins": 1,
                      "invites": 1, "ended_links": 1, "client_history": 0, "left_groups": 1}
    rows = await _all_rows(store)
    # The client's own history and what is still to come stay.
    for table in ("users", "goals", "answers", "conversations", "assignments"):
        assert rows[table], table
    assert [r["status"] for r in rows["planned_checkins"]] == ["claimed", "planned"]
    assert [r["unlinked_at"] for r in rows["coach_links"]] == [None]


async def test_held_back_messages_go_with_the_sent_ones(store: Store) -> None:
    """A message superseded before it was sent is a copy of what was said too."""
    from bot.store import Retention

    async with store.sessionmaker() as s, s.begin():
        s.add(User(id=1, created_at=NOW, consent_at=NOW))
        await s.flush()
        s.add(Outbox(user_id=1, chat_id=1, payload={"text": WORDS}, created_at=NOW,
                     next_attempt_at=NOW, status="cancelled"))
    counts = await store.prune(NOW + timedelta(days=2), Retention())
    assert counts["sent_messages"] == 1
    assert (await _all_rows(store))["outbox"] == []


async def test_a_clients_history_counts_from_when_they_left(store: Store) -> None:
    """An active client's history is never pruned; a client's clock starts when they last
    wrote or answered, or when their coach's link ended (even once that link is gone)."""
    from bot.store import Retention

    year = timedelta(days=365)
    long_ago = NOW - timedelta(days=800)
    left, answering, linked, unlinked, coach, writing = 1, 2, 3, 4, 5, 6
    async with store.sessionmaker() as s, s.begin():
        for uid in (left, answering, linked, unlinked, coach, writing):
            s.add(User(id=uid, created_at=long_ago, consent_at=long_ago, is_coach=uid == coach,
                       last_seen_at=NOW - timedelta(days=2) if uid == writing else long_ago))
        await s.flush()
        s.add(Answer(user_id=left, dialogue_id="d", step_id="s", variable="v", value=1,
                     answered_at=NOW - timedelta(days=400)))
        s.add(Goal(user_id=left, title="old goal", created_at=long_ago))
        s.add(Answer(user_id=answering, dialogue_id="d", step_id="s", variable="v", value=1,
                     answered_at=NOW - timedelta(days=10)))
        s.add(CoachLink(coach_id=coach, client_id=linked, created_at=long_ago,
                        consent_at=long_ago))
        s.add(CoachLink(coach_id=coach, client_id=unlinked, created_at=long_ago,
                        consent_at=long_ago, unlinked_at=NOW - timedelta(days=100)))
    counts = await store.prune(NOW, Retention())
    assert (counts["ended_links"], counts["client_history"]) == (1, 1)
    users = {r["id"] for r in (await _all_rows(store))["users"]}
    assert users == {answering, linked, unlinked, coach, writing}
    assert not (await _all_rows(store))["goals"]
    # A year after the link ended (its row long gone), that client's history goes too.
    counts = await store.prune(NOW - timedelta(days=100) + year + timedelta(days=1),
                               Retention())
    users = {r["id"] for r in (await _all_rows(store))["users"]}
    assert unlinked not in users and {linked, coach} <= users


async def test_a_clients_message_marks_when_they_were_last_seen(store: Store) -> None:
    async with store.turn(7, update_id=1) as t:  # before consent: nothing kept
        pass
    assert (await store.get_user(7)).last_seen_at is None  # type: ignore[union-attr]
    async with store.turn(7) as t:
        t.user.consent_at = NOW
    async with store.turn(7) as t:  # the scheduler's turn: not the client writing
        pass
    assert (await store.get_user(7)).last_seen_at is None  # type: ignore[union-attr]
    async with store.turn(7, update_id=2) as t:
        now = t.now
    assert (await store.get_user(7)).last_seen_at == now  # type: ignore[union-attr]
    async with store.turn(7, update_id=3):
        pass
    assert (await store.get_user(7)).last_seen_at == now  # type: ignore[union-attr]  # a day


async def test_traces_of_a_crisis_go_once_they_have_served(store: Store) -> None:
    """A pause after a crisis that is over and a caring check-in that is over say that the
    client had a crisis: they do not wait for the usual lifetimes (review M7)."""
    from bot.store import Retention

    async with store.sessionmaker() as s, s.begin():
        s.add_all([User(id=1, consent_at=NOW, crisis_pause_until=NOW - timedelta(hours=1)),
                   User(id=2, consent_at=NOW, crisis_pause_until=NOW + timedelta(hours=1))])
        await s.flush()
        s.add_all([PlannedCheckin(user_id=1, kind="care", due_at=NOW, status="started"),
                   PlannedCheckin(user_id=2, kind="care", due_at=NOW, status="planned"),
                   PlannedCheckin(user_id=1, kind="daily", due_at=NOW, status="started")])
    await store.prune(NOW, Retention())
    rows = await _all_rows(store)
    assert {r["id"]: r["crisis_pause_until"] is None for r in rows["users"]} == {
        1: True, 2: False}
    assert sorted((r["user_id"], r["kind"]) for r in rows["planned_checkins"]) == [
        (1, "daily"), (2, "care")]
