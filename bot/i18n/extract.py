"""The Babel extraction method for dialogue YAML: `pybabel extract` finds every text a client
sees in the dialogues (titles, `say`, plural forms, option labels) through it."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import IO, Any

from bot.dialogue.template import placeholders

Extracted = tuple[int, str, str | tuple[str, str], list[str]]


def extract_dialogue_yaml(
    fileobj: IO[bytes],
    keywords: Mapping[str, Any],
    comment_tags: Collection[str],
    options: Mapping[str, Any],
) -> Iterator[Extracted]:
    """Registered as the `coachbot_yaml` extractor (see pyproject.toml and babel.cfg)."""
    from pathlib import PurePath

    from bot.dialogue.loader import parse_dialogue_file, texts_of
    from bot.dialogue.programmes import PROGRAMMES_DIR, parse_programme

    name = getattr(fileobj, "name", "dialogue.yaml")
    if PROGRAMMES_DIR in PurePath(str(name)).parts:  # a programme: only its title is shown
        programme, problems = parse_programme(fileobj.read(), str(name))
        if programme is None:
            raise ValueError("cannot extract from an invalid programme:\n"
                             + "\n".join(str(e) for e in problems))
        yield 2, "gettext", programme.title, [f"The title of a programme ({programme.id}): "
                                              "a sequence of exercises over weeks."]
        return
    dialogue, errors = parse_dialogue_file(fileobj.read(), str(name))
    if dialogue is None:
        raise ValueError("cannot extract from an invalid dialogue:\n"
                         + "\n".join(str(e) for e in errors))
    for line, text in texts_of(dialogue):
        names = placeholders(text if isinstance(text, str) else text[1])
        comments = [f"Dialogue “{dialogue.title}” ({dialogue.id})."]
        if names:
            comments.append("Keep " + ", ".join("{" + n + "}" for n in names)
                            + " exactly as written: they are filled in with the client's data.")
        yield line, "ngettext" if isinstance(text, tuple) else "gettext", text, comments
