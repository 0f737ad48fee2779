"""The typed model of a loaded dialogue set: plain, immutable data."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import time
from functools import cached_property
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # programmes.py uses this module's Position
    from bot.dialogue.programmes import Programme

from bot.dialogue.expr import Expr

AnswerType = Literal[
    "text", "number", "scale", "choice", "yes_no", "time", "date", "timezone", "weekdays", "none"
]
ANSWER_TYPES: tuple[AnswerType, ...] = (
    "text", "number", "scale", "choice", "yes_no", "time", "date", "timezone", "weekdays",
    "none",
)
END = "end"

# Provided by the platform on every turn (not saved by dialogues), so any text may use them.
BUILTIN_VARIABLES = frozenset({
    "name", "today", "streak.days", "streak.best", "min_age",
    "commitment.last", "commitment.last_days_ago", "actions.open", "actions.overdue",
    "actions.list", "notes.count", "notes.list", "goal.active", "help.lines",
    "prep.briefed", "goal.date_passed", "goal.holding", "checkin.days", "checkin.working_days",
})
#: Provided weekday lists, saved as a ``weekdays`` answer saves them ("0,4": Monday, Friday):
#: the days the client chose for their check-in (absent when every day), and their country's
#: working days.
WEEKDAY_BUILTINS = frozenset({"checkin.days", "checkin.working_days"})
#: Handed by the platform to the dialogue it starts (who a message is to or from): a dialogue
#: lists them under `requires`, and no dialogue saves them.
STARTED_WITH = frozenset({"message.client_name", "message.client_paused", "reply.coach_name",
                          "note.client_name",
                          "schedule.client_name", "jot.coach", "jot.session", "jot.paused",
                          "jot.words", "jot.media",
                          "jot.file_id", "jot.message_id", "closing.coach", "closing.coach_id",
                          "closing.first_goal", "closing.baseline", "closing.current",
                          "closing.current_on", "closing.later_goal", "closing.actions_done",
                          "cant.session", "measure.client_name",
                          "tracked.id", "tracked.name", "tracked.first", "care.round",
                          "care.last"})


@dataclass(frozen=True, order=True)
class Position:
    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@dataclass(frozen=True)
class Option:
    key: str
    label: str


@dataclass(frozen=True)
class Ask:
    type: AnswerType
    save: str | None = None
    min: float | None = None
    max: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    options: tuple[Option, ...] = ()
    optional: bool = False  # the client may answer /skip
    # A scale answer at or below this, or a choice of one of these option keys, is followed
    # by the safety question before the dialogue goes on (see the engine).
    safety_at_or_below: int | None = None
    safety_on: frozenset[str] = frozenset()


@dataclass(frozen=True)
class PluralText:
    one: str
    other: str
    count: str  # the variable holding the number


@dataclass(frozen=True)
class Branch:
    """One alternative of `next`: when `condition` holds (or always), go to `goto`.

    `goto` is a step id or END. With `call`, the other dialogue runs first and `goto` is
    where this dialogue continues once it has ended. `position` is where the target is named.
    """

    goto: str
    condition: Expr | None = None
    condition_source: str | None = None
    call: str | None = None
    position: Position | None = None


#: What a ``later`` step writes for the steps after it: the time it will come back at
#: ("HH:MM", shown in the client's format) and whether that is tomorrow.
LATER_TIME = "later.time"
LATER_TOMORROW = "later.tomorrow"
LATER_VARIABLES = frozenset({LATER_TIME, LATER_TOMORROW})


@dataclass(frozen=True)
class ComeBack:
    """A step's ``later: {at: "HH:MM", goto: step}``: the dialogue comes back on its own at
    that local time (today if there is time enough, else tomorrow), at step ``goto``."""

    at: time
    goto: str
    position: Position | None = None


@dataclass(frozen=True)
class Step:
    id: str
    say: str | None
    say_plural: PluralText | None
    ask: Ask
    next: tuple[Branch, ...]
    position: Position
    later: ComeBack | None = None

    @property
    def writes(self) -> frozenset[str]:
        """The variables this step writes: its answer, or what a ``later`` step records."""
        return (frozenset({self.ask.save}) if self.ask.save else frozenset()) | (
            LATER_VARIABLES if self.later else frozenset())


@dataclass(frozen=True)
class StepTexts:
    """What a client reads in one step, in one language."""

    say: str | None = None
    say_plural: tuple[str, str] | None = None  # one, other
    options: Mapping[str, str] = field(default_factory=dict)  # option key -> label

    @classmethod
    def of(cls, step: Step) -> StepTexts:
        plural = step.say_plural
        return cls(step.say, (plural.one, plural.other) if plural else None,
                   {o.key: o.label for o in step.ask.options})

    def texts(self) -> Iterable[str]:
        if self.say is not None:
            yield self.say
        yield from self.say_plural or ()
        yield from self.options.values()


@dataclass(frozen=True)
class Translation:
    """A dialogue's texts in another language (a coach's ``translations:``), complete."""

    title: str
    steps: Mapping[str, StepTexts]


@dataclass(frozen=True)
class Dialogue:
    id: str
    title: str
    start: str
    steps: Mapping[str, Step]
    content_hash: str
    path: str
    on_missing: str | None = None
    requires: frozenset[str] = field(default_factory=frozenset)
    # Answers it asks anew each time it runs: empty (None) from its start, so its steps
    # read this run's answer or nothing, never an earlier run's.
    fresh: frozenset[str] = field(default_factory=frozenset)
    kind: Literal["dialogue", "exercise"] = "dialogue"
    reads: frozenset[str] = field(default_factory=frozenset)  # variables its steps read
    # Written in one language (a coach's own, ``language: hr``): its texts are shown as
    # written and are not in the catalogs. None: English source texts, translated.
    language: str | None = None
    # The same dialogue in other languages, by language code (only with ``language``).
    translations: Mapping[str, Translation] = field(default_factory=dict)

    @property
    def languages(self) -> tuple[str, ...]:
        """The languages its clients may read it in: its own first, then its translations."""
        return ((self.language,) if self.language else ()) + tuple(sorted(self.translations))

    def in_language(self, code: str) -> Dialogue:
        """This dialogue with the texts of its translation into ``code``; itself when it has
        none (its own language, or a dialogue translated through the catalogs)."""
        translation = self.translations.get(code)
        if translation is None:
            return self
        steps = {}
        for step_id, step in self.steps.items():
            texts = translation.steps.get(step_id, StepTexts())
            plural = step.say_plural
            steps[step_id] = replace(
                step, say=texts.say if step.say is not None else None,
                say_plural=replace(plural, one=texts.say_plural[0],
                                   other=texts.say_plural[1])
                if plural and texts.say_plural else plural,
                ask=replace(step.ask, options=tuple(
                    replace(o, label=texts.options[o.key]) for o in step.ask.options)))
        return replace(self, title=translation.title, steps=steps, language=code,
                       translations={})

    @property
    def restart_step(self) -> str:
        """Where a user goes when the step they stood on was removed by an edit."""
        return self.on_missing or self.start


@dataclass(frozen=True)
class DialogueSet:
    dialogues: Mapping[str, Dialogue]
    # The programmes beside them (dialogues/programmes/): Programme objects by id.
    programmes: Mapping[str, Programme] = field(default_factory=dict)

    @cached_property
    def choice_labels(self) -> Mapping[str, Mapping[str, str]]:
        """For each variable a choice saves: its option keys and their labels."""
        labels: dict[str, dict[str, str]] = {}
        for dialogue in self.dialogues.values():
            for step in dialogue.steps.values():
                if step.ask.type == "choice" and step.ask.save:
                    for option in step.ask.options:
                        labels.setdefault(step.ask.save, {})[option.key] = option.label
        return labels

    @cached_property
    def weekday_variables(self) -> frozenset[str]:
        """The variables that hold weekdays: what a ``weekdays`` answer saves, and the
        provided lists of days."""
        return WEEKDAY_BUILTINS | {
            step.ask.save for dialogue in self.dialogues.values()
            for step in dialogue.steps.values()
            if step.ask.type == "weekdays" and step.ask.save}

    def reads(self, dialogue_ids: Iterable[str]) -> frozenset[str]:
        """Every variable these dialogues, or the dialogues they call, may read."""
        seen: set[str] = set()
        found: set[str] = set()
        todo = list(dialogue_ids)
        while todo:
            dialogue = self.dialogues.get(todo.pop())
            if dialogue is None or dialogue.id in seen:
                continue
            seen.add(dialogue.id)
            found |= dialogue.reads
            todo += [b.call for step in dialogue.steps.values() for b in step.next if b.call]
        return frozenset(found)

    def __contains__(self, dialogue_id: object) -> bool:
        return dialogue_id in self.dialogues

    def __getitem__(self, dialogue_id: str) -> Dialogue:
        return self.dialogues[dialogue_id]

    def get(self, dialogue_id: str) -> Dialogue | None:
        return self.dialogues.get(dialogue_id)
