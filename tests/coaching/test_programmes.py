"""Programmes (issue 26): given in one step, each step planned from the start in the
client's zone (daylight saving included), the next step brought forward when one is done,
the whole paused, resumed or cancelled by its coach only. On SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from bot.coaching import managing, programmes
from bot.coaching.assignments import exercise_ids
from bot.coaching.coach_errors import NotYourClient
from bot.coaching.conversation import Start, converse
from bot.dialogue import DialogueSet, load_dialogues
from bot.dialogue.programmes import parse_programme
from bot.engine import Turn
from bot.schedule import planning
from bot.store import Assignment, CoachLink, PlannedCheckin, ProgrammeRun, Store, User
from bot.store import Turn as StoreTurn

REPO = Path(__file__).parents[2]
NOW = datetime(2026, 3, 20, 12, 0, tzinfo=UTC)
START = date(2026, 3, 21)  # a Saturday; Rome moves its clocks on the 29th
COACH, OTHER_COACH, CLIENT = 1, 2, 10


@pytest.fixture(scope="module")
def dialogues() -> DialogueSet:
    return load_dialogues(REPO / "dialogues")


@pytest.fixture
async def db(store: Store) -> AsyncIterator[Store]:
    async with store.sessionmaker() as s, s.begin():
        s.add_all([User(id=COACH, first_name="Carla", is_coach=True),
                   User(id=OTHER_COACH, first_name="Oscar", is_coach=True),
                   User(id=CLIENT, first_name="Ana", locale="it", consent_at=NOW,
                        time_zone="Europe/Rome")])
        await s.flush()
        s.add(CoachLink(coach_id=COACH, client_id=CLIENT, created_at=NOW,
                        consent_at=NOW - timedelta(days=3)))
    yield store


async def give(store: Store, dialogues: DialogueSet, coach: int = COACH,
               programme: str = "values_and_goals") -> int:
    async with store.sessionmaker() as s, s.begin():
        return await programmes.assign_programme(
            s, coach, CLIENT, dialogues.programmes[programme], START, 8, 30, NOW,
            exercise_ids(dialogues))


async def steps(store: Store) -> list[Assignment]:
    async with store.sessionmaker() as s:
        return list((await s.execute(select(Assignment).order_by(Assignment.starts_on)))
                    .scalars())


def test_where_the_client_is_in_a_run() -> None:
    run = programmes.RunView(1, COACH, CLIENT, "p", "active", (
        programmes.Step("a", date(2026, 3, 1), True),
        programmes.Step("b", date(2026, 3, 8), False),
        programmes.Step("c", date(2026, 3, 15), False)))
    assert run.done == 1
    assert run.current(date(2026, 3, 9)) == 1 and run.next_start(date(2026, 3, 9)) == \
        date(2026, 3, 15)
    assert run.current(date(2026, 3, 5)) is None  # between steps
    assert run.next_start(date(2026, 3, 5)) == date(2026, 3, 8)


@pytest.mark.parametrize(("source", "expected"), [
    ("id: p\ntitle: T\nsteps:\n  - {exercise: wheel_of_life, day: 3}\n",
     "p.yaml:4:5: the first step starts on day 0"),
    ("id: p\ntitle: T\nsteps:\n  - {exercise: a, day: 0}\n  - {exercise: b, day: 0}\n",
     "p.yaml:5:5: each step starts on a later day"),
    ("id: p\ntitle: T\nsteps:\n  - {exercise: a, day: 0, weeks: 2}\n",
     "p.yaml:4:27: unknown key 'weeks'"),
    ("id: p\ntitle: T\nsteps:\n  - {exercise: a, day: 0, days: 99}\n",
     "p.yaml:4:33: 'days' must be a whole number from 1 to 14"),
])
def test_a_bad_programme_is_refused_with_line_and_column(source: str, expected: str) -> None:
    programme, errors = parse_programme(source.encode(), "p.yaml")
    assert programme is None and any(str(e).startswith(expected) for e in errors), errors


async def test_a_programme_is_given_in_one_step_and_planned_in_the_clients_zone(
        db: Store, dialogues: DialogueSet) -> None:
    run_id = await give(db, dialogues)
    made = await steps(db)
    assert [(a.exercise_slug, a.starts_on, a.ends_on) for a in made] == [
        ("values_ranking", date(2026, 3, 21), date(2026, 3, 23)),
        ("wheel_of_life", date(2026, 3, 28), date(2026, 3, 30)),
        ("best_possible_self", date(2026, 4, 4), date(2026, 4, 6)),
        ("action_sprint", date(2026, 4, 11), date(2026, 4, 13))]
    assert {a.programme_run_id for a in made} == {run_id}
    # The second step at 08:30 in Rome across the change to summer time: 07:30 then 06:30 UTC.
    second = made[1]
    dues = planning.exercises(planning.Profile(time_zone="Europe/Rome"), second.schedule,
                              second.starts_on, second.ends_on,
                              datetime(2026, 3, 28, 0, 0, tzinfo=UTC), timedelta(days=4))
    assert [d.strftime("%m-%d %H:%M") for d in dues] == [
        "03-28 07:30", "03-29 06:30", "03-30 06:30"]
    with pytest.raises(NotYourClient):
        await give(db, dialogues, coach=OTHER_COACH)
    async with db.sessionmaker() as s:
        assert len((await s.execute(select(ProgrammeRun))).all()) == 1


async def test_a_step_done_brings_the_next_forward_and_ends_its_own(
        db: Store, dialogues: DialogueSet) -> None:
    await give(db, dialogues)
    first = (await steps(db))[0]
    async with db.sessionmaker() as s, s.begin():
        s.add(PlannedCheckin(user_id=CLIENT, kind="exercise", ref=str(first.id),
                             due_at=datetime(2026, 3, 22, 7, 30, tzinfo=UTC)))
    done_at = datetime(2026, 3, 21, 18, 0, tzinfo=UTC)

    async def answer(t: StoreTurn, action: Any) -> None:
        await converse(t, dialogues, action, done_at)

    await db.run_turn(CLIENT, lambda t: answer(t, Start("values_ranking")))
    await db.run_turn(CLIENT, lambda t: answer(t, Turn(text="1")))  # "I did it"
    made = await steps(db)
    assert made[0].done_at is not None and made[0].ends_on == date(2026, 3, 21)
    assert (made[1].starts_on, made[1].ends_on) == (date(2026, 3, 22), date(2026, 3, 24))
    assert made[2].starts_on == date(2026, 4, 4)  # only the next one moves
    async with db.sessionmaker() as s:
        planned = (await s.execute(select(PlannedCheckin))).scalar_one()
        assert planned.status == "cancelled"
        [run] = await programmes.runs_of(s, CLIENT)
    assert run.done == 1 and run.current(date(2026, 3, 22)) == 1


async def test_only_its_coach_pauses_resumes_and_cancels_the_whole(
        db: Store, dialogues: DialogueSet) -> None:
    run_id = await give(db, dialogues)
    A = managing.AssignmentAction
    async with db.sessionmaker() as s, s.begin():
        for forged in (OTHER_COACH, CLIENT):
            with pytest.raises(NotYourClient):
                await programmes.act_on_programme(s, forged, run_id, A.CANCEL)
        await programmes.act_on_programme(s, COACH, run_id, A.PAUSE)
    assert {a.paused for a in await steps(db)} == {True}
    async with db.sessionmaker() as s, s.begin():
        await programmes.act_on_programme(s, COACH, run_id, A.RESUME)
    assert {a.paused for a in await steps(db)} == {False}
    async with db.sessionmaker() as s, s.begin():
        await programmes.act_on_programme(s, COACH, run_id, A.CANCEL)
        assert await programmes.runs_of(s, CLIENT) == []
        with pytest.raises(NotYourClient):  # cancelled: nothing more to do with it
            await programmes.act_on_programme(s, COACH, run_id, A.RESUME)
    assert {a.active for a in await steps(db)} == {False}
