"""The messages of the dialogue language (its validator's errors), kept apart from any
language: the front end that knows the reader translates them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


def N_(message: str) -> str:
    """Mark a message for extraction (as ``bot.i18n.N_``, which this package may not import):
    it is translated where it is shown, never here."""
    return message


def _same(message: str) -> str:
    return message


@dataclass(frozen=True)
class Message:
    """A message of the dialogue language, kept apart from its language: an English message
    id marked with ``N_`` and its named values (a value may itself be a message). ``str``
    gives the English text; the front end that knows the reader renders it in theirs."""

    id: str
    args: tuple[tuple[str, str | int | Message], ...] = ()

    def render(self, gettext: Callable[[str], str] = _same,
               wrap: Callable[[str], str] = _same) -> str:
        """The message in the language of ``gettext``; each value from the file (a key, a
        step id, a line number) through ``wrap``, so it cannot turn a right-to-left line."""
        values = {k: v.render(gettext, wrap) if isinstance(v, Message) else wrap(str(v))
                  for k, v in self.args}
        return gettext(self.id).format(**values)

    def __str__(self) -> str:
        return self.render()


def message(message_id: str, **args: str | int | Message) -> Message:
    return Message(message_id, tuple(args.items()))


def verbatim(text: str) -> Message:
    """A text that is not translated (a problem reported by another library, say)."""
    return Message("{text}", (("text", text),))
