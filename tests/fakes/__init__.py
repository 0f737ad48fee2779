"""Test doubles for coachbot's external services."""

from collections.abc import AsyncIterator

import pytest_asyncio

from tests.fakes.bot_api import FakeBotApi

__all__ = ["FakeBotApi", "fake_bot_api"]


@pytest_asyncio.fixture
async def fake_bot_api() -> AsyncIterator[FakeBotApi]:
    """A started FakeBotApi (token ``FakeBotApi.token``), stopped after the test."""
    async with FakeBotApi() as fake:
        yield fake
