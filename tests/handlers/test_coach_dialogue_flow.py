"""A coach sends a dialogue as a YAML file, in process: a broken one refused by line and
column, the fixed one kept, tried by the coach, assigned and delivered to a Croatian client;
a client's file and a forged "try" button get nowhere."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from bot.coaching.links import make_coach
from bot.store import Answer, Assignment, CoachDialogue, CoachLink, PlannedCheckin, Turn, User
from tests.coaching.test_coach_dialogues import GOOD, TRANSLATED
from tests.inprocess import InProcessBot

COACH, CLIENT, OTHER_COACH = 601, 602, 603


def forged(bot: InProcessBot, user_id: int, data: str) -> None:
    bot.fake.send_raw({"callback_query": {
        "id": data, "chat_instance": "1", "data": data,
        "from": {"id": user_id, "is_bot": False, "first_name": "X", "language_code": "en"},
        "message": {"message_id": 1, "date": 0, "text": "x",
                    "chat": {"id": user_id, "type": "private"}}}})


async def test_a_dialogue_file_refused_by_line_then_kept_tried_and_delivered_in_croatian(
        bot: InProcessBot) -> None:
    async with bot.store.sessionmaker() as session, session.begin():
        await make_coach(session, COACH)
        await make_coach(session, OTHER_COACH)
    coach = bot.user(COACH, first_name="Marta")
    client = bot.user(CLIENT, first_name="Ivo", language_code="hr")
    other = bot.user(OTHER_COACH, first_name="Eve")
    invite = (await coach.send("/invite"))[0].text or ""
    code = re.search(r"start=(invite_[A-Za-z0-9_-]+)", invite)
    assert code is not None
    await bot.agree(CLIENT)
    await client.send(f"/start {code.group(1)}")
    await client.press("Da, podijeli")

    broken = GOOD.replace("next: osjecaj", "next: nigdje")
    bot.fake.send_file(COACH, "stranice.yaml", broken.encode())
    refused = await coach.replies()
    lines = (refused[0].text or "").splitlines()
    assert lines[0] == "I did not keep this dialogue: there are 2 problems to fix."
    assert lines[2:] == [
        "stranice.yaml:16:11: goes to step 'nigdje', which does not exist in dialogue "
        "'jutarnje_stranice'",
        "stranice.yaml:17:3: step 'osjecaj' can never be reached from the start step 'uvod'"]
    async with bot.store.sessionmaker() as session:
        assert not (await session.execute(select(CoachDialogue))).all()

    bot.fake.send_file(COACH, "stranice.yaml", GOOD.encode())
    kept = await coach.replies()
    assert (kept[0].text or "").startswith(
        "Kept: “\u2068Jutarnje stranice\u2069”.\nLanguage: Hrvatski.")
    tried = await coach.press("Try it")
    assert tried[0].text == "Ujutro napiši tri stranice rukom, prije mobitela."
    await coach.press("Napravljeno")
    await coach.press("8")

    # A client's file is not taken for a dialogue; a forged "try" gets nothing.
    bot.fake.send_file(CLIENT, "x.yaml", GOOD.encode())
    offered = await client.replies()
    assert "Kept" not in (offered[0].text or "")
    # It is offered as a note for the next session instead; the client declines.
    assert "bilješku" in (offered[0].text or "")
    await client.press("Nemoj je spremiti")
    async with bot.store.sessionmaker() as session:
        row = (await session.execute(select(CoachDialogue))).scalar_one()
    forged(bot, OTHER_COACH, f"cdtry:{row.id}")
    assert (await other.replies())[0].text == "That dialogue is not one of yours."

    await coach.send("/assign")
    await coach.press("\u2068Ivo\u2069")
    await coach.press("Jutarnje stranice")
    await coach.press("Every day for a week")
    done = await coach.press("8:00\u202fAM")
    assert (done[0].text or "").startswith(
        "Assigned “\u2068Jutarnje stranice\u2069” to \u2068Ivo\u2069.")
    async with bot.store.sessionmaker() as session:
        assignment = (await session.execute(select(Assignment))).scalar_one()
        assert assignment.exercise_slug == f"cd{row.id}"
        session.add(PlannedCheckin(user_id=CLIENT, kind="exercise", ref=str(assignment.id),
                                   due_at=datetime.now(UTC) - timedelta(minutes=1)))
        await session.commit()
    delivered = await client.replies()
    assert [m.text for m in delivered[:2]] == [
        "Ujutro napiši tri stranice rukom, prije mobitela.", "Kako je prošlo?"]
    await client.press("Djelomično")
    await client.press("6")
    async with bot.store.sessionmaker() as session:
        answers = [(a.user_id, a.variable, a.value) for a in
                   (await session.execute(select(Answer))).scalars()]
        assert (CLIENT, "stranice.lakse", 6) in answers
        assert (await session.get(User, CLIENT)) is not None
    listed = await client.send("/exercises")
    assert any("Jutarnje stranice" in (m.text or "") for m in listed)


async def test_a_croatian_coach_reads_the_errors_in_croatian_and_the_italian_translation_reaches_an_italian_client(  # noqa: E501
        bot: InProcessBot) -> None:
    coach_id, italian_id, bulgarian_id = 611, 612, 613
    async with bot.store.sessionmaker() as session, session.begin():
        await make_coach(session, coach_id)
    for user_id, locale in ((coach_id, "hr"), (italian_id, "it"), (bulgarian_id, "bg")):
        async def setup(t: Turn, locale: str = locale) -> None:
            t.user.locale, t.user.consent_at = locale, t.now
        await bot.store.run_turn(user_id, setup)
    async with bot.store.sessionmaker() as session, session.begin():
        for client_id, name in ((italian_id, "Lia"), (bulgarian_id, "Bojan")):
            (await session.get(User, client_id)).first_name = name  # type: ignore[union-attr]
            session.add(CoachLink(coach_id=coach_id, client_id=client_id,
                                  created_at=datetime.now(UTC), consent_at=datetime.now(UTC)))
    coach = bot.user(coach_id, first_name="Marta", language_code="hr")
    italian = bot.user(italian_id, first_name="Lia", language_code="it")

    await coach.send("/help")  # Telegram says the coach uses Croatian

    # The errors in the coach's language, with the file, line and column as they are.
    bot.fake.send_file(coach_id, "stranice.yaml",
                       TRANSLATED.replace("next: osjecaj", "next: nigdje").encode())
    lines = ((await coach.replies())[0].text or "").splitlines()
    assert lines[0] == "Dijalog nije spremljen: treba ispraviti 2 problema."
    assert lines[2:] == [
        "stranice.yaml:16:11: vodi na korak 'nigdje', koji ne postoji u dijalogu "
        "'jutarnje_stranice'",
        "stranice.yaml:17:3: do koraka 'osjecaj' ne može se doći od početnog koraka 'uvod'"]
    bot.fake.send_file(coach_id, "stranice.yaml", TRANSLATED.replace(
        "      uvod:\n        say:", "      uvod:\n        sey:").encode())
    lines = ((await coach.replies())[0].text or "").splitlines()
    assert lines[2:] == [
        "stranice.yaml:25:7: u prijevodu 'it' koraka 'uvod' nedostaje 'say'",
        "stranice.yaml:26:9: korak 'uvod' u prijevodu 'it': nepoznat ključ 'sey'; očekuje se "
        "jedan od ovih: options, say, say_plural"]

    bot.fake.send_file(coach_id, "stranice.yaml", TRANSLATED.encode())
    kept = (await coach.replies())[0].text or ""
    assert kept.startswith("Spremljeno: „\u2068Jutarnje stranice\u2069“.\n"
                           "Jezik: Hrvatski, Italiano.")

    # Not offered for a Bulgarian client, and the coach is told why, in Croatian.
    await coach.send("/assign")
    picker = (await coach.press("\u2068Bojan\u2069"))[-1]
    assert "Jutarnje stranice" not in coach.button_labels()
    assert picker.text == (
        "Od tvojih vježbi i dijaloga \u2068Bojan\u2069 (jezik: Български) ne može dobiti ono "
        "što nije napisano na tom jeziku niti prevedeno na njega:\n"
        "• \u2068Jutarnje stranice\u2069\n\nKoju vježbu?")

    await coach.send("/assign")
    await coach.press("\u2068Lia\u2069")
    await coach.press("Jutarnje stranice")
    await coach.press(coach.button_labels()[0])  # how often
    await coach.press(coach.button_labels()[0])  # at what time
    async with bot.store.sessionmaker() as session:
        assignment = (await session.execute(select(Assignment).where(
            Assignment.client_id == italian_id))).scalar_one()
        session.add(PlannedCheckin(user_id=italian_id, kind="exercise", ref=str(assignment.id),
                                   due_at=datetime.now(UTC) - timedelta(minutes=1)))
        await session.commit()
    delivered = await italian.replies()
    assert [m.text for m in delivered[:2]] == [
        "Al mattino scrivi tre pagine a mano, prima di guardare il telefono.", "Com'è andata?"]
    assert italian.button_labels() == ["Fatto", "In parte", "Saltato"]
    await italian.press("In parte")
    await italian.press("6")
    async with bot.store.sessionmaker() as session:
        answers = [(a.user_id, a.variable, a.value) for a in
                   (await session.execute(select(Answer))).scalars()]
    assert (italian_id, "exercise.status", "partly") in answers
    assert (italian_id, "stranice.lakse", 6) in answers
    listed = await italian.send("/exercises")
    assert any("Pagine del mattino" in (m.text or "") for m in listed)
