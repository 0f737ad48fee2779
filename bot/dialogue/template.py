"""Placeholders in dialogue texts: `{name}`, `{goal.title}`; `{{` and `}}` for literal braces.

Values are put in once and never read again as a template, so a client who types `{name}`
sees exactly what they typed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import lru_cache

from bot.dialogue.expr import is_valid_variable
from bot.dialogue.messages import N_, Message, message

_PIECE = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")


class TemplateError(ValueError):
    def __init__(self, message: Message) -> None:
        super().__init__(str(message))
        self.message = message


@lru_cache(maxsize=8192)
def placeholders(text: str) -> tuple[str, ...]:
    """The variable names a text uses, in order; TemplateError on a malformed placeholder."""
    names: list[str] = []
    for match in _PIECE.finditer(text):
        piece = match.group(0)
        if piece in ("{{", "}}"):
            continue
        name = match.group(1)
        if name is None:
            raise TemplateError(message(N_("a lone '{brace}' at character {position}; write "
                                           "it twice for a literal brace"),
                                        brace=piece, position=match.start() + 1))
        if not is_valid_variable(name.strip()):
            raise TemplateError(message(N_("'{name}' between braces is not a variable name "
                                           "like goal.title"), name=name))
        names.append(name.strip())
    return tuple(names)


def render(
    text: str, values: Mapping[str, str], wrap: Callable[[str], str] = lambda value: value
) -> str:
    """Fill the placeholders of a text checked by `placeholders`; missing values become ''."""

    def replace(match: re.Match[str]) -> str:
        piece = match.group(0)
        if piece == "{{":
            return "{"
        if piece == "}}":
            return "}"
        name = (match.group(1) or "").strip()
        value = values.get(name, "")
        return wrap(value) if value else value

    return _PIECE.sub(replace, text)
