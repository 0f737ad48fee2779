"""Plain data going in and out of the engine: state, turns, replies."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, time
from typing import Any, Literal

from bot.dialogue.expr import Value
from bot.engine.crisis import CrisisSignal
from bot.i18n import Translator

Command = Literal["cancel", "back", "skip"]


@dataclass(frozen=True)
class Frame:
    """Where one dialogue stands. A frame under the top one waits for a called dialogue,
    and its `step` is where it resumes (or "end")."""

    dialogue: str
    step: str
    content_hash: str
    trail: tuple[str, ...] = ()  # the steps answered before, for /back

    def at(self, step: str, *, remember: bool = False) -> Frame:
        trail = (*self.trail, self.step)[-20:] if remember else self.trail
        return Frame(self.dialogue, step, self.content_hash, trail)


@dataclass(frozen=True)
class ConversationState:
    stack: tuple[Frame, ...] = ()
    variables: Mapping[str, Value] = field(default_factory=dict)
    # The safety question was asked and not answered yet (see runner.handle).
    safety_asked: bool = False
    # It was asked about the answer to the top frame's step, before the dialogue went on: a
    # "no" goes on from that step rather than showing it again.
    go_on: bool = False
    # What it asked about: danger (abuse, threats, harm to others), else thoughts of ending
    # one's life; asked again, it keeps to that.
    safety_danger: bool = False

    @property
    def active(self) -> bool:
        return bool(self.stack)

    def to_dict(self) -> dict[str, Any]:
        return {
            "stack": [
                {"dialogue": f.dialogue, "step": f.step, "hash": f.content_hash,
                 "trail": list(f.trail)}
                for f in self.stack
            ],
            "variables": dict(self.variables),
        } | ({"safety_asked": True} if self.safety_asked else {}) \
            | ({"go_on": True} if self.go_on else {}) \
            | ({"safety_danger": True} if self.safety_danger else {})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> ConversationState:
        if not data:
            return cls()
        stack = tuple(
            Frame(str(f["dialogue"]), str(f["step"]), str(f.get("hash", "")),
                  tuple(str(s) for s in f.get("trail", ())))
            for f in data.get("stack", ())
        )
        return cls(stack, dict(data.get("variables", {})), bool(data.get("safety_asked")),
                   bool(data.get("go_on")), bool(data.get("safety_danger")))


@dataclass(frozen=True)
class Turn:
    """One incoming message: free text, a pressed button's data, or a command."""

    text: str | None = None
    button: str | None = None
    command: Command | None = None
    # False for text that is not an answer (a caption, an edit, a command's argument): it is
    # only checked for a crisis, and the open question stays open.
    answers: bool = True
    # False for a coach's words to or about a client (a message, a note): not a client's own
    # words, so not checked for a crisis of theirs.
    screened: bool = True


@dataclass(frozen=True)
class Context:
    """What the front end knows about the user and the moment, for this turn."""

    translator: Translator
    today: date
    name: str = ""
    country: str | None = None  # for the help lines offered in a crisis
    # The client's local time of day now: a ``later`` step decides today or tomorrow by it.
    clock: time = time(0)
    # Values the platform computes, such as streak.days: readable, never saved.
    provided: Mapping[str, Value] = field(default_factory=dict)
    # False until the client agreed to what the bot keeps: none of their answers is kept.
    consented: bool = True


@dataclass(frozen=True)
class Button:
    label: str
    data: str


@dataclass(frozen=True)
class Reply:
    text: str
    buttons: tuple[Button, ...] = ()

    def to_payload(self) -> dict[str, Any]:
        """The outbox form of a reply: plain JSON that a sender turns into a message."""
        payload: dict[str, Any] = {"text": self.text}
        if self.buttons:
            payload["buttons"] = [{"label": b.label, "data": b.data} for b in self.buttons]
        return payload

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> Reply:
        return cls(str(payload["text"]), tuple(
            Button(str(b["label"]), str(b["data"])) for b in payload.get("buttons", ())
        ))


@dataclass(frozen=True)
class SavedAnswer:
    dialogue: str
    step: str
    variable: str
    value: Value


@dataclass(frozen=True)
class Later:
    """A dialogue to come back to on its own: at ``step``, on the client's local ``on`` date
    at ``at`` o'clock (the platform plans it)."""

    dialogue: str
    step: str
    on: date
    at: time


@dataclass(frozen=True)
class Outcome:
    state: ConversationState
    replies: tuple[Reply, ...]
    saved: tuple[SavedAnswer, ...] = ()
    finished: tuple[str, ...] = ()  # dialogues that reached their end in this turn
    crisis: bool = False  # the urgent path was taken: coaching stopped, help lines shown
    signal: CrisisSignal | None = None  # what the detector said of this message, if anything
    # The client answered "no" to the safety question, or wrote past it: no sign of crisis,
    # but no return to coaching either (a pause after a crisis stays).
    safety_answered: bool = False
    # Free text that answered nothing: no question was open (nor the safety question). The
    # front end may offer to keep it (a note for the client's next session).
    unplaced: bool = False
    later: Later | None = None  # a ``later`` step was passed: come back then
