"""The webhook path: real HTTP POSTs from the fake Telegram, the secret checked on each one."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from bot.telegram.app import HEALTH_PATH, SECRET_HEADER
from tests.e2e.conftest import RunningBot, bot_running, settings_for
from tests.fakes.bot_api import FakeBotApi

SECRET = "s3cret-token_for-tests"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
async def webhook_bot(fake_bot_api: FakeBotApi, tmp_path: Path) -> AsyncIterator[RunningBot]:
    port = free_port()
    settings = settings_for(fake_bot_api, tmp_path,
                            webhook_url=f"http://127.0.0.1:{port}/telegram",
                            webhook_secret=SECRET)
    async with bot_running(fake_bot_api, settings, listen=("127.0.0.1", port)) as bot:
        yield bot


async def test_a_conversation_over_the_webhook(webhook_bot: RunningBot) -> None:
    fake = webhook_bot.fake
    assert fake.webhook_secret == SECRET
    assert fake.calls("getUpdates") == []
    ana = webhook_bot.user(201)
    await webhook_bot.agree(201)
    await ana.send("/goal")
    replies = await ana.send("Run a 10k race")
    assert replies[-1].text == ("You chose: “\u2068Run a 10k race\u2069”. "
                                "What makes it important to you?")
    assert fake.webhook_deliveries and all(d.status == 200 for d in fake.webhook_deliveries)


async def test_requests_without_the_secret_are_refused(webhook_bot: RunningBot) -> None:
    url = webhook_bot.settings.webhook_url
    assert url is not None
    update = {"update_id": 1, "message": {
        "message_id": 1, "date": 0, "text": "/start",
        "chat": {"id": 202, "type": "private"}, "from": {"id": 202, "is_bot": False,
                                                       "first_name": "Eve"}}}
    async with aiohttp.ClientSession() as session:
        for headers in ({}, {SECRET_HEADER: "wrong"}, {SECRET_HEADER: SECRET[:-1]}):
            async with session.post(url, json=update, headers=headers) as response:
                assert response.status == 403
        async with session.post(url, data=b"not json",
                                headers={SECRET_HEADER: SECRET}) as response:
            assert response.status == 400
        health = url.replace("/telegram", HEALTH_PATH)
        async with session.get(health) as response:
            assert response.status == 200
            assert (await response.json())["status"] == "ok"
    assert await webhook_bot.store.get_user(202) is None
    assert webhook_bot.fake.messages_to(202) == []
