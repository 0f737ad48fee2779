"""The pure engine: steps per second, and loading plus validating the whole dialogue set.

Baselines, measured in the same run: the same conversation as a hand-written Python state
machine (what the engine's generality costs), and `yaml.safe_load` of the same files (what
validation and the typed model cost on top of parsing).
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

import yaml

from bench.common import best_of, machine, table
from bot.dialogue import load_dialogues
from bot.dialogue.loader import dialogue_files
from bot.engine import Context, ConversationState, Turn, handle, start
from bot.i18n import translator_for

DIALOGUES = Path(__file__).parents[1] / "dialogues"
CONVERSATIONS = 300
# A daily check-in: mood, progress (a button), a commitment, a closing line.
ANSWERS = ("7", "done", "I walked", "Call the coach")


def engine_steps() -> tuple[int, int, float]:
    """(turns, steps shown, seconds): a turn is one message; it may pass several steps."""
    dialogues = load_dialogues(DIALOGUES)
    ctx = Context(translator=translator_for("en"), today=date(2026, 12, 2), name="Ana",
                  provided={"streak.days": 3, "streak.best": 5})
    base = ConversationState(variables={"goal.title": "Run 10k"})
    steps = shown = 0

    def run() -> None:
        nonlocal steps, shown
        steps = shown = 0
        for _ in range(CONVERSATIONS):
            outcome = start(dialogues, base, "daily_checkin", ctx)
            shown += len(outcome.replies)
            for answer in ANSWERS:
                if not outcome.state.active:
                    break
                buttons = outcome.replies[-1].buttons
                pressed = next((b.data for b in buttons if b.data.endswith(f":{answer}")), None)
                turn = Turn(button=pressed) if pressed else Turn(text=answer)
                outcome = handle(dialogues, outcome.state, turn, ctx)
                shown += len(outcome.replies)
                steps += 1

    seconds = best_of(5, run)
    return steps, shown, seconds


def hand_written_steps() -> tuple[int, float]:
    """The same answers through a dict-and-if state machine, with the same validation."""
    steps = 0

    def run() -> None:
        nonlocal steps
        steps = 0
        for _ in range(CONVERSATIONS):
            state: dict[str, object] = {"step": "mood", "goal.title": "Run 10k"}
            for answer in ANSWERS:
                if state["step"] == "mood":
                    if answer.isdigit() and 1 <= int(answer) <= 10:
                        state["checkin.mood"] = int(answer)
                        state["step"] = "progress"
                elif state["step"] == "progress":
                    if answer in ("done", "partly", "not_yet"):
                        state["checkin.progress"] = answer
                        state["step"] = "commit"
                elif state["step"] == "commit":
                    state["checkin.commitment"] = answer.strip()[:500]
                    state["step"] = "end"
                _ = f"How far did you get with “{state['goal.title']}”?"
                steps += 1

    seconds = best_of(5, run)
    return steps, seconds


def loading() -> tuple[float, float, int]:
    files = dialogue_files(DIALOGUES)
    load = best_of(5, lambda: load_dialogues(DIALOGUES))
    parse = best_of(5, lambda: [yaml.safe_load(f.read_text(encoding="utf-8")) for f in files])
    return load, parse, len(files)


def report() -> str:
    turns, shown, seconds = engine_steps()
    base_steps, base_seconds = hand_written_steps()
    rate, base_rate = turns / seconds, base_steps / base_seconds
    load, parse, files = loading()
    return table(
        f"Engine ({machine()})",
        ["measure", "coachbot", "baseline", "ratio", "target", "met"],
        [
            ["engine turns/s (daily check-in)", f"{rate:,.0f}",
             f"{base_rate:,.0f} (hand-written)", f"{rate / base_rate:.3f}", "≥ 20,000/s",
             "yes" if rate >= 20_000 else "NO"],
            ["engine steps shown/s", f"{shown / seconds:,.0f}", "", "", "≥ 20,000/s",
             "yes" if shown / seconds >= 20_000 else "NO"],
            [f"load + validate {files} dialogue files", f"{load * 1000:.1f} ms",
             f"{parse * 1000:.1f} ms (yaml.safe_load)", f"{load / parse:.2f}", "< 200 ms",
             "yes" if load < 0.2 else "NO"],
        ],
    )


if __name__ == "__main__":
    print(report())
