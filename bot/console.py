"""The same dialogues in a terminal: for coaches trying their scripts, and for demos.

Reads lines from standard input, so a whole conversation can be scripted:
`printf 'Run a 10k\\n...' | coachbot chat --dialogue goal_setting`.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from typing import TextIO

from bot.dialogue.model import DialogueSet
from bot.engine import Context, ConversationState, Outcome, Reply, Turn, handle, resume, start
from bot.engine.crisis import default_country_for_locale
from bot.engine.state import Command
from bot.i18n import Translator

COMMANDS: dict[str, Command] = {"/cancel": "cancel", "/back": "back", "/skip": "skip"}
QUIT = ("/quit", "/exit")


def render_reply(reply: Reply) -> str:
    lines = [reply.text]
    labels = [b.label for b in reply.buttons]
    if labels and all(label.isdigit() for label in labels):
        lines.append("  " + " · ".join(labels))
    else:
        lines.extend(f"  {index}. {label}" for index, label in enumerate(labels, start=1))
    return "\n".join(lines)


def to_turn(line: str, shown: tuple[Reply, ...]) -> Turn:
    """A typed line as a turn: a command, a button (by its label or number), or text."""
    text = line.strip()
    if text.lower() in COMMANDS:
        return Turn(command=COMMANDS[text.lower()])
    buttons = next((r.buttons for r in reversed(shown) if r.buttons), ())
    for button in buttons:
        if text.casefold() == button.label.casefold():
            return Turn(button=button.data)
    if text.isdigit() and 1 <= int(text) <= len(buttons) and not buttons[0].label.isdigit():
        return Turn(button=buttons[int(text) - 1].data)
    return Turn(text=line.rstrip("\n"))


class ConsoleChat:
    """One person talking to the engine through a pair of text streams."""

    def __init__(self, dialogues: DialogueSet, translator: Translator, *, name: str,
                 output: TextIO, today: date | None = None) -> None:
        self.dialogues = dialogues
        self.context = Context(translator=translator, today=today or date.today(), name=name,
                               country=default_country_for_locale(translator.locale))
        self.output = output

    def show(self, outcome: Outcome) -> None:
        for reply in outcome.replies:
            self.output.write(render_reply(reply) + "\n\n")
        self.output.flush()

    def run(self, state: ConversationState, dialogue_id: str | None,
            lines: Iterator[str]) -> Iterator[Outcome]:
        """Yield each outcome (for the caller to keep) until the dialogue ends or input does."""
        if dialogue_id is not None:
            outcome = start(self.dialogues, state, dialogue_id, self.context)
        else:
            outcome = resume(self.dialogues, state, self.context)
        self.show(outcome)
        yield outcome
        while outcome.state.active:
            line = next(lines, None)
            if line is None or line.strip().lower() in QUIT:
                return
            outcome = handle(self.dialogues, outcome.state, to_turn(line, outcome.replies),
                             self.context)
            self.show(outcome)
            yield outcome
