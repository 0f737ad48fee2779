"""Programmes: an ordered list of exercises over weeks, written in YAML beside the dialogues
(``dialogues/programmes/*.yaml``) and checked with them, errors as ``file:line:column``.

```yaml
id: values_and_goals
title: Values and goals, in four weeks
steps:
  - exercise: values_ranking   # an exercise dialogue of the library
    day: 0                     # its first day, counted from the programme's start
  - exercise: wheel_of_life
    day: 7                     # or the day after the step before is done, if sooner
    days: 3                    # offered on up to 3 days in a row until done (default 1)
```
The title is an English source text translated like a dialogue's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from bot.dialogue.model import Position

PROGRAMMES_DIR = "programmes"
MAX_STEPS = 30
MAX_DAY = 364
MAX_STEP_DAYS = 14
_ID = re.compile(r"[a-z][a-z0-9_]{0,31}\Z")
_KEYS = {"id", "title", "description", "steps"}
_STEP_KEYS = {"exercise", "day", "days"}


@dataclass(frozen=True)
class ProgrammeStep:
    exercise: str
    day: int
    days: int
    position: Position


@dataclass(frozen=True)
class Programme:
    id: str
    title: str
    steps: tuple[ProgrammeStep, ...]
    path: str
    id_position: Position


@dataclass(frozen=True, order=True)
class ProgrammeError:
    position: Position
    message: str

    def __str__(self) -> str:
        return f"{self.position}: {self.message}"


def _pos(display: str, node: Node) -> Position:
    return Position(display, node.start_mark.line + 1, node.start_mark.column + 1)


def _whole(node: Node, low: int, high: int) -> int | None:
    if isinstance(node, ScalarNode) and node.tag == "tag:yaml.org,2002:int":
        value = int(node.value)
        return value if low <= value <= high else None
    return None


def parse_programme(raw: bytes, display: str) -> tuple[Programme | None, list[ProgrammeError]]:
    """One programme file, on its own (the exercises it names are checked by the set)."""
    errors: list[ProgrammeError] = []

    def error(where: Node | Position, message: str) -> None:
        errors.append(ProgrammeError(where if isinstance(where, Position)
                                     else _pos(display, where), message))

    try:
        root = yaml.compose(raw.decode("utf-8"), Loader=yaml.SafeLoader)
    except UnicodeDecodeError:
        return None, [ProgrammeError(Position(display, 1, 1), "the file is not UTF-8 text")]
    except yaml.MarkedYAMLError as exc:
        mark = exc.context_mark or exc.problem_mark
        where = Position(display, mark.line + 1, mark.column + 1) if mark else \
            Position(display, 1, 1)
        return None, [ProgrammeError(where, f"YAML syntax: {exc.problem or 'not valid YAML'}")]
    if not isinstance(root, MappingNode):
        return None, [ProgrammeError(Position(display, 1, 1),
                                     "a programme must be a mapping of 'key: value' lines")]
    fields: dict[str, tuple[ScalarNode, Node]] = {}
    for key, value in root.value:
        if not isinstance(key, ScalarNode) or key.value not in _KEYS:
            error(key, f"unknown key '{getattr(key, 'value', '…')}' in a programme; expected "
                  "one of: " + ", ".join(sorted(_KEYS)))
        else:
            fields[key.value] = (key, value)
    for needed in ("id", "title", "steps"):
        if needed not in fields:
            error(root, f"a programme needs '{needed}'")
    if errors:
        return None, errors
    id_node, title_node, steps_node = fields["id"][1], fields["title"][1], fields["steps"][1]
    programme_id = getattr(id_node, "value", "")
    if not isinstance(id_node, ScalarNode) or not _ID.match(programme_id):
        error(id_node, "the programme id must be lower case letters, digits and _, starting "
              "with a letter, at most 32 characters")
    title = getattr(title_node, "value", "")
    if not isinstance(title_node, ScalarNode) or not str(title).strip():
        error(title_node, "'title' must be text")
    steps: list[ProgrammeStep] = []
    if not isinstance(steps_node, SequenceNode) or not steps_node.value:
        error(steps_node, "'steps' must be a list of at least one step")
    else:
        if len(steps_node.value) > MAX_STEPS:
            error(steps_node, f"at most {MAX_STEPS} steps")
        for node in steps_node.value:
            step = _step(node, display, error)
            if step is not None:
                if steps and step.day <= steps[-1].day:
                    error(node, f"each step starts on a later day than the one before "
                          f"(day {steps[-1].day} before this one)")
                steps.append(step)
        if steps and steps[0].day != 0:
            error(steps_node.value[0], "the first step starts on day 0")
    if errors:
        return None, errors
    return Programme(programme_id, str(title), tuple(steps), display,
                     _pos(display, id_node)), []


def _step(node: Node, display: str,
          report: Callable[[Node | Position, str], None]) -> ProgrammeStep | None:
    if not isinstance(node, MappingNode):
        report(node, "a step is a mapping with 'exercise' and 'day'")
        return None
    fields = {}
    for key, value in node.value:
        if not isinstance(key, ScalarNode) or key.value not in _STEP_KEYS:
            report(key, f"unknown key '{getattr(key, 'value', '…')}' in a step; expected one "
                   "of: " + ", ".join(sorted(_STEP_KEYS)))
            return None
        fields[key.value] = value
    if "exercise" not in fields or "day" not in fields:
        report(node, "a step needs 'exercise' and 'day'")
        return None
    exercise = getattr(fields["exercise"], "value", "")
    day = _whole(fields["day"], 0, MAX_DAY)
    days = _whole(fields["days"], 1, MAX_STEP_DAYS) if "days" in fields else 1
    if day is None:
        report(fields["day"], f"'day' must be a whole number from 0 to {MAX_DAY}")
    if days is None:
        report(fields["days"], f"'days' must be a whole number from 1 to {MAX_STEP_DAYS}")
    if day is None or days is None or not isinstance(exercise, str):
        return None
    return ProgrammeStep(exercise, day, days, _pos(display, fields["exercise"]))


def programme_files(dialogues_dir: Path) -> list[Path]:
    folder = dialogues_dir / PROGRAMMES_DIR
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())


def check_programmes(dialogues_dir: Path, exercises: Iterable[str], *,
                     display: Callable[[Path], str] = str
                     ) -> tuple[dict[str, Programme], list[ProgrammeError]]:
    """Every programme under ``dialogues_dir/programmes``, each step an exercise among
    ``exercises``; ids unique."""
    shown = display
    known = set(exercises)
    found: dict[str, Programme] = {}
    errors: list[ProgrammeError] = []
    for path in programme_files(dialogues_dir):
        programme, problems = parse_programme(path.read_bytes(), str(shown(path)))
        errors.extend(problems)
        if programme is None:
            continue
        for step in programme.steps:
            if step.exercise not in known:
                errors.append(ProgrammeError(step.position, (
                    f"'{step.exercise}' is not an exercise of the library (an exercise "
                    "dialogue that needs nothing from the platform)")))
        if programme.id in found:
            errors.append(ProgrammeError(programme.id_position, (
                f"programme id '{programme.id}' is already used by "
                f"{found[programme.id].path}")))
            continue
        found[programme.id] = programme
    return found, sorted(errors)
