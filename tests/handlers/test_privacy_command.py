"""/privacy (r27-en M2): what is kept, who sees it, for how long and what /delete cannot take
back, for anyone at any time, before consent too (keeping nothing more than any message
then), with the retention the bot is run with; and the onboarding's way to it (r27-en m1)."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from cryptography.fernet import Fernet
from sqlalchemy import text

from bot.config import DEFAULT_RETENTION_DAYS
from tests.fakes.bot_api import FakeBotApi, SentMessage
from tests.flows import consented, stored, text_of
from tests.inprocess import InProcessBot, client_settings, in_process

NAME = "Zoravka"
CONSENT = ("/privacy tells you what I keep, for how long, and who sees it. May I keep your "
           "answers, including your mood ratings, to support your coaching?")
AGE = "I work only with people aged 18 and over. Are you 18 or older?"
KEPT = ("What I keep. Until you agree, only your Telegram id, your language, how far you got "
        "in my first questions and the invitation link you opened, if any; if you say no, I "
        "delete even that. Once you agree: your first "
        "name, time zone, check-in time and days, and what you do with me: your goals, your "
        "answers (including your mood ratings), your check-ins, your sessions and the notes "
        "you choose to keep. If I notice signs that you may be in crisis, I keep a record that "
        "I noticed them, but not your words.")
ENCRYPTED = "Your name, your words and your ratings are stored encrypted."
WHO = ("Who sees it: you. A coach sees only what you agree to share with them, from the day "
       "you accept their invitation. Two limits to this: if you share your progress with a "
       "coach and I notice signs that you may be in crisis, I tell your coach, without any of "
       "your words, so that they can reach out to you; and the people who run me can access "
       "the database, as with any online service. You can stop sharing at any time with "
       "/coach.")
EXPORT_DELETE = ("/export sends you a file with everything I keep about you. /delete deletes "
                 "it all, at once and for good. What /delete cannot take back: anything already "
                 "sent to your coach (a note or a session preparation you chose to share, your "
                 "replies, reports on your progress) stays in their Telegram chat, and backups "
                 "of the database keep a copy for as long as the people who run me keep them.")


def how_long(days: str) -> str:
    passed = "has" if days.startswith("1 ") else "have"
    return ("How long: I keep it while you use me or share your progress with a coach. When "
            f"{days} {passed} passed since you last wrote or answered (or since the "
            "sharing of your progress with a coach ended, if that was later), I delete "
            "everything about you.")


def texts(replies: list[SentMessage]) -> list[str]:
    return [m.text or "" for m in replies]


async def users_row(bot: InProcessBot, user_id: int) -> list[tuple[object, ...]]:
    async with bot.store.engine.connect() as connection:
        return [tuple(r) for r in await connection.execute(text(
            "SELECT first_name, locale, consent_at FROM users WHERE id = :id"), {"id": user_id})]


async def answers(bot: InProcessBot) -> int:
    async with bot.store.engine.connect() as connection:
        return int((await connection.execute(text("SELECT count(*) FROM answers"))).scalar()
                   or 0)


@asynccontextmanager
async def bot_with(tmp_path: Path, template: Path, **settings: object
                   ) -> AsyncIterator[InProcessBot]:
    fake = FakeBotApi()
    tmp_path.mkdir(exist_ok=True)
    shutil.copyfile(template, tmp_path / "bot.db")
    async with in_process(fake, client_settings(fake, tmp_path, **settings)) as bot:
        yield bot


async def test_privacy_as_the_first_message_tells_it_all_and_keeps_nothing_more(
        bot: InProcessBot) -> None:
    ana = bot.user(7101, first_name=NAME)
    replies = await ana.send("/privacy")
    assert texts(replies) == [KEPT, WHO, how_long("365 days"), EXPORT_DELETE]
    assert all(m.reply_markup is None for m in replies)
    # As for /sos or /language first: the id and the language, nothing of theirs.
    assert await users_row(bot, 7101) == [(None, "en", None)]
    assert set(await stored(bot, 7101, NAME)) <= {"users", "conversations",
                                                   "processed_updates", "outbox"}
    assert NAME not in str(await stored(bot, 7101, NAME))
    assert await answers(bot) == 0


async def test_privacy_at_the_consent_question_then_asks_it_again(bot: InProcessBot) -> None:
    ana = bot.user(7102, first_name=NAME)
    first = await ana.send("/start")
    assert texts(first)[-1] == AGE
    asked = await ana.press("Yes")
    assert texts(asked)[-1] == CONSENT
    told = await ana.send("/privacy")
    assert texts(told) == [KEPT, WHO, how_long("365 days"), EXPORT_DELETE, CONSENT]
    assert ana.button_labels() == ["Yes", "No"]
    assert await users_row(bot, 7102) == [(None, "en", None)]
    assert await answers(bot) == 0
    await ana.press("Yes")  # the question still works after it
    (_, _, consent_at), = await users_row(bot, 7102)
    assert consent_at is not None


async def test_privacy_after_consent_and_nothing_open(bot: InProcessBot) -> None:
    ana = bot.user(7103, first_name=NAME)
    await consented(ana)
    replies = await ana.send("/privacy")
    assert texts(replies) == [KEPT, WHO, how_long("365 days"), EXPORT_DELETE]
    assert ENCRYPTED not in text_of(replies)  # no key here: it does not claim encryption


async def test_privacy_mid_conversation_asks_the_open_question_again(
        bot: InProcessBot) -> None:
    ana = bot.user(7104)
    await consented(ana)
    goal = await ana.send("/goal")
    replies = await ana.send("/privacy")
    assert texts(replies)[:4] == [KEPT, WHO, how_long("365 days"), EXPORT_DELETE]
    assert texts(replies)[4] == texts(goal)[-1]


async def test_the_retention_shown_is_the_one_the_bot_runs_with(
        tmp_path: Path, sqlite_template: Path) -> None:
    assert DEFAULT_RETENTION_DAYS["client_history"] == 365  # what the other tests show
    for days, said in ((1, "1 day"), (90, "90 days")):
        retention = {**DEFAULT_RETENTION_DAYS, "client_history": days}
        async with bot_with(tmp_path / str(days), sqlite_template,
                            retention_days=retention) as bot:
            replies = await bot.user(7105).send("/privacy")
            assert texts(replies)[2] == how_long(said), days


async def test_with_an_encryption_key_it_says_so(tmp_path: Path, sqlite_template: Path) -> None:
    async with bot_with(tmp_path, sqlite_template,
                        encryption_key=Fernet.generate_key().decode()) as bot:
        replies = await bot.user(7106).send("/privacy")
        assert texts(replies)[0] == f"{KEPT} {ENCRYPTED}"


async def test_the_first_goal_is_offered_and_cancel_then_goal_do_what_it_says(
        bot: InProcessBot) -> None:
    ana = bot.user(7107, first_name=NAME)
    await ana.send("/start")
    await ana.press("Yes")
    await ana.press("Yes")
    await ana.press("English")
    await ana.send("London")
    await ana.send("08:00")
    offered = texts(await ana.press("Every day"))
    intro = next(i for i, t in enumerate(offered) if t.startswith("Next comes your first goal"))
    assert offered[intro] == (
        "Next comes your first goal, if you are ready for it: it takes about ten to fifteen "
        "minutes. /back takes you to the previous question. Your check-ins begin once you have "
        "a goal. "
        "If now is not a good time, or you would rather set it with your coach first, send "
        "/cancel and start it later with /goal.")
    stopped = texts(await ana.send("/cancel"))
    assert stopped == ["All right, we will stop here. Your answers so far are kept."]
    later = texts(await ana.send("/goal"))
    assert later[0].startswith("Let us give your goal some shape")
