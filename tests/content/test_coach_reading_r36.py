"""What the coach's reading r36-en asked of the coach's side: a member's shared part in the
team's goal reads right whichever half they skipped; a coach's own exercise that could not be
kept after the dialogue said "Saved" is said to be not kept
(tests/coaching/test_coach_dialogues.py)."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from bot.coaching import groups
from bot.coaching.groups import SharedContribution
from bot.i18n import translator_for
from bot.store import Group
from bot.telegram.groups import GroupHandlers

EN = translator_for("en")


@pytest.mark.parametrize(("contribution", "commitment", "due_on", "line"), [
    ("I write the guide", "A first draft", date(2030, 5, 17),
     "• \u2068Bo\u2069 will contribute: \u2068I write the guide\u2069; commits to: "
     "\u2068A first draft\u2069, by May 17, 2030"),
    ("I write the guide", "A first draft", None,
     "• \u2068Bo\u2069 will contribute: \u2068I write the guide\u2069; commits to: "
     "\u2068A first draft\u2069"),
    ("", "A first draft", date(2030, 5, 17),
     "• \u2068Bo\u2069 commits to: \u2068A first draft\u2069, by May 17, 2030"),
    ("", "A first draft", None, "• \u2068Bo\u2069 commits to: \u2068A first draft\u2069"),
    ("I write the guide", "", None,
     "• \u2068Bo\u2069 will contribute: \u2068I write the guide\u2069"),
    ("I write the guide", "", date(2030, 5, 17),
     "• \u2068Bo\u2069 will contribute: \u2068I write the guide\u2069"),
])
async def test_a_shared_part_reads_right_whichever_half_was_skipped(
        monkeypatch: pytest.MonkeyPatch, contribution: str, commitment: str,
        due_on: date | None, line: str) -> None:
    async def shared(*_: Any) -> list[SharedContribution]:
        return [SharedContribution("Bo", contribution, commitment, due_on)]

    monkeypatch.setattr(groups, "shared_contributions", shared)
    turn: Any = type("T", (), {"session": None, "user_id": 1})()
    lines = await GroupHandlers._goal_lines(turn, Group(id=1, shared_goal="Ship it"), EN)
    assert lines == ["Shared goal: \u2068Ship it\u2069", line]
