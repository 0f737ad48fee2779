"""An engagement, on both backends: the coach sets the number of sessions agreed; held and
missed count against it, and what is left shows to both; marking the last one held or missed
plans the client's look back (outside their quiet hours), which goes from their first goal to
now, asks what they take with them (they may skip it), and ends with their choice to stay
linked or not (a no ends the link and tells the
coach). Also "I can't make it": the times the client proposes reach the coach with the move
button."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from bot.coaching.conversation import Start, converse
from bot.coaching.engagements import closing_variables
from bot.coaching.sessions import (
    NewSessions,
    agree_button,
    engagement,
    record_outcome,
    schedule_sessions,
    sessions_message,
)
from bot.dialogue import DialogueSet, load_dialogues
from bot.engine import Turn
from bot.schedule.sessions import Repeat
from bot.store import (
    ActionSource,
    ActionStatus,
    Answer,
    CoachingSession,
    CoachLink,
    CommitmentAction,
    Goal,
    Outbox,
    PlannedCheckin,
    SessionMode,
    Store,
    User,
)
from bot.telegram.sessions import SessionFlows

REPO = Path(__file__).parents[2]
STAY = "Would you like to keep sharing your progress with \u2068Marta\u2069?"
CONFIRM = ("Just to be sure: if you stop sharing your progress, \u2068Marta\u2069 will no "
           "longer see it, and I will let them know. Shall I stop sharing it?")
NOW = datetime(2026, 3, 20, 12, 0, tzinfo=UTC)
COACH, CLIENT = 1, 2


@pytest.fixture(scope="module")
def dialogues() -> DialogueSet:
    return load_dialogues(REPO / "dialogues")


@pytest.fixture(autouse=True)
def frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every turn happens at NOW."""
    monkeypatch.setattr("bot.store.store.utcnow", lambda: NOW)


@pytest.fixture
async def db(store: Store) -> Store:
    async with store.sessionmaker() as s, s.begin():
        s.add(User(id=COACH, is_coach=True, time_zone="Europe/Rome", locale="en",
                   first_name="Marta", consent_at=NOW))
        s.add(User(id=CLIENT, time_zone="Asia/Tokyo", locale="en", first_name="Ken",
                   consent_at=NOW, quiet_start=22 * 60, quiet_end=8 * 60))
        await s.flush()
        s.add(CoachLink(coach_id=COACH, client_id=CLIENT, created_at=NOW, consent_at=NOW))
        # The first goal reached (3 -> 8, last rated on a Tokyo morning that is still the
        # evening before in UTC), and a second one just set at 2.
        s.add(Goal(user_id=CLIENT, title="Speak up in meetings", baseline=3, current=8,
                   current_at=datetime(2026, 2, 27, 23, 30, tzinfo=UTC),
                   status="done", created_at=NOW - timedelta(days=90)))
        s.add(Goal(user_id=CLIENT, title="Lead the team", baseline=2, current=2,
                   current_at=NOW - timedelta(days=1), status="active",
                   created_at=NOW - timedelta(days=1)))
        s.add(CommitmentAction(user_id=CLIENT, words="Prepare one point",
                               source=ActionSource.SESSION, due_on=date(2026, 3, 25),
                               status=ActionStatus.DONE, created_at=NOW))
    return store


async def outbox(store: Store, chat: int) -> list[dict[str, object]]:
    async with store.sessionmaker() as s:
        return [r.payload for r in (await s.execute(select(Outbox).where(
            Outbox.chat_id == chat).order_by(Outbox.id))).scalars()]


async def test_the_agreed_number_counts_down_and_the_last_held_invites_a_look_back(
        db: Store, dialogues: DialogueSet) -> None:
    async with db.sessionmaker() as s, s.begin():
        created = await schedule_sessions(s, COACH, NewSessions(
            client_id=CLIENT, first=datetime(2026, 3, 23, 18, 0), zone="Europe/Rome",
            minutes=60, mode=SessionMode.VIDEO, place=None, repeat=Repeat.WEEKLY, count=2),
            NOW)
        assert (await engagement(s, COACH, CLIENT)).agreed == 2  # counted, not set
    await db.run_turn(COACH, lambda t: agree_button(t, [str(CLIENT), "7"]))  # not offered
    await db.run_turn(COACH, lambda t: agree_button(t, [str(CLIENT), "2"]))
    told = await outbox(db, CLIENT)
    assert "agreed on the number of sessions: 2" in str(told[-1]["text"])
    after_first = created[0].starts_at + timedelta(minutes=61)
    await db.run_turn(COACH, lambda t: record_outcome(t, created[0].id, False, after_first))
    listing = await db.run_turn(CLIENT, lambda t: sessions_message(t, after_first))
    assert "held: 0 · not held: 1 · left: 1" in str(listing["text"])
    async with db.sessionmaker() as s:
        assert (await s.execute(select(PlannedCheckin).where(
            PlannedCheckin.kind == "engagement_close"))).first() is None

    # Marked held at 17:01 UTC, 02:01 in Tokyo: the look back waits for 08:00 there.
    last = created[1].starts_at + timedelta(minutes=61)
    await db.run_turn(COACH, lambda t: record_outcome(t, created[1].id, True, last))
    assert "That was the last of the sessions you agreed on" in str(
        (await outbox(db, COACH))[-1]["text"])
    await db.run_turn(COACH, lambda t: record_outcome(t, created[1].id, True, last))
    async with db.sessionmaker() as s:
        [row] = (await s.execute(select(PlannedCheckin).where(
            PlannedCheckin.kind == "engagement_close"))).scalars()  # planned once
        assert (row.user_id, row.ref) == (CLIENT, str(COACH))
        assert row.due_at == datetime(2026, 3, 30, 23, 0, tzinfo=UTC)

    async def run(t, action):  # type: ignore[no-untyped-def]
        return await converse(t, dialogues, action, last)

    async with db.sessionmaker() as s:
        variables = await closing_variables(s, CLIENT, str(COACH))
    assert variables is not None
    started = await db.run_turn(CLIENT, lambda t: run(t, Start("engagement_close", variables)))
    said = "\n".join(r.text for r in started.replies)
    assert "\u2068Speak up in meetings\u2069" in said  # the first goal, in their words
    assert "3 out of 10" in said and "1 action" in said
    # Like with like: the same goal's latest rating, on the day the client gave it (their
    # day in Tokyo), never the new goal's 2 next to the first goal's 3.
    assert "Your latest rating of this goal, on February 28, 2026: 8 out of 10." in said
    assert "2 out of 10" not in said and "Today" not in said
    assert "The goal you are working on now: “\u2068Lead the team\u2069”." in said
    assert started.replies[-1].text.startswith("Looking at this, what do you take with you")
    took = await db.run_turn(CLIENT, lambda t: run(t, Turn(text="I can say no now")))
    assert took.replies[-1].text.startswith("What do you want to keep doing from here?")
    kept_on = await db.run_turn(CLIENT, lambda t: run(t, Turn(text="Saying no kindly")))
    assert kept_on.replies[-1].text.endswith(STAY)
    async with db.sessionmaker() as s:
        [kept] = [a for a in (await s.execute(select(Answer))).scalars()
                  if a.variable == "look_back.take_away"]
        assert kept.value == "I can say no now"  # kept like any answer, not carried
    checked = await db.run_turn(CLIENT, lambda t: run(t, Turn(text="no")))
    assert checked.replies[-1].text == CONFIRM  # not ended on one tap
    async with db.sessionmaker() as s:
        assert (await s.execute(select(CoachLink))).scalar_one().unlinked_at is None
    await db.run_turn(CLIENT, lambda t: run(t, Turn(text="yes")))
    async with db.sessionmaker() as s:
        link = (await s.execute(select(CoachLink))).scalar_one()
    assert link.unlinked_at is not None
    assert "chose to stop sharing their progress" in str((await outbox(db, COACH))[-1]["text"])
    async with db.sessionmaker() as s:
        assert await closing_variables(s, CLIENT, str(COACH)) is None  # linked no more


async def test_the_last_agreed_session_marked_missed_invites_the_look_back_too(
        db: Store) -> None:
    async with db.sessionmaker() as s, s.begin():
        created = await schedule_sessions(s, COACH, NewSessions(
            client_id=CLIENT, first=datetime(2026, 3, 23, 18, 0), zone="Europe/Rome",
            minutes=60, mode=SessionMode.VIDEO, place=None, repeat=Repeat.WEEKLY, count=2),
            NOW)
    await db.run_turn(COACH, lambda t: agree_button(t, [str(CLIENT), "2"]))
    first = created[0].starts_at + timedelta(minutes=61)
    await db.run_turn(COACH, lambda t: record_outcome(t, created[0].id, True, first))
    last = created[1].starts_at + timedelta(minutes=61)
    await db.run_turn(COACH, lambda t: record_outcome(t, created[1].id, False, last))
    told = str((await outbox(db, COACH))[-1]["text"])
    assert "held: 1 · not held: 1 · left: 0" in told
    assert "That was the last of the sessions you agreed on" in told
    async with db.sessionmaker() as s:
        [row] = (await s.execute(select(PlannedCheckin).where(
            PlannedCheckin.kind == "engagement_close"))).scalars()
        assert (row.user_id, row.ref) == (CLIENT, str(COACH))


@pytest.mark.parametrize("answers", [["yes"], ["no", "no"]])
async def test_a_client_who_stays_stays_linked(db: Store, dialogues: DialogueSet,
                                               answers: list[str]) -> None:
    async with db.sessionmaker() as s:
        variables = await closing_variables(s, CLIENT, str(COACH))
    assert variables is not None

    async def run(t, action):  # type: ignore[no-untyped-def]
        return await converse(t, dialogues, action, NOW)

    await db.run_turn(CLIENT, lambda t: run(t, Start("engagement_close", variables)))
    await db.run_turn(CLIENT, lambda t: run(t, Turn(command="skip")))
    skipped = await db.run_turn(CLIENT, lambda t: run(t, Turn(command="skip")))
    assert skipped.replies[-1].text.endswith(STAY)
    for answer in answers:  # a yes, or a no not confirmed
        stayed = await db.run_turn(CLIENT, lambda t, a=answer: run(t, Turn(text=a)))
    assert "you keep sharing your progress" in stayed.replies[-1].text
    async with db.sessionmaker() as s:
        assert (await s.execute(select(CoachLink))).scalar_one().unlinked_at is None
    assert "chose to keep sharing their progress" in str((await outbox(db, COACH))[-1]["text"])


async def test_the_look_back_compares_one_goal_with_itself(
        db: Store, dialogues: DialogueSet) -> None:
    """The finding of r11 #5: goal 1 went from 3 to 8 and goal 2 was just set at 2; the look
    back shows 3 and 8 (goal 1's), names goal 2 without its number. With only the first goal,
    rated before the day was kept, it says "latest", never "today"."""
    async with db.sessionmaker() as s:
        variables = await closing_variables(s, CLIENT, str(COACH))
    assert variables is not None
    assert (variables["closing.first_goal"], variables["closing.baseline"],
            variables["closing.current"], variables["closing.current_on"],
            variables["closing.later_goal"]) == ("Speak up in meetings", 3, 8, "2026-02-28",
                                                 "Lead the team")

    async with db.sessionmaker() as s, s.begin():
        goals = list((await s.execute(select(Goal).order_by(Goal.id))).scalars())
        await s.delete(goals[1])
        goals[0].current_at = None
    async with db.sessionmaker() as s:
        variables = await closing_variables(s, CLIENT, str(COACH))
    assert variables is not None
    assert (variables["closing.current"], variables["closing.current_on"],
            variables["closing.later_goal"]) == (8, None, None)
    started = await db.run_turn(CLIENT, lambda t: converse(
        t, dialogues, Start("engagement_close", variables), NOW))
    said = [r.text for r in started.replies]
    assert said[1:4] == ["When you started, your goal was “\u2068Speak up in meetings\u2069”.",
                         "Back then, your rating of this goal was 3 out of 10.",
                         "Your latest rating of this goal: 8 out of 10."]
    assert not any("working on now" in text for text in said)


async def test_i_cant_make_it_asks_for_other_times_and_passes_them_on(
        db: Store, dialogues: DialogueSet) -> None:
    async with db.sessionmaker() as s, s.begin():
        [cs] = await schedule_sessions(s, COACH, NewSessions(
            client_id=CLIENT, first=datetime(2026, 3, 23, 18, 0), zone="Europe/Rome",
            minutes=60, mode=SessionMode.PHONE, place=None), NOW)
    flows = SessionFlows(dialogues)
    asked = await db.run_turn(CLIENT, lambda t: flows.step(t, f"cant:{cs.id}"))
    assert asked is not None and "When could you make it instead" in asked.replies[0].text
    assert "Cannot make it to this session" in str((await outbox(db, COACH))[-1]["text"])

    async def answer(t):  # type: ignore[no-untyped-def]
        return await converse(t, dialogues, Turn(text="Tuesday or Thursday after 6 pm"), NOW)

    await db.run_turn(CLIENT, answer)
    proposal = (await outbox(db, COACH))[-1]
    assert "\u2068Tuesday or Thursday after 6 pm\u2069" in str(proposal["text"])
    assert [b["data"] for b in proposal["buttons"]] == [  # type: ignore[index]
        f"session:move:{cs.id}", f"session:cancel:{cs.id}"]
    async with db.sessionmaker() as s:
        assert (await s.get(CoachingSession, cs.id)) is not None


async def test_the_scheduler_starts_the_look_back(db: Store, dialogues: DialogueSet) -> None:
    from bot.coaching.engagements import plan_closing
    from bot.coaching.sessions import profile_of
    from bot.schedule.starting import claim_and_start

    async with db.sessionmaker() as s, s.begin():
        client = await s.get(User, CLIENT)
        assert client is not None
        await plan_closing(s, COACH, CLIENT, profile_of(client), NOW)  # 21:00 in Tokyo
    counts = await claim_and_start(db, dialogues, NOW, worker_id="w")
    assert counts["started"] == 1
    said = [str(p.get("text")) for p in await outbox(db, CLIENT)]
    assert "all the sessions you agreed on with \u2068Marta\u2069" in said[0]
    assert said[-1].startswith("Looking at this, what do you take with you")
