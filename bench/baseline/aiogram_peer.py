"""The second peer: goal setting as an aiogram 3 developer writes it with aiogram-dialog.

One `Dialog` of `Window`s over a `StatesGroup`, the 1-10 scales and yes/no as `Select`
keyboards that also accept the typed answer (`TextInput`), /skip as a `MessageInput`.
The dialog's state lives in aiogram's `RedisStorage` (aiogram-dialog's usual persistent
storage, written on every update). Every answer is also stored in a database with
SQLAlchemy and committed before the next question is sent, the goal when the plan is.

Same questions, buttons and validation as `bench/baseline/bot.py` (the texts and checks
are shared: `bench/baseline/goal.py`). Each reply is a new message, as there: aiogram-dialog
would otherwise edit the message under a pressed button, so the windows are shown with
`ShowMode.SEND` (it then takes the keyboard off the previous message, its usual way).

`python -m bench.baseline.aiogram_peer API_URL DATABASE_URL REDIS_URL KEY_PREFIX`: long-polls
the Bot API at API_URL until SIGTERM.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable, Mapping
from typing import Any

from aiogram import Bot, Dispatcher, F
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.filters import Command
from aiogram.fsm.state import State, StatesGroup
from aiogram.fsm.storage.base import DefaultKeyBuilder
from aiogram.fsm.storage.redis import RedisStorage
from aiogram.types import CallbackQuery, Message
from aiogram_dialog import Dialog, DialogManager, ShowMode, StartMode, Window, setup_dialogs
from aiogram_dialog.widgets.input import MessageInput, TextInput
from aiogram_dialog.widgets.kbd import Group, Select
from aiogram_dialog.widgets.text import Case, Const, Format, Text
from redis.asyncio import BlockingConnectionPool, Redis
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine

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
    ASK_NOTICE,
    ASK_NOTICE_START,
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
    date_hint,
    intro,
    plan,
    valid_date,
    valid_scale,
    valid_text,
    valid_yes_no,
)
from bench.baseline.records import Answer, Base, Goal

TOKEN = "123456:TEST-TOKEN"
ALLOWED_UPDATES = ["message", "edited_message", "callback_query"]
Sessions = async_sessionmaker[AsyncSession]


# -- the dialog ---------------------------------------------------------------------------------

class GoalSetting(StatesGroup):
    title = State()
    why = State()
    picture = State()
    baseline = State()
    reality = State()
    tried = State()
    target = State()
    hold = State()
    due = State()
    obstacles = State()
    resources = State()
    options = State()
    more_options = State()
    first_step = State()
    first_step_date = State()
    commitment = State()
    commitment_lift = State()
    change_step = State()


# Each state is named after the answer it saves; where it goes next when that is fixed:
FOLLOWS = {"title": GoalSetting.why, "why": GoalSetting.picture,
           "picture": GoalSetting.baseline, "baseline": GoalSetting.reality,
           "reality": GoalSetting.tried, "tried": GoalSetting.target,
           "due": GoalSetting.obstacles, "obstacles": GoalSetting.resources,
           "resources": GoalSetting.options, "options": GoalSetting.more_options,
           "more_options": GoalSetting.first_step, "first_step": GoalSetting.first_step_date,
           "first_step_date": GoalSetting.commitment,
           "commitment_lift": GoalSetting.change_step}


def next_state(key: str, answers: Mapping[str, Any]) -> State | None:
    """The question after the one that saved `key`; None: the plan."""
    match key:
        case "target":
            return GoalSetting.hold if answers["target"] <= answers["baseline"] else GoalSetting.due
        case "hold":
            return GoalSetting.due if answers["hold"] else GoalSetting.target
        case "commitment":
            return GoalSetting.commitment_lift if answers["commitment"] < 7 else None
        case "change_step":
            return GoalSetting.first_step if answers["change_step"] else None
    return FOLLOWS[key]


async def advance(manager: DialogManager, key: str, value: Any) -> None:
    """Store the answer (committed), then show the next question or the plan."""
    user = manager.event.from_user
    assert user is not None
    sessions: Sessions = manager.middleware_data["sessions"]
    async with sessions() as session:
        session.add(Answer(user_id=user.id, key=key, value=None if value is None else str(value)))
        await session.commit()
    answers = manager.dialog_data
    answers.pop("hint", None)
    answers[key] = value
    following = next_state(key, answers)
    if following is not None:
        await manager.switch_to(following, show_mode=ShowMode.SEND)
        return
    async with sessions() as session:
        session.add(Goal(user_id=user.id, title=answers["title"], baseline=answers["baseline"],
                         target=answers["target"], first_step=answers["first_step"],
                         first_step_date=answers["first_step_date"]))
        await session.commit()
    bot: Bot = manager.middleware_data["bot"]
    chat_id = manager.middleware_data["event_chat"].id
    await bot.send_message(chat_id, plan(answers))
    await bot.send_message(chat_id, CLOSING)
    await manager.done()


def key_of(widget: Any) -> str:
    return str(widget.widget_id).partition(".")[0]


async def answered(event: Message | CallbackQuery, widget: Any, manager: DialogManager,
                   value: Any) -> None:
    """A TextInput's checked answer or a Select's pressed one."""
    await advance(manager, key_of(widget), value)


async def skipped(message: Message, widget: Any, manager: DialogManager) -> None:
    await advance(manager, key_of(widget), None)


async def wrong(message: Message, widget: Any, manager: DialogManager,
                error: ValueError) -> None:
    manager.dialog_data["hint"] = str(error)  # the window shows it instead of the question


def checked(check: Callable[[str], Any], hint: Callable[[], str]) -> Callable[[str], Any]:
    """A TextInput type factory: the checked answer, or ValueError(the hint)."""
    def factory(text: str) -> Any:
        value = check(text)
        if value is None:
            raise ValueError(hint())
        return value
    return factory


def text_of(max_length: int) -> Callable[[str], str]:
    def factory(text: str) -> str:
        value, hint = valid_text(text, max_length)
        if value is None:
            raise ValueError(hint)
        return value
    return factory


def iso_date(text: str) -> str | None:
    found = valid_date(text)
    return None if found is None else found.isoformat()


NOT_A_COMMAND = ~F.text.startswith("/")
SCALE = [str(n) for n in range(1, 11)]
YES_NO = [("yes", "Yes"), ("no", "No")]


def question(text: Text) -> Case:
    return Case({True: Format("{hint}"), False: text},
                selector=lambda data, case, manager: "hint" in data)


def key_of_state(state: State) -> str:
    return str(state.state).rpartition(":")[2]


def ask(state: State, text: str | Text, check: Callable[[str], Any], *,
        buttons: Select[Any] | None = None, optional: bool = False) -> Window:
    """A question: typed answers go through `check`, pressed ones through `buttons`."""
    key = key_of_state(state)
    widgets: list[Any] = [question(Const(text) if isinstance(text, str) else text)]
    if buttons is not None:
        widgets.append(Group(buttons, width=5))
    if optional:
        widgets.append(MessageInput(skipped, filter=Command("skip"), id=f"{key}.skip"))
    widgets.append(TextInput(f"{key}.typed", type_factory=check, on_success=answered,
                             on_error=wrong, filter=NOT_A_COMMAND))
    return Window(*widgets, state=state)


def ask_scale(state: State, text: str) -> Window:
    buttons = Select(Format("{item}"), id=key_of_state(state), items=SCALE,
                     item_id_getter=str, type_factory=int, on_click=answered)
    return ask(state, text, checked(valid_scale, lambda: SCALE_HINT), buttons=buttons)


def ask_yes_no(state: State, text: str | Text) -> Window:
    buttons = Select(Format("{item[1]}"), id=key_of_state(state), items=YES_NO,
                     item_id_getter=lambda item: item[0],
                     type_factory=lambda item_id: item_id == "yes", on_click=answered)
    return ask(state, text, checked(valid_yes_no, lambda: YES_NO_HINT), buttons=buttons)


async def answers_so_far(dialog_manager: DialogManager, **_: Any) -> dict[str, Any]:
    return dialog_manager.dialog_data


def goal_dialog() -> Dialog:
    s = GoalSetting
    dated = checked(iso_date, date_hint)
    return Dialog(
        ask(s.title, ASK_GOAL, text_of(200)),
        ask(s.why, Format(ASK_WHY), text_of(1000)),
        ask(s.picture, ASK_PICTURE, text_of(1000)),
        ask_scale(s.baseline, ASK_BASELINE),
        ask(s.reality, Case({1: Const(ASK_NOTICE_START), ...: Format(ASK_NOTICE)},
                            selector="baseline"), text_of(1000)),
        ask(s.tried, ASK_TRIED, text_of(1000), optional=True),
        ask_scale(s.target, ASK_TARGET),
        ask_yes_no(s.hold, Format(ASK_TARGET_CHECK)),
        ask(s.due, ASK_DUE, dated, optional=True),
        ask(s.obstacles, ASK_OBSTACLES, text_of(1000), optional=True),
        ask(s.resources, ASK_RESOURCES, text_of(1000), optional=True),
        ask(s.options, ASK_OPTIONS, text_of(1000)),
        ask(s.more_options, ASK_MORE_OPTIONS, text_of(1000), optional=True),
        ask(s.first_step, ASK_FIRST_STEP, text_of(300)),
        ask(s.first_step_date, ASK_FIRST_STEP_DATE, dated),
        ask_scale(s.commitment, ASK_COMMITMENT),
        ask(s.commitment_lift, ASK_COMMITMENT_LIFT, text_of(500)),
        ask_yes_no(s.change_step, ASK_CHANGE_STEP),
        getter=answers_so_far,
    )


async def start(message: Message, dialog_manager: DialogManager) -> None:
    assert message.from_user is not None
    await message.answer(intro(message.from_user.first_name))
    await dialog_manager.start(GoalSetting.title, mode=StartMode.RESET_STACK,
                               show_mode=ShowMode.SEND)


async def cancel(message: Message, dialog_manager: DialogManager) -> None:
    if dialog_manager.has_context():
        await message.answer(CANCELLED)
        await dialog_manager.reset_stack()


# -- the process --------------------------------------------------------------------------------

async def run(api_url: str, database_url: str, redis_url: str, key_prefix: str) -> None:
    engine = create_async_engine(database_url)
    async with engine.begin() as connection:
        await connection.run_sync(Base.metadata.create_all)
    # aiogram-dialog keeps its stacks and contexts apart only with `with_destiny`. Updates
    # are handled concurrently, and redis-py's default pool fails a command once 100 are in
    # flight ("Too many connections"); this one waits for a free connection instead. The
    # events isolation (a Redis lock per chat, as aiogram-dialog deployments use) holds a
    # chat's next update until the last one's context is saved: without it a client who
    # answers the moment the question arrives is read against the previous window and gets
    # no reply (seen once in about 1,700 updates). redis-py polls a held lock every 0.1 s by
    # default, which a client answering at once meets on nearly every update (one user alone
    # waited 109 ms at the median); 5 ms keeps the wait to the save it is for.
    redis = Redis(connection_pool=BlockingConnectionPool.from_url(redis_url,
                                                                  max_connections=64))
    storage = RedisStorage(redis, key_builder=DefaultKeyBuilder(prefix=key_prefix,
                                                                with_destiny=True))
    bot = Bot(TOKEN, session=AiohttpSession(api=TelegramAPIServer.from_base(api_url)))
    dispatcher = Dispatcher(storage=storage, events_isolation=storage.create_isolation(
                                lock_kwargs={"timeout": 60, "sleep": 0.005}),
                            sessions=async_sessionmaker(engine))
    dispatcher.message.register(start, Command("goal"))
    dispatcher.message.register(cancel, Command("cancel"))
    dispatcher.include_router(goal_dialog())
    setup_dialogs(dispatcher)
    dispatcher.shutdown.register(engine.dispose)  # the dispatcher closes the storage itself
    await dispatcher.start_polling(bot, allowed_updates=ALLOWED_UPDATES)  # until SIGTERM


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="aiogram peer %(levelname)s %(message)s")
    asyncio.run(run(*sys.argv[1:5]))
