"""The condition language of dialogues: parsed once at load time, never `eval`-ed.

Grammar (keywords are lower case):
    expr    := and_ ("or" and_)*
    and_    := not_ ("and" not_)*
    not_    := "not" not_ | compare
    compare := atom (("==" | "!=" | "<" | "<=" | ">" | ">=") atom)?
    atom    := NUMBER | STRING | "true" | "false" | "null" | VARIABLE | "(" expr ")"
A VARIABLE is a dotted name such as `checkin.mood`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from bot.dialogue.messages import N_, Message, message

Value = str | int | float | bool | None
CompareOp = Literal["==", "!=", "<", "<=", ">", ">="]

VARIABLE_PATTERN = r"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*"
_VARIABLE = re.compile(VARIABLE_PATTERN + r"\Z")
_TOKEN = re.compile(
    r"""\s*(?:
        (?P<number>-?\d+(?:\.\d+)?)
      | (?P<string>"[^"\\]*"|'[^'\\]*')
      | (?P<op>==|!=|<=|>=|<|>|=|\(|\))
      | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
    )""",
    re.VERBOSE,
)
_KEYWORDS = {"and", "or", "not", "true", "false", "null"}


@dataclass(frozen=True)
class Literal_:
    value: Value


@dataclass(frozen=True)
class Var:
    name: str


@dataclass(frozen=True)
class Not:
    operand: Expr


@dataclass(frozen=True)
class BoolOp:
    op: Literal["and", "or"]
    operands: tuple[Expr, ...]


@dataclass(frozen=True)
class Compare:
    op: CompareOp
    left: Expr
    right: Expr


Expr = Literal_ | Var | Not | BoolOp | Compare


class ExprError(ValueError):
    """A condition that does not parse; `offset` is the 0-based character where it went wrong."""

    def __init__(self, message: Message, offset: int) -> None:
        super().__init__(str(message))
        self.message = message
        self.offset = offset


@dataclass(frozen=True)
class _Token:
    kind: str
    text: str
    offset: int


def _tokenize(source: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos = 0
    while pos < len(source):
        if source[pos:].strip() == "":
            break
        match = _TOKEN.match(source, pos)
        if match is None or match.lastgroup is None:
            start = len(source) - len(source[pos:].lstrip())
            raise ExprError(message(N_("unexpected character {character}"),
                                    character=repr(source[start])), start)
        kind = match.lastgroup
        tokens.append(_Token(kind, match.group(kind), match.start(kind)))
        pos = match.end()
    return tokens


class _Parser:
    def __init__(self, source: str) -> None:
        self.source = source
        self.tokens = _tokenize(source)
        self.index = 0

    def peek(self) -> _Token | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def take(self, text: str) -> bool:
        token = self.peek()
        if token is not None and token.text == text and token.kind in ("op", "name"):
            self.index += 1
            return True
        return False

    def error(self, problem: Message) -> ExprError:
        token = self.peek()
        return ExprError(problem, token.offset if token else len(self.source))

    def parse(self) -> Expr:
        if not self.tokens:
            raise ExprError(message(N_("the condition is empty")), 0)
        expr = self.parse_or()
        if self.peek() is not None:
            raise self.error(message(N_("unexpected {token}"),
                                     token=repr(self.peek().text)))  # type: ignore[union-attr]
        return expr

    def parse_or(self) -> Expr:
        operands = [self.parse_and()]
        while self.take("or"):
            operands.append(self.parse_and())
        return operands[0] if len(operands) == 1 else BoolOp("or", tuple(operands))

    def parse_and(self) -> Expr:
        operands = [self.parse_not()]
        while self.take("and"):
            operands.append(self.parse_not())
        return operands[0] if len(operands) == 1 else BoolOp("and", tuple(operands))

    def parse_not(self) -> Expr:
        if self.take("not"):
            return Not(self.parse_not())
        return self.parse_compare()

    def parse_compare(self) -> Expr:
        left = self.parse_atom()
        token = self.peek()
        if token is not None and token.text in ("==", "!=", "<", "<=", ">", ">="):
            self.index += 1
            op: CompareOp = token.text  # type: ignore[assignment]
            return Compare(op, left, self.parse_atom())
        if token is not None and token.text == "=":
            raise self.error(message(N_("use '==' to compare")))
        return left

    def parse_atom(self) -> Expr:
        token = self.peek()
        if token is None:
            raise self.error(message(N_("the condition ends too early")))
        self.index += 1
        if token.kind == "number":
            number = float(token.text) if "." in token.text else int(token.text)
            return Literal_(number)
        if token.kind == "string":
            return Literal_(token.text[1:-1])
        if token.text == "(":
            inner = self.parse_or()
            if not self.take(")"):
                raise self.error(message(N_("missing ')'")))
            return inner
        if token.kind == "name":
            if token.text in ("true", "false"):
                return Literal_(token.text == "true")
            if token.text == "null":
                return Literal_(None)
            if token.text in _KEYWORDS:
                raise ExprError(message(N_("{token} needs something before it"),
                                        token=repr(token.text)), token.offset)
            if not _VARIABLE.match(token.text):
                raise ExprError(message(N_("variable {name} must be lower case, like "
                                           "checkin.mood"), name=repr(token.text)),
                                token.offset)
            return Var(token.text)
        raise ExprError(message(N_("unexpected {token}"), token=repr(token.text)), token.offset)


def parse_condition(source: str) -> Expr:
    """Parse a condition, or raise ExprError with the offset of the problem."""
    return _Parser(source).parse()


def variables_read(expr: Expr) -> set[str]:
    match expr:
        case Var(name):
            return {name}
        case Not(operand):
            return variables_read(operand)
        case BoolOp(_, operands):
            return set().union(*(variables_read(o) for o in operands))
        case Compare(_, left, right):
            return variables_read(left) | variables_read(right)
    return set()


def is_valid_variable(name: str) -> bool:
    return _VARIABLE.match(name) is not None
