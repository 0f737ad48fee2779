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


def extract_gendered(
    fileobj: IO[bytes],
    keywords: Mapping[str, Any],
    comment_tags: Collection[str],
    options: Mapping[str, Any],
) -> Iterator[Extracted | tuple[int, str, tuple[str, ...], list[str]]]:
    """Registered as the `coachbot_gendered` extractor: every text listed in
    `locales/gendered.yaml` (a source text of the dialogues or the bot, or a singular and
    plural pair) once per address context, as a `pgettext`/`npgettext` entry. A translator
    fills such a variant only where their language marks the client's gender in that
    sentence; an empty one falls back to the gender-neutral translation."""
    import yaml

    from bot.i18n import ADDRESS_CONTEXTS

    root = yaml.compose(fileobj.read().decode("utf-8"))
    if root is None:
        return
    if not isinstance(root, yaml.SequenceNode):
        raise ValueError("locales/gendered.yaml must be a list of source texts")
    for node in root.value:
        line = node.start_mark.line + 1
        if isinstance(node, yaml.ScalarNode):
            text: tuple[str, ...] = (str(node.value),)
        elif isinstance(node, yaml.SequenceNode) and len(node.value) == 2:
            text = tuple(str(item.value) for item in node.value)
        else:
            raise ValueError(f"line {line}: a text, or a [singular, plural] pair")
        for context in ADDRESS_CONTEXTS:
            comments = [f"Optional: the {context} variant of the text. Leave it empty unless "
                        "your language marks the client's gender in this sentence; empty, "
                        "the gender-neutral translation is used."]
            if len(text) == 1:
                yield line, "pgettext", (context, text[0]), comments
            else:
                yield line, "npgettext", (context, *text), comments
