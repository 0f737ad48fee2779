"""Running dialogues: plain functions over plain data, no I/O."""

from bot.engine.runner import cancel, handle, resume, start, step_token
from bot.engine.state import (
    Button,
    Context,
    ConversationState,
    Frame,
    Outcome,
    Reply,
    SavedAnswer,
    Turn,
)

__all__ = [
    "Button",
    "Context",
    "ConversationState",
    "Frame",
    "Outcome",
    "Reply",
    "SavedAnswer",
    "Turn",
    "cancel",
    "handle",
    "resume",
    "start",
    "step_token",
]
