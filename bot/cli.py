"""The `coachbot` command."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bot.coaching.contracts import ONBOARDING, check_contracts
from bot.config import ConfigError, Settings, load_settings
from bot.dialogue import check_dialogues
from bot.dialogue.model import DialogueSet
from bot.i18n import SUPPORTED_LOCALES
from bot.store import KeyMismatchError, Store

DEFAULT_CHAT_DIALOGUE = ONBOARDING


def _settings() -> Settings:
    try:
        return load_settings()
    except ConfigError as exc:
        for problem in exc.problems:
            print(f"coachbot: {problem}", file=sys.stderr)
        raise SystemExit(2) from None


async def _started(settings: Settings) -> Store:
    """The store, started; a key list that cannot read the database stops the command."""
    store = Store(settings.database_url, encryption_key=settings.encryption_key)
    try:
        await store.start()
    except KeyMismatchError as exc:
        print(f"coachbot: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    return store


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
    contract_errors = check_contracts(dialogues, path)
    for error in contract_errors:
        print(error)
    if contract_errors:
        print(f"{len(contract_errors)} problem(s) found: the bot relies on these dialogues "
              "(bot/coaching/contracts.py).", file=sys.stderr)
        return 1
    catalog_errors = _check_translations(dialogues)
    for problem in catalog_errors:
        print(problem)
    if catalog_errors:
        print(f"{len(catalog_errors)} problem(s) in the translations.", file=sys.stderr)
        return 1
    steps = sum(len(d.steps) for d in dialogues.dialogues.values())
    print(f"ok: {len(dialogues.dialogues)} dialogue(s), {steps} steps")
    return 0


def _check_translations(dialogues: DialogueSet) -> list[str]:
    """The catalogs must translate every text of these dialogues, placeholders intact."""
    from bot.dialogue.loader import texts_of
    from bot.i18n import locales_dir
    from bot.i18n.catalogs import check_catalogs

    if not locales_dir().exists():
        return []
    texts = {text if isinstance(text, str) else text[0]
             for dialogue in dialogues.dialogues.values() for _, text in texts_of(dialogue)}
    return check_catalogs(locales_dir(), texts)


def cmd_chat(args: argparse.Namespace) -> int:
    from bot.console import chat

    settings = _settings()
    dialogues = _load(Path(args.dialogues) if args.dialogues else settings.dialogues)
    default = DEFAULT_CHAT_DIALOGUE if DEFAULT_CHAT_DIALOGUE in dialogues \
        else sorted(dialogues.dialogues)[0]
    if args.dialogue is not None and args.dialogue not in dialogues:
        print(f"coachbot: no dialogue '{args.dialogue}'; there are: "
              + ", ".join(sorted(dialogues.dialogues)), file=sys.stderr)
        return 2

    async def talk() -> bool:
        store = await _started(settings)
        try:
            return await chat(store, dialogues, dialogue_id=args.dialogue,
                              default_dialogue=default, locale=args.lang,
                              name=args.name, fallback_name=getpass.getuser().capitalize(),
                              lines=iter(sys.stdin), output=sys.stdout)
        finally:
            await store.close()

    if not asyncio.run(talk()):
        print("(stopped before the end; `coachbot chat` continues from here)", file=sys.stderr)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from bot.observability import configure_logging, start_metrics_server

    settings = _settings()  # before the Telegram stack is imported: bad settings fail fast
    configure_logging(json=settings.log_json, debug_content=settings.debug_log_content)

    from bot.telegram.app import StartupError, serve

    if settings.metrics_port is not None:
        try:
            start_metrics_server(settings.metrics_port)
        except OSError as exc:
            print(f"coachbot: cannot serve metrics on COACHBOT_METRICS_PORT "
                  f"{settings.metrics_port}: {exc.strerror or exc}", file=sys.stderr)
            return 1
    try:
        asyncio.run(serve(settings, listen=(args.host, args.port), own_process=True))
    except StartupError as exc:
        print(f"coachbot: {exc}", file=sys.stderr)
        return 1
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    from bot.store.migrate import current_revision, upgrade

    settings = _settings()
    asyncio.run(upgrade(settings.database_url))
    print(f"database at revision {asyncio.run(current_revision(settings.database_url))}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    settings = _settings()

    async def export() -> dict[str, Any]:
        store = await _started(settings)
        try:
            return await store.export_user(args.user_id)
        finally:
            await store.close()

    from bot.coaching.privacy import labelled
    from bot.i18n import translator_for

    data = asyncio.run(export())
    tr = translator_for(data["users"][0]["locale"] if data["users"] else None)
    json.dump(labelled(data, tr), sys.stdout, ensure_ascii=False, indent=2, default=str)
    sys.stdout.write("\n")
    return 0


def cmd_add_coach(args: argparse.Namespace) -> int:
    from bot.coaching.links import make_coach

    settings = _settings()

    async def add() -> None:
        store = await _started(settings)
        try:
            async with store.sessionmaker() as session, session.begin():
                await make_coach(session, args.user_id)
        finally:
            await store.close()

    asyncio.run(add())
    print(f"user {args.user_id} is a coach: they can now send /invite to the bot")
    return 0


def cmd_erase(args: argparse.Namespace) -> int:
    if not args.yes:
        print("coachbot: erasing a user cannot be undone; add --yes to confirm", file=sys.stderr)
        return 2
    settings = _settings()

    async def erase() -> None:
        store = await _started(settings)
        try:
            await store.erase_user(args.user_id)
        finally:
            await store.close()

    asyncio.run(erase())
    print(f"user {args.user_id}: every row erased")
    return 0


def cmd_reencrypt(args: argparse.Namespace) -> int:
    from bot.store.keys import short
    from bot.store.reencrypt import ColumnResult, reencrypt
    from bot.store.types import fingerprint, split_keys

    settings = _settings()
    if not settings.encryption_key:
        print("coachbot: COACHBOT_ENCRYPTION_KEY is not set: there is no key to encrypt "
              "under", file=sys.stderr)
        return 2
    key: str = settings.encryption_key

    def report(done: ColumnResult) -> None:
        print(f"{done.table}.{done.column}: {done.rewritten} rewritten, {done.current} "
              f"already under the first key"
              + (f", {done.unreadable} under none of the keys" if done.unreadable else ""))

    async def run() -> list[ColumnResult]:
        store = await _started(settings)
        try:
            return await reencrypt(store.engine, key, batch=args.batch, report=report)
        finally:
            await store.close()

    results = asyncio.run(run())
    first = short([fingerprint(split_keys(key)[0])])
    unreadable = sum(r.unreadable for r in results)
    if unreadable:
        print(f"coachbot: {unreadable} value(s) are encrypted under none of the keys; they "
              "were left as they are, and no key may be dropped yet", file=sys.stderr)
        return 1
    print(f"every encrypted value is under the first key (fingerprint {first}); the other "
          "keys can now be dropped from COACHBOT_ENCRYPTION_KEY on every replica")
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

    run = commands.add_parser("run", help="run the bot on Telegram (long polling, or a "
                              "webhook when COACHBOT_WEBHOOK_URL is set)")
    run.add_argument("--host", default="0.0.0.0", help="webhook server address")
    run.add_argument("--port", type=int, default=8080, help="webhook server port")
    run.set_defaults(func=cmd_run)

    migrate = commands.add_parser("migrate", help="upgrade the database schema "
                                  "($COACHBOT_DATABASE_URL) to this version")
    migrate.set_defaults(func=cmd_migrate)

    admin = commands.add_parser("admin", help="operator tasks")
    tasks = admin.add_subparsers(dest="task", required=True)
    export = tasks.add_parser("export", help="print everything stored about a user, as JSON")
    export.add_argument("user_id", type=int, help="the Telegram user id (0: the terminal user)")
    export.set_defaults(func=cmd_export)
    add_coach = tasks.add_parser("add-coach", help="make a user a coach (they can invite "
                                 "clients and assign exercises)")
    add_coach.add_argument("user_id", type=int, help="the coach's Telegram user id")
    add_coach.set_defaults(func=cmd_add_coach)
    erase = tasks.add_parser("erase", help="erase a user completely, from every table")
    erase.add_argument("user_id", type=int)
    erase.add_argument("--yes", action="store_true", help="confirm: this cannot be undone")
    erase.set_defaults(func=cmd_erase)
    reencrypt = tasks.add_parser("reencrypt", help="rewrite every encrypted value under the "
                                 "first key of COACHBOT_ENCRYPTION_KEY (after a rotation); "
                                 "safe to interrupt and run again")
    reencrypt.add_argument("--batch", type=_positive, default=500,
                           help="rows per transaction (default 500)")
    reencrypt.set_defaults(func=cmd_reencrypt)
    return parser


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
