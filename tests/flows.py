"""What the in-process handler tests (tests/handlers/) and the HTTP e2e tests (tests/e2e/)
share: a user consenting through the onboarding, coaches made and a client linked by invite,
the crisis detector pinned to fixed verdicts, what the database keeps of a user, row counts,
forged button presses, and a conversation state's consistency.

Either bot works (``InProcessBot``, ``RunningBot``): both have ``store``, ``fake`` and
``user()``, and their users ``send``, ``press`` and ``button_labels``.
"""

from __future__ import annotations

import re
import time
from typing import Any, Protocol

import pytest
from sqlalchemy import func, select, text

from bot.coaching.links import make_coach
from bot.dialogue.model import END
from bot.engine import ConversationState, runner
from bot.engine.crisis import CrisisCategory, CrisisLevel, CrisisSignal
from bot.store import Store, User
from bot.telegram import handlers
from tests.fakes.bot_api import FakeBotApi, SentMessage
from tests.inprocess import shipped_dialogues


class Talker(Protocol):
    user_id: int

    async def send(self, text: str) -> list[SentMessage]: ...

    async def press(self, label: str) -> list[SentMessage]: ...

    def button_labels(self) -> list[str]: ...


class AnyBot(Protocol):
    store: Store
    fake: FakeBotApi


# -- people -------------------------------------------------------------------------------

async def consented(user: Talker) -> None:
    """Through the onboarding: 18 or older, agrees that the answers are kept, then /cancel."""
    await user.send("/start")
    await user.press("Yes")  # 18 or older
    await user.press("Yes")  # agrees
    await user.send("/cancel")


async def make_coaches(bot: AnyBot, *user_ids: int) -> None:
    async with bot.store.sessionmaker() as session, session.begin():
        for user_id in user_ids:
            await make_coach(session, user_id)


async def link(coach: Talker, client: Talker, *, accept: str | None = "Yes, share") -> None:
    """The coach's /invite link, opened by the client (who has consented), accepted with
    ``accept`` (None: the offer's first button, whatever the client's language)."""
    invite = (await coach.send("/invite"))[0].text or ""
    code = re.search(r"start=(invite_[\w-]+)", invite)
    assert code is not None, invite
    await client.send(f"/start {code.group(1)}")
    await client.press(client.button_labels()[0] if accept is None else accept)


async def remove_member(coach: Talker, group: str, member: str) -> list[SentMessage]:
    """The coach removes ``member`` from ``group`` (the buttons' labels) through /groups,
    confirming; returns the confirmation's answer."""
    await coach.send("/groups")
    await coach.press(group)
    await coach.press("Remove a member")
    await coach.press(member)
    return await coach.press("Yes, remove")


def forge(bot: AnyBot, user_id: int, data: str, *, first_name: str = "Eve") -> None:
    """A press of a button with ``data`` that the bot never sent (a modified client can),
    on an old message of the bot's."""
    sender = {"id": user_id, "is_bot": False, "first_name": first_name, "language_code": "en"}
    bot.fake.send_raw({"callback_query": {
        "id": str(time.monotonic_ns()), "chat_instance": "1", "data": data, "from": sender,
        "message": {"message_id": 1, "date": int(time.time()), "text": "old",
                    "chat": {"id": user_id, "type": "private"},
                    "from": {"id": 1, "is_bot": True, "first_name": "bot"}}}})


# -- the crisis detector ------------------------------------------------------------------

POSSIBLE = "MARKER לפעמים בא לי פשוט להיעלם"
URGENT = "MARKER ho preso tutte le pastiglie"
VERDICTS = {
    POSSIBLE: CrisisSignal(CrisisLevel.CHECK, CrisisCategory.INDIRECT_IDEATION, 0.8, ("t",)),
    URGENT: CrisisSignal(CrisisLevel.URGENT, CrisisCategory.PLAN_MEANS, 0.99, ("t",)),
}


@pytest.fixture
def fixed_detector(monkeypatch: pytest.MonkeyPatch) -> None:
    """The detector gives VERDICTS' fixed verdicts for a text with a marked message in it
    (after a command's word, say), None otherwise."""
    def detect(text: str) -> CrisisSignal | None:
        return next((signal for marked, signal in VERDICTS.items() if marked in text), None)

    monkeypatch.setattr(runner, "detect_crisis", detect)
    monkeypatch.setattr(handlers, "detect_crisis", detect)


def text_of(messages: list[SentMessage]) -> str:
    return "\n".join(m.text or "" for m in messages)


# -- what is stored -----------------------------------------------------------------------

async def stored(bot: AnyBot, user_id: int, *words: str) -> dict[str, list[str]]:
    """Every row (SQLite) that mentions the user's id or any of ``words``, table by table,
    as text."""
    found: dict[str, list[str]] = {}
    async with bot.store.engine.connect() as connection:
        tables = [r[0] for r in await connection.execute(text(
            "SELECT name FROM sqlite_master WHERE type = 'table'"))]
        for table in tables:
            rows = [repr(tuple(r)) for r in await connection.execute(
                text(f"SELECT * FROM {table}"))]
            hits = [r for r in rows if str(user_id) in r or any(w in r for w in words)]
            if hits:
                found[table] = hits
    return found


async def count(bot: AnyBot, model: Any, user_id: int) -> int:
    """The rows of ``model`` that are the user's."""
    async with bot.store.sessionmaker() as session:
        column = model.id if model is User else model.user_id
        return int(await session.scalar(select(func.count()).where(column == user_id)) or 0)


def assert_consistent(state: ConversationState) -> None:
    """Every frame on a step of its dialogue; the top one on a question."""
    dialogues = shipped_dialogues()
    for index, frame in enumerate(state.stack):
        dialogue = dialogues[frame.dialogue]
        if index == len(state.stack) - 1:
            assert dialogue.steps[frame.step].ask.type != "none"
        else:
            assert frame.step == END or frame.step in dialogue.steps
