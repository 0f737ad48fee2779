"""Every shipped dialogue (exercises included), played through every branch with the pure engine.

A generic explorer starts each dialogue, and from every state it reaches tries representative
answers for the question asked: every option of a choice (by its button data), yes and no, the
lowest, middle and highest point of a scale, a sample text, 'tomorrow' for a date, '08:00' for a
time, 'Rome' for a time zone, two day names for weekdays, and /skip where a question is
optional. Each (dialogue stack, variables that conditions ahead read) state is explored once,
which keeps the search small.

The explorer traces which branch of each `next` the engine must take, checks that the engine
ends up exactly there, and records coverage: every step reached, every branch taken, every
dialogue finished, and no reply empty or with a placeholder left in it.
"""

from __future__ import annotations

import functools
import itertools
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import date, time
from pathlib import Path

import pytest

from bot.dialogue import DialogueSet, load_dialogues
from bot.dialogue.expr import Value, variables_read
from bot.dialogue.model import END, STARTED_WITH, Ask, Dialogue, Step
from bot.engine import Context, ConversationState, Outcome, Turn, handle, runner, start
from bot.engine.answers import Invalid, parse_answer
from bot.engine.conditions import evaluate
from bot.engine.runner import SAFETY_NO, SAFETY_YES
from bot.i18n import SUPPORTED_LOCALES, translator_for

REPO_DIALOGUES = Path(__file__).parents[2] / "dialogues"
TODAY = date(2026, 12, 2)
NAME = "Ana"
SAMPLE_TEXT = "A sample answer"

# Every language: each walk also shows that every reached text renders in that language.
LOCALES = list(SUPPORTED_LOCALES)

# What the platform provides: nothing (as in the console), a first check-in or a fresh start
# after a break, a streak at its best, and a streak below the best.
PROVIDED: list[Mapping[str, Value]] = [
    {},
    {"streak.days": 1, "streak.best": 1},
    {"streak.days": 1, "streak.best": 5},
    {"streak.days": 5, "streak.best": 5},
    {"streak.days": 5, "streak.best": 9},
    # Yesterday's commitment and overdue actions; an older commitment and open actions.
    {"streak.days": 2, "streak.best": 2, "commitment.last": "Call Ana",
     "commitment.last_days_ago": 1, "actions.open": 2, "actions.overdue": 1,
     "actions.list": "• Call Ana\n• Write"},
    {"streak.days": 1, "streak.best": 3, "commitment.last": "Call Ana",
     "commitment.last_days_ago": 3, "actions.open": 1, "actions.overdue": 0,
     "actions.list": "• Write"},
    {"commitment.last": "Call Ana", "commitment.last_days_ago": 1},
    # Before a session: an active goal and notes kept for it, the coach briefed; notes without
    # a goal, the answers private.
    {"goal.active": "Run 10 km", "notes.count": 2, "notes.list": "• Call Ana\n• [a photo]",
     "prep.briefed": True},
    {"notes.count": 1, "notes.list": "• Call Ana", "prep.briefed": False},
    # The date of the client's goal has come.
    {"goal.date_passed": True},
    # The client chose their check-in days (absent above: every day).
    {"checkin.days": "0,2,4"},
]
#: What the platform provides on every turn, whatever else it provides.
ALWAYS_PROVIDED: Mapping[str, Value] = {"checkin.working_days": "0,1,2,3,4"}
#: What the platform hands to a dialogue it starts, where a name is not the only kind: whether
#: the client has a coach, the first goal and the scale then and now (or none), a count, whether
#: a care check-in is the last in a row.
STARTED_SAMPLES: dict[str, list[Value]] = {
    "care.last": [False, True],
    "message.client_paused": [False, True],
    "jot.coach": [True, False],
    "jot.session": [True, False],
    "jot.paused": [False, True],
    "closing.first_goal": ["Run 10 km", None],
    "closing.baseline": [3, None],
    "closing.current": [7, None],
    "closing.current_on": ["2027-03-30", None],
    "closing.later_goal": ["Speak up in meetings", None],
    "closing.actions_done": [0, 1, 4],
    "cant.session": [1],
    "tracked.first": [True, False],
}

# A safety net: far more states than the shipped dialogues need.
MAX_STATES = 200_000

Position = tuple[str, str]  # (dialogue, step)
StateKey = tuple[object, ...]


@dataclass
class Coverage:
    steps: set[Position] = field(default_factory=set)
    branches: set[tuple[str, str, int]] = field(default_factory=set)
    finished: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)
    states: int = 0


def raw_samples(ask: Ask) -> list[str]:
    """Typed answers of each type, used to give required variables their starting values."""
    match ask.type:
        case "scale" | "number":
            low = ask.min if ask.min is not None else 0
            high = ask.max if ask.max is not None else 100
            return [str(int(v)) for v in sorted({low, (low + high) // 2, high})]
        case "choice":
            return [o.key for o in ask.options]
        case "yes_no":
            return ["yes", "no"]
        case "time":
            return ["08:00"]
        case "date":
            return ["tomorrow"]
        case "timezone":
            return ["Rome"]
        case "weekdays":
            return ["Monday, Thursday"]
    return [SAMPLE_TEXT]


def initial_variables(dialogues: DialogueSet, dialogue: Dialogue,
                      ctx: Context) -> list[dict[str, Value]]:
    """Every combination of sample values for what the dialogue requires from others."""
    asks = {s.ask.save: s.ask for d in dialogues.dialogues.values() for s in d.steps.values()
            if s.ask.save}
    names = sorted(dialogue.requires)
    choices: list[list[Value]] = []
    for name in names:
        if name in STARTED_SAMPLES:
            choices.append(STARTED_SAMPLES[name])
            continue
        if name in STARTED_WITH:  # handed in by the platform: a name
            choices.append([NAME])
            continue
        values = [parse_answer(asks[name], raw, ctx.translator, TODAY)
                  for raw in raw_samples(asks[name])]
        assert not any(isinstance(v, Invalid) for v in values), name
        choices.append(values)
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*choices)]


def relevant_variables(dialogues: DialogueSet) -> frozenset[str]:
    """The variables any condition reads: the only ones that can change where a client goes."""
    return frozenset(
        name
        for d in dialogues.dialogues.values()
        for s in d.steps.values()
        for b in s.next
        if b.condition is not None
        for name in variables_read(b.condition)
    )


class FutureReads:
    """The variables a condition may still read from a place in a dialogue: in the steps
    reachable from it (and every dialogue they call). A state is explored once per value of
    these only: a variable no condition ahead reads cannot change where the client goes."""

    def __init__(self, dialogues: DialogueSet, relevant: frozenset[str]) -> None:
        self.dialogues = dialogues
        self.relevant = relevant
        self._steps: dict[Position, frozenset[str]] = {}
        self._dialogues: dict[str, frozenset[str]] = {}

    def _walk(self, start: Position) -> tuple[set[str], set[str]]:
        """Conditions' variables in the steps reachable from ``start`` in its dialogue, and
        the dialogues those steps call."""
        dialogue = self.dialogues[start[0]]
        reads: set[str] = set()
        calls: set[str] = set()
        todo, seen = [start[1]], {start[1]}
        while todo:
            step = dialogue.steps[todo.pop()]
            targets = [b.goto for b in step.next]
            if step.later is not None:
                targets.append(step.later.goto)
            for branch in step.next:
                if branch.condition is not None:
                    reads |= variables_read(branch.condition)
                if branch.call is not None:
                    calls.add(branch.call)
            for target in targets:
                if target != END and target not in seen:
                    seen.add(target)
                    todo.append(target)
        return reads, calls

    def of_dialogue(self, dialogue_id: str) -> frozenset[str]:
        if dialogue_id not in self._dialogues:
            reads: set[str] = set()
            todo, seen = [dialogue_id], {dialogue_id}
            while todo:
                dialogue = self.dialogues[todo.pop()]
                found, calls = self._walk((dialogue.id, dialogue.start))
                reads |= found
                for step in dialogue.steps.values():  # steps come back later on their own too
                    for branch in step.next:
                        if branch.condition is not None:
                            reads |= variables_read(branch.condition)
                        if branch.call is not None:
                            calls.add(branch.call)
                todo += [c for c in calls if c not in seen]
                seen |= calls
            self._dialogues[dialogue_id] = frozenset(reads)
        return self._dialogues[dialogue_id]

    def of_step(self, place: Position) -> frozenset[str]:
        if place not in self._steps:
            reads, calls = self._walk(place)
            for call in calls:
                reads |= self.of_dialogue(call)
            self._steps[place] = frozenset(reads) & self.relevant
        return self._steps[place]

    def of_stack(self, stack: tuple[Position, ...]) -> frozenset[str]:
        return frozenset().union(*(self.of_step(place) for place in stack))


def answers(step: Step, outcome: Outcome) -> Iterator[Turn]:
    """Representative answers to the question the client was just shown."""
    ask = step.ask
    buttons = outcome.replies[-1].buttons if outcome.replies else ()
    if ask.type in ("choice", "yes_no"):
        expected = len(ask.options) if ask.type == "choice" else 2
        assert len(buttons) == expected, f"{step.id}: {buttons}"
        for button in buttons:
            yield Turn(button=button.data)
    elif ask.type == "scale":
        assert buttons, step.id
        for index in sorted({0, len(buttons) // 2, len(buttons) - 1}):
            yield Turn(button=buttons[index].data)
    elif ask.type == "number":
        for raw in raw_samples(ask):
            yield Turn(text=raw)
    elif ask.type == "time":
        yield Turn(text="08:00")
    elif ask.type == "date":
        yield Turn(text="tomorrow")
    elif ask.type == "timezone":
        yield Turn(text="Rome")
    elif ask.type == "weekdays":
        yield Turn(text="Monday, Thursday")
    elif ask.type == "text":
        yield Turn(text=SAMPLE_TEXT)
    if ask.optional:
        yield Turn(command="skip")


def readable(state: ConversationState, provided: Mapping[str, Value]) -> dict[str, Value]:
    return {**state.variables, **provided, "name": NAME, "today": TODAY.isoformat()}


def trace(dialogues: DialogueSet, frames: list[Position], variables: Mapping[str, Value],
          coverage: Coverage) -> tuple[list[Position], list[str]]:
    """Where the engine must go from the top step onwards, until a question or the end.

    Returns the expected stack and the dialogues that finish on the way; records every step
    entered and every branch taken.
    """
    finished: list[str] = []
    while True:
        dialogue_id, step_id = frames[-1]
        step = dialogues[dialogue_id].steps[step_id]
        index, branch = next((i, b) for i, b in enumerate(step.next)
                             if b.condition is None or evaluate(b.condition, variables))
        coverage.branches.add((dialogue_id, step_id, index))
        if branch.call is not None:
            frames[-1] = (dialogue_id, branch.goto)
            callee = dialogues[branch.call]
            frames.append((callee.id, callee.start))
        elif branch.goto == END:
            finished.append(frames.pop()[0])
            while frames and frames[-1][1] == END:
                finished.append(frames.pop()[0])
            if not frames:
                return frames, finished
        else:
            frames[-1] = (dialogue_id, branch.goto)
        dialogue_id, step_id = frames[-1]
        coverage.steps.add(frames[-1])
        if dialogues[dialogue_id].steps[step_id].ask.type != "none":
            return frames, finished


def check_replies(outcome: Outcome, where: str, coverage: Coverage) -> None:
    if not outcome.replies:
        coverage.problems.append(f"{where}: no reply at all")
    for reply in outcome.replies:
        for text in (reply.text, *(b.label for b in reply.buttons)):
            if not text.strip():
                coverage.problems.append(f"{where}: an empty text")
            elif "{" in text or "}" in text:
                coverage.problems.append(f"{where}: a placeholder is left in {text!r}")


def check_position(dialogues: DialogueSet, outcome: Outcome, expected: list[Position],
                   finished: list[str], where: str, coverage: Coverage) -> None:
    actual = [(f.dialogue, f.step) for f in outcome.state.stack]
    assert actual == expected, f"{where}: the engine went elsewhere than traced"
    assert list(outcome.finished) == finished, where
    coverage.finished.update(finished)


#: The client's clock at a start: a ``later`` step comes back today from the first, tomorrow
#: from the second.
CLOCKS = (time(0), time(23))


def entries(dialogue: Dialogue) -> Iterator[tuple[str, time]]:
    """Where a dialogue may start, and at what time of day: its start (at every clock when
    it has a ``later`` step), and each step it comes back at later."""
    comes_back = sorted({s.later.goto for s in dialogue.steps.values() if s.later})
    for clock in CLOCKS if comes_back else CLOCKS[:1]:
        yield dialogue.start, clock
    for step_id in comes_back:
        yield step_id, CLOCKS[0]


def explore(dialogues: DialogueSet, locale: str) -> Coverage:
    coverage = Coverage()
    ahead = FutureReads(dialogues, relevant_variables(dialogues))
    seen: set[StateKey] = set()
    for provided_index, some in enumerate(PROVIDED):
        provided = {**ALWAYS_PROVIDED, **some}
        ctx = Context(translator=translator_for(locale), today=TODAY, name=NAME,
                      provided=provided)
        for root in sorted(dialogues.dialogues):
            dialogue = dialogues[root]
            for variables, (first, clock) in itertools.product(
                    initial_variables(dialogues, dialogue, ctx), entries(dialogue)):
                ctx = replace(ctx, clock=clock)
                state = ConversationState((), variables)
                outcome = start(dialogues, state, root, ctx,
                                at=None if first == dialogue.start else first)
                where = f"{locale} {root} start at {first} {clock}"
                check_replies(outcome, where, coverage)
                frames: list[Position] = [(root, first)]
                coverage.steps.add(frames[0])
                finished: list[str] = []
                if dialogue.steps[first].ask.type == "none":
                    frames, finished = trace(dialogues, frames,
                                             readable(outcome.state, provided), coverage)
                check_position(dialogues, outcome, frames, finished, where, coverage)
                todo: deque[Outcome] = deque([outcome])
                while todo:
                    before = todo.popleft()
                    if not before.state.active:
                        continue
                    top = before.state.stack[-1]
                    step = dialogues[top.dialogue].steps[top.step]
                    for turn in answers(step, before):
                        after = handle(dialogues, before.state, turn, ctx)
                        where = f"{locale} {root} {top.dialogue}.{top.step} {turn}"
                        check_replies(after, where, coverage)
                        if after.state.safety_asked:  # a very low score: "no" goes on
                            assert [b.data for b in after.replies[-1].buttons] == [
                                SAFETY_YES, SAFETY_NO], where
                            after = handle(dialogues, after.state, Turn(button=SAFETY_NO), ctx)
                            check_replies(after, where, coverage)
                        assert after.state != before.state, f"{where}: the answer was refused"
                        expected, finished = trace(
                            dialogues, [(f.dialogue, f.step) for f in before.state.stack],
                            readable(after.state, provided), coverage)
                        check_position(dialogues, after, expected, finished, where, coverage)
                        stack = tuple((f.dialogue, f.step) for f in after.state.stack)
                        relevant = ahead.of_stack(stack)
                        key: StateKey = (
                            provided_index,
                            stack,
                            tuple(sorted((k, v) for k, v in after.state.variables.items()
                                         if k in relevant)),
                        )
                        if after.state.active and key not in seen:
                            seen.add(key)
                            todo.append(after)
                    assert len(seen) < MAX_STATES, "the exploration does not converge"
    coverage.states = len(seen)
    return coverage


@pytest.fixture(scope="module")
def dialogues() -> DialogueSet:
    return load_dialogues(REPO_DIALOGUES)


@pytest.fixture(scope="module", params=LOCALES)
def coverage(request: pytest.FixtureRequest, dialogues: DialogueSet) -> Coverage:
    # The walk types the same few samples tens of thousands of times: the real detector's
    # verdict on each is worked out once (it is pure; it was half the walk's time).
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runner, "detect_crisis", functools.cache(runner.detect_crisis))
        return explore(dialogues, request.param)


def test_the_exercises_are_explored_too(dialogues: DialogueSet) -> None:
    exercises = [d for d in dialogues.dialogues.values() if d.kind == "exercise"]
    assert len(exercises) >= 10
    assert all("/exercises/" in Path(d.path).as_posix() for d in exercises)


def test_every_step_is_reached(dialogues: DialogueSet, coverage: Coverage) -> None:
    every = {(d.id, s) for d in dialogues.dialogues.values() for s in d.steps}
    assert sorted(every - coverage.steps) == []


def test_every_branch_is_taken(dialogues: DialogueSet, coverage: Coverage) -> None:
    every = {(d.id, s.id, i) for d in dialogues.dialogues.values() for s in d.steps.values()
             for i in range(len(s.next))}
    assert sorted(every - coverage.branches) == []


def test_every_dialogue_reaches_its_end(dialogues: DialogueSet, coverage: Coverage) -> None:
    assert sorted(set(dialogues.dialogues) - coverage.finished) == []


def test_no_reply_is_empty_or_has_a_leftover_placeholder(coverage: Coverage) -> None:
    assert coverage.problems[:20] == []
