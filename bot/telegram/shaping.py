"""Shaping a message for Telegram: a long text split into parts it accepts, buttons in rows.

Pure functions, no I/O: the sender (``bot/telegram/sender.py``) calls them on every row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import regex

MAX_TEXT = 4096  # UTF-16 code units
LONG_LABEL = 20  # characters: any longer label puts every button on its own row
BUTTONS_PER_ROW = 5
_GRAPHEME = regex.compile(r"\X")


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _graphemes_prefix(text: str, limit: int) -> int:
    """Length (in code points) of the longest whole-grapheme prefix within ``limit``."""
    used = end = 0
    for match in _GRAPHEME.finditer(text):
        size = utf16_len(match.group())
        if used + size > limit:
            break
        used += size
        end = match.end()
    return end


def _code_points_prefix(text: str, limit: int) -> int:
    """Length (in code points) of the longest prefix within ``limit`` UTF-16 units."""
    used = end = 0
    for char in text:
        used += 2 if ord(char) > 0xFFFF else 1
        if used > limit:
            break
        end += 1
    return end


def _cut(text: str, limit: int) -> int:
    """Where to cut ``text`` so the head fits ``limit``: after a paragraph, else a line,
    else a space, else between graphemes (never inside a surrogate pair or a grapheme),
    and inside a grapheme only when a single one is longer than ``limit`` (as full a part
    as fits: one oversized grapheme makes as few parts as its length needs)."""
    fit = _graphemes_prefix(text, limit)
    if fit == 0:
        return max(_code_points_prefix(text, limit), 1)
    head = text[:fit]
    for separator in ("\n\n", "\n", " "):
        at = head.rfind(separator)
        if at > 0:
            return at + len(separator)
    return fit


def split_text(text: str, limit: int = MAX_TEXT) -> list[str]:
    """Split a text Telegram would refuse (over ``limit`` UTF-16 units) into parts."""
    parts: list[str] = []
    rest = text
    while utf16_len(rest) > limit:
        at = _cut(rest, limit)
        part = rest[:at].rstrip()
        if part:
            parts.append(part)
        rest = rest[at:].lstrip("\n ")
    if rest or not parts:
        parts.append(rest)
    return parts


def keyboard(buttons: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """One button per row when any label is long, otherwise up to five per row: the
    ``reply_markup`` as Telegram reads it (PTB's InlineKeyboardMarkup objects, built and
    turned back into this for every message, cost more than the rest of the shaping)."""
    if not buttons:
        return None
    made = [{"text": str(b["label"]), "callback_data": str(b["data"])} for b in buttons]
    per_row = 1 if any(len(str(b["label"])) > LONG_LABEL for b in buttons) else BUTTONS_PER_ROW
    return {"inline_keyboard": [made[i:i + per_row] for i in range(0, len(made), per_row)]}
