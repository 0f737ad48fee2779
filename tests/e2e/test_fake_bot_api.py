"""The fake Bot API, driven by the real python-telegram-bot client."""

import asyncio
import datetime as dt
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web
from telegram import Bot, BotCommand, InlineKeyboardButton, InlineKeyboardMarkup, Message, Update
from telegram.error import (
    BadRequest,
    Conflict,
    Forbidden,
    InvalidToken,
    NetworkError,
    RetryAfter,
)
from telegram.ext import (
    Application,
    CallbackQueryHandler,
    CommandHandler,
    ContextTypes,
    MessageHandler,
    filters,
)

from tests.fakes.bot_api import FakeBotApi, StoppedClock

USER = 4242


@pytest.fixture
async def bot(fake_bot_api: FakeBotApi) -> AsyncIterator[Bot]:
    async with Bot(fake_bot_api.token, base_url=fake_bot_api.base_url) as bot:
        yield bot


def keyboard(*datas: str) -> InlineKeyboardMarkup:
    return InlineKeyboardMarkup([[InlineKeyboardButton(d, callback_data=d) for d in datas]])


async def test_get_me(bot: Bot, fake_bot_api: FakeBotApi) -> None:
    me = await bot.get_me()

    assert me.is_bot
    assert me.id == 123456
    assert me.username == fake_bot_api.bot_username


async def test_wrong_token_and_unknown_method(fake_bot_api: FakeBotApi) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{fake_bot_api.url}/bot999:WRONG/getMe") as response:
            assert response.status == 401
            assert await response.json() == {
                "ok": False,
                "error_code": 401,
                "description": "Unauthorized",
            }
        url = f"{fake_bot_api.base_url}{fake_bot_api.token}/getMagic"
        async with session.post(url, json={}) as response:
            assert response.status == 404
            assert (await response.json())["description"] == "Not Found"
    with pytest.raises(InvalidToken):
        await Bot("999:WRONG", base_url=fake_bot_api.base_url).get_me()


async def test_send_message_is_recorded(bot: Bot, fake_bot_api: FakeBotApi) -> None:
    message = await bot.send_message(
        USER, "<b>Hi</b> Ana", parse_mode="HTML", reply_markup=keyboard("yes", "no")
    )

    assert message.text == "Hi Ana"
    assert message.chat.id == USER
    assert message.from_user is not None and message.from_user.is_bot
    assert message.reply_markup == keyboard("yes", "no")
    [sent] = fake_bot_api.messages_to(USER)
    assert sent.message_id == message.message_id
    assert sent.text == "<b>Hi</b> Ana"
    assert sent.parse_mode == "HTML"
    assert sent.reply_markup == keyboard("yes", "no").to_dict()
    assert fake_bot_api.calls("sendMessage")[0].params["chat_id"] == USER


async def test_parameters_from_query_json_and_multipart(bot: Bot, fake_bot_api: FakeBotApi) -> None:
    method_url = f"{fake_bot_api.base_url}{fake_bot_api.token}/sendMessage"
    async with aiohttp.ClientSession() as session:
        async with session.get(method_url, params={"chat_id": "7", "text": "query"}) as response:
            assert (await response.json())["result"]["text"] == "query"
        markup = {"inline_keyboard": [[{"text": "A", "callback_data": "a"}]]}
        body = {"chat_id": "7", "text": "json", "reply_markup": markup}
        async with session.post(method_url, json=body) as response:
            assert (await response.json())["result"]["reply_markup"] == markup
    photo = await bot.send_photo(7, b"\xff\xd8jpeg", caption="<i>me</i>", parse_mode="HTML")

    assert [m.text for m in fake_bot_api.messages_to(7)] == ["query", "json", None]
    assert photo.caption == "me" and photo.photo
    assert fake_bot_api.photos[0].content == b"\xff\xd8jpeg"


async def test_simulated_updates_deserialise(bot: Bot, fake_bot_api: FakeBotApi) -> None:
    fake_bot_api.send_sticker(USER)
    fake_bot_api.send_photo(USER)
    fake_bot_api.send_raw({"some_future_update": {"x": 1}})
    fake_bot_api.send_text(USER, "hi all", chat_type="group", chat_id=-100)

    sticker, photo, future, group = await bot.get_updates()

    assert sticker.message is not None and sticker.message.sticker is not None
    assert photo.message is not None and photo.message.photo
    assert future.effective_message is None and future.api_kwargs == {
        "some_future_update": {"x": 1}
    }
    assert group.effective_chat is not None and group.effective_chat.type == "group"


async def test_get_updates_long_polls_and_offset_confirms(
    bot: Bot, fake_bot_api: FakeBotApi
) -> None:
    assert await bot.get_updates() == ()
    poll = asyncio.create_task(bot.get_updates(timeout=5))
    await fake_bot_api.wait_for_calls("getUpdates", count=2)
    await asyncio.sleep(0.1)
    assert not poll.done()  # it is waiting for an update
    update_id = fake_bot_api.send_text(USER, "/start coach-7", first_name="Bea")
    [update] = await asyncio.wait_for(poll, 1.0)

    assert update.update_id == update_id
    assert update.message is not None
    assert update.message.text == "/start coach-7"
    assert update.message.from_user is not None
    assert update.message.from_user.first_name == "Bea"
    assert update.message.parse_entities() == {update.message.entities[0]: "/start"}
    # Not confirmed yet: served again, until the offset confirms it.
    assert [u.update_id for u in await bot.get_updates()] == [update_id]
    assert await bot.get_updates(offset=update_id + 1) == ()
    assert fake_bot_api.pending_updates == 0


async def test_redeliver_serves_the_same_update_again(bot: Bot, fake_bot_api: FakeBotApi) -> None:
    update_id = fake_bot_api.send_text(USER, "hello")
    await bot.get_updates(offset=update_id + 1)

    fake_bot_api.redeliver(update_id)
    [again] = await bot.get_updates(offset=update_id + 1)

    assert again.update_id == update_id
    assert again.message is not None and again.message.text == "hello"


async def test_callback_query_round_trip(bot: Bot, fake_bot_api: FakeBotApi) -> None:
    sent = await bot.send_message(USER, "Ready?", reply_markup=keyboard("go", "wait"))

    update_id = fake_bot_api.press_button(USER, sent.message_id, "go")
    [update] = await bot.get_updates(offset=update_id)
    query = update.callback_query
    assert query is not None and query.data == "go"
    assert query.message is not None and query.message.message_id == sent.message_id
    assert await query.answer("Let's go") is True
    edited = await bot.edit_message_text("Going!", USER, sent.message_id)

    assert fake_bot_api.answered_callbacks[0].text == "Let's go"
    assert isinstance(edited, Message)
    assert edited.text == "Going!" and edited.reply_markup is None  # edit dropped the keyboard
    with pytest.raises(BadRequest, match=r"(?i)query is too old"):
        await query.answer()
    with pytest.raises(BadRequest, match=r"(?i)message is not modified"):
        await bot.edit_message_text("Going!", USER, sent.message_id)
    with pytest.raises(BadRequest, match=r"(?i)message to edit not found"):
        await bot.edit_message_text("x", USER, 999)


# PTB 22 warns that RetryAfter.retry_after will become a timedelta.
@pytest.mark.filterwarnings("ignore::telegram.warnings.PTBDeprecationWarning")
async def test_429_surfaces_as_retry_after(bot: Bot, fake_bot_api: FakeBotApi) -> None:
    fake_bot_api.fail_next("sendMessage", status=429, retry_after=7)

    with pytest.raises(RetryAfter) as caught:
        await bot.send_message(USER, "hi")
    await bot.send_message(USER, "hi")  # only the next call failed

    retry_after = caught.value.retry_after
    assert retry_after == (7 if isinstance(retry_after, int) else dt.timedelta(seconds=7))
    assert [m.text for m in fake_bot_api.messages_to(USER)] == ["hi"]


async def test_blocked_user_is_forbidden(bot: Bot, fake_bot_api: FakeBotApi) -> None:
    fake_bot_api.block(USER)

    with pytest.raises(Forbidden, match=r"(?i)bot was blocked by the user"):
        await bot.send_message(USER, "hi")
    await bot.send_message(USER + 1, "others still get messages")


async def test_5xx_surfaces_as_network_error(bot: Bot, fake_bot_api: FakeBotApi) -> None:
    fake_bot_api.fail_next("sendMessage", status=502)
    fake_bot_api.fail_next("sendMessage", status=500)

    for _ in range(2):
        with pytest.raises(NetworkError):
            await bot.send_message(USER, "hi")
    assert fake_bot_api.messages_to(USER) == []


async def test_hang_makes_the_client_time_out(bot: Bot, fake_bot_api: FakeBotApi) -> None:
    fake_bot_api.hang("sendChatAction", 1.0, times=1)

    with pytest.raises(NetworkError):  # telegram.error.TimedOut
        await bot.send_chat_action(USER, "typing", read_timeout=0.2)
    assert await bot.send_chat_action(USER, "typing", read_timeout=0.2)


async def test_too_long_message_is_bad_request(bot: Bot, fake_bot_api: FakeBotApi) -> None:
    await bot.send_message(USER, "😀" * 2048)  # 4096 UTF-16 code units: the limit

    with pytest.raises(BadRequest, match=r"(?i)message is too long"):
        await bot.send_message(USER, "😀" * 2048 + "!")
    with pytest.raises(BadRequest, match=r"(?i)message text is empty"):
        await bot.send_message(USER, "  ")
    with pytest.raises(BadRequest, match=r"(?i)can't parse entities"):
        await bot.send_message(USER, "1 < 2", parse_mode="HTML")


async def test_callback_data_over_64_bytes_is_bad_request(bot: Bot) -> None:
    await bot.send_message(USER, "ok", reply_markup=keyboard("é" * 32))  # 64 bytes

    with pytest.raises(BadRequest, match=r"(?i)BUTTON_DATA_INVALID"):
        await bot.send_message(USER, "too long", reply_markup=keyboard("é" * 32 + "x"))


async def test_commands_and_documents(bot: Bot, fake_bot_api: FakeBotApi) -> None:
    await bot.set_my_commands([BotCommand("start", "Begin")], language_code="ru")
    with pytest.raises(BadRequest, match=r"(?i)BOT_COMMAND_INVALID"):
        await bot.set_my_commands([BotCommand("Start", "Begin")])
    message = await bot.send_document(USER, b"%PDF-1.4", filename="plan.pdf", caption="Plan")

    assert fake_bot_api.commands_for(language_code="ru") == [
        {"command": "start", "description": "Begin"}
    ]
    assert await bot.get_my_commands() == ()
    assert message.document is not None and message.document.file_name == "plan.pdf"
    [document] = fake_bot_api.documents
    assert (document.file_name, document.content, document.caption) == (
        "plan.pdf",
        b"%PDF-1.4",
        "Plan",
    )


async def test_webhook_gets_posts_with_secret_and_blocks_get_updates(
    bot: Bot, fake_bot_api: FakeBotApi
) -> None:
    received: list[tuple[str | None, dict[str, object]]] = []

    async def receive(request: web.Request) -> web.Response:
        received.append(
            (request.headers.get("X-Telegram-Bot-Api-Secret-Token"), await request.json())
        )
        return web.Response(status=500 if len(received) == 1 else 200)  # first attempt fails

    app = web.Application()
    app.router.add_post("/hook", receive)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    port = runner.addresses[0][1]
    try:
        await bot.set_webhook(f"http://127.0.0.1:{port}/hook", secret_token="s3cret")
        update_id = fake_bot_api.send_text(USER, "via webhook")
        await fake_bot_api.wait_idle(timeout=2)

        assert [(secret, body["update_id"]) for secret, body in received] == [
            ("s3cret", update_id),
            ("s3cret", update_id),
        ]
        assert [d.status for d in fake_bot_api.webhook_deliveries] == [500, 200]
        with pytest.raises(Conflict):
            await bot.get_updates()
        info = await bot.get_webhook_info()
        assert info.url.endswith("/hook") and info.pending_update_count == 0
        await bot.delete_webhook()
        assert await bot.get_updates() == ()
    finally:
        await runner.cleanup()


async def test_application_polls_and_replies(fake_bot_api: FakeBotApi) -> None:
    async def start(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        assert update.message is not None
        await update.message.reply_text(f"welcome {context.args}", reply_markup=keyboard("ok"))

    async def echo(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        assert update.message is not None and update.message.text is not None
        await update.message.reply_text(update.message.text.upper())

    async def pressed(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        assert update.callback_query is not None
        await update.callback_query.answer()
        await update.callback_query.edit_message_text(f"pressed {update.callback_query.data}")

    builder = Application.builder().token(fake_bot_api.token).base_url(fake_bot_api.base_url)
    application = builder.build()
    application.add_handler(CommandHandler("start", start))
    application.add_handler(MessageHandler(filters.TEXT & ~filters.COMMAND, echo))
    application.add_handler(CallbackQueryHandler(pressed))

    async with application:
        await application.start()
        assert application.updater is not None
        await application.updater.start_polling(poll_interval=0, timeout=1)

        fake_bot_api.send_text(USER, "/start coach-7")
        fake_bot_api.send_text(USER, "hello")
        welcome, shout = await fake_bot_api.wait_for_messages(USER, 2)
        assert welcome.text == "welcome ['coach-7']"
        assert shout.text == "HELLO"
        fake_bot_api.press_button(USER, welcome.message_id, "ok")
        await fake_bot_api.wait_for_calls("editMessageText")

        await application.updater.stop()
        await application.stop()

    assert welcome.edited and welcome.text == "pressed ok"
    assert len(fake_bot_api.answered_callbacks) == 1
    assert fake_bot_api.pending_updates == 0


@pytest.mark.filterwarnings("ignore::telegram.warnings.PTBDeprecationWarning")
async def test_limits_per_bot_across_connections(fake_bot_api: FakeBotApi) -> None:
    """About 30 messages a second per bot, however many clients send them; a paid broadcast
    counts apart; 429 with retry_after beyond."""
    fake_bot_api.enforce_limits(per_bot=30, chat_burst=3)
    clock = fake_bot_api.limits_clock = StoppedClock()  # a loaded machine cannot stretch it
    bots = [Bot(fake_bot_api.token, base_url=fake_bot_api.base_url) for _ in range(3)]
    for b in bots:
        await b.initialize()
    try:
        async def send(b: Bot, chat: int) -> str:
            try:
                await b.send_message(chat, "hi")
                return "ok"
            except RetryAfter as exc:
                assert exc.retry_after in (1, dt.timedelta(seconds=1))
                return "429"

        results = await asyncio.gather(*(send(bots[i % 3], 1000 + i) for i in range(45)))
        assert results.count("ok") == 30 and results.count("429") == 15
        assert fake_bot_api.rate_limited == 15
        paid = await bots[0].send_message(2000, "paid", allow_paid_broadcast=True)
        assert paid.text == "paid"  # outside the free budget
        clock.now += 1.05
        assert await send(bots[1], 3000) == "ok"  # a second later the budget is back
    finally:
        for b in bots:
            await b.shutdown()


async def test_limits_per_chat_allow_a_short_burst(bot: Bot, fake_bot_api: FakeBotApi) -> None:
    fake_bot_api.enforce_limits(per_chat=1.0, chat_burst=3)
    clock = fake_bot_api.limits_clock = StoppedClock()
    for i in range(3):
        await bot.send_message(USER, f"burst {i}")
    with pytest.raises(RetryAfter):
        await bot.send_message(USER, "one too many")
    await bot.send_message(USER + 1, "another chat is not limited")
    clock.now += 1.05
    await bot.send_message(USER, "a second later")
    with pytest.raises(RetryAfter):
        await bot.send_message(USER, "but not two")
    assert [m.text for m in fake_bot_api.messages_to(USER)] == [
        "burst 0", "burst 1", "burst 2", "a second later"]


async def test_no_limits_unless_asked(bot: Bot, fake_bot_api: FakeBotApi) -> None:
    await asyncio.gather(*(bot.send_message(USER, str(i)) for i in range(40)))
    assert len(fake_bot_api.messages_to(USER)) == 40
