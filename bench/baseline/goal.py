"""The goal-setting conversation's words and answer checks, shared by both peers
(dialogues/goal_setting.yaml's English texts, written out as a developer without the
dialogue language would)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date, datetime, timedelta
from typing import Any

from babel.dates import format_date

DAY_FIRST = re.compile(r"(\d{1,2})\s*[./-]\s*(\d{1,2})\s*[./-]?\s*(\d{2,4})?\.?\Z")

ASK_GOAL = "In your own words: what would you like to achieve?"
ASK_PICTURE = ("Imagine you have reached it. What is different for you then: what do you see, "
               "hear or feel?")
ASK_BASELINE = ("On a scale from 1 to 10, where do you stand with it today? 1 means far from "
                "it, 10 means you are fully there.")
ASK_NOTICE_START = "You are at 1. What do you notice about where you stand today?"
ASK_TRIED = ("If you have already tried something towards this, what did you learn from it? "
             "You can send /skip.")
ASK_TARGET = "Where on the same scale from 1 to 10 do you want to be?"
ASK_TARGET_CHECK = ("Today you are at {baseline}, and the target you chose, {target}, is not "
                    "above that. If you answer No, you can choose another target. "
                    "Is your aim to stay at {target} or above?")
ASK_DUE = ("By what date would you like to be there? Send a date, or /skip if you prefer not "
           "to set one.")
ASK_OBSTACLES = "What could get in your way? You can send /skip."
ASK_RESOURCES = ("What do you already have that can help you? For example people, skills, time "
                 "or things that worked before. You can send /skip.")
ASK_OPTIONS = ("What options do you see to move forward? List as many as come to mind, even "
               "the ones you are not sure about.")
ASK_MORE_OPTIONS = "If nothing could stop you, what else would you try? You can send /skip."
ASK_FIRST_STEP = "Looking at your options, what first step will you take?"
ASK_FIRST_STEP_DATE = "When will you take it? Send a date, for example “tomorrow”."
ASK_COMMITMENT = "How committed are you to this step, from 1 to 10?"
ASK_COMMITMENT_LIFT = ("Thank you. What would need to be different for that number to go up by "
                       "one point?")
ASK_CHANGE_STEP = "Would you like to change your first step?"
CLOSING = "I will ask how it goes in your check-ins."

SCALE_HINT = "Please answer with a whole number from 1 to 10."
YES_NO_HINT = "Please answer yes or no."
CANCELLED = "Okay, we'll stop here. Everything you said so far is kept."


def intro(first_name: str) -> str:
    return (f"Let us give your goal some shape, {first_name}. You choose the goal and you own "
            "the results. I will only ask questions.")


ASK_WHY = "You chose: “{title}”. What makes it important to you?"
ASK_NOTICE = ("You are at {baseline}. What is already there that puts you at {baseline} rather "
              "than at 1?")


def ask_notice(baseline: int) -> str:
    return ASK_NOTICE_START if baseline == 1 else ASK_NOTICE.format(baseline=baseline)


def plan(goal: Mapping[str, Any]) -> str:
    """The plan played back, with the date for the goal when the client gave one."""
    due = f", by {long_date(goal['due'])}" if goal.get("due") else ""
    return (f"Here is your plan, in your own words. Goal: “{goal['title']}”. Today you are at "
            f"{goal['baseline']} out of 10, and your target is {goal['target']}{due}. First "
            f"step: “{goal['first_step']}”, by {long_date(goal['first_step_date'])}.")



def valid_text(text: str, max_length: int) -> tuple[str | None, str | None]:
    """(answer, None) or (None, the hint to send)."""
    text = text.strip()
    if not text:
        return None, "Please answer in a few words."
    if len(text) > max_length:
        unit = "character" if len(text) == 1 else "characters"
        return None, (f"That is {len(text):,} {unit}; please keep it to {max_length:,} at most. "
                      "The heart of it is enough.")
    return text, None


def valid_scale(text: str) -> int | None:
    try:
        value = float(text.strip().replace(",", "."))
    except ValueError:
        return None
    return int(value) if value.is_integer() and 1 <= value <= 10 else None


def valid_date(text: str) -> date | None:
    text = text.strip()
    today = date.today()
    if text.casefold() in ("today", "tomorrow"):
        return today + timedelta(days=text.casefold() == "tomorrow")
    try:
        return date.fromisoformat(text)
    except ValueError:
        pass
    match = DAY_FIRST.match(text)
    if match:
        day, month, year = match.groups()
        full_year = today.year if year is None else int(year) + (2000 if len(year) == 2 else 0)
        try:
            return date(full_year, int(month), int(day))
        except ValueError:
            return None
    return None


def date_hint() -> str:
    example = date.today() + timedelta(days=7)
    return (f"Please send a date such as {format_date(example, 'short', locale='en')} "
            f"or {example.isoformat()}.")


def long_date(iso: str) -> str:
    return format_date(datetime.strptime(iso, "%Y-%m-%d").date(), "long", locale="en")


def valid_yes_no(text: str) -> bool | None:
    word = text.strip().casefold().rstrip(".!")
    return word.startswith("y") if word in ("yes", "y", "no", "n") else None
