"""Commitments as rows: what the client said they would do, by when, and what became of it.

The dialogues collect commitments (see ``COMMITMENT_QUESTIONS``); the platform keeps each as an
action and hands them back to the dialogues as provided variables (``commitment.last`` …),
to ``/actions``, to the weekly review and to the coach's report.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bot.dialogue.expr import Value
from bot.engine import Outcome
from bot.i18n import Translator
from bot.store import ActionSource, ActionStatus, CommitmentAction, Turn, rowcount


@dataclass(frozen=True)
class CommitmentQuestion:
    """A dialogue question whose answer is a commitment.

    ``due_variable`` names the answer holding its date (read when the dialogue ends, since
    the client may still change the step); without it the action is recorded as soon as it
    is answered, due ``days`` after that local day."""

    dialogue: str
    words: str
    source: ActionSource
    days: int = 0
    due_variable: str | None = None


COMMITMENT_QUESTIONS: tuple[CommitmentQuestion, ...] = (
    CommitmentQuestion("daily_checkin", "checkin.commitment", ActionSource.DAILY),
    CommitmentQuestion("weekly_review", "review.next_action", ActionSource.WEEKLY, days=7),
    CommitmentQuestion("goal_setting", "goal.first_step", ActionSource.FIRST_STEP,
                       due_variable="goal.first_step_date"),
    CommitmentQuestion("session_recap", "recap.commitment", ActionSource.SESSION,
                       due_variable="recap.by"),
)

#: The answer to "yesterday you said you would …" in the daily check-in.
COMMITMENT_STATUS = "commitment.status"
#: The answers that close it (the option keys are the statuses' values); "not_yet" leaves it
#: open, and "dropped" is the client letting it go: never asked about again.
_ANSWERED_STATUS = {status.value: status for status in
                    (ActionStatus.DONE, ActionStatus.PARTLY, ActionStatus.DROPPED)}
#: How far back the daily check-in looks for the last commitment it asks about.
LAST_LOOKBACK_DAYS = 7
#: The commitments the daily check-in asks about once their date has passed: the weekly
#: action has its own review a week later.
FOLLOWED_UP = (ActionSource.DAILY, ActionSource.FIRST_STEP, ActionSource.SESSION)
#: Variables the platform provides about commitments (see ``commitment_variables``).
COMMITMENT_VARIABLES = frozenset({
    "commitment.last", "commitment.last_days_ago", "actions.open", "actions.overdue",
    "actions.list",
})
LISTED = 10  # open actions shown in a dialogue or a report


def date_answer(value: Value) -> date | None:
    """A `date` answer ("YYYY-MM-DD") as a date; None when absent or not a date."""
    try:
        return date.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


def commitments_in(outcome: Outcome, today: date) -> list[tuple[str, ActionSource, date]]:
    """(words, source, due) of each commitment the turn collected (pure)."""
    variables = outcome.state.variables
    found: list[tuple[str, ActionSource, date]] = []
    for question in COMMITMENT_QUESTIONS:
        if question.due_variable is None:
            for answer in outcome.saved:
                if (answer.dialogue, answer.variable) == (question.dialogue, question.words) \
                        and isinstance(answer.value, str) and answer.value.strip():
                    found.append((answer.value, question.source,
                                  today + timedelta(days=question.days)))
        elif question.dialogue in outcome.finished:
            words = variables.get(question.words)
            due = date_answer(variables.get(question.due_variable))
            if isinstance(words, str) and words.strip():
                found.append((words, question.source, due or today))
    return found


async def record_commitments(t: Turn, outcome: Outcome, today: date,
                             now: datetime) -> None:
    """Keep the commitments of this turn as actions, and yesterday's as the client rated it
    (the turn's ORM session is opened only when there is one of either)."""
    found = commitments_in(outcome, today)
    rated = [a.value for a in outcome.saved if a.variable == COMMITMENT_STATUS]
    status = _ANSWERED_STATUS.get(rated[-1]) \
        if rated and isinstance(rated[-1], str) else None
    if not found and status is None:
        return
    for words, source, due in found:
        t.session.add(CommitmentAction(user_id=t.user_id, words=words, source=source,
                                       due_on=due, created_at=now))
    if status is not None:
        last = await last_commitment(t.session, t.user_id, today)
        if last is not None:
            await set_status(t.session, t.user_id, last.id, status, now)
    await t.session.flush()


async def last_commitment(session: AsyncSession, user_id: int,
                          today: date) -> CommitmentAction | None:
    """The latest open commitment followed up in the check-in whose date has passed (within
    a week)."""
    return (await session.execute(
        select(CommitmentAction)
        .where(CommitmentAction.user_id == user_id,
               CommitmentAction.source.in_(FOLLOWED_UP),
               CommitmentAction.status == ActionStatus.OPEN,
               CommitmentAction.due_on < today,
               CommitmentAction.due_on >= today - timedelta(days=LAST_LOOKBACK_DAYS))
        .order_by(CommitmentAction.due_on.desc(), CommitmentAction.id.desc()).limit(1)
    )).scalar_one_or_none()


async def open_actions(session: AsyncSession, user_id: int) -> list[CommitmentAction]:
    """The client's open actions, the most pressing (earliest due) first."""
    return list((await session.execute(
        select(CommitmentAction)
        .where(CommitmentAction.user_id == user_id,
               CommitmentAction.status == ActionStatus.OPEN)
        .order_by(CommitmentAction.due_on, CommitmentAction.id)
    )).scalars())


async def set_status(session: AsyncSession, user_id: int, action_id: int,
                     status: ActionStatus, now: datetime) -> bool:
    """Mark one of the client's own open actions; False if it is not theirs or not open."""
    result = await session.execute(
        update(CommitmentAction)
        .where(CommitmentAction.id == action_id, CommitmentAction.user_id == user_id,
               CommitmentAction.status == ActionStatus.OPEN)
        .values(status=status, closed_at=now)
        .execution_options(synchronize_session=False))
    return bool(rowcount(result))


def action_line(action: CommitmentAction, today: date, tr: Translator) -> str:
    """One action as the client or their coach reads it: their words, and by when."""
    words = tr.words(action.words)
    due = tr.isolate(tr.date(action.due_on, "long"))
    if action.status == ActionStatus.PARTLY:
        return tr.gettext("• {words} (by {date}; partly done)").format(words=words, date=due)
    if action.status == ActionStatus.OPEN and action.due_on < today:
        return tr.gettext("• {words} (by {date}; that date has passed)").format(
            words=words, date=due)
    return tr.gettext("• {words} (by {date})").format(words=words, date=due)


def action_lines(actions: Iterable[CommitmentAction], today: date, tr: Translator) -> str:
    return "\n".join(action_line(a, today, tr) for a in actions)


async def commitment_variables(session: AsyncSession, user_id: int, today: date,
                               zone: ZoneInfo, tr: Translator) -> Mapping[str, Value]:
    """What the dialogues read of the client's commitments (absent when there is none)."""
    provided: dict[str, Value] = {}
    last = await last_commitment(session, user_id, today)
    if last is not None:
        # "… days ago you said": a first step or a session's commitment was said before
        # its date (a daily one on its date).
        said_on = min(last.due_on, last.created_at.astimezone(zone).date())
        provided["commitment.last"] = last.words
        provided["commitment.last_days_ago"] = (today - said_on).days
    pending = await open_actions(session, user_id)
    provided["actions.open"] = len(pending)
    provided["actions.overdue"] = sum(a.due_on < today for a in pending)
    if pending:
        provided["actions.list"] = action_lines(pending[:LISTED], today, tr)
    return provided


#: Button data of /actions: ``action:<done|drop>:<action id>``.
BUTTON = "action"
ACTION_MARKS = {"done": ActionStatus.DONE, "drop": ActionStatus.DROPPED}


async def actions_message(session: AsyncSession, user_id: int, today: date,
                          tr: Translator) -> dict[str, object]:
    """/actions: the client's open actions, numbered, with a done and a drop button each."""
    pending = (await open_actions(session, user_id))[:LISTED]
    if not pending:
        return {"text": tr.gettext("You have no open actions. The ones you commit to in your "
                                   "check-ins, reviews and sessions will appear here.")}
    lines = [tr.gettext("Your open actions:")]
    buttons = []
    for number, action in enumerate(pending, start=1):
        label = tr.number(number)
        lines.append(f"{label}. {action_line(action, today, tr).removeprefix('• ')}")
        buttons += [
            {"label": tr.gettext("{number}: done").format(number=label),
             "data": f"{BUTTON}:done:{action.id}"},
            {"label": tr.gettext("{number}: let go").format(number=label),
             "data": f"{BUTTON}:drop:{action.id}"}]
    return {"text": "\n".join(lines), "buttons": buttons}


async def mark_from_button(session: AsyncSession, user_id: int, rest: str, today: date,
                           now: datetime, tr: Translator) -> list[dict[str, object]]:
    """A /actions button (``done:<id>`` or ``drop:<id>``): the answer, then the list again."""
    what, _, number = rest.partition(":")
    status = ACTION_MARKS.get(what)
    marked = status is not None and number.isascii() and number.isdigit() \
        and await set_status(session, user_id, int(number), status, now)
    if not marked:
        answer = tr.gettext("That action is not open any more.")
    elif status is ActionStatus.DONE:
        answer = tr.gettext("Marked as done.")
    else:
        answer = tr.gettext("You let it go: it is no longer on your list.")
    return [{"text": answer}, await actions_message(session, user_id, today, tr)]


@dataclass(frozen=True)
class ActionsSummary:
    """A client's actions as their coach's report and the session brief list them."""

    open: tuple[CommitmentAction, ...]
    overdue: tuple[CommitmentAction, ...]
    done: tuple[CommitmentAction, ...]
    #: Dropped by the client: their choice, listed apart from the overdue ones.
    let_go: tuple[CommitmentAction, ...] = ()


async def actions_summary(session: AsyncSession, client_id: int, since: datetime,
                          today: date) -> ActionsSummary:
    """Open (not yet due), overdue, done (or partly done) and let-go actions committed since
    ``since`` (the coach sees only what was said since they were linked)."""
    rows = list((await session.execute(
        select(CommitmentAction)
        .where(CommitmentAction.user_id == client_id, CommitmentAction.created_at >= since)
        .order_by(CommitmentAction.due_on, CommitmentAction.id)
    )).scalars())
    pending = [a for a in rows if a.status == ActionStatus.OPEN]
    return ActionsSummary(
        open=tuple(a for a in pending if a.due_on >= today),
        overdue=tuple(a for a in pending if a.due_on < today),
        done=tuple(a for a in rows if a.status in (ActionStatus.DONE, ActionStatus.PARTLY)),
        let_go=tuple(a for a in rows if a.status == ActionStatus.DROPPED),
    )


def summary_lines(summary: ActionsSummary, today: date, tr: Translator) -> list[str]:
    """The summary as report lines, each part only when it has something."""
    lines: list[str] = []
    for title, part in ((tr.gettext("Open actions:"), summary.open),
                        (tr.gettext("Actions past their date:"), summary.overdue),
                        (tr.gettext("Actions done:"), summary.done[-LISTED:]),
                        (tr.gettext("Actions they chose to let go:"),
                         summary.let_go[-LISTED:])):
        if part:
            lines += [title, action_lines(part[:LISTED], today, tr)]
    if not lines:
        lines.append(tr.gettext("No actions committed yet."))
    return lines
