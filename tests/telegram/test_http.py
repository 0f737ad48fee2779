"""AiohttpRequest: PTB's requests over aiohttp, against the fake Bot API over real HTTP."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator

import pytest
import telegram
from telegram import InlineKeyboardButton, InlineKeyboardMarkup
from telegram.error import BadRequest, NetworkError, TimedOut

from bot.telegram import http
from bot.telegram.http import AiohttpRequest
from tests.fakes.bot_api import FakeBotApi


def bot_for(fake: FakeBotApi, request: AiohttpRequest,
            updates: AiohttpRequest | None = None) -> telegram.Bot:
    return telegram.Bot(fake.token, base_url=fake.base_url, request=request,
                        get_updates_request=updates or AiohttpRequest(connections=1))


@pytest.fixture
async def bot(fake_bot_api: FakeBotApi) -> AsyncIterator[telegram.Bot]:
    async with bot_for(fake_bot_api, AiohttpRequest(connections=4)) as b:
        yield b


async def test_messages_with_keyboards_and_unicode_arrive_as_sent(
        bot: telegram.Bot, fake_bot_api: FakeBotApi) -> None:
    markup = InlineKeyboardMarkup([[InlineKeyboardButton("כן", callback_data="yes")]])
    sent = await bot.send_message(7, "מה תרצה להשיג? 🎯 & <ok>", reply_markup=markup)
    [message] = fake_bot_api.messages_to(7)
    assert message.text == "מה תרצה להשיג? 🎯 & <ok>"
    assert message.reply_markup == {
        "inline_keyboard": [[{"text": "כן", "callback_data": "yes"}]]}
    assert sent.message_id == message.message_id


async def test_a_photo_is_uploaded_as_multipart(bot: telegram.Bot,
                                                fake_bot_api: FakeBotApi) -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40
    await bot.send_photo(8, png, caption="Your week")
    [photo] = fake_bot_api.photos
    assert (photo.chat_id, photo.content, photo.caption) == (8, png, "Your week")


async def test_api_errors_come_back_as_telegram_errors(bot: telegram.Bot,
                                                       fake_bot_api: FakeBotApi) -> None:
    fake_bot_api.fail_next("sendMessage", status=400, description="Bad Request: chat not found")
    with pytest.raises(BadRequest, match="Chat not found"):
        await bot.send_message(9, "hello")
    await bot.send_message(9, "again")  # the connection is still good
    assert [m.text for m in fake_bot_api.messages_to(9)] == ["again"]


async def test_no_answer_within_the_read_timeout_is_timed_out(
        fake_bot_api: FakeBotApi) -> None:
    fake_bot_api.hang("sendMessage", 2.0, times=1)
    async with bot_for(fake_bot_api, AiohttpRequest(connections=2, read_timeout=0.3)) as bot:
        started = time.monotonic()
        with pytest.raises(TimedOut):
            await bot.send_message(10, "slow")
        assert time.monotonic() - started < 1.5
        await bot.send_message(10, "next")


async def test_a_request_waits_for_a_free_connection_up_to_pool_and_connect_timeouts(
        fake_bot_api: FakeBotApi) -> None:
    fake_bot_api.hang("sendMessage", 1.0, times=1)
    request = AiohttpRequest(connections=1, pool_timeout=0.2, connect_timeout=0.1)
    async with bot_for(fake_bot_api, request) as bot:
        first = asyncio.ensure_future(bot.send_message(11, "holds the only connection"))
        await fake_bot_api.wait_for_calls("sendMessage", 1)
        with pytest.raises(TimedOut):
            await bot.send_message(12, "no connection free in time")
        await first
        patient = AiohttpRequest(connections=1, pool_timeout=5)
        async with bot_for(fake_bot_api, patient) as waiting_bot:
            fake_bot_api.hang("sendMessage", 0.3, times=1)
            await asyncio.gather(waiting_bot.send_message(13, "a"),
                                 waiting_bot.send_message(13, "b"))
    assert len(fake_bot_api.messages_to(13)) == 2


async def test_a_long_poll_gets_its_poll_time_on_top_of_the_read_timeout(
        fake_bot_api: FakeBotApi) -> None:
    updates = AiohttpRequest(connections=1, read_timeout=0.3)
    async with bot_for(fake_bot_api, AiohttpRequest(connections=1), updates) as bot:
        started = time.monotonic()
        assert await bot.get_updates(timeout=1) == ()
        assert time.monotonic() - started >= 0.9


async def test_an_unreachable_server_is_a_network_error(fake_bot_api: FakeBotApi) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    request = AiohttpRequest(connections=1)
    bot = telegram.Bot(fake_bot_api.token, base_url=f"http://127.0.0.1:{port}/bot",
                       request=request)
    await request.initialize()
    try:
        with pytest.raises(NetworkError) as caught:
            await bot.send_message(1, "nobody there")
        assert not isinstance(caught.value, TimedOut)
    finally:
        await request.shutdown()


def test_the_proxy_comes_from_the_environment_once_per_host(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    http._env_proxy_for.cache_clear()
    try:
        assert http._env_proxy("https://api.telegram.org/bot1:x/sendMessage") == \
            "http://proxy.internal:3128"
        assert http._env_proxy("http://127.0.0.1:8081/bot1:x/sendMessage") is None
        monkeypatch.delenv("HTTPS_PROXY")
        assert http._env_proxy("https://api.telegram.org/bot1:x/getMe") == \
            "http://proxy.internal:3128"  # looked up once
    finally:
        http._env_proxy_for.cache_clear()
