"""The in-process test client: users (and coaches) talking to the real application, without
HTTP and without sleeping.

The bot is wired exactly as `coachbot run` wires it (``bot.telegram.app.wire``: the PTB
application, the handlers, the error handler, the outbox sender, the real store), but its
Bot API requests go to the fake Telegram (``tests/fakes/bot_api.py``) as method calls
(``InProcessRequest``), and nothing polls: a user's message is put on the fake's queue and
handed to ``Application.process_update`` at once. A reply is complete when that call has
returned and the sender has nothing left that is due: no silence heuristic, no timing.

What only real HTTP shows (the webhook, polling, connection pools, 429s and outages while
the background loops run) stays in ``tests/e2e/`` over HTTP; see ``tests/README.md``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from sqlalchemy import func, select
from telegram import Update
from telegram.request import BaseRequest, RequestData

from bot.config import Settings
from bot.dialogue import DialogueSet, load_dialogues
from bot.schedule.runner import make_tick
from bot.store import Outbox, Retention, Store, Turn
from bot.telegram.app import Wired, set_coach_commands, set_commands, wire
from tests.fakes.bot_api import FakeBotApi, SentMessage, UploadedFile

REPO = Path(__file__).parents[1]
SHIPPED = REPO / "dialogues"
NOT_STARTED = "http://fake-telegram.invalid"  # never connected to: no server runs


class InProcessRequest(BaseRequest):
    """PTB's requests, answered by the fake Telegram's methods directly: the parameters it
    gets are the ones a form over HTTP would carry (files included)."""

    def __init__(self, fake: FakeBotApi) -> None:
        self.fake = fake

    @property
    def read_timeout(self) -> float | None:
        return None

    async def initialize(self) -> None:
        return None

    async def shutdown(self) -> None:
        return None

    async def do_request(self, url: str, method: str, request_data: RequestData | None = None,
                         read_timeout: object = None, write_timeout: object = None,
                         connect_timeout: object = None, pool_timeout: object = None,
                         ) -> tuple[int, bytes]:
        path = urlsplit(url).path
        if "/file/bot" in path:  # a download of a file a user sent
            return 200, self.fake.user_file(path)
        *_, token_part, api_method = path.split("/")
        params: dict[str, Any] = dict(request_data.json_parameters) if request_data else {}
        for name, (filename, content, mime) in (
                request_data.multipart_data if request_data else {}).items():
            data = content if isinstance(content, bytes) else content.read()
            params[name] = UploadedFile(filename, data, mime)
        status, body = await self.fake.call(token_part.removeprefix("bot"), api_method, params)
        return status, json.dumps(body).encode()


@dataclass
class ClientUser:
    """A person in a private chat with the bot, as Telegram would show it to them."""

    bot: InProcessBot
    user_id: int
    language_code: str = "en"
    first_name: str = "Ana"
    seen: int = field(default=0)

    @property
    def fake(self) -> FakeBotApi:
        return self.bot.fake

    @property
    def store(self) -> Store:
        return self.bot.store

    @property
    def messages(self) -> list[SentMessage]:
        return self.fake.messages_to(self.user_id)

    async def undelivered(self) -> int:
        """Outbox rows for this user that the sender has not delivered (or given up on) yet."""
        async with self.store.sessionmaker() as session:
            return int(await session.scalar(select(func.count()).where(
                Outbox.user_id == self.user_id, Outbox.status.in_(("pending", "sending")))) or 0)

    async def send(self, text: str) -> list[SentMessage]:
        self.fake.send_text(self.user_id, text, first_name=self.first_name,
                            language_code=self.language_code)
        return await self.replies()

    async def press(self, label: str) -> list[SentMessage]:
        message, data = self.button(label)
        self.fake.press_button(self.user_id, message.message_id, data)
        return await self.replies()

    def button_labels(self) -> list[str]:
        """The labels of the latest keyboard the bot sent."""
        for message in reversed(self.messages):
            rows = (message.reply_markup or {}).get("inline_keyboard", [])
            if rows:
                return [button["text"] for row in rows for button in row]
        return []

    def button(self, label: str) -> tuple[SentMessage, str]:
        for message in reversed(self.messages):
            for row in (message.reply_markup or {}).get("inline_keyboard", []):
                for button in row:
                    if button["text"] == label:
                        return message, button["callback_data"]
        raise AssertionError(f"no button {label!r} in {[m.text for m in self.messages]}")

    async def replies(self) -> list[SentMessage]:
        """What the bot sent since the last look, once every waiting update is handled, the
        scheduler has ticked and the sender has nothing due."""
        await self.bot.pump()
        new = self.messages[self.seen:]
        self.seen = len(self.messages)
        assert new, f"the bot did not answer user {self.user_id}"
        return new


@dataclass
class InProcessBot:
    """The application as `coachbot run` wires it, fed updates by hand; its scheduler's
    round (`tick`, the real one) runs at every `pump`, as if its interval had passed."""

    fake: FakeBotApi
    settings: Settings
    store: Store
    wired: Wired
    tick: Callable[[], Awaitable[None]]
    rejected: list[dict[str, Any]] = field(default_factory=list)  # updates PTB cannot read

    def user(self, user_id: int, **kwargs: str) -> ClientUser:
        return ClientUser(self, user_id, **kwargs)

    async def pump(self) -> None:
        """Hand every waiting update to the application, one after the other (as one chat's
        updates are), then let the sender send whatever is due."""
        application = self.wired.application
        while updates := self.fake.take_updates():
            for data in updates:
                try:
                    update = Update.de_json(data, application.bot)
                except (ValueError, TypeError, KeyError):
                    self.rejected.append(data)  # as the webhook answers 400 "not an update"
                    continue
                await application.process_update(update)
        await self.tick()
        await self.wired.sender.drain()

    async def agree(self, *user_ids: int) -> None:
        """These users have agreed that their answers are kept, as if through the
        onboarding's consent question (which tests/handlers/test_consent.py goes through)."""
        for user_id in user_ids:
            async def consent(t: Turn) -> None:
                t.user.consent_at = t.user.consent_at or t.now

            await self.store.run_turn(user_id, consent)


@cache
def shipped_dialogues() -> DialogueSet:
    """The shipped dialogues, loaded once per process: nothing changes them once loaded."""
    return load_dialogues(SHIPPED)


def client_settings(fake: FakeBotApi, tmp_path: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "telegram_token": fake.token,
        "telegram_api_base_url": NOT_STARTED,
        "database_url": f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}",
        "dialogues": SHIPPED,
        "send_rate": 1000.0,  # the budget is the sender's tests' business; never wait on it
    }
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


@asynccontextmanager
async def in_process(fake: FakeBotApi, settings: Settings) -> AsyncIterator[InProcessBot]:
    """The bot until the block ends: no server, no polling, no background loops."""
    store = Store(settings.database_url, encryption_key=settings.encryption_key)
    await store.start()
    request = InProcessRequest(fake)
    dialogues = shipped_dialogues() if settings.dialogues == SHIPPED \
        else load_dialogues(settings.dialogues)
    wired = wire(settings, store, dialogues, requests=(request, request), per_chat_interval=0.0)
    tick = make_tick(store, dialogues, wired.sender, worker_id="in-process",
                     consent_within=timedelta(days=settings.consent_days),
                     retention=Retention(**{kind: timedelta(days=days) for kind, days
                                            in settings.retention_days.items()}))
    await wired.application.initialize()
    await set_commands(wired.application)
    await set_coach_commands(wired.application, store)
    try:
        yield InProcessBot(fake, settings, store, wired, tick)
    finally:
        await wired.application.shutdown()
        await store.close()


@pytest.fixture
async def bot(tmp_path: Path, sqlite_template: Path) -> AsyncIterator[InProcessBot]:
    """The bot, in process, on a fresh SQLite database (a copy of one already migrated)."""
    fake = FakeBotApi()
    settings = client_settings(fake, tmp_path)
    shutil.copyfile(sqlite_template, tmp_path / "bot.db")
    async with in_process(fake, settings) as bot:
        yield bot
