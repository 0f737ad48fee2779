"""Evaluating parsed conditions against a user's variables. Never raises: a comparison
that makes no sense (a missing answer, text against a number) is simply false."""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

from bot.dialogue.expr import BoolOp, Compare, Expr, Literal_, Not, Value, Var

_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq, "!=": operator.ne,
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}


def evaluate(expr: Expr, variables: Mapping[str, Value]) -> bool:
    return bool(_value(expr, variables))


def _value(expr: Expr, variables: Mapping[str, Value]) -> Value:
    match expr:
        case Literal_(value):
            return value
        case Var(name):
            return variables.get(name)
        case Not(operand):
            return not _value(operand, variables)
        case BoolOp("and", operands):
            return all(_value(o, variables) for o in operands)
        case BoolOp(_, operands):
            return any(_value(o, variables) for o in operands)
        case Compare(op, left, right):
            return _compare(op, _value(left, variables), _value(right, variables))
    return None


def _is_number(value: Value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _compare(op: str, left: Value, right: Value) -> bool:
    if op in ("==", "!="):
        same = left == right and (_is_number(left) == _is_number(right))
        return same if op == "==" else not same
    comparable = (_is_number(left) and _is_number(right)) or (
        isinstance(left, str) and isinstance(right, str)
    )
    return comparable and _OPERATORS[op](left, right)
