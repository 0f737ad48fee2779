"""The YAML dialogue language: the typed model, its loader and validator."""

from bot.dialogue.loader import DialogueError, DialogueLoadError, check_dialogues, load_dialogues
from bot.dialogue.model import Ask, Branch, Dialogue, DialogueSet, Option, PluralText, Step

__all__ = [
    "Ask",
    "Branch",
    "Dialogue",
    "DialogueError",
    "DialogueLoadError",
    "DialogueSet",
    "Option",
    "PluralText",
    "Step",
    "check_dialogues",
    "load_dialogues",
]
