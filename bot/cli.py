"""The `coachbot` command."""

from __future__ import annotations

import argparse
import getpass
import sys
from collections.abc import Sequence
from pathlib import Path

from bot.config import ConfigError, Settings, load_settings
from bot.dialogue import check_dialogues
from bot.dialogue.model import DialogueSet
from bot.engine import ConversationState
from bot.i18n import SUPPORTED_LOCALES, translator_for

DEFAULT_CHAT_DIALOGUE = "onboarding"


def _settings() -> Settings:
    try:
        return load_settings()
    except ConfigError as exc:
        for problem in exc.problems:
            print(f"coachbot: {problem}", file=sys.stderr)
        raise SystemExit(2) from None


def _load(path: Path) -> DialogueSet:
    dialogues, errors = check_dialogues(path)
    if dialogues is None:
        for error in errors:
            print(error, file=sys.stderr)
        print(f"coachbot: {len(errors)} problem(s) in the dialogues; nothing was loaded.",
              file=sys.stderr)
        raise SystemExit(1)
    return dialogues


def cmd_validate(args: argparse.Namespace) -> int:
    path = Path(args.path) if args.path else Path("dialogues")
    dialogues, errors = check_dialogues(path)
    for error in errors:
        print(error)
    if dialogues is None:
        print(f"{len(errors)} problem(s) found; these dialogues would not be loaded.",
              file=sys.stderr)
        return 1
    steps = sum(len(d.steps) for d in dialogues.dialogues.values())
    print(f"ok: {len(dialogues.dialogues)} dialogue(s), {steps} steps")
    return 0


def cmd_chat(args: argparse.Namespace) -> int:
    from bot.console import ConsoleChat

    settings = _settings()
    dialogues = _load(Path(args.dialogues) if args.dialogues else settings.dialogues)
    dialogue_id = args.dialogue
    if dialogue_id is None:
        dialogue_id = (DEFAULT_CHAT_DIALOGUE if DEFAULT_CHAT_DIALOGUE in dialogues
                       else sorted(dialogues.dialogues)[0])
    if dialogue_id not in dialogues:
        print(f"coachbot: no dialogue '{dialogue_id}'; there are: "
              + ", ".join(sorted(dialogues.dialogues)), file=sys.stderr)
        return 2
    chat = ConsoleChat(dialogues, translator_for(args.lang or settings.default_locale),
                       name=args.name or getpass.getuser().capitalize(), output=sys.stdout)
    finished = False
    for outcome in chat.run(ConversationState(), dialogue_id, iter(sys.stdin)):
        finished = finished or dialogue_id in outcome.finished
    if not finished:
        print("(stopped before the end of the conversation)", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="coachbot", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    validate = commands.add_parser("validate", help="check dialogue files and report every "
                                   "problem as file:line:column")
    validate.add_argument("path", nargs="?", help="a dialogue file or folder (default: dialogues/)")
    validate.set_defaults(func=cmd_validate)

    chat = commands.add_parser("chat", help="talk to the bot in this terminal")
    chat.add_argument("--dialogue", help="the dialogue to start (default: onboarding)")
    chat.add_argument("--lang", choices=SUPPORTED_LOCALES, help="the language to talk in")
    chat.add_argument("--name", help="how the bot calls you")
    chat.add_argument("--dialogues", help="the dialogues folder (default: $COACHBOT_DIALOGUES "
                      "or dialogues/)")
    chat.set_defaults(func=cmd_chat)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
