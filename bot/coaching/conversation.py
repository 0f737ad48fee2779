"""One incoming message, end to end inside one store transaction: run the engine, keep every
answer, apply what the answers mean (profile, goals), and store the new state.

Both front ends (Telegram and the terminal) go through here, so they behave the same.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.coaching import (
    coach_dialogues,
    engagements,
    managing,
    measures,
    messages,
    notes,
    noticing,
    programmes,
    session_notes,
)
from bot.coaching.actions import COMMITMENT_VARIABLES, commitment_variables, record_commitments
from bot.coaching.assignments import exercise_ids
from bot.coaching.checkins import checkin_dates, user_zone
from bot.coaching.contracts import (
    ADDRESS,
    CHECKIN_DAYS,
    CHECKIN_WEEKDAYS,
    CUSTOM_EXERCISE,
    ENGAGEMENT_CLOSE,
    EXERCISE_STATUS,
    GOAL_HOLD,
    GOAL_SETTING,
    GOAL_VARIABLES,
    NEW_EXERCISE,
    NEW_MEASURE,
    REVIEW_DUE_CHOICE,
    REVIEW_HOLD,
    SESSION_CANT,
    SESSION_NOTE,
    STREAK_VARIABLES,
    WEEKLY_REVIEW,
)
from bot.coaching.events import event_for_status, notify_coaches
from bot.coaching.group_sessions import apply_new_group_sessions
from bot.coaching.groups import apply_group_dialogues
from bot.coaching.later import plan_later
from bot.coaching.link_end import apply_closing
from bot.coaching.links import shares_briefs
from bot.coaching.markers import marker_of
from bot.coaching.safety import apply_care_answer, pause_after_crisis, record_signal
from bot.coaching.sessions import apply_another_time, apply_new_sessions
from bot.coaching.streaks import streak
from bot.config import DEFAULT_MIN_AGE
from bot.dialogue.expr import Value
from bot.dialogue.model import DialogueSet
from bot.engine import Context, ConversationState, Outcome, Reply, Turn, handle, resume, start
from bot.engine.answers import weekdays_of, weekdays_value
from bot.engine.runner import crisis_reply
from bot.i18n import normalize_locale, translator_for, working_days
from bot.schedule.planning import days_mask, every_day, mask_days
from bot.store import Exercise, Goal, TurnUser, UserView
from bot.store import Turn as StoreTurn
from bot.store.kinds import AddressForm, CoachEventKind, GoalStatus

#: What the preparation for a session reads: the notes kept for it, the active goal's
#: title (absent without one, where ``goal.title`` may be a dropped goal's), and whether
#: their coach will see the answers.
PREP_VARIABLES = session_notes.NOTES_VARIABLES | {"goal.active", "prep.briefed"}
#: Variables the platform computes from the record (a query each), by group.
PROVIDED_GROUPS = (STREAK_VARIABLES, COMMITMENT_VARIABLES, PREP_VARIABLES, GOAL_VARIABLES)

#: Dialogues whose answers are input for the platform (a message to the other person, a
#: coach's note, a schedule), with the prefix of their variables: they are carried where they
#: belong, never kept as the user's answers, and taken out of the conversation once it has
#: left the dialogue.
CARRIED = {messages.MESSAGE_CLIENT: "message.", messages.REPLY_TO_COACH: "reply.",
           notes.COACH_NOTE: "note.", managing.EXERCISE_SCHEDULE: "schedule.",
           SESSION_NOTE: session_notes.PREFIX, ENGAGEMENT_CLOSE: engagements.PREFIX,
           SESSION_CANT: "cant.", NEW_MEASURE: "measure."}


@dataclass(frozen=True)
class Start:
    dialogue_id: str
    # Values the platform hands to the dialogue (a coach's own exercise, say), saved first.
    variables: Mapping[str, Value] = field(default_factory=dict)
    # Where it starts, when it comes back later on its own; None: at its start.
    step: str | None = None


@dataclass(frozen=True)
class Resume:
    pass


Action = Turn | Start | Resume


async def context_for(session: AsyncSession | None, user: UserView, now: datetime, *,
                      min_age: int = DEFAULT_MIN_AGE,
                      groups: frozenset[frozenset[str]] = frozenset(PROVIDED_GROUPS)) -> Context:
    """What the engine knows of the user now; given a session, what the record says too
    (their streak, their commitments: the ``groups`` asked for, a query each)."""
    zone = user_zone(user)
    local = now.astimezone(zone)
    today = local.date()
    translator = translator_for(user.locale, user.address)
    country = managing.client_country(user)
    provided: dict[str, Value] = {"min_age": min_age,
                                  "checkin.working_days": weekdays_value(working_days(country))}
    if not every_day(user.checkin_days):
        provided["checkin.days"] = weekdays_value(mask_days(user.checkin_days))
    if session is not None and STREAK_VARIABLES in groups:
        current, best = streak(await checkin_dates(session, user, zone), today,
                               user.checkin_days)
        provided.update({"streak.days": current, "streak.best": best})
    if session is not None and COMMITMENT_VARIABLES in groups:
        provided.update(await commitment_variables(session, user.id, today, zone, translator))
    if session is not None and PREP_VARIABLES in groups:
        provided.update(await session_notes.notes_variables(session, user.id, now, translator))
        goal = await _active_goal(session, user)
        if goal is not None:
            provided["goal.active"] = goal.title
        provided["prep.briefed"] = await shares_briefs(session, user.id)
    if session is not None and GOAL_VARIABLES in groups:
        goal = await _active_goal(session, user)
        provided["goal.date_passed"] = goal is not None and goal.due_on is not None \
            and goal.due_on <= today
        provided["goal.holding"] = goal is not None and goal.holding
    return Context(
        translator=translator,
        today=today,
        clock=local.time().replace(second=0, microsecond=0),
        name=user.first_name or "",
        country=country,
        provided=provided,
        consented=user.consent_at is not None or user.is_coach,
    )


def provided_read(dialogues: DialogueSet, state: ConversationState,
                  action: Action) -> frozenset[frozenset[str]]:
    """The groups of provided variables the dialogues this message may run read."""
    involved = {frame.dialogue for frame in state.stack}
    if isinstance(action, Start):
        involved.add(action.dialogue_id)
    reads = dialogues.reads(involved)
    return frozenset(group for group in PROVIDED_GROUPS if not group.isdisjoint(reads))


def declined_consent(outcome: Outcome) -> bool:
    """The client said no to keeping their answers, or is younger than the bot is for:
    everything about them must go."""
    return any(a.variable in ("profile.consent", "profile.adult") and a.value is False
               for a in outcome.saved)


def custom_exercise_start(exercise: Exercise) -> Start:
    """A coach's own exercise runs in one dialogue, filled with its title and instructions."""
    return Start(CUSTOM_EXERCISE, {"custom.title": exercise.title,
                                   "custom.instructions": exercise.instructions})


def run_engine(dialogues: DialogueSet, state: ConversationState, action: Action,
               ctx: Context) -> Outcome:
    if isinstance(action, Start):
        given = replace(state, variables={**state.variables, **action.variables})
        return start(dialogues, given, action.dialogue_id, ctx, at=action.step)
    if isinstance(action, Resume):
        return resume(dialogues, state, ctx)
    return handle(dialogues, state, action, ctx)


def apply_profile(user: TurnUser, variables: dict[str, Value], saved: set[str],
                  now: datetime) -> None:
    """Answers that set up the client's profile take effect at once."""
    if "profile.consent" in saved:
        user.consent_at = now if variables["profile.consent"] is True else None
    locale = variables.get("profile.locale")
    if "profile.locale" in saved and isinstance(locale, str):
        user.locale = normalize_locale(locale, default=user.locale)
    address = variables.get(ADDRESS)
    if ADDRESS in saved and address in set(AddressForm) and user.consent_at is not None:
        user.address = str(address)  # nothing of theirs is kept before their consent
    zone = variables.get("profile.time_zone")
    if "profile.time_zone" in saved and isinstance(zone, str):
        user.time_zone = zone
    hour = _minutes(variables.get("profile.checkin_hour"))
    if "profile.checkin_hour" in saved and hour is not None:
        user.checkin_hour, user.checkin_minute = divmod(hour, 60)
    apply_checkin_days(user, variables, saved)
    if "profile.quiet_end" in saved:
        user.quiet_start = _minutes(variables.get("profile.quiet_start"))
        user.quiet_end = _minutes(variables.get("profile.quiet_end"))
    until = _date(variables.get("profile.pause_until"))
    if "profile.pause_until" in saved and until is not None:  # from that local midnight on
        user.paused_until = datetime.combine(until, time(), user_zone(user)).astimezone(UTC)
    days = _int(variables.get("profile.pause_days"))
    if "profile.pause_days" in saved and days:
        user.paused_until = now + timedelta(days=days)
    if "profile.reminders" in saved and variables.get("profile.reminders") == "resume":
        user.paused_until = None


def apply_checkin_days(user: TurnUser, variables: Mapping[str, Value], saved: set[str]) -> None:
    """The days of the daily check-in: every day, the client's working days, or the days
    they named (applied when they name them)."""
    days: Iterable[int] | None = None
    choice = variables.get(CHECKIN_DAYS)
    if CHECKIN_DAYS in saved and choice == "every":
        days = range(7)
    elif CHECKIN_DAYS in saved and choice == "working":
        days = working_days(managing.client_country(user))
    if CHECKIN_WEEKDAYS in saved:
        days = weekdays_of(variables.get(CHECKIN_WEEKDAYS))
    if days:
        mask = days_mask(days)
        user.checkin_days = None if every_day(mask) else mask


def _minutes(value: Value) -> int | None:
    """Minutes after midnight of a saved time ("HH:MM")."""
    if not isinstance(value, str) or ":" not in value:
        return None
    hours, minutes = value.split(":", 1)
    return int(hours) * 60 + int(minutes)


def _int(value: Value) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _date(value: Value) -> date | None:
    try:
        return date.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


async def _active_goal(session: AsyncSession, user: UserView) -> Goal | None:
    return (await session.execute(
        select(Goal).where(Goal.user_id == user.id, Goal.status == GoalStatus.ACTIVE)
        .order_by(Goal.created_at.desc(), Goal.id.desc()).limit(1)
    )).scalar_one_or_none()


async def apply_goals(t: StoreTurn, outcome: Outcome, now: datetime) -> None:
    """Reviews and completions update the goal in progress, in the order they were answered;
    a finished goal setting then creates the new goal (a completion may lead straight to it).
    Opens the turn's ORM session only when there is something to do (opening one costs)."""
    for answer in outcome.saved:
        review = answer.dialogue == WEEKLY_REVIEW and answer.variable in (
            "review.current", "goal.target", "goal.title", "goal.due", REVIEW_HOLD)
        completed = answer.variable == "goal.completed" and answer.value is True
        let_go = (answer.dialogue == WEEKLY_REVIEW and answer.variable == REVIEW_DUE_CHOICE
                  and answer.value == "let_go")
        if not (review or completed or let_go):
            continue
        goal = await _active_goal(t.session, t.user)
        if goal is None:
            continue
        if completed:
            goal.status, goal.completed_at = GoalStatus.DONE, now
            await noticing.goal_completed(t.session, t.user_id, goal.created_at, now)
        elif let_go:
            goal.status = GoalStatus.DROPPED
        elif answer.variable == "goal.title" and isinstance(answer.value, str):
            goal.title = answer.value
        elif answer.variable == "goal.due":  # a new date, or none (skipped)
            goal.due_on = _date(answer.value)
        elif answer.variable == REVIEW_HOLD:  # asked right after a target at or below today
            goal.holding = answer.value is True
        else:
            number = _int(answer.value)
            if answer.variable == "review.current" and number is not None:
                goal.current, goal.current_at = number, now
            elif number is not None:  # a new target ends a hold, unless chosen again
                goal.target, goal.holding = number, False
        await t.session.flush()
    variables = outcome.state.variables
    if GOAL_SETTING in outcome.finished and isinstance(variables.get("goal.title"), str):
        why = variables.get("goal.why")
        t.session.add(Goal(
            user_id=t.user_id, title=str(variables["goal.title"]),
            why=why if isinstance(why, str) else None,
            baseline=_int(variables.get("goal.baseline")),
            current=_int(variables.get("goal.baseline")), current_at=now,
            target=_int(variables.get("goal.target")), due_on=_date(variables.get("goal.due")),
            holding=variables.get(GOAL_HOLD) is True, created_at=now,
        ))
        await t.session.flush()


async def apply_new_exercise(t: StoreTurn, outcome: Outcome,
                             dialogues: DialogueSet) -> list[Reply]:
    """A coach who wrote an exercise and chose to save it gets it in their library; with
    questions of their own, as a dialogue in their language (checked like one they send).
    Returns what to say instead of the dialogue's "Saved." when it could not be kept."""
    variables = outcome.state.variables
    if NEW_EXERCISE not in outcome.finished or variables.get("custom.save") is not True \
            or not t.user.is_coach:
        return []
    questions = coach_dialogues.own_questions(variables)
    if questions:
        tr = translator_for(t.user.locale)
        source = coach_dialogues.own_exercise_source(
            str(variables.get("custom.title") or ""),
            str(variables.get("custom.instructions") or ""), questions, t.user.locale, tr)
        try:
            await coach_dialogues.upload(t.session, t.user_id, source, "exercise.yaml",
                                         dialogues, t.now)
        except coach_dialogues.LibraryFull:
            # Its id was made for it, so "send its new version with the same id" cannot apply.
            limit = coach_dialogues.MAX_PER_COACH
            return [Reply(tr.ngettext(
                "Sorry: I could not save that exercise, so /assign does not offer it. You "
                "already have {count} exercise or dialogue of your own, the most I can keep. An "
                "exercise without questions of your own does not count towards this limit: to keep "
                "this one, write it again with /newexercise, this time without your questions.",
                "Sorry: I could not save that exercise, so /assign does not offer it. You "
                "already have {count} exercises and dialogues of your own, the most I can keep. An "
                "exercise without questions of your own does not count towards this limit: to keep "
                "this one, write it again with /newexercise, this time without your questions.",
                limit).format(count=tr.number(limit)))]
        except coach_dialogues.UploadRefused as refused:
            return [Reply(tr.gettext("Sorry: I could not save that exercise, so /assign does "
                                     "not offer it. The reason:")
                          + "\n" + "\n".join(refused.lines(tr)))]
        return []
    t.session.add(Exercise(coach_id=t.user_id, slug=f"custom_{secrets.token_hex(6)}",
                           title=str(variables.get("custom.title") or ""),
                           instructions=str(variables.get("custom.instructions") or ""),
                           questions=[]))
    await t.session.flush()
    return []


#: Where a coach writes to or about a client: their words are not a client's own, so the
#: crisis check of a client's messages does not apply to them (the detector took "Thinking of
#: you" for a sign of crisis, which stopped the message and sent the coach help lines).
COACH_WRITING = frozenset({messages.MESSAGE_CLIENT, notes.COACH_NOTE,
                           managing.EXERCISE_SCHEDULE, NEW_MEASURE})


def forget_carried(outcome: Outcome) -> Outcome:
    """The outcome without the variables of the carried dialogues it is no longer in."""
    within = {frame.dialogue for frame in outcome.state.stack}
    prefixes = tuple(p for d, p in CARRIED.items() if d not in within)
    variables = outcome.state.variables
    if not any(name.startswith(prefixes) for name in variables):
        return outcome
    kept = {k: v for k, v in variables.items() if not k.startswith(prefixes)}
    return replace(outcome, state=replace(outcome.state, variables=kept))


def enqueue_replies(t: StoreTurn, outcome: Outcome) -> None:
    """Queue what the engine said for the user's chat, in order, in the same turn. Help in
    a crisis goes out ahead of anything still queued for the chat, which is held back."""
    for reply in outcome.replies:
        t.enqueue(t.user_id, reply.to_payload(), urgent=outcome.crisis)


async def converse(t: StoreTurn, dialogues: DialogueSet, action: Action,
                   now: datetime, *, min_age: int = DEFAULT_MIN_AGE) -> Outcome:
    """Run one message through the engine inside the store turn `t` (not committed here).
    Until the user agrees that their answers are kept, none is: only where they are in the
    conversation (the consent answer itself is the first one kept)."""
    user = t.user
    state = ConversationState.from_dict(t.state)
    running = [frame.dialogue for frame in state.stack]
    if isinstance(action, Start):
        running.append(action.dialogue_id)
    dialogues = await coach_dialogues.with_coach_dialogues(t, dialogues, running)
    if isinstance(action, Turn) and user.is_coach and state.stack \
            and state.stack[-1].dialogue in COACH_WRITING:
        action = replace(action, screened=False)
    groups = provided_read(dialogues, state, action)
    ctx = await context_for(t.session if groups else None, user, now, min_age=min_age,
                            groups=groups)
    outcome = run_engine(dialogues, state, action, ctx)
    saved = {a.variable for a in outcome.saved}
    before = (user.locale, user.address)
    apply_profile(user, dict(outcome.state.variables), saved, now)
    if (user.locale, user.address) != before:
        # The engine is pure: the same message again, now answered in the chosen language
        # (and the chosen form of address).
        ctx = await context_for(t.session if groups else None, user, now,
                                min_age=min_age, groups=groups)
        outcome = run_engine(dialogues, state, action, ctx)
    if user.consent_at is None and not user.is_coach:
        if outcome.crisis:  # no coach can be linked yet; the reply is the engine's
            await notify_coaches(t.session, user.id, CoachEventKind.CRISIS, now)
        t.set_state(outcome.state.to_dict())
        return outcome
    for answer in outcome.saved:
        carried = CARRIED.get(answer.dialogue)
        if carried is not None and answer.variable.startswith(carried):
            continue
        t.record_answer(answer.dialogue, answer.step, answer.variable, answer.value,
                        marker=marker_of(answer.variable))
        event = event_for_status(answer.value) if answer.variable == EXERCISE_STATUS else None
        if answer.variable == EXERCISE_STATUS:
            await programmes.step_done(t.session, user.id, answer.dialogue, answer.value,
                                       ctx.today, now)
        if event is not None:
            await notify_coaches(t.session, user.id, event, now)
            if await noticing.skipped_again(t.session, user.id, answer.dialogue,
                                            answer.value):
                await notify_coaches(t.session, user.id, CoachEventKind.SKIPPED_TWICE.value,
                                     now)
    if outcome.later is not None:
        await plan_later(t, outcome.later)
    record_signal(outcome.signal)
    if outcome.crisis:  # the coach hears that it happened, never what was written
        if await notify_coaches(t.session, user.id, CoachEventKind.CRISIS, now):
            outcome = replace(outcome, replies=(crisis_reply(ctx, coach_told=True),))
        await pause_after_crisis(t, now)
    await apply_care_answer(t, outcome, now)
    await apply_goals(t, outcome, now)
    if outcome.saved or outcome.finished:
        await record_commitments(t, outcome, ctx.today, now)
    not_kept = await apply_new_exercise(t, outcome, dialogues)
    if not_kept:  # its dialogue said "Saved."
        outcome = replace(outcome, replies=tuple(not_kept))
    await apply_group_dialogues(t, outcome)
    told = [*await messages.apply_messages(t, outcome, now),
            *await notes.apply_note(t, outcome, now),
            *(Reply(text) for text in await session_notes.apply_session_note(t, outcome, now)),
            *(Reply(text) for text in await apply_closing(t, outcome, now)),
            *(Reply(text) for text in await apply_another_time(t, outcome, now)),
            *await managing.apply_schedule(t, outcome, now, exercise_ids(dialogues)),
            *await measures.apply_measures(t, outcome, now),
            *await apply_new_sessions(t, outcome, now),
            *(Reply(text) for text in await apply_new_group_sessions(t, outcome, now))]
    outcome = forget_carried(replace(outcome, replies=(*outcome.replies, *told)))
    t.set_state(outcome.state.to_dict())
    return outcome
