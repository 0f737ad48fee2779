"""Goal setting (dialogues/goal_setting.yaml) as a plain ConversationHandler.

The same questions in the same order, the same branches and the same validation (text
length limits, 1-10 scales as inline keyboards that also accept a typed number, yes/no,
dates as ISO, day-first or "today"/"tomorrow", /skip on optional questions, /cancel).
Answers live in ``context.user_data``; PicklePersistence writes them to disk every
``update_interval`` (60 s by default) and at shutdown, as usual.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from babel.dates import format_date
from telegram import InlineKeyboardButton, InlineKeyboardMarkup, Update
from telegram.ext import (
    Application,
    CallbackQueryHandler,
    CommandHandler,
    ContextTypes,
    ConversationHandler,
    MessageHandler,
    PicklePersistence,
    filters,
)

(GOAL, WHY, PICTURE, BASELINE, NOTICE, TRIED, TARGET, TARGET_CHECK, DUE, OBSTACLES,
 RESOURCES, OPTIONS, MORE_OPTIONS, FIRST_STEP, FIRST_STEP_DATE, COMMITMENT, COMMITMENT_LIFT,
 CHANGE_STEP) = range(18)

Context = ContextTypes.DEFAULT_TYPE
TEXT = filters.TEXT & ~filters.COMMAND
DAY_FIRST = re.compile(r"(\d{1,2})\s*[./-]\s*(\d{1,2})\s*[./-]?\s*(\d{2,4})?\.?\Z")

ASK_GOAL = "In your own words: what would you like to achieve?"
ASK_PICTURE = "Imagine you have reached it. What is different? What do you see, hear or feel?"
ASK_BASELINE = ("On a scale from 1 to 10, where do you stand with it today? 1 means far from "
                "it, 10 means you are fully there.")
ASK_NOTICE_START = ("So you are at the very start. What do you notice about where you stand "
                    "today?")
ASK_TRIED = ("What have you already tried, and what did you learn from it? You can send /skip "
             "if nothing comes to mind.")
ASK_TARGET = "Where on the same scale from 1 to 10 do you want to be?"
ASK_TARGET_CHECK = ("Your target is not above where you stand now. Is that what you mean: to "
                    "keep what you have?")
ASK_DUE = ("By what date would you like to be there? Send a date, or /skip if you prefer not "
           "to set one.")
ASK_OBSTACLES = "What could get in your way? You can send /skip."
ASK_RESOURCES = ("What do you already have that can help you? For example people, skills, time "
                 "or things that worked before. You can send /skip.")
ASK_OPTIONS = ("What options do you see to move forward? List as many as come to mind, even "
               "the ones you are not sure about.")
ASK_MORE_OPTIONS = "If nothing could stop you, what else would you try? You can send /skip."
ASK_FIRST_STEP = "Looking at your options, what is the one first step you will take?"
ASK_FIRST_STEP_DATE = "When will you take it? Send a date, for example “tomorrow”."
ASK_COMMITMENT = "How committed are you to this step, from 1 to 10?"
ASK_COMMITMENT_LIFT = ("Thank you for being honest. What would need to be different for that "
                       "number to be an 8?")
ASK_CHANGE_STEP = "Would you like to change your first step?"
CLOSING = ("I will ask how it goes in your daily check-ins. You make it happen; I am here to "
           "ask the questions.")


# -- keyboards and validation ---------------------------------------------------------------

def scale_keyboard(name: str) -> InlineKeyboardMarkup:
    buttons = [InlineKeyboardButton(str(n), callback_data=f"{name}:{n}") for n in range(1, 11)]
    return InlineKeyboardMarkup([buttons[:5], buttons[5:]])


def yes_no_keyboard(name: str) -> InlineKeyboardMarkup:
    return InlineKeyboardMarkup([[InlineKeyboardButton("Yes", callback_data=f"{name}:yes"),
                                  InlineKeyboardButton("No", callback_data=f"{name}:no")]])


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


def answers(context: Context) -> dict[str, Any]:
    assert context.user_data is not None
    return context.user_data.setdefault("goal", {})  # type: ignore[no-any-return]


# -- entry and text questions -----------------------------------------------------------------

async def start(update: Update, context: Context) -> int:
    assert update.message is not None and update.effective_user is not None
    answers(context).clear()
    await update.message.reply_text(
        f"Let's give your goal some shape, {update.effective_user.first_name}. You choose the "
        "goal and you own the results. I will only ask questions.")
    await update.message.reply_text(ASK_GOAL)
    return GOAL


async def _text_step(update: Update, context: Context, key: str, max_length: int,
                     same: int) -> str | None:
    """Save a text answer, or say what is wrong with it (then the state stays `same`)."""
    assert update.message is not None and update.message.text is not None
    value, hint = valid_text(update.message.text, max_length)
    if value is None:
        await update.message.reply_text(hint or "")
        return None
    answers(context)[key] = value
    return value


async def goal(update: Update, context: Context) -> int:
    title = await _text_step(update, context, "title", 200, GOAL)
    if title is None:
        return GOAL
    assert update.message is not None
    await update.message.reply_text(f"Why does “{title}” matter to you?")
    return WHY


async def why(update: Update, context: Context) -> int:
    if await _text_step(update, context, "why", 1000, WHY) is None:
        return WHY
    assert update.message is not None
    await update.message.reply_text(ASK_PICTURE)
    return PICTURE


async def picture(update: Update, context: Context) -> int:
    if await _text_step(update, context, "picture", 1000, PICTURE) is None:
        return PICTURE
    assert update.message is not None
    await update.message.reply_text(ASK_BASELINE, reply_markup=scale_keyboard("baseline"))
    return BASELINE


async def reality(update: Update, context: Context) -> int:
    if await _text_step(update, context, "reality", 1000, NOTICE) is None:
        return NOTICE
    assert update.message is not None
    await update.message.reply_text(ASK_TRIED)
    return TRIED


async def tried(update: Update, context: Context) -> int:
    assert update.message is not None
    if update.message.text == "/skip":
        answers(context)["tried"] = None
    elif await _text_step(update, context, "tried", 1000, TRIED) is None:
        return TRIED
    await update.message.reply_text(ASK_TARGET, reply_markup=scale_keyboard("target"))
    return TARGET


async def obstacles(update: Update, context: Context) -> int:
    assert update.message is not None
    if update.message.text == "/skip":
        answers(context)["obstacles"] = None
    elif await _text_step(update, context, "obstacles", 1000, OBSTACLES) is None:
        return OBSTACLES
    await update.message.reply_text(ASK_RESOURCES)
    return RESOURCES


async def resources(update: Update, context: Context) -> int:
    assert update.message is not None
    if update.message.text == "/skip":
        answers(context)["resources"] = None
    elif await _text_step(update, context, "resources", 1000, RESOURCES) is None:
        return RESOURCES
    await update.message.reply_text(ASK_OPTIONS)
    return OPTIONS


async def options(update: Update, context: Context) -> int:
    if await _text_step(update, context, "options", 1000, OPTIONS) is None:
        return OPTIONS
    assert update.message is not None
    await update.message.reply_text(ASK_MORE_OPTIONS)
    return MORE_OPTIONS


async def more_options(update: Update, context: Context) -> int:
    assert update.message is not None
    if update.message.text == "/skip":
        answers(context)["more_options"] = None
    elif await _text_step(update, context, "more_options", 1000, MORE_OPTIONS) is None:
        return MORE_OPTIONS
    await update.message.reply_text(ASK_FIRST_STEP)
    return FIRST_STEP


async def first_step(update: Update, context: Context) -> int:
    if await _text_step(update, context, "first_step", 300, FIRST_STEP) is None:
        return FIRST_STEP
    assert update.message is not None
    await update.message.reply_text(ASK_FIRST_STEP_DATE)
    return FIRST_STEP_DATE


async def commitment_lift(update: Update, context: Context) -> int:
    if await _text_step(update, context, "commitment_lift", 500, COMMITMENT_LIFT) is None:
        return COMMITMENT_LIFT
    assert update.message is not None
    await update.message.reply_text(ASK_CHANGE_STEP, reply_markup=yes_no_keyboard("change"))
    return CHANGE_STEP


# -- dates --------------------------------------------------------------------------------------

async def due(update: Update, context: Context) -> int:
    assert update.message is not None and update.message.text is not None
    if update.message.text == "/skip":
        answers(context)["due"] = None
    else:
        found = valid_date(update.message.text)
        if found is None:
            await update.message.reply_text(date_hint())
            return DUE
        answers(context)["due"] = found.isoformat()
    await update.message.reply_text(ASK_OBSTACLES)
    return OBSTACLES


async def first_step_date(update: Update, context: Context) -> int:
    assert update.message is not None and update.message.text is not None
    found = valid_date(update.message.text)
    if found is None:
        await update.message.reply_text(date_hint())
        return FIRST_STEP_DATE
    answers(context)["first_step_date"] = found.isoformat()
    await update.message.reply_text(ASK_COMMITMENT, reply_markup=scale_keyboard("commitment"))
    return COMMITMENT


# -- scales and yes/no: a button press, or the number typed --------------------------------------

async def _scale_value(update: Update, name: str, question: str) -> int | None:
    """The pressed or typed 1-10 value; on a wrong one, the hint with the keyboard again."""
    query = update.callback_query
    if query is not None:
        await query.answer()
        return int((query.data or "").partition(":")[2])
    assert update.message is not None and update.message.text is not None
    value = valid_scale(update.message.text)
    if value is None:
        await update.message.reply_text("Please answer with a whole number from 1 to 10.",
                                        reply_markup=scale_keyboard(name))
    return value


def _chat_message(update: Update) -> Any:
    """Where to reply: the message, or the message carrying the pressed button."""
    if update.callback_query is not None:
        return update.callback_query.message
    return update.message


async def baseline(update: Update, context: Context) -> int:
    value = await _scale_value(update, "baseline", ASK_BASELINE)
    if value is None:
        return BASELINE
    answers(context)["baseline"] = value
    if value == 1:
        await _chat_message(update).reply_text(ASK_NOTICE_START)
    else:
        await _chat_message(update).reply_text(
            f"You are at {value}. What is already there that makes it a {value} and not a 1?")
    return NOTICE


async def target(update: Update, context: Context) -> int:
    value = await _scale_value(update, "target", ASK_TARGET)
    if value is None:
        return TARGET
    answers(context)["target"] = value
    if value <= answers(context)["baseline"]:
        await _chat_message(update).reply_text(ASK_TARGET_CHECK,
                                               reply_markup=yes_no_keyboard("hold"))
        return TARGET_CHECK
    await _chat_message(update).reply_text(ASK_DUE)
    return DUE


async def commitment(update: Update, context: Context) -> int:
    value = await _scale_value(update, "commitment", ASK_COMMITMENT)
    if value is None:
        return COMMITMENT
    answers(context)["commitment"] = value
    if value < 7:
        await _chat_message(update).reply_text(ASK_COMMITMENT_LIFT)
        return COMMITMENT_LIFT
    return await wrap_up(update, context)


async def _yes_no_value(update: Update, name: str) -> bool | None:
    query = update.callback_query
    if query is not None:
        await query.answer()
        return (query.data or "").endswith(":yes")
    assert update.message is not None and update.message.text is not None
    word = update.message.text.strip().casefold().rstrip(".!")
    if word in ("yes", "y", "no", "n"):
        return word.startswith("y")
    await update.message.reply_text("Please answer yes or no.",
                                    reply_markup=yes_no_keyboard(name))
    return None


async def target_check(update: Update, context: Context) -> int:
    hold = await _yes_no_value(update, "hold")
    if hold is None:
        return TARGET_CHECK
    answers(context)["hold"] = hold
    if hold:
        await _chat_message(update).reply_text(ASK_DUE)
        return DUE
    await _chat_message(update).reply_text(ASK_TARGET, reply_markup=scale_keyboard("target"))
    return TARGET


async def change_step(update: Update, context: Context) -> int:
    change = await _yes_no_value(update, "change")
    if change is None:
        return CHANGE_STEP
    answers(context)["change_step"] = change
    if change:
        await _chat_message(update).reply_text(ASK_FIRST_STEP)
        return FIRST_STEP
    return await wrap_up(update, context)


async def wrap_up(update: Update, context: Context) -> int:
    goal = answers(context)
    message = _chat_message(update)
    await message.reply_text(
        f"Here is your plan, in your own words. Goal: “{goal['title']}”. Today you are at "
        f"{goal['baseline']} out of 10, and your target is {goal['target']}. First step: "
        f"“{goal['first_step']}”, by {long_date(goal['first_step_date'])}.")
    await message.reply_text(CLOSING)
    assert context.user_data is not None
    context.user_data.setdefault("goals", []).append(dict(goal))
    return ConversationHandler.END


async def cancel(update: Update, context: Context) -> int:
    assert update.message is not None
    await update.message.reply_text("Okay, we'll stop here. Everything you said so far is kept.")
    return ConversationHandler.END


def conversation() -> ConversationHandler[Context]:
    def text(callback: Any) -> MessageHandler[Context, Any]:
        return MessageHandler(TEXT, callback)

    def skip(callback: Any) -> CommandHandler[Context, Any]:
        return CommandHandler("skip", callback)

    def scale(name: str, callback: Any) -> list[Any]:
        return [CallbackQueryHandler(callback, pattern=rf"^{name}:([1-9]|10)$"), text(callback)]

    def yes_no(name: str, callback: Any) -> list[Any]:
        return [CallbackQueryHandler(callback, pattern=rf"^{name}:(yes|no)$"), text(callback)]

    return ConversationHandler(
        entry_points=[CommandHandler("goal", start)],
        states={
            GOAL: [text(goal)],
            WHY: [text(why)],
            PICTURE: [text(picture)],
            BASELINE: scale("baseline", baseline),
            NOTICE: [text(reality)],
            TRIED: [text(tried), skip(tried)],
            TARGET: scale("target", target),
            TARGET_CHECK: yes_no("hold", target_check),
            DUE: [text(due), skip(due)],
            OBSTACLES: [text(obstacles), skip(obstacles)],
            RESOURCES: [text(resources), skip(resources)],
            OPTIONS: [text(options)],
            MORE_OPTIONS: [text(more_options), skip(more_options)],
            FIRST_STEP: [text(first_step)],
            FIRST_STEP_DATE: [text(first_step_date)],
            COMMITMENT: scale("commitment", commitment),
            COMMITMENT_LIFT: [text(commitment_lift)],
            CHANGE_STEP: yes_no("change", change_step),
        },
        fallbacks=[CommandHandler("cancel", cancel)],
        name="goal_setting",
        persistent=True,
    )


def build(token: str, api_url: str, data_file: Path) -> Application[Any, Any, Any, Any, Any, Any]:
    application = (
        Application.builder().token(token)
        .base_url(f"{api_url}/bot").base_file_url(f"{api_url}/file/bot")
        .persistence(PicklePersistence(filepath=data_file))
        .build()
    )
    application.add_handler(conversation())
    return application
