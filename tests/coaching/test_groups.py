"""Groups (issue 27) on SQLite and PostgreSQL: membership and consent, authorisation tried
as an attacker would, a group assignment reaching members in three languages and zones
exactly once, and the rule for the figures a coach sees (k = 3, no differencing)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.coaching import (
    assignments,
    coach_errors,
    contracts,
    group_figures,
    groups,
    links,
    programmes,
)
from bot.coaching.conversation import Start, converse
from bot.coaching.group_figures import (
    Rating,
    Span,
    Window,
    closed_weeks,
    cohort,
    may_show,
    movement,
    overlapping,
)
from bot.dialogue import load_dialogues
from bot.engine import Turn
from bot.i18n import translator_for
from bot.schedule.planner import plan
from bot.schedule.starting import claim_and_start
from bot.store import (
    Answer,
    Assignment,
    CoachLink,
    Group,
    GroupContribution,
    GroupKind,
    Outbox,
    PlannedCheckin,
    ProgrammeRun,
    Retention,
    Store,
    User,
    Visibility,
)
from bot.store.types import utcnow

REPO = Path(__file__).parents[2]
DIALOGUES = load_dialogues(REPO / "dialogues")
EXERCISES = assignments.exercise_ids(DIALOGUES)
NOW = datetime(2026, 3, 4, 5, 0, tzinfo=UTC)  # a Wednesday, before the members' 08:00
COACH, OTHER_COACH = 1, 2
ANA, BO, CI, DAN, EVE = 10, 11, 12, 13, 14
T = TypeVar("T")


async def tx(store: Store, fn: Callable[[AsyncSession], Awaitable[T]]) -> T:
    async with store.sessionmaker() as session, session.begin():
        return await fn(session)


@pytest.fixture
async def db(store: Store) -> AsyncIterator[Store]:
    """Two coaches; five people in Rome (Italian), Jerusalem (Hebrew), New York
    (Croatian) and elsewhere, all past the onboarding's consent."""
    people = {ANA: ("it", "Europe/Rome"), BO: ("he", "Asia/Jerusalem"),
              CI: ("hr", "America/New_York"), DAN: ("bg", "Europe/Sofia"),
              EVE: ("ca", "Europe/Madrid")}

    async def setup(s: AsyncSession) -> None:
        s.add_all([User(id=COACH, first_name="Carla"), User(id=OTHER_COACH, first_name="Oscar")])
        s.add_all(User(id=uid, first_name=f"P{uid}", locale=loc, time_zone=zone,
                       consent_at=NOW - timedelta(days=60)) for uid, (loc, zone)
                  in people.items())
        await s.flush()
        await links.make_coach(s, COACH)
        await links.make_coach(s, OTHER_COACH)

    await tx(store, setup)
    yield store


#: Each group's join code, as its coach was shown it (only its hash is stored).
CODES: dict[int, str] = {}


async def new_group(store: Store, coach: int = COACH, name: str = "Sales team",
                    at: datetime = NOW) -> Group:
    group, code = await tx(store, lambda s: groups.create_group(s, coach, name, GroupKind.TEAM,
                                                                at))
    CODES[group.id] = code
    return group


async def join_code(store: Store, code: str, user: int, at: datetime = NOW,
                    visibility: Visibility = Visibility.FIGURES) -> None:
    await tx(store, lambda s: groups.join(s, code, user, visibility, at))


async def join(store: Store, group: Group, user: int, at: datetime = NOW,
               visibility: Visibility = Visibility.FIGURES) -> None:
    """Join by the group's link; once it has expired, by a new one (as a coach makes)."""
    if at >= group.code_expires_at:
        group, CODES[group.id] = await tx(store, lambda s: groups.new_code(
            s, group.coach_id, group.id, at))
    await join_code(store, CODES[group.id], user, at, visibility)


async def scalar(store: Store, query: Any) -> Any:
    return await tx(store, lambda s: s.scalar(query))


# -- membership and consent ---------------------------------------------------------------


async def test_people_join_by_the_link_in_private_and_may_be_in_several_groups(
        db: Store) -> None:
    team, cohort_ = await new_group(db), await new_group(db, name="Spring cohort")
    await join(db, team, ANA)
    await join(db, cohort_, ANA, visibility=Visibility.PROGRESS)
    await join(db, team, BO, visibility=Visibility.PROGRESS)
    members = await tx(db, lambda s: groups.members_of(s, COACH, team.id))
    assert [(m.user_id, m.visibility) for m in members] == [
        (ANA, Visibility.FIGURES), (BO, Visibility.PROGRESS)]
    listed = await tx(db, lambda s: groups.groups_of(s, COACH))
    assert [(g.name, g.members) for g in listed] == [("Sales team", 2), ("Spring cohort", 1)]
    assert [m.group_name for m in await tx(db, lambda s: groups.memberships(s, ANA))] == [
        "Sales team", "Spring cohort"]
    # Only "my progress too" lets the coach follow the person one to one.
    linked = {c.user_id for c in await tx(db, lambda s: links.clients_of(s, COACH))}
    assert linked == {ANA, BO}


async def test_joining_twice_own_link_or_unknown_link_is_refused(db: Store) -> None:
    team = await new_group(db)
    await join(db, team, ANA)
    real = CODES[team.id]
    for user, code, problem in ((ANA, real, coach_errors.JoinProblem.ALREADY_MEMBER),
                                (COACH, real, coach_errors.JoinProblem.OWN),
                                (BO, "forged-code", coach_errors.JoinProblem.UNKNOWN)):
        with pytest.raises(coach_errors.JoinError) as refused:
            await join_code(db, code, user)
        assert refused.value.problem is problem


async def test_leaving_stops_the_groups_exercises_and_the_link_it_made(db: Store) -> None:
    team, other = await new_group(db), await new_group(db, name="Other")
    await join(db, team, ANA, visibility=Visibility.PROGRESS)
    await join(db, other, BO, visibility=Visibility.PROGRESS)
    await join(db, team, BO, visibility=Visibility.PROGRESS)
    await tx(db, lambda s: groups.assign_to_group(
        s, COACH, team.id, "action_sprint", {"kind": "daily", "hour": 8, "days": 7},
        NOW.date(), None, NOW, EXERCISES))
    assert await tx(db, lambda s: groups.leave(s, ANA, team.id, NOW + timedelta(hours=1)))
    assert not await tx(db, lambda s: groups.leave(s, ANA, team.id, NOW))  # removed already
    assert await scalar(db, select(Assignment.active).where(Assignment.client_id == ANA)) \
        is False
    assert await scalar(db, select(func.count()).select_from(CoachLink).where(
        CoachLink.client_id == ANA, CoachLink.unlinked_at.is_(None))) == 0
    # Bo's link came with another group of the same coach that still wants it: it stays.
    assert await tx(db, lambda s: groups.leave(s, BO, team.id, NOW))
    assert {c.user_id for c in await tx(db, lambda s: links.clients_of(s, COACH))} == {BO}
    # A removed member gets nothing the group is given later.
    await tx(db, lambda s: groups.assign_to_group(
        s, COACH, team.id, "action_sprint", {"kind": "daily", "hour": 9, "days": 7},
        NOW.date(), None, NOW, EXERCISES))
    assert await scalar(db, select(func.count()).select_from(Assignment).where(
        Assignment.client_id.in_((ANA, BO)), Assignment.active)) == 0


# -- authorisation, as an attacker would try ----------------------------------------------


async def test_another_coach_reaches_nothing_of_a_group(db: Store) -> None:
    team = await new_group(db)
    await join(db, team, ANA)
    attempts: list[Callable[[AsyncSession], Awaitable[object]]] = [
        lambda s: groups.coach_group(s, OTHER_COACH, team.id),
        lambda s: groups.members_of(s, OTHER_COACH, team.id),
        lambda s: groups.assign_to_group(s, OTHER_COACH, team.id, "action_sprint",
                                         {"kind": "daily", "hour": 8, "days": 7},
                                         NOW.date(), None, NOW, EXERCISES),
        lambda s: group_figures.group_week_figures(s, OTHER_COACH, team.id, NOW),
        lambda s: groups.link_chat(s, team.id, OTHER_COACH, -500, NOW),
        lambda s: groups.link_chat(s, team.id, ANA, -500, NOW),  # a member
        lambda s: groups.set_chat_locale(s, OTHER_COACH, team.id, "it"),
        lambda s: groups.new_code(s, OTHER_COACH, team.id, NOW),
        lambda s: groups.rename_group(s, OTHER_COACH, team.id, "Mine now"),
        lambda s: groups.remove_member(s, OTHER_COACH, team.id, ANA, NOW),
        lambda s: groups.set_weekly_question(s, OTHER_COACH, team.id, True, NOW),
    ]
    for attempt in attempts:
        with pytest.raises(coach_errors.NotYourGroup):
            await tx(db, attempt)
    with pytest.raises(coach_errors.NotACoach):
        await tx(db, lambda s: groups.create_group(s, ANA, "Mine", GroupKind.TEAM, NOW))
    with pytest.raises(coach_errors.UnknownExercise):  # another coach's own exercise
        await tx(db, lambda s: groups.assign_to_group(
            s, COACH, team.id, "x", {"kind": "daily", "hour": 8, "days": 7}, NOW.date(),
            None, NOW, EXERCISES, custom_exercise_id=12345))


async def test_a_linked_chat_follows_an_upgrade_and_ends_when_the_bot_is_removed(
        db: Store) -> None:
    team = await new_group(db)
    await tx(db, lambda s: groups.set_chat_locale(s, COACH, team.id, "it"))
    await tx(db, lambda s: groups.link_chat(s, team.id, COACH, -500, NOW))
    assert await tx(db, lambda s: groups.move_chat(s, -500, -100500))
    found = await tx(db, lambda s: groups.group_of_chat(s, -100500))
    assert found is not None and (found.id, found.chat_locale) == (team.id, "it")
    assert await tx(db, lambda s: groups.unlink_chat(s, -100500))
    assert await tx(db, lambda s: groups.group_of_chat(s, -100500)) is None


# -- practice for the group -----------------------------------------------------------------


async def test_a_groups_chat_speaks_its_coachs_language_until_the_coach_picks_another(
        db: Store) -> None:
    async def croatian(s: AsyncSession) -> None:
        coach = await s.get(User, COACH)
        assert coach is not None
        coach.locale = "hr"

    await tx(db, croatian)
    team = await new_group(db)
    assert team.chat_locale == "hr"
    linked = await tx(db, lambda s: groups.link_chat(s, team.id, COACH, -500, NOW))
    assert linked.chat_locale == "hr"  # not the app language of whoever added the bot
    await tx(db, lambda s: groups.set_chat_locale(s, COACH, team.id, "he"))
    relinked = await tx(db, lambda s: groups.link_chat(s, team.id, COACH, -500, NOW))
    assert relinked.chat_locale == "he"
    with pytest.raises(coach_errors.UnknownLanguage):
        await tx(db, lambda s: groups.set_chat_locale(s, COACH, team.id, "fr"))


async def test_a_group_exercise_reaches_each_member_in_their_language_and_zone_once(
        db: Store) -> None:
    team = await new_group(db)
    for member in (ANA, BO, CI):
        await join(db, team, member)
    _, count = await tx(db, lambda s: groups.assign_to_group(
        s, COACH, team.id, "action_sprint", {"kind": "daily", "hour": 8, "days": 7},
        NOW.date(), None, NOW, EXERCISES))
    assert count == 3
    await plan(db, NOW)
    await plan(db, NOW + timedelta(minutes=1))  # planning twice plans nothing twice
    due = dict((await tx(db, lambda s: s.execute(
        select(PlannedCheckin.user_id, func.min(PlannedCheckin.due_at))
        .where(PlannedCheckin.kind == "exercise").group_by(PlannedCheckin.user_id)))).all())
    # 08:00 local: Jerusalem (UTC+2), Rome (UTC+1), New York (UTC-5).
    assert due == {BO: datetime(2026, 3, 4, 6, tzinfo=UTC),
                   ANA: datetime(2026, 3, 4, 7, tzinfo=UTC),
                   CI: datetime(2026, 3, 4, 13, tzinfo=UTC)}
    intro = DIALOGUES["action_sprint"].steps["intro"].say
    assert intro is not None
    for member, locale in ((BO, "he"), (ANA, "it"), (CI, "hr")):
        at = due[member]
        # Two workers at once: the row starts exactly once.
        results = await asyncio.gather(*(claim_and_start(db, DIALOGUES, at, worker_id=w)
                                         for w in ("w1", "w2")))
        assert sum(r["started"] for r in results) == 1
        texts = (await tx(db, lambda s, m=member: s.scalars(select(Outbox.payload).where(
            Outbox.chat_id == m).order_by(Outbox.id)))).all()
        expected = translator_for(locale).gettext(str(intro))
        assert expected != intro and texts[0]["text"] == expected


async def test_a_late_joiner_gets_the_groups_current_assignments_from_today(db: Store) -> None:
    team = await new_group(db)
    await join(db, team, ANA)
    await tx(db, lambda s: groups.assign_to_group(
        s, COACH, team.id, "action_sprint", {"kind": "weekdays", "hour": 8,
                                             "weekdays": [0, 2, 4]},
        NOW.date(), NOW.date() + timedelta(days=27), NOW, EXERCISES))
    await tx(db, lambda s: groups.assign_to_group(  # over already: not copied
        s, COACH, team.id, "action_sprint", {"kind": "daily", "hour": 8, "days": 1},
        NOW.date() - timedelta(days=10), NOW.date() - timedelta(days=9), NOW, EXERCISES))
    later = NOW + timedelta(days=5)
    await join(db, team, DAN, at=later)
    copies = (await tx(db, lambda s: s.execute(select(
        Assignment.starts_on, Assignment.ends_on, Assignment.schedule)
        .where(Assignment.client_id == DAN)))).all()
    assert [(c.starts_on, c.ends_on, c.schedule["weekdays"]) for c in copies] == [
        (later.date(), NOW.date() + timedelta(days=27), [0, 2, 4])]


# -- the figures a coach sees ---------------------------------------------------------------


def test_the_rule_needs_three_and_no_view_one_or_two_people_apart() -> None:
    three, four = frozenset({1, 2, 3}), frozenset({1, 2, 3, 4})
    assert not may_show(frozenset({1, 2}), [])
    assert may_show(three, [])
    assert may_show(three, [three])  # the same people: nothing to subtract
    assert not may_show(three, [four])  # four minus three is one person
    assert not may_show(four, [frozenset({1, 2, 3, 4, 5, 6})])  # two people apart
    assert may_show(four, [frozenset({1, 2, 3, 4, 5, 6, 7})])
    assert may_show(four, [frozenset({7, 8, 9})])


def test_members_the_coach_sees_one_by_one_do_not_count_towards_the_three() -> None:
    five, seen = frozenset({1, 2, 3, 4, 5}), frozenset({1, 2})
    assert not may_show(frozenset({1, 2, 3}), [], seen)  # 3 × mean − the two known = the third
    assert may_show(five, [], seen)
    assert may_show(five, [frozenset({3, 4, 5})], seen)  # apart only by whom the coach sees
    assert not may_show(five, [frozenset({3, 4, 5, 6})], seen)  # one unseen person apart
    assert may_show(five, [frozenset({3, 4, 5, 6})])  # were 1 and 2 unseen: three apart


def test_who_was_linked_or_in_a_group_is_kept_as_long_as_the_weeks_shown() -> None:
    oldest = (group_figures.FIGURE_WEEKS + 1) * group_figures.WEEK
    assert Retention().ended_links >= oldest and Retention().left_groups >= oldest


def test_the_movement_runs_from_where_the_week_began_to_its_last_rating() -> None:
    start = datetime(2026, 3, 2, tzinfo=UTC)

    def rating(day: int, value: float, new_goal: bool = False) -> Rating:
        return Rating(start + timedelta(days=day), value, new_goal)

    assert movement([rating(-7, 3, True), rating(2, 5)], start) == 2  # last week's review
    assert movement([rating(-14, 4), rating(-7, 5), rating(1, 5), rating(5, 7)], start) == 2
    assert movement([rating(1, 4), rating(5, 6)], start) == 2  # no rating before: the first
    assert movement([rating(-7, 8), rating(1, 2, True), rating(4, 5)], start) == 3  # new goal
    assert movement([rating(-7, 8), rating(1, 2, True)], start) is None  # one of the new goal
    assert movement([rating(2, 5)], start) is None
    assert movement([rating(-7, 3), rating(-1, 5)], start) is None  # none in the week
    assert movement([], start) is None


def test_a_weeks_cohort_is_whoever_was_in_for_the_whole_week() -> None:
    week = Window(datetime(2026, 3, 2, tzinfo=UTC), datetime(2026, 3, 9, tzinfo=UTC))
    before, during = datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 3, 5, tzinfo=UTC)
    after = datetime(2026, 3, 20, tzinfo=UTC)
    spans = [Span(1, before, None), Span(2, during, None), Span(3, before, during),
             Span(4, before, after)]
    assert cohort(spans, week) == {1, 4}
    ended = Span(5, before - timedelta(days=9), before)
    assert overlapping([*spans, ended], week) == {1, 2, 3, 4}  # in it at some point
    assert closed_weeks(datetime(2026, 3, 11, 9, tzinfo=UTC), 2) == [
        Window(datetime(2026, 2, 23, tzinfo=UTC), datetime(2026, 3, 2, tzinfo=UTC)), week]


async def answer(store: Store, user: int, at: datetime, mood: int) -> None:
    async def go(s: AsyncSession) -> None:
        s.add(Answer(user_id=user, dialogue_id="daily_checkin", step_id="mood",
                     variable="checkin.mood", value=mood, answered_at=at))

    await tx(store, go)


async def week_figures(store: Store, group: Group, now: datetime,
                       coach: int = COACH) -> group_figures.WeekFigures:
    weeks = await tx(store, lambda s: group_figures.group_week_figures(s, coach, group.id,
                                                                       now, weeks=1))
    return weeks[-1]


async def test_figures_show_with_three_and_never_change_by_a_join_or_leave(db: Store) -> None:
    joined = datetime(2026, 2, 20, tzinfo=UTC)
    monday = datetime(2026, 3, 2, 9, tzinfo=UTC)
    after_week = datetime(2026, 3, 10, tzinfo=UTC)
    team = await new_group(db, at=joined)
    for member in (ANA, BO):
        await join(db, team, member, at=joined)
    await answer(db, ANA, monday, 4)
    await answer(db, BO, monday, 8)
    two = await week_figures(db, team, after_week)
    assert (two.cohort_size, two.participation, two.mood) == (2, None, None)  # withheld
    await join(db, team, CI, at=joined + timedelta(hours=1))
    await answer(db, CI, monday, 6)
    three = await week_figures(db, team, after_week)
    assert (three.cohort_size, three.participation, three.mood) == (3, 3, 6.0)
    # Someone joins after the week, someone leaves after it: that week is as it was.
    await join(db, team, DAN, at=after_week)
    await answer(db, DAN, monday + timedelta(hours=1), 1)  # answered before joining
    await tx(db, lambda s: groups.leave(s, BO, team.id, after_week))
    assert await week_figures(db, team, after_week + timedelta(days=1)) == three
    # The current week is never shown, however many answered in it.
    assert (await week_figures(db, team, after_week)).window.end <= after_week


async def test_an_overlapping_group_one_person_apart_withholds_both(db: Store) -> None:
    joined = datetime(2026, 2, 20, tzinfo=UTC)
    monday = datetime(2026, 3, 2, 9, tzinfo=UTC)
    team, subset = await new_group(db, at=joined), await new_group(db, name="Leads", at=joined)
    for member, mood in ((ANA, 4), (BO, 8), (CI, 6), (DAN, 2)):
        await join(db, team, member, at=joined)
        await answer(db, member, monday, mood)
    for member in (ANA, BO, CI):
        await join(db, subset, member, at=joined)
    now = datetime(2026, 3, 10, tzinfo=UTC)
    assert (await week_figures(db, team, now)).mood is None
    assert (await week_figures(db, subset, now)).mood is None
    # Another coach's group is no view of this coach's.
    theirs = await new_group(db, coach=OTHER_COACH, name="Theirs", at=joined)
    for member in (ANA, BO, CI):
        await join(db, theirs, member, at=joined)
    assert (await week_figures(db, theirs, now, coach=OTHER_COACH)).mood == 6.0


async def test_erasing_a_member_takes_them_out_and_withholds_the_weeks_they_were_in(
        db: Store) -> None:
    today = utcnow()  # erasure happens now: the weeks around it are real ones
    last_week = closed_weeks(today, 1)[0]
    joined, monday = last_week.start - timedelta(days=10), last_week.start + timedelta(hours=9)
    team = await new_group(db, at=joined)
    for member, mood in ((ANA, 4), (BO, 8), (CI, 6), (DAN, 2)):
        await join(db, team, member, at=joined)
        await answer(db, member, monday, mood)
    assert (await week_figures(db, team, today)).mood == 5.0
    exported = await db.export_user(DAN)
    assert [m["group_id"] for m in exported["group_members"]] == [team.id]
    await db.erase_user(DAN)
    after = await week_figures(db, team, today)
    assert (after.cohort_size, after.participation, after.mood) == (3, None, None)
    # Weeks that start after the erasure, with the three who are left, are shown again.
    next_monday = last_week.end + timedelta(days=7, hours=9)
    for member, mood in ((ANA, 5), (BO, 5), (CI, 8)):
        await answer(db, member, next_monday, mood)
    later = await week_figures(db, team, today + timedelta(days=14))
    assert (later.participation, later.mood) == (3, 6.0)


async def test_a_cohort_of_three_where_two_share_shows_nothing(db: Store) -> None:
    joined = datetime(2026, 2, 20, tzinfo=UTC)
    monday = datetime(2026, 3, 2, 9, tzinfo=UTC)
    now = datetime(2026, 3, 10, tzinfo=UTC)
    team = await new_group(db, at=joined)
    await join(db, team, ANA, at=joined, visibility=Visibility.PROGRESS)
    await join(db, team, BO, at=joined)
    await join(db, team, CI, at=joined)

    async def one_to_one(s: AsyncSession) -> None:  # BO has been Carla's client all along
        s.add(CoachLink(coach_id=COACH, client_id=BO, created_at=joined, consent_at=joined))

    await tx(db, one_to_one)
    for member, mood in ((ANA, 4), (BO, 8), (CI, 6)):
        await answer(db, member, monday, mood)
        await rate(db, member, monday - timedelta(days=7), 3, new_goal=True)
        await rate(db, member, monday, mood)
    week = await week_figures(db, team, now)
    assert (week.cohort_size, week.participation, week.mood, week.movement) == (
        3, None, None, None)
    # Another coach sees no one of them one by one: all three count for them.
    theirs = await new_group(db, coach=OTHER_COACH, name="Theirs", at=joined)
    for member in (ANA, BO, CI):
        await join(db, theirs, member, at=joined)
    other = await week_figures(db, theirs, now, coach=OTHER_COACH)
    assert (other.participation, other.mood, other.movement) == (3, 6.0, 3.0)
    # Two more who do not share: CI, DAN and EVE make three, the sharers still counted.
    for member, mood in ((DAN, 2), (EVE, 5)):
        await join(db, team, member, at=joined)
        await answer(db, member, monday, mood)
    week = await week_figures(db, team, now)
    assert (week.participation, week.mood) == (5, 5.0)
    assert week.movement is None  # only CI of the three who rated their goal
    # Someone who becomes Carla's client after the week changes nothing of it: her
    # reports show only what they write from then on.
    async def linked_later(s: AsyncSession) -> None:
        s.add(CoachLink(coach_id=COACH, client_id=DAN, created_at=now, consent_at=now))

    await tx(db, linked_later)
    assert await week_figures(db, team, now + timedelta(days=1)) == week


async def test_who_joined_sharing_stays_seen_after_ending_the_link_with_coach(
        db: Store) -> None:
    joined = datetime(2026, 2, 20, tzinfo=UTC)
    monday = datetime(2026, 3, 2, 9, tzinfo=UTC)
    team = await new_group(db, at=joined)
    await join(db, team, ANA, at=joined, visibility=Visibility.PROGRESS)
    for member in (CI, DAN):
        await join(db, team, member, at=joined)

    async def stop_sharing(s: AsyncSession) -> None:  # /coach, before the week
        link = await s.scalar(select(CoachLink).where(CoachLink.client_id == ANA))
        assert link is not None
        link.unlinked_at = joined + timedelta(days=1)

    await tx(db, stop_sharing)
    for member, mood in ((ANA, 4), (CI, 6), (DAN, 8)):
        await answer(db, member, monday, mood)
    week = await week_figures(db, team, datetime(2026, 3, 10, tzinfo=UTC))
    assert (week.participation, week.mood) == (None, None)  # joined sharing: seen while in


async def rate(store: Store, user: int, at: datetime, value: int, new_goal: bool = False
               ) -> None:
    """A rating of the member's goal on its 1-10 scale: set with the goal, or a review's."""
    variable = "goal.baseline" if new_goal else "review.current"

    async def go(s: AsyncSession) -> None:
        s.add(Answer(user_id=user, dialogue_id="goal_setting" if new_goal else "weekly_review",
                     step_id="scale", variable=variable, value=value, marker=variable,
                     answered_at=at))

    await tx(store, go)


async def test_completion_counts_the_groups_exercises_done(db: Store) -> None:
    joined = datetime(2026, 2, 20, tzinfo=UTC)
    team = await new_group(db, at=joined)
    for member in (ANA, BO, CI):
        await join(db, team, member, at=joined)
    await tx(db, lambda s: groups.assign_to_group(
        s, COACH, team.id, "action_sprint", {"kind": "daily", "hour": 8, "days": 14},
        date(2026, 3, 2), None, joined, EXERCISES))
    refs = await tx(db, lambda s: s.execute(select(Assignment.client_id, Assignment.id)))

    async def rows(s: AsyncSession) -> None:
        for client, ref in refs.all():
            for day in range(2):
                at = datetime(2026, 3, 2 + day, 7, tzinfo=UTC)
                s.add(PlannedCheckin(user_id=client, kind="exercise", ref=str(ref),
                                     due_at=at, status="started", started_at=at))
                if client != CI or day == 0:  # CI did one of two
                    s.add(Answer(user_id=client, dialogue_id="action_sprint", step_id="status",
                                 variable="exercise.status", value="done", answered_at=at))

    await tx(db, rows)
    week = await week_figures(db, team, datetime(2026, 3, 10, tzinfo=UTC))
    assert week.completion == pytest.approx(5 / 6)
    assert week.participation == 3


# -- a team's shared goal, owned by each ----------------------------------------------------


async def talk(store: Store, user: int, *actions: Any) -> None:
    for action in actions:
        async with store.turn(user) as t:
            await converse(t, DIALOGUES, action, t.now)


async def test_a_shared_goal_and_each_members_own_part_shared_only_on_their_yes(
        db: Store) -> None:
    team = await new_group(db)
    for member in (ANA, BO, CI):
        await join(db, team, member)
    await talk(db, COACH, Start(contracts.GROUP_GOAL, {"group.id": team.id}),
               Turn(text="Ship the new onboarding by June"), Turn(text="yes"))
    assert await scalar(db, select(Group.shared_goal).where(Group.id == team.id)) == \
        "Ship the new onboarding by June"
    offers = (await tx(db, lambda s: s.execute(select(Outbox.chat_id, Outbox.payload).where(
        Outbox.user_id == COACH, Outbox.chat_id != COACH).order_by(Outbox.chat_id)))).all()
    assert [(chat, p["buttons"][0]["data"]) for chat, p in offers] == [
        (m, f"gcontrib:{team.id}") for m in (ANA, BO, CI)]
    italian = translator_for("it").gettext(
        "The team “{group}” has a shared goal now. Only you decide whether your coach sees "
        "your answers. Would you like to name your own part in it?"
    ).split("{group}")[0]
    assert offers[0].payload["text"].startswith(italian) and italian != "The team “"
    goal = "Ship the new onboarding by June"
    for member, share in ((ANA, "yes"), (BO, "no")):
        await talk(db, member, Start(contracts.GROUP_CONTRIBUTION, {"group.id": team.id,
                                                                 "group.goal": goal}),
                   Turn(text=f"P{member} writes the guide"), Turn(text="a first draft"),
                   Turn(text="2030-05-17"), Turn(text=share))
    shared = await tx(db, lambda s: groups.shared_contributions(s, COACH, team.id))
    assert [(c.first_name, c.contribution, c.commitment, c.due_on) for c in shared] == [
        (f"P{ANA}", f"P{ANA} writes the guide", "a first draft", date(2030, 5, 17))]
    with pytest.raises(coach_errors.NotYourGroup):
        await tx(db, lambda s: groups.shared_contributions(s, OTHER_COACH, team.id))


async def test_a_forged_group_in_the_goal_dialogues_changes_nothing(db: Store) -> None:
    team = await new_group(db)
    await join(db, team, ANA)
    # Another coach finishing the goal dialogue for this group; a non-member a contribution.
    await talk(db, OTHER_COACH, Start(contracts.GROUP_GOAL, {"group.id": team.id}),
               Turn(text="Hijacked"), Turn(text="yes"))
    await talk(db, DAN, Start(contracts.GROUP_CONTRIBUTION, {"group.id": team.id,
                                                          "group.goal": "x"}),
               Turn(text="mine"), Turn(text="now"), Turn(text="tomorrow"), Turn(text="yes"))
    assert await scalar(db, select(Group.shared_goal).where(Group.id == team.id)) is None
    assert await tx(db, lambda s: groups.member_goal(s, DAN, team.id)) is None
    assert await scalar(db, select(func.count()).select_from(GroupContribution)) == 0


async def test_a_group_sessions_attendees_are_its_current_members_for_its_coach_only(
        db: Store) -> None:
    team = await new_group(db)
    for member in (ANA, BO):
        await join(db, team, member)
    await tx(db, lambda s: groups.leave(s, BO, team.id, NOW))
    assert await tx(db, lambda s: groups.session_attendees(s, COACH, team.id)) == [ANA]
    with pytest.raises(coach_errors.NotYourGroup):
        await tx(db, lambda s: groups.session_attendees(s, OTHER_COACH, team.id))


# -- a programme for the whole group ----------------------------------------------------------


async def test_a_group_programme_runs_for_each_member_from_their_own_tomorrow(
        db: Store) -> None:
    team = await new_group(db)
    for member in (ANA, BO, CI):
        await join(db, team, member)
    # 01:00 UTC on Thursday: still Wednesday evening in New York.
    at = datetime(2026, 3, 5, 1, 0, tzinfo=UTC)
    programme = DIALOGUES.programmes["values_and_goals"]
    _, count = await tx(db, lambda s: groups.assign_programme_to_group(
        s, COACH, team.id, programme, 8, 0, at, EXERCISES))
    assert count == 3
    runs = (await tx(db, lambda s: s.execute(select(
        ProgrammeRun.client_id, ProgrammeRun.starts_on, ProgrammeRun.status,
        ProgrammeRun.programme).order_by(ProgrammeRun.client_id)))).all()
    assert runs == [(ANA, date(2026, 3, 6), "active", "values_and_goals"),
                    (BO, date(2026, 3, 6), "active", "values_and_goals"),
                    (CI, date(2026, 3, 5), "active", "values_and_goals")]
    firsts = (await tx(db, lambda s: s.execute(
        select(Assignment.client_id, func.min(Assignment.starts_on),
               func.count(Assignment.group_assignment_id))
        .where(Assignment.programme_run_id.is_not(None))
        .group_by(Assignment.client_id).order_by(Assignment.client_id)))).all()
    assert firsts == [(ANA, date(2026, 3, 6), len(programme.steps)),
                      (BO, date(2026, 3, 6), len(programme.steps)),
                      (CI, date(2026, 3, 5), len(programme.steps))]
    # Each sees where they are; with "group figures only" the coach does not.
    assert [r.programme for r in await tx(db, lambda s: programmes.runs_of(s, ANA))] == [
        "values_and_goals"]
    assert await tx(db, lambda s: programmes.runs_of(s, ANA, coach_id=COACH)) == []
    # Planned at 08:00 in each member's own zone, once.
    await plan(db, datetime(2026, 3, 5, 2, 0, tzinfo=UTC))
    planned = await scalar(db, select(func.count()).select_from(PlannedCheckin))
    await plan(db, datetime(2026, 3, 5, 2, 1, tzinfo=UTC))
    assert await scalar(db, select(func.count()).select_from(PlannedCheckin)) == planned
    due = dict((await tx(db, lambda s: s.execute(
        select(PlannedCheckin.user_id, func.min(PlannedCheckin.due_at))
        .where(PlannedCheckin.kind == "exercise").group_by(PlannedCheckin.user_id)))).all())
    assert due[CI] == datetime(2026, 3, 5, 13, 0, tzinfo=UTC)  # 08:00 in New York
    assert due[ANA] == datetime(2026, 3, 6, 7, 0, tzinfo=UTC)  # 08:00 in Rome, Friday


async def test_a_late_joiner_gets_the_group_programme_and_leaving_cancels_the_run(
        db: Store) -> None:
    team = await new_group(db)
    await join(db, team, ANA)
    await join(db, team, BO, visibility=Visibility.PROGRESS)
    programme = DIALOGUES.programmes["values_and_goals"]
    await tx(db, lambda s: groups.assign_programme_to_group(
        s, COACH, team.id, programme, 18, 0, NOW, EXERCISES))
    later = NOW + timedelta(days=3, hours=20)  # 01:00 on Sunday in Sofia
    await join(db, team, DAN, at=later)
    run = await scalar(db, select(ProgrammeRun).where(ProgrammeRun.client_id == DAN))
    assert (run.starts_on, run.status) == (date(2026, 3, 9), "active")
    # Ana leaves; the coach removes Bo: their runs end, their steps are no longer sent.
    await plan(db, NOW)
    assert await tx(db, lambda s: groups.leave(s, ANA, team.id, later))
    assert await tx(db, lambda s: groups.remove_member(s, COACH, team.id, BO, later))
    status = dict((await tx(db, lambda s: s.execute(
        select(ProgrammeRun.client_id, ProgrammeRun.status)))).all())
    assert status == {ANA: "cancelled", BO: "cancelled", DAN: "active"}
    assert await scalar(db, select(func.count()).select_from(Assignment).where(
        Assignment.client_id.in_((ANA, BO)), Assignment.active)) == 0
    assert await scalar(db, select(func.count()).select_from(PlannedCheckin).where(
        PlannedCheckin.user_id.in_((ANA, BO)), PlannedCheckin.kind == "exercise",
        PlannedCheckin.status == "planned")) == 0
    assert [r.programme for r in await tx(db, lambda s: programmes.runs_of(s, DAN))] == [
        "values_and_goals"]


async def test_only_the_groups_coach_gives_it_a_programme(db: Store) -> None:
    team = await new_group(db)
    await join(db, team, ANA)
    programme = DIALOGUES.programmes["values_and_goals"]
    for intruder in (OTHER_COACH, ANA):
        with pytest.raises(coach_errors.NotYourGroup):
            await tx(db, lambda s, who=intruder: groups.assign_programme_to_group(
                s, who, team.id, programme, 8, 0, NOW, EXERCISES))
    assert await scalar(db, select(func.count()).select_from(ProgrammeRun)) == 0
