"""Goal setting (dialogues/goal_setting.yaml) as a plain ConversationHandler.

The same questions in the same order, the same branches and the same validation (text
length limits, 1-10 scales as inline keyboards that also accept a typed number, yes/no,
dates as ISO, day-first or "today"/"tomorrow", /skip on optional questions, /cancel).
Answers live in ``context.user_data``; PicklePersistence writes them to disk every
``update_interval`` (60 s by default) and at shutdown, as usual.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

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

from bench.baseline.goal import (
    ASK_BASELINE,
    ASK_CHANGE_STEP,
    ASK_COMMITMENT,
    ASK_COMMITMENT_LIFT,
    ASK_DUE,
    ASK_FIRST_STEP,
    ASK_FIRST_STEP_DATE,
    ASK_GOAL,
    ASK_MORE_OPTIONS,
    ASK_OBSTACLES,
    ASK_OPTIONS,
    ASK_PICTURE,
    ASK_RESOURCES,
    ASK_TARGET,
    ASK_TARGET_CHECK,
    ASK_TRIED,
    ASK_WHY,
    CANCELLED,
    CLOSING,
    SCALE_HINT,
    YES_NO_HINT,
    ask_notice,
    date_hint,
    intro,
    plan,
    valid_date,
    valid_scale,
    valid_text,
    valid_yes_no,
)

(GOAL, WHY, PICTURE, BASELINE, NOTICE, TRIED, TARGET, TARGET_CHECK, DUE, OBSTACLES,
 RESOURCES, OPTIONS, MORE_OPTIONS, FIRST_STEP, FIRST_STEP_DATE, COMMITMENT, COMMITMENT_LIFT,
 CHANGE_STEP) = range(18)

Context = ContextTypes.DEFAULT_TYPE
TEXT = filters.TEXT & ~filters.COMMAND
# -- keyboards and validation ---------------------------------------------------------------

def scale_keyboard(name: str) -> InlineKeyboardMarkup:
    buttons = [InlineKeyboardButton(str(n), callback_data=f"{name}:{n}") for n in range(1, 11)]
    return InlineKeyboardMarkup([buttons[:5], buttons[5:]])


def yes_no_keyboard(name: str) -> InlineKeyboardMarkup:
    return InlineKeyboardMarkup([[InlineKeyboardButton("Yes", callback_data=f"{name}:yes"),
                                  InlineKeyboardButton("No", callback_data=f"{name}:no")]])


def answers(context: Context) -> dict[str, Any]:
    assert context.user_data is not None
    return context.user_data.setdefault("goal", {})  # type: ignore[no-any-return]


# -- entry and text questions -----------------------------------------------------------------

async def start(update: Update, context: Context) -> int:
    assert update.message is not None and update.effective_user is not None
    answers(context).clear()
    await update.message.reply_text(intro(update.effective_user.first_name))
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
    await update.message.reply_text(ASK_WHY.format(title=title))
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
        await update.message.reply_text(SCALE_HINT, reply_markup=scale_keyboard(name))
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
    await _chat_message(update).reply_text(ask_notice(value))
    return NOTICE


async def target(update: Update, context: Context) -> int:
    value = await _scale_value(update, "target", ASK_TARGET)
    if value is None:
        return TARGET
    answers(context)["target"] = value
    if value <= answers(context)["baseline"]:
        await _chat_message(update).reply_text(ASK_TARGET_CHECK.format(**answers(context)),
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
    value = valid_yes_no(update.message.text)
    if value is None:
        await update.message.reply_text(YES_NO_HINT, reply_markup=yes_no_keyboard(name))
    return value


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
    await message.reply_text(plan(goal))
    await message.reply_text(CLOSING)
    assert context.user_data is not None
    context.user_data.setdefault("goals", []).append(dict(goal))
    return ConversationHandler.END


async def cancel(update: Update, context: Context) -> int:
    assert update.message is not None
    await update.message.reply_text(CANCELLED)
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
