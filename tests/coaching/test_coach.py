"""The coach's side, tested as an attacker would try it, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import re
import secrets
import struct
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.coaching import assignments, coach_errors, events, links, reports
from bot.coaching.chart import weekly_points, weekly_trend_png
from bot.coaching.markers import marker_of
from bot.dialogue import load_dialogues
from bot.i18n import FSI, PDI, translator_for
from bot.store import (
    Answer,
    Assignment,
    CoachEvent,
    CoachLink,
    Exercise,
    Goal,
    Invite,
    PlannedCheckin,
    Store,
)
from bot.store import User as UserRow

REPO = Path(__file__).parents[2]
NOW = datetime(2026, 3, 4, 12, 0, tzinfo=UTC)  # a Wednesday
COACH, OTHER_COACH = 1, 2
CLIENT, OTHER_CLIENT, STRANGER = 10, 11, 12
EXERCISES = assignments.exercise_ids(load_dialogues(REPO / "dialogues"))
DAILY = {"kind": "daily", "hour": 8, "days": 14}
EN = translator_for("en")
T = TypeVar("T")


async def tx(store: Store, fn: Callable[[AsyncSession], Awaitable[T]]) -> T:
    """Run ``fn`` in one transaction, committed if it returns."""
    async with store.sessionmaker() as session, session.begin():
        return await fn(session)


@pytest.fixture
async def db(store: Store) -> AsyncIterator[Store]:
    """Two coaches and three people who could be clients; nobody linked yet."""

    async def setup(s: AsyncSession) -> None:
        names = {COACH: "Carla", OTHER_COACH: "Oscar", CLIENT: "Ana", OTHER_CLIENT: "Bo",
                 STRANGER: "Sam"}
        s.add_all(UserRow(id=uid, first_name=name) for uid, name in names.items())
        await s.flush()
        await links.make_coach(s, COACH)
        await links.make_coach(s, OTHER_COACH)

    await tx(store, setup)
    yield store


async def link(store: Store, coach_id: int, client_id: int, now: datetime = NOW) -> None:
    async def go(s: AsyncSession) -> None:
        code = await links.create_invite(s, coach_id, now)
        assert await links.accept_invite(s, code, client_id, now) == coach_id

    await tx(store, go)


async def answer(store: Store, client_id: int, variable: str, value: Any, at: datetime,
                 dialogue: str = "daily_checkin") -> None:
    async def go(s: AsyncSession) -> None:
        s.add(Answer(user_id=client_id, dialogue_id=dialogue, step_id="s", variable=variable,
                     marker=marker_of(variable), value=value, answered_at=at))

    await tx(store, go)


async def rows(store: Store, model: Any) -> list[Any]:
    async with store.sessionmaker() as s:
        return list((await s.execute(select(model))).scalars())


# -- coaches and invites ------------------------------------------------------------------


async def test_make_coach(db: Store) -> None:
    async def go(s: AsyncSession) -> tuple[bool, bool, bool]:
        await links.make_coach(s, 99)  # a user the bot has not met yet
        return (await links.is_coach(s, COACH), await links.is_coach(s, CLIENT),
                await links.is_coach(s, 99))

    assert await tx(db, go) == (True, False, True)


async def test_a_non_coach_cannot_create_invites(db: Store) -> None:
    with pytest.raises(coach_errors.NotACoach):
        await tx(db, lambda s: links.create_invite(s, CLIENT, NOW))
    with pytest.raises(coach_errors.NotACoach):
        await tx(db, lambda s: links.create_invite(s, 12345, NOW))  # nobody at all
    assert await rows(db, Invite) == []


async def test_invite_codes_are_unguessable_and_fit_a_deep_link(db: Store) -> None:
    codes = [await tx(db, lambda s: links.create_invite(s, COACH, NOW)) for _ in range(20)]
    assert len(set(codes)) == 20
    for code in codes:
        assert re.fullmatch(r"[A-Za-z0-9_-]{22,64}", code)  # 22 base64 chars = 132 bits
    invite = (await rows(db, Invite))[0]
    assert invite.expires_at == NOW + timedelta(days=7) and invite.used_by is None


async def test_invite_status_names_the_coach_and_uses_nothing(db: Store) -> None:
    code = await tx(db, lambda s: links.create_invite(s, COACH, NOW))
    check = await tx(db, lambda s: links.invite_status(s, code, CLIENT, NOW))
    assert check.valid and (check.coach_id, check.coach_name) == (COACH, "Carla")
    own = await tx(db, lambda s: links.invite_status(s, code, COACH, NOW))
    assert own.problem is coach_errors.InviteProblem.OWN and own.coach_name is None
    unknown = await tx(db, lambda s: links.invite_status(s, "x" * 43, CLIENT, NOW))
    assert unknown.problem is coach_errors.InviteProblem.UNKNOWN and unknown.coach_name is None
    assert (await rows(db, Invite))[0].used_by is None
    assert await rows(db, CoachLink) == []


async def test_accept_links_with_consent_and_only_once(db: Store) -> None:
    code = await tx(db, lambda s: links.create_invite(s, COACH, NOW))
    assert await tx(db, lambda s: links.accept_invite(s, code, CLIENT, NOW)) == COACH
    [row] = await rows(db, CoachLink)
    assert (row.coach_id, row.client_id, row.consent_at, row.unlinked_at) == (
        COACH, CLIENT, NOW, None)
    with pytest.raises(coach_errors.InviteError) as reused:
        await tx(db, lambda s: links.accept_invite(s, code, OTHER_CLIENT, NOW))
    assert reused.value.problem is coach_errors.InviteProblem.USED
    again = await tx(db, lambda s: links.create_invite(s, COACH, NOW))
    with pytest.raises(coach_errors.InviteError) as linked:
        await tx(db, lambda s: links.accept_invite(s, again, CLIENT, NOW))
    assert linked.value.problem is coach_errors.InviteProblem.ALREADY_LINKED
    assert len(await rows(db, CoachLink)) == 1
    unused = links.invite_hash(again)
    assert [i.used_by for i in await rows(db, Invite) if i.code_hash == unused] == [None]


@pytest.mark.parametrize("problem", ["expired", "guessed", "almost", "own"])
async def test_bad_invites_change_nothing(db: Store, problem: str) -> None:
    code = await tx(db, lambda s: links.create_invite(s, COACH, NOW, ttl=timedelta(hours=1)))
    when, client, tried = NOW, CLIENT, code
    if problem == "expired":
        when = NOW + timedelta(hours=1)
    elif problem == "guessed":
        tried = secrets.token_urlsafe(24)
    elif problem == "almost":
        tried = code[:-1] + ("A" if code[-1] != "A" else "B")
    else:
        client = COACH
    with pytest.raises(coach_errors.InviteError) as refused:
        await tx(db, lambda s: links.accept_invite(s, tried, client, when))
    expected = {"expired": "EXPIRED", "guessed": "UNKNOWN", "almost": "UNKNOWN", "own": "OWN"}
    assert refused.value.problem is coach_errors.InviteProblem[expected[problem]]
    [invite] = await rows(db, Invite)
    assert (invite.used_by, invite.used_at) == (None, None)
    assert await rows(db, CoachLink) == []


async def test_two_concurrent_accepts_exactly_one_wins(db: Store) -> None:
    for _ in range(3):
        code = await tx(db, lambda s: links.create_invite(s, OTHER_COACH, NOW))

        async def accept(client: int, code: str = code) -> int | None:
            return await db.run_turn(client, lambda t: links.accept_invite(t.session, code, client,
                                                                        NOW))

        await tx(db, lambda s: links.unlink(s, CLIENT, None, NOW))
        await tx(db, lambda s: links.unlink(s, OTHER_CLIENT, None, NOW))
        results = await asyncio.gather(accept(CLIENT), accept(OTHER_CLIENT),
                                       return_exceptions=True)
        wins = [r for r in results if r == OTHER_COACH]
        losses = [r for r in results if isinstance(r, coach_errors.InviteError)]
        assert len(wins) == 1 and len(losses) == 1, results
        assert losses[0].problem is coach_errors.InviteProblem.USED
        active = [x for x in await rows(db, CoachLink) if x.unlinked_at is None]
        assert len(active) == 1


# -- who sees whom ------------------------------------------------------------------------


async def test_a_coach_cannot_reach_another_coachs_client(db: Store) -> None:
    await link(db, COACH, CLIENT)
    await link(db, OTHER_COACH, OTHER_CLIENT)
    assert [x.user_id for x in await tx(db, lambda s: links.clients_of(s, OTHER_COACH))] == [
        OTHER_CLIENT]
    errors = []
    for client in (CLIENT, STRANGER, 424242):  # someone else's client, unlinked, nobody
        for attempt in (
            lambda s, cl=client: reports.client_progress(s, OTHER_COACH, cl, NOW),
            lambda s, cl=client: assignments.assign_exercise(
                s, OTHER_COACH, cl, "gratitude_note", DAILY, NOW.date(), None, NOW, EXERCISES),
            lambda s, cl=client: reports.client_trend_png(s, OTHER_COACH, cl, NOW, EN),
        ):
            with pytest.raises(coach_errors.NotYourClient) as refused:
                await tx(db, attempt)
            errors.append(str(refused.value))
    assert len(set(errors)) == 1  # the same answer whether the client exists or not
    assert not await tx(db, lambda s: events.record_event(s, OTHER_COACH, CLIENT, "crisis", NOW))
    assert await rows(db, Assignment) == [] and await rows(db, CoachEvent) == []
    # A client is not a coach of their coach.
    with pytest.raises(coach_errors.NotYourClient):
        await tx(db, lambda s: reports.client_progress(s, CLIENT, COACH, NOW))


async def test_clients_and_coaches_are_listed_by_name(db: Store) -> None:
    for client in (STRANGER, CLIENT, OTHER_CLIENT):
        await link(db, COACH, client)
    await link(db, OTHER_COACH, CLIENT)
    clients = await tx(db, lambda s: links.clients_of(s, COACH))
    assert [(x.first_name, x.linked_at) for x in clients] == [
        ("Ana", NOW), ("Bo", NOW), ("Sam", NOW)]
    coaches = await tx(db, lambda s: links.coaches_of(s, CLIENT))
    assert [x.first_name for x in coaches] == ["Carla", "Oscar"]


async def test_an_unlinked_client_is_invisible_at_once(db: Store) -> None:
    await link(db, COACH, CLIENT)
    await link(db, OTHER_COACH, CLIENT)
    assignment_id = await tx(db, lambda s: assignments.assign_exercise(
        s, COACH, CLIENT, "gratitude_note", DAILY, NOW.date(), None, NOW, EXERCISES))

    async def plan(s: AsyncSession) -> None:
        s.add(PlannedCheckin(user_id=CLIENT, kind="exercise", ref=str(assignment_id),
                             due_at=NOW + timedelta(days=1)))
        s.add(CoachEvent(coach_id=COACH, client_id=CLIENT, kind="exercise_done", created_at=NOW))

    await tx(db, plan)
    later = NOW + timedelta(minutes=5)
    assert (await tx(db, lambda s: links.unlink(s, CLIENT, COACH, later))).coaches == [COACH]
    assert await tx(db, lambda s: links.clients_of(s, COACH)) == []
    with pytest.raises(coach_errors.NotYourClient):
        await tx(db, lambda s: reports.client_progress(s, COACH, CLIENT, later))
    with pytest.raises(coach_errors.NotYourClient):
        await tx(db, lambda s: assignments.assign_exercise(
            s, COACH, CLIENT, "gratitude_note", DAILY, NOW.date(), None, later, EXERCISES))
    [assignment] = await rows(db, Assignment)
    assert not assignment.active
    assert [p.status for p in await rows(db, PlannedCheckin)] == ["cancelled"]
    assert await rows(db, CoachEvent) == []  # pending news about the client are dropped
    assert [x.first_name for x in await tx(db, lambda s: links.coaches_of(s, CLIENT))] == ["Oscar"]
    assert (await tx(db, lambda s: links.unlink(
        s, CLIENT, None, later))).coaches == [OTHER_COACH]
    assert await tx(db, lambda s: links.coaches_of(s, CLIENT)) == []


async def test_a_new_link_shows_nothing_from_before_it(db: Store) -> None:
    await link(db, COACH, CLIENT)
    await answer(db, CLIENT, "exercise.noticed", "from the first time", NOW + timedelta(hours=1),
                 "action_sprint")
    await tx(db, lambda s: links.unlink(s, CLIENT, COACH, NOW + timedelta(hours=2)))
    await answer(db, CLIENT, "exercise.noticed", "while unlinked", NOW + timedelta(hours=3),
                 "action_sprint")
    relinked = NOW + timedelta(hours=4)
    await link(db, COACH, CLIENT, relinked)
    progress = await tx(db, lambda s: reports.client_progress(s, COACH, CLIENT, relinked))
    assert progress.reflections == [] and progress.linked_at == relinked


# -- assignments --------------------------------------------------------------------------


@pytest.mark.parametrize("schedule", [
    {},
    {"kind": "hourly", "hour": 8},
    {"kind": "daily", "hour": 24, "days": 3},
    {"kind": "daily", "hour": -1, "days": 3},
    {"kind": "daily", "hour": True, "days": 3},
    {"kind": "daily", "hour": 8, "days": 0},
    {"kind": "daily", "hour": 8, "days": 91},
    {"kind": "daily", "hour": 8},
    {"kind": "daily", "hour": 8, "days": 3, "extra": 1},
    {"kind": "weekdays", "hour": 8, "weekdays": []},
    {"kind": "weekdays", "hour": 8, "weekdays": [7]},
    {"kind": "weekdays", "hour": 8, "weekdays": "0,1"},
    {"kind": "weekdays", "hour": "8", "weekdays": [1]},
])
def test_bad_schedules_are_refused(schedule: dict[str, Any]) -> None:
    with pytest.raises(coach_errors.InvalidSchedule):
        assignments.validate_schedule(schedule)


async def test_assign_checks_exercise_schedule_and_dates(db: Store) -> None:
    await link(db, COACH, CLIENT)
    assert "gratitude_note" in EXERCISES and "daily_checkin" not in EXERCISES

    def assign(slug: str, schedule: dict[str, Any], ends: date | None = None
               ) -> Callable[[AsyncSession], Awaitable[int]]:
        return lambda s: assignments.assign_exercise(s, COACH, CLIENT, slug, schedule, NOW.date(),
                                                     ends, NOW, EXERCISES)

    with pytest.raises(coach_errors.UnknownExercise):
        await tx(db, assign("daily_checkin", DAILY))
    with pytest.raises(coach_errors.InvalidSchedule):
        await tx(db, assign("gratitude_note", {"kind": "daily", "hour": 8, "days": 0}))
    with pytest.raises(coach_errors.InvalidSchedule):
        await tx(db, assign("gratitude_note", DAILY, NOW.date() - timedelta(days=1)))
    weekly = {"kind": "weekdays", "hour": 19, "weekdays": [4, 0, 4]}
    await tx(db, assign("gratitude_note", DAILY))
    await tx(db, assign("action_sprint", weekly, NOW.date() + timedelta(days=30)))
    stored = sorted((a.exercise_slug, a.schedule, a.active, a.coach_id)
                    for a in await rows(db, Assignment))
    assert stored == [
        ("action_sprint", {"kind": "weekdays", "hour": 19, "weekdays": [0, 4]}, True, COACH),
        ("gratitude_note", DAILY, True, COACH),
    ]


# -- progress -----------------------------------------------------------------------------


async def _client_with_history(db: Store) -> None:
    before = NOW - timedelta(days=30)
    await answer(db, CLIENT, "checkin.mood", 2, before)
    await answer(db, CLIENT, "exercise.status", "done", before, "gratitude_note")
    await answer(db, CLIENT, "exercise.noticed", "secret from before", before, "gratitude_note")
    start = NOW - timedelta(days=5)
    await link(db, COACH, CLIENT, start)
    await tx(db, lambda s: assignments.assign_exercise(s, COACH, CLIENT, "gratitude_note", DAILY,
                                             start.date(), None, start, EXERCISES))

    async def goal(s: AsyncSession) -> None:
        s.add(Goal(user_id=CLIENT, title="Run 5 km", baseline=3, current=5, target=8,
                   created_at=start))
        s.add(Goal(user_id=CLIENT, title="Old idea", status="dropped", created_at=start))

    await tx(db, goal)
    for day in (4, 3, 2, 1, 0):
        await answer(db, CLIENT, "checkin.mood", 6, NOW - timedelta(days=day, hours=1))
    for day, status in ((4, "done"), (3, "done"), (2, "partly"), (1, "skipped")):
        at = NOW - timedelta(days=day)
        await answer(db, CLIENT, "exercise.status", status, at, "gratitude_note")
        await answer(db, CLIENT, "exercise.noticed", f"note {day}", at + timedelta(minutes=1),
                     "gratitude_note")
    await answer(db, CLIENT, "exercise.status", "done", NOW, "action_sprint")  # not assigned
    await answer(db, CLIENT, "exercise.next", "keep going", NOW, "action_sprint")
    await answer(db, CLIENT, "exercise.in_the_way", None, NOW, "action_sprint")  # /skip


async def test_progress_shows_only_what_was_shared(db: Store) -> None:
    await _client_with_history(db)
    p = await tx(db, lambda s: reports.client_progress(s, COACH, CLIENT, NOW))
    assert p.first_name == "Ana" and p.today == NOW.date()
    # A goal the client let go is still theirs to talk about, marked so (r73-en).
    assert p.goals == [reports.GoalProgress("Run 5 km", "active", 3, 5, 8),
                       reports.GoalProgress("Old idea", "dropped", None, None, None)]
    assert (p.streak_current, p.streak_best) == (5, 5)
    assert p.exercises == reports.ExerciseStats(done=2, partly=1, skipped=1)
    assert p.exercises.rate == 0.5
    assert [r.text for r in p.reflections] == ["keep going", "note 1", "note 2", "note 3",
                                               "note 4"]
    assert all("before" not in r.text for r in p.reflections)


async def test_progress_report_is_translated_and_isolates_client_words(db: Store) -> None:
    await _client_with_history(db)
    p = await tx(db, lambda s: reports.client_progress(s, COACH, CLIENT, NOW))
    text = reports.progress_report(p, EN)
    for expected in (f"Progress of {FSI}Ana{PDI}", f"• {FSI}Run 5 km{PDI}",
                     f"• {FSI}Old idea{PDI} (let go)",
                     "Baseline 3, now 5, target 8",
                     "Check-ins in a row: 5 days.", "2 done, 1 partly done, 1 skipped",
                     "Completion rate: 50%.", "Latest reflections:", f"{FSI}keep going{PDI}"):
        assert expected in text  # a client's words are isolated in every language (L5)
    hebrew = reports.progress_report(p, translator_for("he"))
    assert f"{FSI}Run 5 km{PDI}" in hebrew and f"{FSI}keep going{PDI}" in hebrew
    empty = reports.ClientProgress(CLIENT, None, NOW, NOW.date(), [], 0, 0,
                                   reports.ExerciseStats(), [])
    assert "No check-ins yet." in reports.progress_report(empty, EN)


# -- chart --------------------------------------------------------------------------------


def _png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    width, height = struct.unpack(">II", png[16:24])
    return width, height


def test_chart_is_a_png_of_the_expected_size() -> None:
    points = [(date(2026, 1, 5), 5.0), (date(2026, 1, 12), 6.5)]
    assert _png_size(weekly_trend_png(points, "Ana", goal_points=[(date(2026, 1, 5), 3.0)])) == (
        800, 400)
    assert _png_size(weekly_trend_png([], "Ana")) == (800, 400)


def test_a_running_bot_loads_matplotlib_only_for_its_first_chart() -> None:
    code = "import sys, bot.telegram.app, bot.console; print('matplotlib' in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, timeout=60)
    assert loaded.stdout.strip() == "False"  # 30-40 MB of memory that most bots never need


async def test_weekly_points_average_each_week_since_consent(db: Store) -> None:
    await _client_with_history(db)
    await answer(db, CLIENT, "checkin.mood", 9, NOW - timedelta(days=200))
    await answer(db, CLIENT, "review.current", 5, NOW - timedelta(days=1), "weekly_review")
    points = await tx(db, lambda s: weekly_points(s, CLIENT, NOW))
    monday = date(2026, 3, 2)
    assert points.mood == [(date(2026, 2, 2), 2.0), (monday - timedelta(weeks=1), 6.0),
                           (monday, 6.0)]
    assert points.goal == [(monday, 5.0)]
    since = NOW - timedelta(days=5)
    shared = await tx(db, lambda s: weekly_points(s, CLIENT, NOW, since=since))
    assert shared.mood == [(monday - timedelta(weeks=1), 6.0), (monday, 6.0)]
    png = await tx(db, lambda s: reports.client_trend_png(s, COACH, CLIENT, NOW, EN))
    assert _png_size(png) == (800, 400)


# -- notifications ------------------------------------------------------------------------


async def test_digests_batch_events_per_coach(db: Store) -> None:
    await link(db, COACH, CLIENT)
    await link(db, COACH, OTHER_CLIENT)
    await link(db, OTHER_COACH, STRANGER)

    async def happenings(s: AsyncSession) -> None:
        assert await events.notify_coaches(s, CLIENT, "exercise_done", NOW) == 1
        await events.record_event(s, COACH, CLIENT, "exercise_done", NOW)
        await events.record_event(s, COACH, OTHER_CLIENT, "exercise_done", NOW)
        await events.record_event(s, COACH, OTHER_CLIENT, "exercise_skipped", NOW)
        await events.record_event(s, OTHER_COACH, STRANGER, "exercise_partly", NOW)

    await tx(db, happenings)
    digests = await tx(db, lambda s: events.due_digests(s, NOW))
    assert [(d.coach_id, d.crisis, dict(d.names_by_kind)) for d in digests] == [
        (COACH, False, {"exercise_done": ("Ana", "Bo"), "exercise_skipped": ("Bo",)}),
        (OTHER_COACH, False, {"exercise_partly": ("Sam",)}),
    ]
    assert events.digest_text(digests[0], EN) == (
        f"News from your clients:\n• Completed an exercise: {FSI}Ana{PDI}, {FSI}Bo{PDI}\n"
        f"• Skipped an exercise: {FSI}Bo{PDI}")
    assert await tx(db, lambda s: events.due_digests(s, NOW)) == []
    # Within the interval news wait; after it they go out together.
    await tx(db, lambda s: events.record_event(s, COACH, CLIENT, "exercise_partly",
                                          NOW + timedelta(minutes=10)))
    assert await tx(db, lambda s: events.due_digests(s, NOW + timedelta(minutes=30))) == []
    [later] = await tx(db, lambda s: events.due_digests(s, NOW + timedelta(hours=1)))
    assert dict(later.names_by_kind) == {"exercise_partly": ("Ana",)}
    assert all(e.notified_at is not None for e in await rows(db, CoachEvent))


async def test_a_crisis_is_reported_at_once_and_without_content(db: Store) -> None:
    await link(db, COACH, CLIENT)
    await answer(db, CLIENT, "checkin.obstacle", "I want to disappear", NOW)
    await tx(db, lambda s: events.record_event(s, COACH, CLIENT, "exercise_done", NOW))
    await tx(db, lambda s: events.due_digests(s, NOW))
    soon = NOW + timedelta(minutes=1)

    async def happenings(s: AsyncSession) -> None:
        await events.record_event(s, COACH, CLIENT, "exercise_skipped", soon)
        assert await events.notify_coaches(s, CLIENT, "crisis", soon) == 1

    await tx(db, happenings)
    [digest] = await tx(db, lambda s: events.due_digests(s, soon))
    assert digest.crisis and digest.crisis_clients == ("Ana",)
    assert not digest.names_by_kind
    text = events.digest_text(digest, EN)
    assert "Ana" in text and "crisis" in text and "disappear" not in text
    # Once the coach is told, nothing at rest says there was a crisis: the event is gone.
    assert sorted(e.kind for e in await rows(db, CoachEvent)) == [
        "exercise_done", "exercise_skipped"]
    [regular] = await tx(db, lambda s: events.due_digests(s, NOW + timedelta(hours=1)))
    assert not regular.crisis and dict(regular.names_by_kind) == {"exercise_skipped": ("Ana",)}


async def test_events_need_a_known_kind(db: Store) -> None:
    await link(db, COACH, CLIENT)
    with pytest.raises(ValueError):
        await tx(db, lambda s: events.record_event(s, COACH, CLIENT, "mood_is_low", NOW))
    assert events.event_for_status("partly") == "exercise_partly"
    assert events.event_for_status("maybe") is None


async def test_export_and_erase_cover_coach_events(db: Store) -> None:
    await link(db, COACH, CLIENT)
    await tx(db, lambda s: events.record_event(s, COACH, CLIENT, "crisis", NOW))
    exported = await db.export_user(CLIENT)
    assert [(e["coach_id"], e["kind"]) for e in exported["coach_events"]] == [(COACH, "crisis")]
    assert len((await db.export_user(COACH))["coach_events"]) == 1
    await db.erase_user(CLIENT)
    assert await rows(db, CoachEvent) == []
    assert await tx(db, lambda s: events.due_digests(s, NOW)) == []


async def test_a_coach_assigns_only_their_own_written_exercises(db: Store) -> None:
    await link(db, COACH, CLIENT)
    await link(db, OTHER_COACH, OTHER_CLIENT)
    assert "custom_exercise" not in EXERCISES  # it needs a coach's text to run

    async def write(s: AsyncSession, coach_id: int) -> int:
        exercise = Exercise(coach_id=coach_id, slug=f"custom_{coach_id}", title="Pages",
                            instructions="Write.", questions=[])
        s.add(exercise)
        await s.flush()
        return exercise.id

    mine = await tx(db, lambda s: write(s, COACH))
    theirs = await tx(db, lambda s: write(s, OTHER_COACH))

    def assign(exercise_id: int) -> Callable[[AsyncSession], Awaitable[int]]:
        return lambda s: assignments.assign_exercise(s, COACH, CLIENT, "", DAILY, NOW.date(), None,
                                                     NOW, EXERCISES, custom_exercise_id=exercise_id)

    with pytest.raises(coach_errors.UnknownExercise):
        await tx(db, assign(theirs))
    await tx(db, assign(mine))
    assert [(a.exercise_slug, a.exercise_id) for a in await rows(db, Assignment)] == [
        ("custom_exercise", mine)]
    assert await tx(db, lambda s: assignments.own_exercises(s, COACH)) == [(mine, "Pages")]


async def test_goals_set_before_the_link_stay_private(db: Store) -> None:
    """The invitation promises that nothing written before the client agrees is shared."""
    async def goals(s: AsyncSession) -> None:
        s.add(Goal(user_id=CLIENT, title="Leave my job without my boss knowing",
                   created_at=NOW - timedelta(hours=1)))
        s.add(Goal(user_id=CLIENT, title="Run 5k", created_at=NOW + timedelta(minutes=5)))

    await tx(db, goals)
    await link(db, COACH, CLIENT)
    progress = await tx(db, lambda s: reports.client_progress(s, COACH, CLIENT,
                                                       NOW + timedelta(hours=1)))
    assert [g.title for g in progress.goals] == ["Run 5k"]
