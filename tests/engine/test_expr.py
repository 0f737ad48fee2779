from __future__ import annotations

import pytest

from bot.dialogue.expr import ExprError, parse_condition, variables_read
from bot.engine.conditions import evaluate


@pytest.mark.parametrize(("source", "variables", "expected"), [
    ("checkin.mood <= 3", {"checkin.mood": 2}, True),
    ("checkin.mood <= 3", {"checkin.mood": 4}, False),
    ("checkin.mood <= 3", {}, False),
    ("not checkin.done", {"checkin.done": False}, True),
    ("a == 'x' or b > 1.5", {"a": "y", "b": 2}, True),
    ("a == 'x' and b > 1.5", {"a": "x", "b": 1}, False),
    ("(a or b) and not c", {"a": True, "c": False}, True),
    ("a == null", {}, True),
    ("a != null", {"a": 0}, True),
    ("a > 'b'", {"a": 3}, False),
    ("a == 1", {"a": True}, False),
    ('goal.status == "done"', {"goal.status": "done"}, True),
    ("true", {}, True),
])
def test_evaluate(source: str, variables: dict[str, object], expected: bool) -> None:
    assert evaluate(parse_condition(source), variables) is expected  # type: ignore[arg-type]


@pytest.mark.parametrize(("source", "offset", "message"), [
    ("", 0, "empty"),
    ("a = 1", 2, "use '=='"),
    ("a >", 3, "ends too early"),
    ("(a > 1", 6, "missing ')'"),
    ("a > 1 b", 6, "unexpected 'b'"),
    ("Mood > 1", 0, "lower case"),
    ("a and or b", 6, "needs something before it"),
    ("__import__('os')", 10, "unexpected '('"),
    ("a @ b", 2, "unexpected character '@'"),
])
def test_parse_errors_point_at_the_problem(source: str, offset: int, message: str) -> None:
    with pytest.raises(ExprError) as raised:
        parse_condition(source)
    assert raised.value.offset == offset
    assert message in str(raised.value)


def test_variables_read() -> None:
    assert variables_read(parse_condition("a.b > 1 and not (c == d.e)")) == {"a.b", "c", "d.e"}
