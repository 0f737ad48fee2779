"""Load dialogue YAML files into the typed model, refusing anything doubtful.

Every problem is reported as `file:line:column: message`, all problems of all files at once.
A set with any error is never returned: callers get either a whole valid set or the errors.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import time
from pathlib import Path

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from bot.dialogue.expr import ExprError, is_valid_variable, parse_condition, variables_read
from bot.dialogue.messages import N_, Message, message, verbatim
from bot.dialogue.model import (
    ANSWER_TYPES,
    BUILTIN_VARIABLES,
    END,
    STARTED_WITH,
    Ask,
    Branch,
    ComeBack,
    Dialogue,
    DialogueSet,
    Option,
    PluralText,
    Position,
    Step,
    StepTexts,
    Translation,
)
from bot.dialogue.programmes import PROGRAMMES_DIR, Programme, check_programmes
from bot.dialogue.template import TemplateError, placeholders

_ID = re.compile(r"[a-z][a-z0-9_]*\Z")
#: A dialogue id travels in button data (``exercise:<id>``, ``assign:<client>:<id>:…``),
#: which Telegram caps at 64 bytes: with the longest Telegram id, 32 characters still fit.
MAX_DIALOGUE_ID = 32
_OPTION_KEY = re.compile(r"[a-z0-9][a-z0-9_]{0,31}\Z")
_MAX_OPTIONS = 12

_DIALOGUE_KEYS = {
    "id", "title", "kind", "description", "start", "steps", "on_missing", "requires",
    "fresh", "language", "translations",
}
_TRANSLATION_KEYS = {"title", "steps"}
_STEP_TEXT_KEYS = {"say", "say_plural", "options"}
_LANGUAGE = re.compile(r"[a-z]{2,3}\Z")
_KINDS = ("dialogue", "exercise")
# An exercise reports back how it went, for the client's coach; these are the answers.
EXERCISE_STATUS = "exercise.status"
EXERCISE_STATUS_KEYS = ("done", "partly", "skipped")
_STEP_KEYS = {"say", "say_plural", "ask", "next", "later"}
_LATER_KEYS = {"at", "goto"}
_CLOCK = re.compile(r"([01]\d|2[0-3]):([0-5]\d)\Z")
#: A dialogue comes back (``later``) in the day only.
LATER_EARLIEST_HOUR = 6
_PLURAL_KEYS = {"one", "other", "count"}
_BRANCH_KEYS = {"if", "goto", "call", "then"}
_ASK_KEYS_BY_TYPE: dict[str, set[str]] = {
    "text": {"min_length", "max_length"},
    "number": {"min", "max"},
    "scale": {"min", "max", "safety_at_or_below"},
    "choice": {"options", "safety_on"},
    "yes_no": set(),
    "time": set(),
    "date": set(),
    "timezone": set(),
    "weekdays": set(),
    "none": set(),
}
DEFAULT_TEXT_MAX_LENGTH = 2000
MAX_SCALE_POINTS = 11


@dataclass(frozen=True)
class DialogueError:
    position: Position
    message: Message

    def render(self, gettext: Callable[[str], str] = lambda m: m,
               wrap: Callable[[str], str] = lambda v: v) -> str:
        """``file:line:column: message``, the message in the language of ``gettext`` (see
        :meth:`Message.render` for ``wrap``)."""
        return f"{wrap(str(self.position))}: {self.message.render(gettext, wrap)}"

    def __str__(self) -> str:
        return self.render()

    def __lt__(self, other: DialogueError) -> bool:
        return (self.position, str(self.message)) < (other.position, str(other.message))


class DialogueLoadError(Exception):
    def __init__(self, errors: list[DialogueError]) -> None:
        self.errors = sorted(errors)
        super().__init__("\n".join(str(e) for e in self.errors))


@dataclass
class _Reads:
    """Variables a step reads before its answer (texts) and after it (conditions)."""

    before: list[tuple[str, Position]] = field(default_factory=list)
    after: list[tuple[str, Position]] = field(default_factory=list)


@dataclass
class _ParsedDialogue:
    dialogue: Dialogue
    reads: dict[str, _Reads]
    id_position: Position
    requires_position: Position


class _FileParser:
    def __init__(self, path: Path, display: str, source: bytes | None = None,
                 languages: Collection[str] | None = None) -> None:
        self.path = path
        self.display = display
        self.source = source
        # The language codes a dialogue may be written or translated in; None: any code.
        self.languages = languages
        self.errors: list[DialogueError] = []

    def pos(self, node: Node) -> Position:
        return Position(self.display, node.start_mark.line + 1, node.start_mark.column + 1)

    def error(self, node: Node | Position, message_id: str, **args: str | int | Message
              ) -> None:
        where = node if isinstance(node, Position) else self.pos(node)
        self.errors.append(DialogueError(where, message(message_id, **args)))

    # -- generic node helpers -------------------------------------------------------------

    # The messages reach a coach who sent a file, in their language: ``what`` is a key in
    # quotes (kept verbatim) or a Message of its own ("step 'intro'"), translated apart
    # (docs/translating.md, "The validator's messages").
    def mapping(
        self, node: Node, allowed: set[str], what: str | Message
    ) -> dict[str, tuple[ScalarNode, Node]] | None:
        if not isinstance(node, MappingNode):
            self.error(node, N_("{what} must be a mapping of 'key: value' lines"), what=what)
            return None
        result: dict[str, tuple[ScalarNode, Node]] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, ScalarNode):
                self.error(key_node, N_("a key in {what} must be a plain word"), what=what)
                continue
            key = key_node.value
            if key in result:
                self.error(key_node, N_("'{key}' appears twice in {what}"), key=key, what=what)
                continue
            if key not in allowed:
                self.error(key_node, N_("unknown key '{key}' in {what}; expected one of: "
                                        "{keys}"), key=key, what=what,
                           keys=", ".join(sorted(allowed)))
                continue
            result[key] = (key_node, value_node)
        return result

    def text(self, node: Node, what: str | Message) -> str | None:
        if not isinstance(node, ScalarNode) or node.tag != "tag:yaml.org,2002:str":
            self.error(node, N_("{what} must be text (put it in quotes)"), what=what)
            return None
        if not node.value.strip():
            self.error(node, N_("{what} is empty"), what=what)
            return None
        return str(node.value)

    def identifier(self, node: Node, what: str | Message) -> str | None:
        if not isinstance(node, ScalarNode):
            self.error(node, N_("{what} must be a name"), what=what)
            return None
        value = str(node.value)
        if not _ID.match(value):
            self.error(node, N_("{what} '{value}' must be lower case letters, digits and _, "
                                "starting with a letter"), what=what, value=value)
            return None
        return value

    def dialogue_id(self, node: Node) -> str | None:
        # TRANSLATORS: a part of the file, the {what} of other messages
        value = self.identifier(node, message(N_("the dialogue id")))
        if value is not None and len(value) > MAX_DIALOGUE_ID:
            self.error(node, N_("the dialogue id '{value}' is longer than {count} characters "
                                "(it must fit in a button's data)"),
                       value=value, count=MAX_DIALOGUE_ID)
            return None
        return value

    def variable(self, node: Node, what: str | Message) -> str | None:
        if not isinstance(node, ScalarNode) or not is_valid_variable(str(node.value)):
            value = node.value if isinstance(node, ScalarNode) else "…"
            self.error(node, N_("{what} '{value}' must be a variable name like checkin.mood"),
                       what=what, value=str(value))
            return None
        return str(node.value)

    def variables(self, node: Node, key: str, what: Message) -> dict[str, Position]:
        """A list of variable names (``requires``, ``fresh``), each with where it is named."""
        if not isinstance(node, SequenceNode):
            self.error(node, N_("'{key}' must be a list of variable names"), key=key)
            return {}
        return {name: self.pos(item) for item in node.value
                if (name := self.variable(item, what)) is not None}

    def number(self, node: Node, what: str, *, integer: bool = False) -> float | None:
        tags = {"tag:yaml.org,2002:int"} | (set() if integer else {"tag:yaml.org,2002:float"})
        if not isinstance(node, ScalarNode) or node.tag not in tags:
            self.error(node, N_("{what} must be a whole number") if integer
                       else N_("{what} must be a number"), what=what)
            return None
        return int(node.value) if node.tag.endswith(":int") else float(node.value)

    def boolean(self, node: Node, what: str) -> bool | None:
        if not isinstance(node, ScalarNode) or node.tag != "tag:yaml.org,2002:bool":
            self.error(node, N_("{what} must be true or false"), what=what)
            return None
        return node.value.lower() in ("true", "yes", "on")

    def template(self, node: Node, what: str | Message, reads: list[tuple[str, Position]]
                 ) -> str | None:
        value = self.text(node, what)
        if value is None:
            return None
        try:
            for name in placeholders(value):
                reads.append((name, self.pos(node)))
        except TemplateError as exc:
            self.error(node, N_("{what}: {problem}"), what=what, problem=exc.message)
            return None
        return value

    # -- the dialogue language -------------------------------------------------------------

    def parse(self) -> _ParsedDialogue | None:
        try:
            raw = self.source if self.source is not None else self.path.read_bytes()
            root = yaml.compose(raw.decode("utf-8"), Loader=yaml.SafeLoader)
        except UnicodeDecodeError as exc:
            self.error(Position(self.display, 1, 1), N_("the file is not UTF-8 text ({reason})"),
                       reason=exc.reason)
            return None
        except yaml.MarkedYAMLError as exc:
            # Where the broken construct began (an unclosed quote, say) helps more than
            # where the parser gave up, often the end of the file.
            mark = exc.context_mark or exc.problem_mark
            line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
            problem = "; ".join(p for p in (exc.context, exc.problem) if p) or "not valid YAML"
            self.error(Position(self.display, line, column), N_("YAML syntax: {problem}"),
                       problem=problem)
            return None
        if root is None:
            self.error(Position(self.display, 1, 1), N_("the file is empty"))
            return None
        # TRANSLATORS: a part of the file, the {what} of other messages
        fields = self.mapping(root, _DIALOGUE_KEYS, message(N_("a dialogue")))
        if fields is None:
            return None
        for required in ("id", "title", "start", "steps"):
            if required not in fields:
                self.error(root, N_("a dialogue needs '{key}'"), key=required)
        dialogue_id = (
            self.dialogue_id(fields["id"][1]) if "id" in fields else None
        )
        title = self.text(fields["title"][1], "'title'") if "title" in fields else None
        if "description" in fields:
            self.text(fields["description"][1], "'description'")
        kind = "dialogue"
        if "kind" in fields:
            kind_node = fields["kind"][1]
            kind = getattr(kind_node, "value", "")
            if kind not in _KINDS:
                self.error(kind_node, N_("'kind' must be one of: {kinds}"),
                           kinds=", ".join(_KINDS))
        language = None
        if "language" in fields:
            language = self.language_code(fields["language"][1])
        requires: dict[str, Position] = {}
        requires_pos = self.pos(root)
        if "requires" in fields:
            requires_pos = self.pos(fields["requires"][1])
            # TRANSLATORS: a part of the file, the {what} of other messages
            what = message(N_("a required variable"))
            requires = self.variables(fields["requires"][1], "requires", what)
        fresh: dict[str, Position] = {}
        if "fresh" in fields:
            # TRANSLATORS: a part of the file, the {what} of other messages ('fresh' lists
            # the answers a dialogue asks anew each time it runs)
            what = message(N_("a variable under 'fresh'"))
            fresh = self.variables(fields["fresh"][1], "fresh", what)

        steps: dict[str, Step] = {}
        reads: dict[str, _Reads] = {}
        declared = _all_names(fields["steps"][1]) if "steps" in fields else set()
        if "steps" in fields:
            step_nodes = self.mapping(fields["steps"][1], declared, "'steps'")
            for step_id, (key_node, step_node) in (step_nodes or {}).items():
                # TRANSLATORS: a part of the file, the {what} of other messages
                if self.identifier(key_node, message(N_("the step id"))) is None:
                    continue
                if step_id == END:
                    self.error(key_node, N_("'end' is reserved to finish a dialogue; "
                                            "name the step differently"))
                    continue
                step_reads = _Reads()
                step = self.step(step_id, key_node, step_node, step_reads)
                if step is not None:
                    steps[step_id] = step
                    reads[step_id] = step_reads
            if step_nodes is not None and not step_nodes:
                self.error(fields["steps"][1], N_("a dialogue needs at least one step"))

        translations: dict[str, Translation] = {}
        if "translations" in fields and language is None:
            self.error(fields["translations"][0], N_("'translations' go with 'language': the "
                                                     "language the dialogue is written in"))
        elif "translations" in fields and language is not None:
            translations = self.translations(fields["translations"][1], language, steps,
                                             declared)
        saved = {step.ask.save for step in steps.values()}
        for name, where in fresh.items():
            if name not in saved and steps:
                self.error(where, N_("'fresh' lists '{variable}', but no step of this dialogue "
                                     "saves it"), variable=name)
        start = self.step_ref(fields.get("start"), declared, "'start'")
        on_missing = self.step_ref(fields.get("on_missing"), declared, "'on_missing'")
        if kind == "exercise" and not any(_reports_exercise_status(s) for s in steps.values()):
            self.error(root, N_("an exercise needs a step that asks a choice saved to "
                                "'{variable}' with the options {options}"),
                       variable=EXERCISE_STATUS, options=", ".join(EXERCISE_STATUS_KEYS))
        if self.errors or dialogue_id is None or title is None or start is None:
            return None
        dialogue = Dialogue(
            id=dialogue_id,
            title=title,
            start=start,
            steps=steps,
            content_hash=hashlib.sha256(raw).hexdigest()[:16],
            path=self.display,
            on_missing=on_missing,
            requires=frozenset(requires),
            fresh=frozenset(fresh),
            kind=kind,  # type: ignore[arg-type]
            reads=frozenset(name for r in reads.values() for name, _ in (*r.before, *r.after)),
            language=language,
            translations=translations,
        )
        return _ParsedDialogue(dialogue, reads, self.pos(fields["id"][1]), requires_pos)

    def language_code(self, node: Node) -> str | None:
        code = self.text(node, "'language'")
        if code is None:
            return None
        if not _LANGUAGE.match(code):
            self.error(node, N_("'language' must be a language code such as hr or it, not "
                                "'{value}'"), value=code)
            return None
        if self.languages is not None and code not in self.languages:
            self.error(node, N_("the bot does not speak '{language}'; it speaks {languages}"),
                       language=code, languages=", ".join(sorted(self.languages)))
            return None
        return code

    # -- a coach's translations ---------------------------------------------------------------

    def translations(self, node: Node, own: str, steps: dict[str, Step],
                     declared: set[str]) -> dict[str, Translation]:
        """``translations:``: for each language code, the dialogue's title and every text of
        its steps, keyed by step id and option key, so a missing text can be named."""
        found: dict[str, Translation] = {}
        for code, (key_node, value_node) in (
                self.mapping(node, _all_names(node), "'translations'") or {}).items():
            if self.language_code(key_node) is None:
                continue
            if code == own:
                self.error(key_node, N_("the dialogue is written in '{language}' already; "
                                        "translations are for other languages"), language=code)
                continue
            translation = self.translation(code, key_node, value_node, steps, declared)
            if translation is not None:
                found[code] = translation
        return found

    def translation(self, code: str, key_node: Node, node: Node, steps: dict[str, Step],
                    declared: set[str]) -> Translation | None:
        fields = self.mapping(node, _TRANSLATION_KEYS, message(
            # TRANSLATORS: a part of the file, the {what} of other messages
            N_("the '{language}' translation"), language=code))
        if fields is None:
            return None
        before = len(self.errors)
        title = self.text(fields["title"][1], "'title'") if "title" in fields else None
        if "title" not in fields:
            self.error(key_node, N_("the '{language}' translation has no 'title'"),
                       language=code)
        given: dict[str, StepTexts] = {}
        entries: dict[str, tuple[ScalarNode, Node]] = {}
        if "steps" in fields:
            steps_node = fields["steps"][1]
            entries = self.mapping(steps_node, _all_names(steps_node), message(
                # TRANSLATORS: a part of the file, the {what} of other messages
                N_("'steps' of the '{language}' translation"), language=code)) or {}
        for step_id, (step_key, step_node) in entries.items():
            if step_id not in declared:
                self.error(step_key, N_("there is no step '{step}' to translate"),
                           step=step_id)
            elif step_id in steps:  # else it has errors of its own
                texts = self.step_texts(code, step_key, step_node, steps[step_id])
                if texts is not None:
                    given[step_id] = texts
        missing_at = fields["steps"][0] if "steps" in fields else key_node
        for step_id, step in steps.items():
            if step_id not in entries and any(StepTexts.of(step).texts()):
                self.error(missing_at, N_("the '{language}' translation has no step '{step}' "
                                          "(line {line})"),
                           language=code, step=step_id, line=step.position.line)
        if len(self.errors) > before or title is None:
            return None
        return Translation(title, given)

    def step_texts(self, code: str, key_node: Node, node: Node, step: Step
                   ) -> StepTexts | None:
        """One step's texts in language ``code``: the same texts as ``step``, no more, no
        fewer, each with the same placeholders."""
        original = StepTexts.of(step)
        fields = self.mapping(node, _STEP_TEXT_KEYS, message(
            # TRANSLATORS: a part of the file, the {what} of other messages
            N_("step '{step}' of the '{language}' translation"), step=step.id, language=code))
        if fields is None:
            return None
        has = {"say": original.say is not None, "say_plural": original.say_plural is not None,
               "options": bool(original.options)}
        for key in sorted(_STEP_TEXT_KEYS):
            if key in fields and not has[key]:
                self.error(fields[key][0], N_("step '{step}' has no '{key}' to translate"),
                           step=step.id, key=key)
            elif has[key] and key not in fields:
                self.error(key_node, N_("the '{language}' translation of step '{step}' has no "
                                        "'{key}'"), language=code, step=step.id, key=key)
        say = plural = None
        options: dict[str, str] = {}
        if "say" in fields and original.say is not None:
            say = self.translated(fields["say"][1], "'say'", original.say)
        if "say_plural" in fields and original.say_plural is not None:
            forms = self.mapping(fields["say_plural"][1], {"one", "other"}, "'say_plural'")
            if forms is not None and forms.keys() != {"one", "other"}:
                self.error(fields["say_plural"][1], N_("'say_plural' needs {keys}"),
                           keys=", ".join(f"'{k}'" for k in ("one", "other") if k not in forms))
            elif forms is not None:
                one, other = (self.translated(forms[key][1], f"'{key}'", source) for key, source
                              in zip(("one", "other"), original.say_plural, strict=True))
                plural = (one, other) if one and other else None
        if "options" in fields and original.options:
            labels = fields["options"][1]
            entries = self.mapping(labels, _all_names(labels), "'options'") or {}
            for key, (option_key, label_node) in entries.items():
                if key not in original.options:
                    self.error(option_key, N_("step '{step}' has no option '{key}'"),
                               step=step.id, key=key)
                    continue
                label = self.translated(label_node, message(
                    # TRANSLATORS: a part of the file, the {what} of other messages
                    N_("the label of option '{key}'"), key=key), original.options[key])
                if label is not None:
                    options[key] = label
            for key in original.options:
                if key not in entries:
                    self.error(labels, N_("the '{language}' translation of step '{step}' has "
                                          "no option '{key}'"),
                               language=code, step=step.id, key=key)
        return StepTexts(say, plural, options)

    def translated(self, node: Node, what: str | Message, original: str) -> str | None:
        """A translated text, with the placeholders of ``original``."""
        text = self.template(node, what, [])
        if text is None:
            return None
        found, expected = _placeholder_list(text), _placeholder_list(original)
        if found != expected:
            self.error(node, N_("{what} must use the placeholders of the original, {expected}, "
                                "not {found}"), what=what, expected=expected or "—",
                       found=found or "—")
            return None
        return text

    def step_ref(
        self, field_: tuple[ScalarNode, Node] | None, steps: set[str], what: str
    ) -> str | None:
        if field_ is None:
            return None
        name = self.identifier(field_[1], what)
        if name is not None and name not in steps:
            self.error(field_[1], N_("{what} names step '{step}', which does not exist"),
                       what=what, step=name)
            return None
        return name

    def step(self, step_id: str, key_node: Node, node: Node, reads: _Reads) -> Step | None:
        # TRANSLATORS: a part of the file, the {what} of other messages
        fields = self.mapping(node, _STEP_KEYS, message(N_("step '{step}'"), step=step_id))
        if fields is None:
            return None
        before = len(self.errors)
        say = self.template(fields["say"][1], "'say'", reads.before) if "say" in fields else None
        plural = self.plural(fields["say_plural"][1], reads) if "say_plural" in fields else None
        if "say" in fields and "say_plural" in fields:
            self.error(fields["say_plural"][0], N_("use either 'say' or 'say_plural', not both"))
        ask = self.ask(fields["ask"][1], reads) if "ask" in fields else Ask(type="none")
        if "say" not in fields and "say_plural" not in fields and "ask" in fields:
            self.error(key_node, N_("step '{step}' asks, so it needs 'say': the question"),
                       step=step_id)
        later = self.later(fields["later"][1]) if "later" in fields else None
        if "later" in fields and ("ask" in fields or "say" in fields
                                  or "say_plural" in fields):
            self.error(fields["later"][0], N_("a step with 'later' neither says nor asks "
                                              "anything; let its 'next' lead to the step that "
                                              "tells the client"))
        if "next" not in fields:
            self.error(key_node, N_("step '{step}' has no 'next'; write 'next: end' to "
                                    "finish the dialogue here"), step=step_id)
            branches: tuple[Branch, ...] | None = None
        else:
            branches = self.branches(fields["next"][1], reads)
        if len(self.errors) > before or ask is None or branches is None:
            return None
        if "later" in fields and later is None:
            return None
        return Step(step_id, say, plural, ask, branches, self.pos(key_node), later)

    def later(self, node: Node) -> ComeBack | None:
        """``later: {at: "HH:MM", goto: step}`` (the step is checked with the others)."""
        fields = self.mapping(node, _LATER_KEYS, "'later'")
        if fields is None:
            return None
        missing = _LATER_KEYS - fields.keys()
        if missing:
            self.error(node, N_("'later' needs {keys}"),
                       keys=", ".join(f"'{k}'" for k in sorted(missing)))
            return None
        at_node = fields["at"][1]
        clock = _CLOCK.match(str(at_node.value)) if isinstance(at_node, ScalarNode) else None
        if clock is None:
            self.error(at_node, N_("'at' must be a time of day such as \"19:00\" (hours "
                                   "00 to 23, in quotes)"))
        elif int(clock[1]) < LATER_EARLIEST_HOUR:
            # Nobody is asked how an exercise went in the night (and the texts that say
            # "at {later.time}" may then put an evening's article before it).
            self.error(at_node, N_("'at' must be between 06:00 and 23:59: I do not come back "
                                   "at night"))
            clock = None
        goto = self.identifier(fields["goto"][1], "'goto'")
        if clock is None or goto is None:
            return None
        return ComeBack(time(int(clock[1]), int(clock[2])), goto, self.pos(fields["goto"][1]))

    def plural(self, node: Node, reads: _Reads) -> PluralText | None:
        fields = self.mapping(node, _PLURAL_KEYS, "'say_plural'")
        if fields is None:
            return None
        missing = _PLURAL_KEYS - fields.keys()
        if missing:
            self.error(node, N_("'say_plural' needs {keys}"),
                       keys=", ".join(f"'{k}'" for k in sorted(missing)))
            return None
        one = self.template(fields["one"][1], "'one'", reads.before)
        other = self.template(fields["other"][1], "'other'", reads.before)
        count = self.variable(fields["count"][1], "'count'")
        if count:
            reads.before.append((count, self.pos(fields["count"][1])))
        if one is None or other is None or count is None:
            return None
        return PluralText(one, other, count)

    def ask(self, node: Node, reads: _Reads) -> Ask | None:
        if not isinstance(node, MappingNode):
            self.error(node, N_("'ask' must be a mapping of keys, such as type: text and "
                                "save: my.answer"))
            return None
        type_node = next((v for k, v in node.value if getattr(k, "value", None) == "type"), None)
        answer_type = type_node.value if isinstance(type_node, ScalarNode) else None
        if type_node is None:
            self.error(node, N_("'ask' needs 'type': one of {types}"),
                       types=", ".join(ANSWER_TYPES))
            return None
        if answer_type not in _ASK_KEYS_BY_TYPE:
            self.error(type_node, N_("unknown answer type '{type}'; expected one of {types}"),
                       type=str(answer_type), types=", ".join(ANSWER_TYPES))
            return None
        common = {"type"} if answer_type == "none" else {"type", "save", "optional"}
        fields = self.mapping(node, common | _ASK_KEYS_BY_TYPE[answer_type],
                              # TRANSLATORS: a part of the file, the {what} of other messages
                              message(N_("'ask' of type {type}"), type=answer_type))
        if fields is None:
            return None
        save = None
        if answer_type != "none":
            if "save" not in fields:
                self.error(node, N_("'ask' needs 'save': the variable that keeps the answer"))
            else:
                save = self.variable(fields["save"][1], "'save'")
        optional = self.boolean(fields["optional"][1], "'optional'") if "optional" in fields \
            else False

        def num(key: str, *, integer: bool = False) -> float | None:
            return self.number(fields[key][1], f"'{key}'", integer=integer) if key in fields \
                else None

        ask = Ask(type=answer_type, save=save, optional=bool(optional))
        if answer_type in ("number", "scale"):
            integer = answer_type == "scale"
            low, high = num("min", integer=integer), num("max", integer=integer)
            if answer_type == "scale":
                low = 1 if low is None else low
                high = 10 if high is None else high
                if high - low + 1 > MAX_SCALE_POINTS:
                    self.error(node, N_("a scale can have at most {count} points"),
                               count=MAX_SCALE_POINTS)
            if low is not None and high is not None and low >= high:
                self.error(node, N_("'min' ({min}) must be below 'max' ({max})"),
                           min=f"{low:g}", max=f"{high:g}")
            safety = num("safety_at_or_below", integer=True)
            if safety is not None and low is not None and high is not None \
                    and not low <= safety < high:
                self.error(fields["safety_at_or_below"][1],
                           N_("'safety_at_or_below' must be from {min} to below {max}"),
                           min=f"{low:g}", max=f"{high:g}")
            ask = Ask(type=answer_type, save=save, optional=bool(optional), min=low, max=high,
                      safety_at_or_below=None if safety is None else int(safety))
        elif answer_type == "text":
            low, high = num("min_length", integer=True), num("max_length", integer=True)
            high = DEFAULT_TEXT_MAX_LENGTH if high is None else high
            if high < 1 or (low is not None and (low < 0 or low > high)):
                self.error(node, N_("lengths must satisfy 0 <= min_length <= max_length, "
                                    "max_length >= 1"))
            ask = Ask(type="text", save=save, optional=bool(optional),
                      min_length=None if low is None else int(low), max_length=int(high))
        elif answer_type == "choice":
            options = self.options(fields.get("options"), node, reads)
            safety_on = self.option_keys(fields["safety_on"][1], options) \
                if "safety_on" in fields and options else frozenset()
            ask = Ask(type="choice", save=save, optional=bool(optional), options=options,
                      safety_on=safety_on)
        return ask

    def options(
        self, field_: tuple[ScalarNode, Node] | None, ask_node: Node, reads: _Reads
    ) -> tuple[Option, ...]:
        if field_ is None:
            self.error(ask_node, N_("a choice needs 'options': a key and a label for each, "
                                    "such as done: \"I did it\""))
            return ()
        node = field_[1]
        entries = self.mapping(node, _all_names(node), "'options'")
        if entries is None:
            return ()
        options = []
        for key, (key_node, label_node) in entries.items():
            if not _OPTION_KEY.match(key):
                self.error(key_node, N_("option key '{key}' must be 1 to 32 lower case "
                                        "letters, digits and _"), key=key)
                continue
            # TRANSLATORS: a part of the file, the {what} of other messages
            label = self.template(label_node, message(N_("the label of option '{key}'"),
                                                      key=key), reads.before)
            if label is not None:
                options.append(Option(key, label))
        if len(entries) < 2:
            self.error(node, N_("a choice needs at least two options"))
        if len(entries) > _MAX_OPTIONS:
            self.error(node, N_("a choice can have at most {count} options"),
                       count=_MAX_OPTIONS)
        return tuple(options)

    def option_keys(self, node: Node, options: tuple[Option, ...]) -> frozenset[str]:
        """``safety_on``: one option key, or a list of them."""
        keys = [o.key for o in options]
        found = set()
        for item in node.value if isinstance(node, SequenceNode) else [node]:
            key = item.value if isinstance(item, ScalarNode) else "…"
            if key in keys:
                found.add(key)
            else:
                self.error(item, N_("unknown key '{key}' in {what}; expected one of: {keys}"),
                           key=key, what="'safety_on'", keys=", ".join(keys))
        return frozenset(found)

    def branches(self, node: Node, reads: _Reads) -> tuple[Branch, ...] | None:
        if isinstance(node, ScalarNode):
            target = self.identifier(node, "'next'")
            return (Branch(goto=target, position=self.pos(node)),) if target else None
        items = node.value if isinstance(node, SequenceNode) else [node]
        branches: list[Branch] = []
        for index, item in enumerate(items):
            branch = self.branch(item, reads)
            if branch is None:
                continue
            is_last = index == len(items) - 1
            if branch.condition is None and not is_last:
                self.error(item, N_("this branch has no 'if', so the branches after it can "
                                    "never be taken"))
            if branch.condition is not None and is_last:
                self.error(item, N_("the last branch of 'next' needs no 'if': it is taken "
                                    "when no condition holds"))
            branches.append(branch)
        if not items:
            self.error(node, N_("'next' is empty"))
        return tuple(branches) if len(branches) == len(items) and items else None

    def branch(self, node: Node, reads: _Reads) -> Branch | None:
        # TRANSLATORS: a part of the file, the {what} of other messages
        fields = self.mapping(node, _BRANCH_KEYS, message(N_("a branch of 'next'")))
        if fields is None:
            return None
        condition = source = None
        if "if" in fields:
            cond_node = fields["if"][1]
            if not isinstance(cond_node, ScalarNode):
                self.error(cond_node, N_("'if' must be a condition such as "
                                         "\"checkin.mood <= 3\""))
                return None
            source = str(cond_node.value)
            try:
                condition = parse_condition(source)
            except ExprError as exc:
                line, column = self.pos(cond_node).line, self.pos(cond_node).column
                quoted = cond_node.style in ("'", '"')
                self.error(Position(self.display, line, column + exc.offset + int(quoted)),
                           N_("condition {condition}: {problem}"), condition=repr(source),
                           problem=exc.message)
                return None
            for name in variables_read(condition):
                reads.after.append((name, self.pos(cond_node)))
        call = self.identifier(fields["call"][1], "'call'") if "call" in fields else None
        if "call" in fields and call is None:
            return None
        if call is not None:
            if "goto" in fields:
                self.error(fields["goto"][0], N_("with 'call', say where to continue with "
                                                 "'then'"))
                return None
            target: str | None = END
            if "then" in fields:
                target = self.identifier(fields["then"][1], "'then'")
        else:
            if "then" in fields:
                self.error(fields["then"][0], N_("'then' goes with 'call'"))
                return None
            if "goto" not in fields:
                self.error(node, N_("a branch needs 'goto' (a step or end) or 'call' "
                                    "(a dialogue)"))
                return None
            target = self.identifier(fields["goto"][1], "'goto'")
        if target is None:
            return None
        where = fields["call"][1] if call is not None else fields["goto"][1]
        return Branch(goto=target, condition=condition, condition_source=source, call=call,
                      position=self.pos(where))


def _placeholder_list(text: str) -> str:
    return ", ".join("{" + name + "}" for name in sorted(set(placeholders(text))))


def _reports_exercise_status(step: Step) -> bool:
    return (step.ask.type == "choice" and step.ask.save == EXERCISE_STATUS
            and tuple(o.key for o in step.ask.options) == EXERCISE_STATUS_KEYS)


def _all_names(node: Node) -> set[str]:
    """Any key is allowed: used for mappings whose keys are ids chosen by the coach."""
    if not isinstance(node, MappingNode):
        return set()
    return {k.value for k, _ in node.value if isinstance(k, ScalarNode)}


# -- checks across steps and files ---------------------------------------------------------


def _check_targets(parsed: _ParsedDialogue, known: set[str], errors: list[DialogueError]) -> None:
    dialogue = parsed.dialogue
    for step in dialogue.steps.values():
        for branch in step.next:
            where = branch.position or step.position
            if branch.goto != END and branch.goto not in dialogue.steps:
                errors.append(DialogueError(where, message(
                    N_("goes to step '{step}', which does not exist in dialogue '{dialogue}'"),
                    step=branch.goto, dialogue=dialogue.id)))
            if branch.call is not None and branch.call not in known:
                errors.append(DialogueError(where, message(
                    N_("calls dialogue '{dialogue}', which does not exist"),
                    dialogue=branch.call)))
        later = step.later
        if later is not None and later.goto not in dialogue.steps:
            errors.append(DialogueError(later.position or step.position, message(
                N_("comes back at step '{step}', which does not exist in dialogue "
                   "'{dialogue}'"), step=later.goto, dialogue=dialogue.id)))


def _successors(dialogue: Dialogue, step_id: str) -> Iterator[str]:
    """The steps that may follow this one: its branches', and where it comes back later."""
    step = dialogue.steps[step_id]
    yield from (b.goto for b in step.next)
    if step.later is not None:
        yield step.later.goto


def _check_reachable(parsed: _ParsedDialogue, errors: list[DialogueError]) -> None:
    dialogue = parsed.dialogue
    seen: set[str] = set()
    todo = [dialogue.start] + ([dialogue.on_missing] if dialogue.on_missing else [])
    while todo:
        step_id = todo.pop()
        if step_id in seen or step_id not in dialogue.steps:
            continue
        seen.add(step_id)
        todo.extend(_successors(dialogue, step_id))
    for step_id, step in dialogue.steps.items():
        if step_id not in seen:
            errors.append(DialogueError(step.position, message(
                N_("step '{step}' can never be reached from the start step '{start}'"),
                step=step_id, start=dialogue.start)))


def _check_silent_loops(parsed: _ParsedDialogue, errors: list[DialogueError]) -> None:
    """Steps that ask nothing are passed through at once: a loop of them would never stop."""
    dialogue = parsed.dialogue
    silent = {i for i, step in dialogue.steps.items() if step.ask.type == "none"}
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(step_id: str, path: list[str]) -> None:
        state[step_id] = 1
        for branch in dialogue.steps[step_id].next:
            target = branch.goto
            if target not in silent or branch.call:
                continue
            if state.get(target) == 1:
                loop = [*path[path.index(target):], target]
                errors.append(DialogueError(dialogue.steps[target].position, message(
                    N_("these steps loop without asking anything: {steps}"),
                    steps=" -> ".join(loop))))
            elif target not in state:
                visit(target, [*path, target])
        state[step_id] = 2

    for step_id in sorted(silent):
        if step_id not in state:
            visit(step_id, [step_id])


def _check_call_cycles(parsed: dict[str, _ParsedDialogue], errors: list[DialogueError]) -> None:
    calls = {
        i: {(b.call, b.position) for s in p.dialogue.steps.values() for b in s.next if b.call}
        for i, p in parsed.items()
    }
    for origin in sorted(calls):
        todo = [(callee, where, [origin]) for callee, where in calls[origin]]
        seen: set[str] = set()
        while todo:
            callee, where, path = todo.pop()
            if callee == origin:
                errors.append(DialogueError(where or parsed[origin].id_position, message(
                    N_("dialogues call each other in a circle: {dialogues}"),
                    dialogues=" -> ".join([*path, callee]))))
                break
            if callee in seen or callee not in calls:
                continue
            seen.add(callee)
            todo.extend((c, where, [*path, callee]) for c, _ in calls[callee])


class _Flow:
    """Which variables are written on every path, so no text or condition reads a hole."""

    def __init__(self, parsed: dict[str, _ParsedDialogue]) -> None:
        self.parsed = parsed
        self.exit_cache: dict[str, frozenset[str]] = {}
        self.in_progress: set[str] = set()

    def analyse(self, dialogue_id: str) -> tuple[dict[str, frozenset[str]], frozenset[str]]:
        """Return, per step, what is surely written on entry; and what is surely written at end."""
        dialogue = self.parsed[dialogue_id].dialogue
        initial = frozenset(BUILTIN_VARIABLES | dialogue.requires | dialogue.fresh)
        entry: dict[str, frozenset[str]] = {dialogue.start: initial}
        if dialogue.on_missing:
            entry[dialogue.on_missing] = initial
        # Coming back later, the dialogue starts anew at that step.
        for step in dialogue.steps.values():
            if step.later is not None:
                entry[step.later.goto] = initial
        at_end: frozenset[str] | None = None
        changed = True
        while changed:
            changed = False
            for step_id, step in dialogue.steps.items():
                if step_id not in entry:
                    continue
                out = entry[step_id] | step.writes
                for branch in step.next:
                    edge = out | self.exit(branch.call) if branch.call else out
                    if branch.goto == END:
                        at_end = edge if at_end is None else at_end & edge
                    elif branch.goto in dialogue.steps:
                        old = entry.get(branch.goto)
                        new = edge if old is None else old & edge
                        if new != old:
                            entry[branch.goto] = new
                            changed = True
        return entry, at_end if at_end is not None else initial

    def exit(self, dialogue_id: str) -> frozenset[str]:
        if dialogue_id not in self.parsed or dialogue_id in self.in_progress:
            return frozenset()
        if dialogue_id not in self.exit_cache:
            self.in_progress.add(dialogue_id)
            self.exit_cache[dialogue_id] = self.analyse(dialogue_id)[1]
            self.in_progress.discard(dialogue_id)
        return self.exit_cache[dialogue_id]


def _check_reads(flow: _Flow, parsed: _ParsedDialogue, errors: list[DialogueError]) -> None:
    dialogue = parsed.dialogue
    entry, _ = flow.analyse(dialogue.id)
    for step_id, step in dialogue.steps.items():
        if step_id not in entry:
            continue  # unreachable, reported elsewhere
        written = entry[step_id]
        after = written | step.writes
        for reads, available in ((parsed.reads[step_id].before, written),
                                 (parsed.reads[step_id].after, after)):
            for name, where in reads:
                if name not in available:
                    errors.append(DialogueError(where, _hole_message(name)))


def _hole_message(name: str) -> Message:
    return message(N_("'{variable}' is read here, but not every path to this point saves it; "
                      "save it in an earlier step, or list it under 'requires' if another "
                      "dialogue saves it"), variable=name)


def _check_requires(
    parsed: dict[str, _ParsedDialogue], errors: list[DialogueError]
) -> None:
    saved = {
        step.ask.save
        for p in parsed.values()
        for step in p.dialogue.steps.values()
        if step.ask.save
    }
    for p in parsed.values():
        for name in sorted(p.dialogue.requires - saved - BUILTIN_VARIABLES - STARTED_WITH):
            errors.append(DialogueError(p.requires_position, message(
                N_("requires '{variable}', but no dialogue saves it"), variable=name)))


def dialogue_files(path: Path) -> list[Path]:
    """The dialogue files under ``path`` (not the programmes, in their own folder)."""
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file()
                  and p.relative_to(path).parts[0] != PROGRAMMES_DIR)


def check_dialogues(
    path: Path, *, display: Callable[[Path], str] = str
) -> tuple[DialogueSet | None, list[DialogueError]]:
    """Load and validate every dialogue under `path`: the set, or None and every error."""
    errors: list[DialogueError] = []
    if not path.exists():
        return None, [DialogueError(Position(str(path), 1, 1),
                                    message(N_("no such file or directory")))]
    files = dialogue_files(path)
    if not files:
        return None, [DialogueError(Position(str(path), 1, 1),
                                    message(N_("no dialogue files (*.yaml) here")))]
    parsed: dict[str, _ParsedDialogue] = {}
    for file in files:
        parser = _FileParser(file, display(file))
        result = parser.parse()
        errors.extend(parser.errors)
        if result is None:
            continue
        first = parsed.get(result.dialogue.id)
        if first is not None:
            errors.append(DialogueError(result.id_position, message(
                N_("dialogue id '{dialogue}' is already used by {path}"),
                dialogue=result.dialogue.id, path=first.dialogue.path)))
            continue
        parsed[result.dialogue.id] = result
    known = set(parsed)
    flow = _Flow(parsed)
    for p in parsed.values():
        _check_targets(p, known, errors)
        _check_reachable(p, errors)
        _check_reads(flow, p, errors)
        _check_silent_loops(p, errors)
    _check_requires(parsed, errors)
    _check_call_cycles(parsed, errors)
    programmes: dict[str, Programme] = {}
    if path.is_dir():
        exercises = (i for i, p in parsed.items()
                     if p.dialogue.kind == "exercise" and not p.dialogue.requires)
        programmes, problems = check_programmes(path, exercises, display=display)
        errors.extend(DialogueError(p.position, verbatim(p.message)) for p in problems)
    if errors:
        return None, sorted(set(errors))
    return DialogueSet({i: p.dialogue for i, p in parsed.items()}, programmes), []


def parse_dialogue_file(raw: bytes, display: str) -> tuple[Dialogue | None, list[DialogueError]]:
    """One file on its own, without the checks across files (for the gettext extractor)."""
    parser = _FileParser(Path(display), display, raw)
    parsed = parser.parse()
    return (parsed.dialogue if parsed else None), parser.errors


def load_dialogues(path: Path) -> DialogueSet:
    """Load a whole valid set, or raise DialogueLoadError with every problem found."""
    dialogues, errors = check_dialogues(path)
    if dialogues is None:
        raise DialogueLoadError(errors)
    return dialogues


def texts_of(dialogue: Dialogue) -> Iterable[tuple[int, str | tuple[str, str]]]:
    """Every translatable text of a dialogue with its line: used by the gettext extractor.
    A dialogue written in one language (``language:``) has none."""
    if dialogue.language is not None:
        return
    yield 1, dialogue.title
    for step in dialogue.steps.values():
        if step.say:
            yield step.position.line, step.say
        if step.say_plural:
            yield step.position.line, (step.say_plural.one, step.say_plural.other)
        for option in step.ask.options:
            yield step.position.line, option.label


#: Limits of a dialogue a coach uploads (bytes, steps).
MAX_UPLOAD_BYTES = 64 * 1024
MAX_UPLOAD_STEPS = 60


def too_large(display: str) -> DialogueError:
    return DialogueError(Position(display, 1, 1), message(
        N_("the file is larger than {size} KB"), size=MAX_UPLOAD_BYTES // 1024))


def check_uploaded(raw: bytes, display: str, *, reserved: Collection[str] = (),
                   languages: Collection[str] | None = None
                   ) -> tuple[Dialogue | None, list[DialogueError]]:
    """A dialogue a coach sent as a file, on its own: the same checks as ``check_dialogues``
    for one file, and more, since it comes from outside. It must be an exercise, declare its
    language, need nothing from other dialogues (no ``requires``, no ``call``), keep to the
    size limits, use no YAML anchors or aliases (which can make a small file huge), and not
    take the id of a dialogue in ``reserved`` (the platform's); it is written and translated
    only in ``languages`` (when given: the bot's). Errors are
    ``display:line:column: message``."""
    where = Position(display, 1, 1)
    if len(raw) > MAX_UPLOAD_BYTES:
        return None, [too_large(display)]
    try:
        for event in yaml.parse(raw.decode("utf-8"), Loader=yaml.SafeLoader):
            anchor = getattr(event, "anchor", None)
            if isinstance(event, yaml.AliasEvent) or anchor is not None:
                mark = event.start_mark
                return None, [DialogueError(
                    Position(display, mark.line + 1, mark.column + 1) if mark else where,
                    message(N_("anchors and aliases (& and *) are not allowed here; write "
                               "each text out")))]
    except (UnicodeDecodeError, yaml.YAMLError):
        pass  # the parser below says where and why
    parser = _FileParser(Path(display), display, raw, languages)
    parsed = parser.parse()
    errors = list(parser.errors)
    if parsed is None:
        return None, sorted(errors)
    dialogue = parsed.dialogue
    if dialogue.id in reserved:
        errors.append(DialogueError(parsed.id_position, message(
            N_("the id '{dialogue}' belongs to one of the bot's own dialogues; choose "
               "another"), dialogue=dialogue.id)))
    if dialogue.kind != "exercise":
        errors.append(DialogueError(where, message(
            N_("a dialogue you send must be an exercise: add 'kind: exercise'"))))
    if dialogue.language is None:
        errors.append(DialogueError(where, message(
            N_("say which language it is written in, for example 'language: hr'"))))
    if dialogue.requires:
        errors.append(DialogueError(parsed.requires_position, message(
            N_("a dialogue you send cannot require variables from other dialogues"))))
    if len(dialogue.steps) > MAX_UPLOAD_STEPS:
        errors.append(DialogueError(where, message(
            N_("a dialogue you send can have at most {count} steps"), count=MAX_UPLOAD_STEPS)))
    single = {dialogue.id: parsed}
    _check_targets(parsed, set(), errors)  # no other dialogue may be called
    _check_reachable(parsed, errors)
    _check_reads(_Flow(single), parsed, errors)
    _check_silent_loops(parsed, errors)
    if errors:
        return None, sorted(set(errors))
    return dialogue, []
