"""The real `coachbot run` (in process) against the fake Bot API server, and users who talk."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from bot.config import Settings
from bot.store import Outbox, Store, Turn
from bot.telegram.app import Wired, serve
from tests.fakes.bot_api import FakeBotApi, SentMessage
from tests.flows import fixed_detector

REPO = Path(__file__).parents[2]


@dataclass
class TelegramUser:
    """A person in a private chat with the bot, as Telegram would show it to them."""

    bot: RunningBot
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

    async def undelivered(self) -> int:
        return await self.bot.undelivered(self.user_id)

    @property
    def messages(self) -> list[SentMessage]:
        return self.fake.messages_to(self.user_id)

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
        """The messages the bot sent since the last look, once it is idle for this user."""
        await self.bot.idle(self.user_id)
        new = self.messages[self.seen:]
        self.seen = len(self.messages)
        assert new, f"the bot did not answer user {self.user_id}"
        return new


@dataclass
class RunningBot:
    fake: FakeBotApi
    settings: Settings
    store: Store
    wired: Wired

    def user(self, user_id: int, **kwargs: str) -> TelegramUser:
        return TelegramUser(self, user_id, **kwargs)

    async def undelivered(self, user_id: int) -> int:
        """Outbox rows for this user that the sender has not delivered (or given up on) yet."""
        async with self.store.sessionmaker() as session:
            return int(await session.scalar(select(func.count()).where(
                Outbox.user_id == user_id, Outbox.status.in_(("pending", "sending")))) or 0)

    async def idle(self, user_id: int, *, timeout: float = 15.0) -> None:
        """Until the bot has handled every update sent so far and owes ``user_id`` nothing:
        the fake Telegram holds no update (polling: each was confirmed, so it is on the
        application's queue; webhook: each was answered, so it was handled), no update on
        the application's queue is unfinished, and no outbox row of the user's is pending
        or in flight. The outbox is in the database, so that last part is looked at again
        every few milliseconds until it holds."""
        queue = self.wired.application.update_queue
        try:
            async with asyncio.timeout(timeout):
                while True:
                    if not self.fake.pending_updates:
                        await queue.join()
                        if not self.fake.pending_updates \
                                and not await self.undelivered(user_id):
                            return
                    await asyncio.sleep(0.01)
        except TimeoutError:
            raise AssertionError(
                f"not idle for user {user_id} after {timeout} s: {self.fake.pending_updates} "
                f"update(s) at Telegram, {await self.undelivered(user_id)} row(s) to send"
            ) from None

    async def agree(self, *user_ids: int) -> None:
        """These users have agreed that their answers are kept, as if through the
        onboarding's consent question (which tests/handlers/test_consent.py goes through)."""
        for user_id in user_ids:
            async def consent(t: Turn) -> None:
                t.user.consent_at = t.user.consent_at or t.now

            await self.store.run_turn(user_id, consent)


def settings_for(fake: FakeBotApi, tmp_path: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "telegram_token": fake.token,
        "telegram_api_base_url": fake.url,
        "database_url": f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}",
        "dialogues": REPO / "dialogues",
        "send_rate": 30.0,
    }
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


@asynccontextmanager
async def bot_running(fake: FakeBotApi, settings: Settings, **serve_args: Any
                      ) -> AsyncIterator[RunningBot]:
    """`coachbot run` in this process until the block ends, then a graceful stop."""
    stop = asyncio.Event()
    ready: asyncio.Future[Wired] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(serve(settings, stop=stop, on_ready=ready.set_result,
                                     **serve_args))
    await asyncio.wait([task, ready], timeout=15, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        task.result()  # it stopped before it was ready: its error
    assert ready.done(), "coachbot run was not ready within 15 s"
    wired = ready.result()
    store = Store(settings.database_url, encryption_key=settings.encryption_key)
    await store.start()
    try:
        yield RunningBot(fake, settings, store, wired)
    finally:
        stop.set()
        await asyncio.wait_for(task, timeout=15)
        await store.close()


@pytest.fixture
async def running_bot(fake_bot_api: FakeBotApi, tmp_path: Path,
                      sqlite_template: Path) -> AsyncIterator[RunningBot]:
    """`coachbot run` by long polling, on a fresh SQLite database (already migrated)."""
    settings = settings_for(fake_bot_api, tmp_path)
    shutil.copyfile(sqlite_template, tmp_path / "bot.db")
    async with bot_running(fake_bot_api, settings) as bot:
        yield bot


__all__ = ["RunningBot", "TelegramUser", "bot_running", "fixed_detector", "running_bot",
           "settings_for"]
