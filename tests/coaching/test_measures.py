"""Measures (issue 26): the pure start-versus-now arithmetic and schedule, a coach defining
one in the dialogue, the client asked for it and answering, the summary to both, exercise
scores, and what a forged start or another coach gets. On SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import select, text

from bot.coaching import measures
from bot.coaching.coach_errors import InvalidSchedule, NotYourClient
from bot.coaching.contracts import MEASURE_CHECKIN, MEASURE_COUNT, NEW_MEASURE
from bot.coaching.conversation import Start
from bot.dialogue import DialogueSet, load_dialogues
from bot.engine import Turn
from bot.i18n import translator_for
from bot.schedule import planning
from bot.store import (
    Answer,
    Assignment,
    CoachLink,
    Measure,
    MeasureValue,
    Outbox,
    Store,
    User,
)
from tests.coaching.turns import NOW, rows, run

REPO = Path(__file__).parents[2]
COACH, OTHER_COACH, CLIENT, OTHER_CLIENT = 1, 2, 10, 11
DAILY_AT_8 = {"kind": "weekdays", "weekdays": list(range(7)), "hour": 8, "minute": 0}


@pytest.fixture(scope="module")
def dialogues() -> DialogueSet:
    return load_dialogues(REPO / "dialogues")


@pytest.fixture
async def db(db_url: str) -> AsyncIterator[Store]:
    """With an encryption key, as in production: values at rest are ciphertext."""
    store = Store(db_url, encryption_key=Fernet.generate_key().decode())
    await store.start()
    async with store.sessionmaker() as s, s.begin():
        s.add_all([User(id=COACH, first_name="Carla", is_coach=True, locale="en"),
                   User(id=OTHER_COACH, first_name="Oscar", is_coach=True, locale="en"),
                   User(id=CLIENT, first_name="Ana", locale="he", consent_at=NOW,
                        time_zone="Asia/Jerusalem"),
                   User(id=OTHER_CLIENT, first_name="Bo", consent_at=NOW)])
        await s.flush()
        s.add_all([CoachLink(coach_id=COACH, client_id=CLIENT, created_at=NOW,
                             consent_at=NOW - timedelta(days=10)),
                   CoachLink(coach_id=OTHER_COACH, client_id=OTHER_CLIENT, created_at=NOW,
                             consent_at=NOW - timedelta(days=10))])
    yield store
    await store.close()




async def define(store: Store, coach: int, client: int, **overrides: Any) -> Measure:
    async with store.sessionmaker() as s, s.begin():
        values: dict[str, Any] = dict(name="Energy", kind="scale", target=8,
                                      schedule=DAILY_AT_8, starts_on=NOW.date(), ends_on=None,
                                      summary_weeks=2, now=NOW)
        values.update(overrides)
        measure = await measures.define_measure(s, coach, client, **values)
        s.expunge(measure)
        return measure


def asked(measure_id: int, name: str = "Energy", first: bool = False) -> Start:
    return Start(MEASURE_CHECKIN, {measures.ASKED_ID: measure_id, measures.ASKED_NAME: name,
                                   measures.ASKED_FIRST: first})


# -- pure -------------------------------------------------------------------------------------


def test_start_versus_now_takes_the_first_and_the_latest_value() -> None:
    values = [(date(2026, 3, 9), 6.0), (date(2026, 3, 2), 3.0), (date(2026, 3, 5), 5.0)]
    summary = measures.summarise(values, target=7)
    assert summary is not None
    assert (summary.first, summary.first_on, summary.latest, summary.latest_on) == (
        3.0, date(2026, 3, 2), 6.0, date(2026, 3, 9))
    assert (summary.change, summary.count, summary.reached) == (3.0, 3, False)
    assert measures.summarise([], target=None) is None


def test_a_target_below_the_start_is_reached_going_down() -> None:
    down = measures.summarise([(date(2026, 1, 1), 40.0), (date(2026, 2, 1), 29.5)], 30)
    up = measures.summarise([(date(2026, 1, 1), 2.0), (date(2026, 2, 1), 8.0)], 8)
    none = measures.summarise([(date(2026, 1, 1), 2.0), (date(2026, 2, 1), 8.0)], None)
    assert down is not None and down.reached is True
    assert up is not None and up.reached is True
    assert none is not None and none.reached is None


def test_the_summary_comes_every_few_weeks_or_never() -> None:
    assert not measures.summary_due(2, NOW, NOW + timedelta(days=13, hours=23))
    assert measures.summary_due(2, NOW, NOW + timedelta(days=14))
    assert not measures.summary_due(0, NOW, NOW + timedelta(days=400))


@pytest.mark.parametrize(("name", "kind", "target", "weeks"), [
    ("", "scale", None, 4), ("x" * 81, "scale", None, 4), ("Energy", "mood", None, 4),
    ("Energy", "scale", 11, 4), ("Energy", "scale", True, 4), ("Km", "number", float("nan"), 4),
    ("Km", "number", 1e12, 4), ("Energy", "scale", 5, 53), ("Energy", "scale", 5, -1)])
def test_a_measure_that_makes_no_sense_is_refused(name: str, kind: str, target: object,
                                                  weeks: int) -> None:
    with pytest.raises(measures.InvalidMeasure):
        measures.checked_definition(name, kind, target, weeks)


def test_a_summary_reads_with_labels_before_values_in_each_language() -> None:
    summary = measures.summarise([(date(2026, 3, 2), 3.0), (date(2026, 3, 30), 8.0)], 8)
    assert summary is not None
    english = measures.summary_text("Energy", summary, translator_for("en"))
    assert english.splitlines()[1:4] == ["Start (3/2/26): 3", "Now (3/30/26): 8",
                                         "Change: +5"]
    assert "The target is reached." in english
    for locale in ("ca", "it", "hr", "bg", "he"):
        told = measures.summary_text("Energy", summary, translator_for(locale))
        assert "Start" not in told and "\u2068Energy\u2069" in told, locale


@pytest.mark.parametrize(("zone", "day", "expected"), [
    # Rome springs forward on Sunday 29 March: 07:30 stays 07:30 local, an hour less in UTC.
    ("Europe/Rome", date(2026, 3, 28), ["03-28 06:30", "03-29 05:30", "03-30 05:30"]),
    # Jerusalem moves on Friday 27 March.
    ("Asia/Jerusalem", date(2026, 3, 26), ["03-26 05:30", "03-27 04:30", "03-28 04:30"]),
])
def test_a_measure_is_asked_at_the_clients_local_time_across_daylight_saving(
        zone: str, day: date, expected: list[str]) -> None:
    profile = planning.Profile(time_zone=zone)
    schedule = {"kind": "weekdays", "weekdays": list(range(7)), "hour": 7, "minute": 30}
    now = datetime.combine(day, datetime.min.time(), UTC)
    dues = planning.exercises(profile, schedule, day, None, now, timedelta(days=3))
    assert [d.strftime("%m-%d %H:%M") for d in dues] == expected
    assert {d.astimezone(profile.zone).strftime("%H:%M") for d in dues} == {"07:30"}


# -- rows -------------------------------------------------------------------------------------


async def test_a_coach_defines_a_measure_only_for_their_own_client(db: Store) -> None:
    measure = await define(db, COACH, CLIENT)
    [assignment] = await rows(db, Assignment)
    assert (assignment.measure_id, assignment.exercise_slug, assignment.client_id) == (
        measure.id, MEASURE_CHECKIN, CLIENT)
    with pytest.raises(NotYourClient):
        await define(db, COACH, OTHER_CLIENT)
    with pytest.raises(NotYourClient):
        await define(db, OTHER_COACH, CLIENT)
    with pytest.raises(InvalidSchedule):
        await define(db, COACH, CLIENT, schedule={"kind": "weekdays", "hour": 25,
                                                  "weekdays": [0]})
    assert len(await rows(db, Measure)) == 1 and len(await rows(db, Assignment)) == 1


async def test_the_coach_sets_a_measure_up_in_a_dialogue_and_keeps_no_answers(
        db: Store, dialogues: DialogueSet) -> None:
    start = Start(NEW_MEASURE, {measures.NEW_CLIENT: CLIENT,
                                measures.NEW_CLIENT_NAME: "Ana"})
    done = await run(db, dialogues, COACH, start, Turn(text="Kilometres walked"),
                     Turn(text="2"), Turn(text="20"), Turn(text="2"), Turn(text="19:45"),
                     Turn(text="6"), Turn(text="3"))
    assert done.replies[-1].text.startswith("Done: I will ask \u2068Ana\u2069")
    [measure] = await rows(db, Measure)
    assert (measure.name, measure.kind, measure.target, measure.summary_weeks) == (
        "Kilometres walked", "number", 20, 3)
    [assignment] = await rows(db, Assignment)
    assert (assignment.exercise_slug, assignment.measure_id) == (MEASURE_COUNT, measure.id)
    # Israel's working days (Sunday to Thursday), from the client's today, for six weeks.
    assert assignment.schedule == {"kind": "weekdays", "weekdays": [0, 1, 2, 3, 6],
                                   "hour": 19, "minute": 45}
    assert (assignment.starts_on, assignment.ends_on) == (date(2026, 3, 4), date(2026, 4, 14))
    assert [a for a in await rows(db, Answer) if a.user_id == COACH] == []
    async with db.turn(COACH) as t:
        assert "measure." not in repr(t.state)
    # The same answers from another coach for this client: nothing is made.
    refused = await run(db, dialogues, OTHER_COACH, start, Turn(text="Sleep"), Turn(text="1"),
                        Turn(command="skip"), Turn(text="1"), Turn(text="07:00"),
                        Turn(text="0"), Turn(text="0"))
    assert "no longer shares their progress with you" in (refused.replies[-1].text or "")
    assert len(await rows(db, Measure)) == 1
    # The client gives a number; one out of range for a measure is not kept.
    count = Start(MEASURE_COUNT, {measures.ASKED_ID: measure.id,
                                  measures.ASKED_NAME: "Kilometres walked",
                                  measures.ASKED_FIRST: True})
    await run(db, dialogues, CLIENT, count, Turn(text="12.5"))
    await run(db, dialogues, CLIENT, count, Turn(text="5000000000"))
    assert [v.value for v in await rows(db, MeasureValue)] == [12.5]


async def test_the_coachs_request_is_told_the_first_time_only(
        db: Store, dialogues: DialogueSet) -> None:
    """r11 #18: the coach's preamble once; then one question that fits any measure."""
    he = translator_for("he")
    measure = await define(db, COACH, CLIENT)
    async with db.sessionmaker() as s:
        first = await measures.measure_start(s, measure)
    assert first == (MEASURE_CHECKIN, {measures.ASKED_ID: measure.id,
                                       measures.ASKED_NAME: "Energy", measures.ASKED_FIRST: True})
    told = await run(db, dialogues, CLIENT, Start(*first))
    assert [r.text for r in told.replies] == [
        he.gettext("Your coach, who sees your answers, asks you to keep track of this: "
                   "{tracked.name}. If you would like to change or stop it, tell your "
                   "coach.").replace(
            "{tracked.name}", "\u2068Energy\u2069"),
        he.gettext("How would you rate it today, from 1 (lowest) to 10 (highest)?")]
    await run(db, dialogues, CLIENT, Turn(text="5"))
    async with db.sessionmaker() as s:
        again = await measures.measure_start(s, measure)
    assert again[1][measures.ASKED_FIRST] is False
    asked_again = await run(db, dialogues, CLIENT, Start(*again))
    assert [r.text for r in asked_again.replies] == [
        he.gettext("{tracked.name}: how would you rate it today, from 1 (lowest) to 10 "
                   "(highest)?").replace("{tracked.name}", "\u2068Energy\u2069")]


async def test_the_client_answers_and_both_get_a_summary_every_few_weeks(
        db: Store, dialogues: DialogueSet) -> None:
    measure = await define(db, COACH, CLIENT, summary_weeks=2)
    first = await run(db, dialogues, CLIENT, asked(measure.id), Turn(text="3"))
    assert "Then and now" not in "".join(r.text or "" for r in first.replies)
    later = NOW + timedelta(weeks=2, hours=1)
    second = await run(db, dialogues, CLIENT, asked(measure.id), Turn(text="7"), now=later)
    texts = [r.text or "" for r in second.replies]
    summary = next(t for t in texts if "\u2068Energy\u2069" in t and "3" in t and "7" in t)
    assert summary  # in Hebrew, the client's language
    values = await rows(db, MeasureValue)
    assert [(v.client_id, v.measure_id, v.value) for v in values] == [
        (CLIENT, measure.id, 3.0), (CLIENT, measure.id, 7.0)]
    to_coach = [r for r in await rows(db, Outbox) if r.chat_id == COACH]
    assert len(to_coach) == 1 and to_coach[0].subject_user_id == CLIENT
    assert "Then and now: \u2068Energy\u2069" in to_coach[0].payload["text"]
    assert "Start (3/4/26): 3" in to_coach[0].payload["text"]
    # Not again until two more weeks have passed.
    await run(db, dialogues, CLIENT, asked(measure.id), Turn(text="8"),
              now=later + timedelta(days=1))
    assert len([r for r in await rows(db, Outbox) if r.chat_id == COACH]) == 1
    # At rest the values and what they are of are ciphertext.
    async with db.engine.connect() as conn:
        raw = (await conn.execute(text("SELECT key, value FROM measure_values"))).all()
    assert len(raw) == 3
    assert all("scale" not in str(k) and str(v) != "3" and str(v) != "3.0" for k, v in raw)


async def test_a_forged_start_records_nothing_for_another_clients_measure(
        db: Store, dialogues: DialogueSet) -> None:
    theirs = await define(db, OTHER_COACH, OTHER_CLIENT)
    await run(db, dialogues, CLIENT, asked(theirs.id), Turn(text="9"))
    await run(db, dialogues, CLIENT, asked(999_999), Turn(text="9"))
    assert await rows(db, MeasureValue) == []


async def test_the_wheel_of_life_keeps_its_scores_to_compare_later(
        db: Store, dialogues: DialogueSet) -> None:
    def wheel(scores: list[str]) -> list[Any]:
        return [Start("wheel_of_life"), Turn(text="1"), *(Turn(text=s) for s in scores)]

    await run(db, dialogues, CLIENT, *wheel(["4", "5", "6", "7", "3", "5", "2", "8"]))
    await run(db, dialogues, CLIENT, Turn(text="/cancel"))
    await run(db, dialogues, CLIENT, *wheel(["6", "5", "6", "7", "4", "5", "5", "8"]),
              now=NOW + timedelta(days=90))
    values = await rows(db, MeasureValue)
    assert len(values) == 16 and {v.measure_id for v in values} == {None}
    async with db.sessionmaker() as s:
        told = await measures.wheel_summary(s, CLIENT, translator_for("en"))
    assert told is not None
    assert told.splitlines() == ["Wheel of life, your first and your latest:",
                                 "• Health: 4 → 6", "• Work: 5 → 5", "• Money: 6 → 6",
                                 "• Family and friends: 7 → 7", "• Love: 3 → 4",
                                 "• Personal growth: 5 → 5", "• Fun: 2 → 5", "• Home: 8 → 8"]


async def test_a_partial_wheel_keeps_only_the_areas_rated(
        db: Store, dialogues: DialogueSet) -> None:
    """r11 #25: after "I did part of it", an area not rated is skipped, not invented."""
    await run(db, dialogues, CLIENT, Start("wheel_of_life"), Turn(text="2"), Turn(text="4"),
              Turn(command="skip"), Turn(text="6"), *(Turn(command="skip") for _ in range(5)))
    asked = await run(db, dialogues, CLIENT, Turn(text="lonely at the top"))
    assert asked.replies[-1].text == translator_for("he").gettext(
        "In which area would one more point make the biggest difference to your life?")
    values = await rows(db, MeasureValue)
    assert sorted(v.value for v in values) == [4.0, 6.0]


async def test_reports_show_only_the_linked_coachs_measures_as_charts(db: Store) -> None:
    mine = await define(db, COACH, CLIENT)
    async with db.sessionmaker() as s, s.begin():
        await measures.record_value(s, CLIENT, mine.id, "scale", 4, NOW)
        await measures.record_value(s, CLIENT, mine.id, "scale", 6, NOW + timedelta(days=3))
        client = await s.get(User, CLIENT)
        assert client is not None
        for_coach = await measures.measure_reports(s, client, translator_for("en"),
                                                   coach_id=COACH)
        for_other = await measures.measure_reports(s, client, translator_for("en"),
                                                   coach_id=OTHER_COACH)
        own = await measures.measure_reports(s, client, translator_for("he"))
        link = (await s.execute(select(CoachLink).where(CoachLink.client_id == CLIENT))
                ).scalar_one()
        link.unlinked_at = NOW
        await s.flush()
        after_unlinking = await measures.measure_reports(s, client, translator_for("he"))
    assert len(for_coach) == 1 and for_other == [] and len(own) == 1
    assert bytes.fromhex(for_coach[0]["photo"]).startswith(b"\x89PNG")
    assert "Change: +2" in for_coach[0]["caption"]
    assert after_unlinking == []
