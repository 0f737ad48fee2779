"""Running dialogues: plain functions over plain data, no I/O."""

from bot.engine.crisis import detect_crisis, helplines_for
from bot.engine.places import country_for_timezone, find_time_zones
from bot.engine.runner import cancel, handle, resume, start, step_token
from bot.engine.state import (
    Button,
    Context,
    ConversationState,
    Frame,
    Later,
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
    "Later",
    "Outcome",
    "Reply",
    "SavedAnswer",
    "Turn",
    "cancel",
    "handle",
    "resume",
    "start",
    "step_token",
    "warm_up",
]


def warm_up() -> None:
    """Read and compile now what the first messages after a start would otherwise wait
    for: the crisis phrases and help lines, the time zone tables (about 0.2 s)."""
    detect_crisis("warm up")
    helplines_for(country_for_timezone("Europe/Rome"))
    find_time_zones("Rome")
