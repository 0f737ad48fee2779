"""Answer metadata gives no answer away (review M7, repro r19_metadata.py): which question an
answer belongs to is encrypted, and the variables kept in plain text (markers) are asked on
every path through their dialogues, so a row's presence says nothing about any answer."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from cryptography.fernet import Fernet

from bot.coaching.conversation import Start, converse
from bot.coaching.markers import ANSWER_MARKERS
from bot.dialogue import load_dialogues
from bot.dialogue.model import Dialogue
from bot.engine import Turn
from bot.store import Goal, Store
from tests.store.store_helpers import raw

DIALOGUES = load_dialogues(Path(__file__).parents[2] / "dialogues")
NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _finishes_without(dialogue: Dialogue, variable: str) -> bool:
    """Whether some path from the start leaves the dialogue (its end, or a call of another)
    without a step that saves ``variable``. A dialogue that comes back later (``later``)
    goes on, on that path, where it comes back."""
    seen, todo = set(), [dialogue.start]
    while todo:
        step_id = todo.pop()
        if step_id in seen:
            continue
        seen.add(step_id)
        step = dialogue.steps[step_id]
        if step.ask.save == variable:
            continue
        if step.later is not None:
            todo.append(step.later.goto)
            continue
        for branch in step.next:
            if branch.call is not None or branch.goto == "end":
                return True
            todo.append(branch.goto)
    return False


def test_every_marker_is_asked_on_every_path_of_its_dialogues() -> None:
    asking = {(d.id, s.ask.save) for d in DIALOGUES.dialogues.values()
              for s in d.steps.values() if s.ask.save in ANSWER_MARKERS}
    assert {variable for _, variable in asking} == ANSWER_MARKERS  # each is asked somewhere
    leaky = [(d, v) for d, v in sorted(asking) if _finishes_without(DIALOGUES[d], v)]
    assert leaky == []


async def test_a_low_mood_leaves_no_readable_trace(db_url: str) -> None:
    store = Store(db_url, encryption_key=Fernet.generate_key().decode())
    await store.start()
    try:
        async def setup(t: object) -> None:
            t.user.consent_at = NOW  # type: ignore[attr-defined]
            t.set_state({"stack": [], "variables": {"goal.title": "x"}})  # type: ignore[attr-defined]
            t.session.add(Goal(user_id=5, title="x", baseline=2, current=3, target=9))  # type: ignore[attr-defined]

        await store.run_turn(5, setup)
        for action in (Start("daily_checkin"), Turn(text="3"), Turn(text="yes")):
            await store.run_turn(5, lambda t, a=action: converse(t, DIALOGUES, a, NOW))
        rows = await raw(store, "SELECT dialogue_id, step_id, variable, value, marker "
                                "FROM answers ORDER BY id")
        assert len(rows) == 2  # the mood, and whether to stop for today
        assert [r[4] for r in rows] == ["checkin.mood", None]
        for row in rows:
            assert all(v.startswith("enc:v1:") for v in row[:4])
        assert "low_mood" not in repr(rows) and "stop_today" not in repr(rows)
        ratings = await raw(store, "SELECT baseline, current, target FROM goals")
        assert all(str(v).startswith("enc:v1:") for v in ratings[0])
        exported = await store.export_user(5)
        assert [(a["step_id"], a["variable"], a["value"]) for a in exported["answers"]] == [
            ("mood", "checkin.mood", 3), ("low_mood", "checkin.stop_today", True)]
        assert [(g["baseline"], g["current"], g["target"]) for g in exported["goals"]] == [
            (2, 3, 9)]
    finally:
        await store.close()
