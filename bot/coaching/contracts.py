"""The dialogues and variables the platform itself relies on, declared once.

Coaches edit ``dialogues/`` freely, but the bot's commands and scheduler start some dialogues
by id and read some of the answers they save (docs/dialogue-language.md, "What the platform
reads"). :func:`check_contracts` holds a dialogue set to these, so that ``coachbot validate``
and the bot's start refuse a set without them rather than fail on a client's ``/start``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from bot.dialogue import DialogueError, DialogueSet
from bot.dialogue.messages import verbatim
from bot.dialogue.model import AnswerType, Position
from bot.i18n.languages import SUPPORTED_LOCALES

ONBOARDING = "onboarding"
GOAL_SETTING = "goal_setting"
DAILY_CHECKIN = "daily_checkin"
WEEKLY_REVIEW = "weekly_review"
GOAL_COMPLETION = "goal_completion"
SET_TIMEZONE = "set_timezone"
REMINDERS = "reminders"
NEW_EXERCISE = "new_exercise"  # a coach writes an exercise of their own
CUSTOM_EXERCISE = "custom_exercise"  # the dialogue that runs a coach's own exercise
CARE_CHECKIN = "care_checkin"  # the dialogue of the day after a crisis
SESSION_PREP = "session_prep"  # the day before a coaching session
SESSION_RECAP = "session_recap"  # when a coaching session is over
SESSION_PLACE = "session_place"  # the last step of a coach's /schedule
SESSION_NOTE = "session_note"  # free text (or a file) when no question is open: keep it?
ENGAGEMENT_CLOSE = "engagement_close"  # the agreed sessions are all held: a look back
SESSION_CANT = "session_cant"  # "I cannot make it": when would suit the client instead
GROUP_GOAL = "group_goal"  # the coach writes the team's goal
GROUP_CONTRIBUTION = "group_contribution"  # a member's own part in it, in private
GROUP_ANSWER = "group_answer"  # a member's answer to the week's question, in private
GROUP_RENAME = "group_rename"  # the coach gives a group another name
NEW_MEASURE = "new_measure"  # a coach's /measure: a scale or number to ask a client for
MEASURE_CHECKIN = "measure_checkin"  # the client rates one of their coach's measures, 1-10
MEASURE_COUNT = "measure_count"  # the client gives a number for one of their coach's measures

CONSENT = "profile.consent"
ADULT = "profile.adult"
LOCALE = "profile.locale"
ADDRESS = "profile.address"  # an AddressForm: the grammatical gender the client chose
TIME_ZONE = "profile.time_zone"
CHECKIN_HOUR = "profile.checkin_hour"
#: every / working / choose (then CHECKIN_WEEKDAYS names the days)
CHECKIN_DAYS = "profile.checkin_days"
CHECKIN_WEEKDAYS = "profile.checkin_weekdays"
CHECKIN_MARKER = "checkin.mood"  # answered once per check-in, so it marks the day
GOAL_BASELINE = "goal.baseline"  # the goal's place on its 1-10 scale when it is set
REVIEW_CURRENT = "review.current"  # and at each weekly review
GOAL_HOLD = "goal.hold"  # goal setting: a target at or below the start is to hold steady
REVIEW_HOLD = "review.hold"  # the same, for a new target at a weekly review
#: When the goal's date has come: reached / new_date / change / let_go (the goal is dropped)
REVIEW_DUE_CHOICE = "review.due_choice"
EXERCISE_STATUS = "exercise.status"
CARE_ANSWER = "care.today"  # how the client is, the day(s) after a crisis: a CareAnswer
STREAK_VARIABLES = frozenset({"streak.days", "streak.best"})
#: Of the active goal (false without one): ``goal.date_passed`` once the client's local today
#: is on or after its date; ``goal.holding`` while the client holds it at its target.
GOAL_VARIABLES = frozenset({"goal.date_passed", "goal.holding"})


@dataclass(frozen=True)
class Contract:
    """A dialogue the platform starts (`why`), and the answers it reads from it, by type."""

    dialogue: str
    why: str
    saves: Mapping[str, AnswerType] = field(default_factory=dict)


CONTRACTS: tuple[Contract, ...] = (
    Contract(ONBOARDING, "/start and the consent question start it", {
        CONSENT: "yes_no", ADULT: "yes_no", LOCALE: "choice", ADDRESS: "choice",
        TIME_ZONE: "timezone", CHECKIN_HOUR: "time", CHECKIN_DAYS: "choice",
        CHECKIN_WEEKDAYS: "weekdays"}),
    Contract(GOAL_SETTING, "/goal starts it, and a new goal is made of its answers", {
        "goal.title": "text", "goal.why": "text", GOAL_BASELINE: "scale",
        "goal.target": "scale", "goal.due": "date", GOAL_HOLD: "yes_no", "goal.first_step": "text",
        "goal.first_step_date": "date"}),
    Contract(DAILY_CHECKIN, "/checkin and the daily check-ins start it",
             {CHECKIN_MARKER: "scale", "checkin.commitment": "text",
              "commitment.status": "choice"}),
    Contract(WEEKLY_REVIEW, "the scheduler starts it every week",
             {REVIEW_CURRENT: "scale", "review.next_action": "text", REVIEW_HOLD: "yes_no",
              REVIEW_DUE_CHOICE: "choice"}),
    Contract(GOAL_COMPLETION, "the weekly review calls it when the client's rating reaches "
             "the target, or when the goal's date has come and the client feels it is "
             "reached; a yes marks the goal reached",
             {"goal.completed": "yes_no"}),
    Contract(SET_TIMEZONE, "/timezone starts it", {TIME_ZONE: "timezone"}),
    Contract(REMINDERS, "/reminders starts it", {
        CHECKIN_HOUR: "time", CHECKIN_DAYS: "choice", CHECKIN_WEEKDAYS: "weekdays",
        "profile.quiet_start": "time", "profile.quiet_end": "time",
        "profile.pause_days": "number", "profile.reminders": "choice"}),
    Contract(NEW_EXERCISE, "a coach's /newexercise starts it", {
        "custom.title": "text", "custom.instructions": "text", "custom.save": "yes_no",
        **{f"custom.q{n}": "text" for n in (1, 2, 3)},
        **{f"custom.q{n}_type": "choice" for n in (1, 2, 3)},
        **{f"custom.q{n}_options": "text" for n in (1, 2, 3)}}),
    Contract(CUSTOM_EXERCISE, "it runs every coach's own exercise", {EXERCISE_STATUS: "choice"}),
    Contract(CARE_CHECKIN, "the scheduler starts it the day after a crisis, and an answer "
             "still in need extends the pause", {CARE_ANSWER: "choice"}),
    Contract(SESSION_PREP, "the scheduler starts it the day before a session",
             {"prep.since": "text", "prep.want": "text", "prep.scale": "scale",
              "prep.focus": "text"}),
    Contract(SESSION_RECAP, "the scheduler starts it when a session is over, and an action "
             "is made of its commitment", {"recap.commitment": "text", "recap.by": "date"}),
    Contract(SESSION_PLACE, "a coach's /schedule ends in it, and the sessions are made when "
             "it ends", {"session.place": "text"}),
    Contract(SESSION_NOTE, "free text or a file sent when no question is open starts it, and "
             "a note is made of it when it ends", {"jot.choice": "choice", "jot.share": "choice"}),
    Contract(SESSION_CANT, "\"I cannot make it\" on a reminder starts it, and its answer goes "
             "to the coach", {"cant.when": "text"}),
    Contract(ENGAGEMENT_CLOSE, "the scheduler starts it when the last agreed session is "
             "held, and a no, confirmed, ends the link",
             {"closing.stay": "yes_no", "closing.end": "yes_no"}),
    Contract(GROUP_GOAL, "a coach's /groups starts it for a team; its goal is stored", {
        "group.goal": "text", "group.goal_save": "yes_no"}),
    Contract(GROUP_CONTRIBUTION, "a team's shared goal starts it for each member", {
        "contribution.what": "text", "contribution.commitment": "text", "contribution.by": "date",
        "contribution.share": "yes_no"}),
    Contract(GROUP_ANSWER, "the week's question in a group's chat starts it", {
        "group.answer": "text", "group.answer_share": "yes_no"}),
    Contract(GROUP_RENAME, "a coach's /groups starts it; the group's new name is stored", {
        "group.new_name": "text", "group.new_name_save": "yes_no"}),
    Contract(NEW_MEASURE, "a coach's /measure starts it, and a measure is made of its "
             "answers", {
                 "measure.name": "text", "measure.kind": "choice",
                 "measure.target_scale": "scale", "measure.target_number": "number",
                 "measure.how_often": "choice", "measure.days": "text",
                 "measure.every": "number", "measure.time": "time", "measure.weeks": "number",
                 "measure.summary_weeks": "number"}),
    Contract(MEASURE_CHECKIN, "the scheduler starts it for a coach's 1-10 measure, and keeps "
             "its answer as the measure's value", {"tracked.scale": "scale"}),
    Contract(MEASURE_COUNT, "the scheduler starts it for a coach's measure that is a number, "
             "and keeps its answer as the measure's value", {"tracked.number": "number"}),
    Contract("wheel_of_life", "its scores are kept to compare wheels later", {
        "wheel.health": "scale", "wheel.work": "scale", "wheel.money": "scale",
        "wheel.people": "scale", "wheel.love": "scale", "wheel.growth": "scale",
        "wheel.fun": "scale", "wheel.home": "scale"}),
    Contract("values_ranking", "its score is kept to compare later",
             {"exercise.value_fit": "scale"}),
)


def check_contracts(dialogues: DialogueSet, where: Path) -> list[DialogueError]:
    """Every way `dialogues` (loaded from `where`) breaks a contract: a dialogue missing, an
    answer the platform reads not saved or saved as another type, and the onboarding's
    language question not offering exactly the languages the bot speaks."""
    errors = []
    for contract in CONTRACTS:
        dialogue = dialogues.dialogues.get(contract.dialogue)
        if dialogue is None:
            errors.append(DialogueError(Position(str(where), 1, 1), verbatim(
                f"the bot needs the dialogue '{contract.dialogue}' ({contract.why}), and "
                "there is none here")))
            continue
        saved: dict[str, set[str]] = {}
        for step in dialogue.steps.values():
            if step.ask.save is not None:
                saved.setdefault(step.ask.save, set()).add(step.ask.type)
        for variable, answer_type in contract.saves.items():
            types = saved.get(variable, set())
            if types != {answer_type}:
                found = (" (it saves it as " + ", ".join(sorted(types)) + ")") if types else ""
                errors.append(DialogueError(Position(dialogue.path, 1, 1), verbatim(
                    f"the bot reads '{variable}' from '{dialogue.id}' as a {answer_type} "
                    f"answer: a step must save it with type {answer_type}{found}")))
    onboarding = dialogues.dialogues.get(ONBOARDING)
    for step in onboarding.steps.values() if onboarding else ():
        if step.ask.save == LOCALE and step.ask.type == "choice" and \
                [option.key for option in step.ask.options] != list(SUPPORTED_LOCALES):
            errors.append(DialogueError(step.position, verbatim(
                f"the options of '{LOCALE}' must be the languages the bot speaks, in this "
                "order: " + ", ".join(SUPPORTED_LOCALES) + " (bot/i18n/languages.py)")))
    return sorted(errors)
