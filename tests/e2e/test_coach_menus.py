"""The command menus over real HTTP, as `coachbot run` sets them: the clients' in private chats
only, in every language; each coach's when someone becomes a coach, when a coach changes
language, and at every start for every coach. (The coach's conversations:
tests/handlers/test_coach_flow.py.)"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import update

from bot.i18n import SUPPORTED_LOCALES, translator_for
from bot.store import Store, User
from tests.e2e.conftest import bot_running, settings_for
from tests.fakes.bot_api import FakeBotApi

COACH = 401


async def test_coaches_get_the_coach_commands_in_their_own_menu(
        fake_bot_api: FakeBotApi, tmp_path: Path) -> None:
    admin_id = 409
    settings = settings_for(fake_bot_api, tmp_path, admin_ids=frozenset({admin_id}))
    coach_menu = {"type": "chat", "chat_id": COACH}
    private = {"type": "all_private_chats"}
    fake_bot_api.commands[("default", "")] = [{"command": "checkin", "description": "Old"}]
    async with bot_running(fake_bot_api, settings) as bot:
        clients = [c["command"] for c in fake_bot_api.commands_for(scope=private)]
        assert clients[:3] == ["sos", "checkin", "goal"] and "invite" not in clients
        assert [c["command"] for c in fake_bot_api.commands_for(
            scope=private, language_code="he")] == clients
        # Only in private chats: none in group chats, and an earlier version's menu is gone.
        assert fake_bot_api.commands_for() == []
        assert fake_bot_api.commands_for(scope=coach_menu) == []  # not a coach yet
        calls = len(fake_bot_api.calls("setMyCommands"))
        done = await bot.user(admin_id).send(f"/makecoach {COACH}")
        assert f"user {COACH} can now invite clients" in (done[0].text or "")
        await fake_bot_api.wait_for_calls("setMyCommands", calls + 1)
        names = [c["command"] for c in fake_bot_api.commands_for(scope=coach_menu)]
        assert names[:12] == ["invite", "clients", "message", "assign", "assignments", "note",
                              "measure", "programme", "schedule", "newexercise", "newgroup",
                              "groups"]
        assert names[12:] == clients  # and the client's commands: a coach uses them too
        coach = bot.user(COACH)
        await coach.send("/language")
        calls = len(fake_bot_api.calls("setMyCommands"))
        await coach.press("Hrvatski")
        await fake_bot_api.wait_for_calls("setMyCommands", calls + 1)
        assert fake_bot_api.commands_for(scope=coach_menu)[0]["description"] == \
            translator_for("hr").gettext("Invite a client (a link that works once)")

    fake_bot_api.commands.clear()
    calls = len(fake_bot_api.calls("setMyCommands"))
    store = Store(settings.database_url)
    await store.start()
    async with store.sessionmaker() as session, session.begin():
        await session.execute(update(User).where(User.id == COACH).values(locale="it"))
    await store.close()
    async with bot_running(fake_bot_api, settings):  # at start, every coach, in their language
        # (the fake counts the first run's getUpdates too: wait for this run's menus)
        await fake_bot_api.wait_for_calls("setMyCommands", calls + len(SUPPORTED_LOCALES) + 1)
        menu = fake_bot_api.commands_for(scope=coach_menu)
        assert menu[0] == {"command": "invite", "description": translator_for("it").gettext(
            "Invite a client (a link that works once)")}
        assert fake_bot_api.commands_for(scope={"type": "chat", "chat_id": admin_id}) == []
