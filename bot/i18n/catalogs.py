"""Checks on the translation catalogs, reported as `file:line:column: message` like dialogues.

A catalog is complete (every source text translated, nothing fuzzy), keeps every placeholder
of its source text and adds none, and declares the plural forms CLDR (through Babel) gives
for its language.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from babel.messages.catalog import Catalog, Message
from babel.messages.plurals import get_plural
from babel.messages.pofile import read_po

from bot.dialogue.template import TemplateError, placeholders
from bot.i18n import ADDRESS_CONTEXTS, DOMAIN, SOURCE_LOCALE, SUPPORTED_LOCALES


def catalog_path(directory: Path, locale: str) -> Path:
    return directory / locale / "LC_MESSAGES" / f"{DOMAIN}.po"


def read_catalog(path: Path, locale: str) -> Catalog:
    with path.open("rb") as file:
        return read_po(file, locale=locale)


def _names(text: str) -> set[str] | str:
    """The placeholders of a text, or the reason it has a malformed one."""
    try:
        return set(placeholders(text))
    except TemplateError as exc:
        return str(exc)


def _texts(value: object) -> tuple[str, ...]:
    if isinstance(value, list | tuple):
        return tuple(str(v or "") for v in value)
    return (str(value or ""),)


def _message_errors(message: Message, where: str) -> Iterable[str]:
    sources = _texts(message.id)
    translations = _texts(message.string)
    if message.fuzzy:
        yield f"{where}: marked fuzzy: review the translation and remove the flag"
    if not all(translations):
        if message.context in ADDRESS_CONTEXTS and not any(translations):
            return  # an optional gendered variant left empty: the neutral text is used
        yield f"{where}: not translated: {sources[0][:60]!r}"
        return
    source_names: set[str] = set()
    for source in sources:
        names = _names(source)
        source_names |= names if isinstance(names, set) else set()
    last_source = _names(sources[-1])
    for index, translation in enumerate(translations):
        names = _names(translation)
        if isinstance(names, str):
            yield f"{where}: form {index}: {names}"
            continue
        added = names - source_names
        if added:
            yield (f"{where}: the translation adds " + ", ".join(f"{{{n}}}" for n in sorted(added))
                   + ", which the source text does not have")
        # Every form may drop what the singular drops, but the last (general) form must keep
        # everything the source's general form has.
        expected = last_source if isinstance(last_source, set) else set()
        if index == len(translations) - 1 and expected - names:
            yield (f"{where}: the translation drops "
                   + ", ".join(f"{{{n}}}" for n in sorted(expected - names)))


def check_catalog(path: Path, locale: str, source_ids: set[str] | None = None) -> list[str]:
    """Every problem of one catalog; `source_ids` (singular msgids) are the texts it must have."""
    display = str(path)
    try:
        catalog = read_catalog(path, locale)
    except Exception as exc:  # babel raises several kinds for malformed files
        return [f"{display}:1:1: cannot read the catalog: {exc}"]
    errors = []
    expected = get_plural(locale)
    if catalog.num_plurals != expected.num_plurals or \
            catalog.plural_expr.replace(" ", "") != expected.plural_expr.replace(" ", ""):
        errors.append(f"{display}:1:1: Plural-Forms is '{catalog.plural_forms}', but CLDR says "
                      f"'{expected.plural_forms}' for {locale}")
    present = set()
    for message in catalog:
        if not message.id:
            continue
        present.add(_texts(message.id)[0])
        if message.context is not None and catalog.get(message.id) is None:
            errors.append(f"{display}:{message.lineno}:1: a {message.context} variant of a "
                          "text that has no gender-neutral entry: see locales/gendered.yaml")
        forms = _texts(message.string)
        if message.pluralizable and len(forms) != expected.num_plurals:
            errors.append(f"{display}:{message.lineno}:1: has {len(forms)} plural "
                          f"forms, {locale} needs {expected.num_plurals}")
        errors.extend(_message_errors(message, f"{display}:{message.lineno}:1"))
    for missing in sorted((source_ids or set()) - present):
        errors.append(f"{display}:1:1: missing the text {missing[:60]!r}; run pybabel update")
    return errors


def check_catalogs(directory: Path, source_ids: set[str] | None = None) -> list[str]:
    """Every problem of every supported language's catalog under `directory`."""
    errors = []
    for locale in SUPPORTED_LOCALES:
        if locale == SOURCE_LOCALE:
            continue
        path = catalog_path(directory, locale)
        if not path.exists():
            errors.append(f"{path}:1:1: the {locale} catalog is missing")
            continue
        errors.extend(check_catalog(path, locale, source_ids))
    return errors


def extract_sources(root: Path) -> Catalog:
    """Extract every source text under `root` as `pybabel extract -F babel.cfg` would."""
    from babel.messages.extract import extract_from_dir
    from babel.messages.frontend import parse_mapping_cfg

    with (root / "babel.cfg").open(encoding="utf-8") as cfg:
        method_map, options_map = parse_mapping_cfg(cfg)  # type: ignore[no-untyped-call]
    catalog = Catalog(project="coachbot", locale=SOURCE_LOCALE)
    for filename, lineno, message, comments, context in extract_from_dir(
        str(root), method_map, options_map, comment_tags=("TRANSLATORS:",)
    ):
        catalog.add(message, None, [(filename, lineno)], auto_comments=comments,
                    context=context)
    return catalog
