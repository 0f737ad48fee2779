"""Dialogues a coach writes in YAML and sends the bot as a file: checked as ``coachbot
validate`` checks a dialogue (errors as file:line:column), kept per coach (the source
encrypted: it is the coach's writing), and given only to that coach's own clients who use its
language or one it carries a translation into (``translations:``), each in their language.
It never replaces a platform dialogue: its id is refused if the platform has it, and it runs
under a name of its own (``cd<row id>``), so no client of another coach and no
contract of ``contracts.py`` can reach it.

A client's answers to it are stored like any answer (encrypted, in their export, gone on
erase); the dialogue joins the loaded set only inside the turns that run it
(:func:`with_coach_dialogues`).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import datetime
from functools import lru_cache
from typing import Any

import yaml
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.coaching.coach_errors import CoachError, NotACoach, UnknownExercise
from bot.coaching.links import is_linked
from bot.dialogue.expr import Value
from bot.dialogue.loader import DialogueError, check_uploaded
from bot.dialogue.messages import N_, message
from bot.dialogue.model import Dialogue, DialogueSet, Position
from bot.i18n import SUPPORTED_LOCALES, Translator, neutralise_bidi
from bot.store import CoachDialogue, Turn, User

PREFIX = "cd"  # what a coach's dialogue runs as: cd<row id>
_RUN_ID = re.compile(r"cd([0-9]{1,18})\Z")
MAX_PER_COACH = 50
SUFFIXES = (".yaml", ".yml")


class UploadRefused(CoachError):
    """The file is not a dialogue the bot can keep; ``errors`` say where and why."""

    def __init__(self, errors: list[DialogueError]) -> None:
        super().__init__("\n".join(str(e) for e in errors))
        self.errors = errors

    def lines(self, tr: Translator) -> list[str]:
        """Each error as the coach reads it: in their language, what comes from the file kept
        from turning a right-to-left line around."""
        return [error.render(tr.gettext, lambda value: tr.isolate(neutralise_bidi(value)))
                for error in self.errors]


class LibraryFull(UploadRefused):
    """The coach already keeps as many dialogues of their own as the bot allows."""


def run_id(row_id: int) -> str:
    return f"{PREFIX}{row_id}"


def row_id(dialogue_id: str) -> int | None:
    """The row of a coach's dialogue its run id names, or None for any other dialogue."""
    found = _RUN_ID.match(dialogue_id)
    return int(found.group(1)) if found else None


def check(raw: bytes, filename: str, platform: DialogueSet) -> Dialogue:
    """The dialogue in ``raw``, or UploadRefused with every error (file:line:column)."""
    display = filename.rsplit("/", 1)[-1] or "dialogue.yaml"
    if not display.lower().endswith(SUFFIXES):
        raise UploadRefused([DialogueError(Position(display, 1, 1), message(
            N_("send a .yaml file with one dialogue")))])
    dialogue, errors = check_uploaded(raw, display, reserved=platform.dialogues,
                                      languages=SUPPORTED_LOCALES)
    if dialogue is None or errors:
        raise UploadRefused(errors)
    return dialogue


async def upload(session: AsyncSession, coach_id: int, raw: bytes, filename: str,
                 platform: DialogueSet, now: datetime) -> CoachDialogue:
    """Keep a valid dialogue of this coach's (a new one, or a new version of theirs with the
    same id); NotACoach or UploadRefused with nothing stored."""
    coach = await session.get(User, coach_id)
    if coach is None or not coach.is_coach:
        raise NotACoach("only coaches can send dialogues")
    dialogue = check(raw, filename, platform)
    row = (await session.execute(select(CoachDialogue).where(
        CoachDialogue.coach_id == coach_id, CoachDialogue.dialogue_id == dialogue.id))
    ).scalar_one_or_none()
    if row is None:
        count = len((await session.execute(select(CoachDialogue.id).where(
            CoachDialogue.coach_id == coach_id))).all())
        if count >= MAX_PER_COACH:
            raise LibraryFull([DialogueError(Position(dialogue.path, 1, 1), message(
                N_("you have {count} exercises and dialogues of your own already, the most I "
                   "can keep; to change one of them, send its new version with the same id"),
                count=MAX_PER_COACH))])
        row = CoachDialogue(coach_id=coach_id, dialogue_id=dialogue.id, created_at=now)
        session.add(row)
    row.locale, row.title, row.created_at = dialogue.language or "", dialogue.title, now
    row.source = raw.decode("utf-8")
    await session.flush()
    return row


@lru_cache(maxsize=64)
def _parsed(row_id: int, source: str) -> Dialogue | None:
    """A stored dialogue, parsed again (it was valid when stored) under its run id."""
    dialogue, _ = check_uploaded(source.encode("utf-8"), f"{run_id(row_id)}.yaml")
    return None if dialogue is None else replace(dialogue, id=run_id(row_id))


def languages(row: CoachDialogue) -> tuple[str, ...]:
    """The languages a stored dialogue can be given in: its own, then its translations."""
    dialogue = _parsed(row.id, row.source)
    return dialogue.languages if dialogue is not None else (row.locale,)


def title_in(row: CoachDialogue, locale: str | None) -> str:
    """A stored dialogue's title in ``locale`` when it is translated into it, else its own."""
    dialogue = _parsed(row.id, row.source)
    return dialogue.in_language(locale or "").title if dialogue is not None else row.title


async def dialogue_of(session: AsyncSession, dialogue_id: str,
                      user_id: int) -> Dialogue | None:
    """The coach's dialogue ``dialogue_id`` names, if ``user_id`` may run it: its coach (to
    try it) or a client linked to that coach now; in the user's language when it has a
    translation into it, else in its own."""
    number = row_id(dialogue_id)
    row = await session.get(CoachDialogue, number) if number is not None else None
    if row is None or not (row.coach_id == user_id
                           or await is_linked(session, row.coach_id, user_id)):
        return None
    dialogue = _parsed(row.id, row.source)
    user = await session.get(User, user_id)
    return dialogue.in_language(user.locale) if dialogue and user and user.locale else dialogue


async def with_coach_dialogues(t: Turn, dialogues: DialogueSet,
                               wanted: Iterable[str]) -> DialogueSet:
    """``dialogues`` and the coach dialogues among ``wanted`` that the turn's user may run
    (the turn's ORM session is opened only to look one up)."""
    extra: dict[str, Dialogue] = {}
    for dialogue_id in wanted:
        if dialogue_id in dialogues.dialogues or row_id(dialogue_id) is None:
            continue
        found = await dialogue_of(t.session, dialogue_id, t.user_id)
        if found is not None:
            extra[dialogue_id] = found
    if not extra:
        return dialogues
    return replace(dialogues, dialogues={**dialogues.dialogues, **extra})


async def dialogues_of(session: AsyncSession, coach_id: int) -> list[CoachDialogue]:
    rows = await session.execute(select(CoachDialogue).where(
        CoachDialogue.coach_id == coach_id).order_by(CoachDialogue.id))
    return list(rows.scalars())


async def assignable(session: AsyncSession, coach_id: int, dialogue_id: str,
                     client_locale: str | None) -> CoachDialogue:
    """This coach's dialogue, for a client speaking ``client_locale``; else UnknownExercise
    (another coach's, none, or neither written nor translated in the client's language)."""
    number = row_id(dialogue_id)
    row = await session.get(CoachDialogue, number) if number is not None else None
    if row is None or row.coach_id != coach_id:
        raise UnknownExercise("no such dialogue of yours")
    if client_locale is None or client_locale not in languages(row):
        raise UnknownExercise("the client uses another language")
    return row


#: What the coach answers in ``new_exercise`` for each question of their own.
OWN_QUESTIONS = (("custom.q1", "custom.q1_type", "custom.q1_options"),
                 ("custom.q2", "custom.q2_type", "custom.q2_options"),
                 ("custom.q3", "custom.q3_type", "custom.q3_options"))
MAX_OPTIONS = 8


def _literal(text: str) -> str:
    """A coach's words as a dialogue text: braces are theirs, not placeholders."""
    return text.replace("{", "{{").replace("}", "}}")


def own_questions(answers: Mapping[str, Value]) -> list[tuple[str, str, list[str]]]:
    """(question, how it is answered, options) of each question the coach wrote."""
    found = []
    for text_key, type_key, options_key in OWN_QUESTIONS:
        text, kind = answers.get(text_key), answers.get(type_key)
        if not isinstance(text, str) or not text.strip() or kind not in ("text", "scale",
                                                                         "choice"):
            continue
        raw = answers.get(options_key)
        options = [o.strip() for o in raw.split(",") if o.strip()][:MAX_OPTIONS] \
            if isinstance(raw, str) else []
        found.append((text.strip(), str(kind), options))
    return found


def own_exercise_source(title: str, instructions: str,
                        questions: list[tuple[str, str, list[str]]], locale: str,
                        tr: Translator) -> bytes:
    """A coach's exercise with questions of their own as a dialogue in their language (the
    same YAML a coach could send), checked by :func:`upload` like any other."""
    steps: dict[str, Any] = {
        "intro": {"say": _literal(title), "next": "how"},
        "how": {"say": _literal(instructions), "next": "status"},
        "status": {
            "say": _literal(tr.gettext("Take your time. When you have finished, or if you "
                                       "decide to stop, come back here: did you get to "
                                       "do it?")),
            "ask": {"type": "choice", "save": "exercise.status", "options": {
                "done": _literal(tr.gettext("I did it")),
                "partly": _literal(tr.gettext("I did part of it")),
                "skipped": _literal(tr.gettext("Not this time"))}},
            "next": [{"if": "exercise.status == 'skipped'", "goto": "closing"},
                     {"goto": "q1" if questions else "closing"}]},
    }
    for number, (text, kind, options) in enumerate(questions, start=1):
        ask: dict[str, Any] = {"type": "text", "save": f"own.q{number}", "max_length": 1000}
        if kind == "scale":
            ask = {"type": "scale", "min": 1, "max": 10, "save": f"own.q{number}"}
        elif kind == "choice" and options:
            ask = {"type": "choice", "save": f"own.q{number}",
                   "options": {f"o{i}": _literal(o) for i, o in enumerate(options, start=1)}}
        steps[f"q{number}"] = {"say": _literal(text), "ask": ask,
                               "next": f"q{number + 1}" if number < len(questions)
                               else "closing"}
    steps["closing"] = {"say": tr.gettext("Thank you, {name}."), "next": "end"}
    source = {"id": f"own_{secrets.token_hex(5)}", "title": title, "kind": "exercise",
              "language": locale, "start": "intro", "steps": steps}
    return yaml.safe_dump(source, allow_unicode=True, sort_keys=False).encode("utf-8")
