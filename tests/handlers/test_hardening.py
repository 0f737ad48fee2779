"""As an attacker and as a clumsy user would: nothing crashes the bot, leaks a traceback,
corrupts a conversation or starves other users."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from bot.dialogue import load_dialogues
from bot.engine import ConversationState
from bot.store import Answer
from tests.flows import assert_consistent
from tests.inprocess import REPO, InProcessBot

DIALOGUES = load_dialogues(REPO / "dialogues")
COMMANDS = ["/start", "/help", "/goal", "/checkin", "/exercises", "/progress", "/language",
            "/timezone", "/reminders", "/cancel", "/back", "/skip", "/dance", "/start@bot",
            "/start invite_", "/export x y", "/goal " + "x" * 300, "/"]
_ids = itertools.count(10_000_000)
_users = itertools.count(3_000)  # each example gets a chat of its own: see the test

texts = st.one_of(
    st.text(max_size=300),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=70_000),
    st.sampled_from(["", " ", "\u202e", "\u2068", "{name}", "{{", "}", "%s", "\x00", "🙂" * 5000]),
)
callback_data = st.one_of(st.text(max_size=80), st.sampled_from(
    ["lang:xx", "lang:", "delete:maybe", "exercise:../../etc", "exercise:onboarding",
     "0000000:done", ":", "lang:he", "assign:1", "client:1", "unlink:x", "invite:yes:guess"]))
Update = dict[str, object]
UpdateFor = Callable[[int], Update]


def person(user_id: int) -> dict[str, object]:
    return {"id": user_id, "is_bot": False, "first_name": "Fuzz"}


def message(user_id: int, text: str | None) -> Update:
    return {"message_id": next(_ids), "date": int(time.time()), "text": text,
            "chat": {"id": user_id, "type": "private", "first_name": "Fuzz"},
            "from": person(user_id)}


def text_update(text: str) -> UpdateFor:
    return lambda user: {"message": message(user, text)}


def button_update(data: str) -> UpdateFor:
    return lambda user: {"callback_query": {
        "id": str(next(_ids)), "chat_instance": "1", "data": data, "from": person(user),
        "message": message(user, "an old message")}}


def sticker_update(user: int) -> Update:
    return {"message": {**message(user, None), "sticker": {
        "file_id": "s", "file_unique_id": "s", "width": 1, "height": 1,
        "is_animated": False, "is_video": False, "type": "regular"}}}


POLL: Update = {"poll": {"id": "1", "question": "?", "options": [], "total_voter_count": 0,
                         "is_closed": False, "is_anonymous": True, "type": "regular",
                         "allows_multiple_answers": False}}

updates: st.SearchStrategy[UpdateFor] = st.one_of(
    st.builds(text_update, texts),
    st.builds(lambda c, a: text_update(f"{c} {a}".strip()), st.sampled_from(COMMANDS),
              st.text(max_size=80)),
    st.builds(button_update, callback_data),
    st.sampled_from([
        lambda user: POLL,
        lambda user: {"edited_message": message(user, "edited")},
        sticker_update,
        lambda user: {},  # an update of a kind this bot does not know
    ]),
)


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(batch=st.lists(updates, min_size=1, max_size=4))
async def test_fuzzed_updates_never_break_the_bot(bot: InProcessBot,
                                                  batch: list[UpdateFor]) -> None:
    fake = bot.fake
    user = next(_users)
    for make in batch:
        fake.send_raw(make(user))
    await bot.pump()
    probe = bot.user(user, first_name="Fuzz")
    probe.seen = len(probe.messages)
    assert (await probe.send("/help"))[-1].text, "the bot still answers"
    for sent in fake.messages_to(user):
        assert "Traceback" not in (sent.text or "")
        assert "Sorry, something went wrong" not in (sent.text or ""), sent.text
    exported = await bot.store.export_user(user)
    if exported["conversations"]:
        assert_consistent(ConversationState.from_dict(exported["conversations"][0]["state"]))


async def test_injection_attempts_are_stored_and_shown_verbatim(bot: InProcessBot) -> None:
    ana = bot.user(302)
    await bot.agree(302)
    await ana.send("/goal")
    sneaky = "Robert'); DROP TABLE users; -- {name} {goal.title} {{x}} %s <b>bold</b>"
    replies = await ana.send(sneaky)
    assert replies[-1].text == f"You chose: “\u2068{sneaky}\u2069”. What makes it important to you?"
    async with bot.store.sessionmaker() as session:
        stored = (await session.execute(select(Answer.value).where(
            Answer.user_id == 302))).scalars().all()
    assert stored == [sneaky]
    assert await bot.store.get_user(302) is not None
