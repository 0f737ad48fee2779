"""The same dialogues in a terminal: for coaches trying their scripts, and for demos.

Reads lines from standard input, so a whole conversation can be scripted:
`printf 'Run a 10k\\n...' | coachbot chat --dialogue goal_setting`. The conversation lives in
the same store as the bot's, so a chat stopped halfway continues where it stood.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import TextIO

from bot.coaching.conversation import (
    Action,
    Resume,
    Start,
    context_for,
    converse,
    declined_consent,
)
from bot.dialogue.model import DialogueSet
from bot.engine import Outcome, Reply, Turn
from bot.engine.runner import is_sos, sos_reply
from bot.engine.state import Command
from bot.store import Store
from bot.store import Turn as StoreTurn

CONSOLE_USER_ID = 0  # the terminal's one user; Telegram ids are positive
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


async def chat(store: Store, dialogues: DialogueSet, *, dialogue_id: str | None,
               default_dialogue: str, locale: str | None, name: str | None,
               lines: Iterator[str], output: TextIO, fallback_name: str = "") -> bool:
    """Talk until the conversation ends (True) or the input does (False)."""

    def show(outcome: Outcome) -> None:
        for reply in outcome.replies:
            output.write(render_reply(reply) + "\n\n")
        output.flush()

    async def opening(t: StoreTurn) -> Outcome:
        if name or not t.user.first_name:
            t.user.first_name = name or fallback_name
        if locale:
            t.user.locale = locale
        if dialogue_id is not None and dialogue_id != default_dialogue:
            # Whoever picks a dialogue at the terminal tries it on their own machine: their
            # answers are kept as after consent (the onboarding asks, as on Telegram).
            t.user.consent_at = t.user.consent_at or datetime.now(UTC)
        active = bool(t.state and t.state.get("stack"))
        action: Action = (Start(dialogue_id) if dialogue_id else
                          Resume() if active else Start(default_dialogue))
        return await converse(t, dialogues, action, datetime.now(UTC))

    outcome = await store.run_turn(CONSOLE_USER_ID, opening)
    assert outcome is not None  # no update id, so never a duplicate
    show(outcome)
    while outcome.state.active or outcome.state.safety_asked:
        line = next(lines, None)
        if line is None or line.strip().lower() in QUIT:
            return False
        if is_sos(line):
            user = await store.get_user(CONSOLE_USER_ID)
            assert user is not None
            output.write(render_reply(sos_reply(await context_for(
                None, user, datetime.now(UTC)), outcome.state)) + "\n\n")
            continue
        turn = to_turn(line, outcome.replies)

        async def answer(t: StoreTurn, turn: Turn = turn) -> Outcome:
            return await converse(t, dialogues, turn, datetime.now(UTC))

        next_outcome = await store.run_turn(CONSOLE_USER_ID, answer)
        assert next_outcome is not None
        outcome = next_outcome
        show(outcome)
        if declined_consent(outcome):
            await store.erase_user(CONSOLE_USER_ID)  # as the bot promised: nothing is kept
    return True
