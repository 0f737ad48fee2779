"""A coach schedules a session by buttons, in process; the client gets the calendar
file and, when the scheduler's rows come due, the reminder (where "I can't make it" passes
other times to the coach), keeps a voice message as a note sent to the coach with
copyMessage, then the preparation (which lists it) and the recap, in their language (Hebrew,
and Catalan); the recap's commitment becomes an action."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from babel.dates import format_skeleton
from icalendar import Calendar
from sqlalchemy import select, update

from bot.schedule.planning import zone_of
from bot.store import (
    CoachingSession,
    CommitmentAction,
    Goal,
    PlannedCheckin,
    User,
)
from tests.flows import link, make_coaches
from tests.inprocess import InProcessBot

COACH, CLIENT = 501, 502
#: (client's language, zone, the words they would type, a date they would type)
CLIENTS = {
    "he": ("Asia/Jerusalem", ["היה שבוע עמוס", "להתכונן לשיחה עם המנהלת", "שאני יכולה לבקש",
                              "לכתוב את המייל למנהלת"], "מחר"),
    "ca": ("Europe/Madrid", ["Una setmana intensa", "Preparar la conversa amb la cap",
                             "Que puc demanar", "Escriure el correu a la cap"], "demà"),
}

#: What each client would type for other times, and the labels of keeping a note, sending it
#: now, and what a voice note is called in the preparation's list.
CANT_LABELS = {"he": "לא אוכל להגיע", "ca": "No hi podré ser"}
OTHER_TIMES = {"he": "יום שלישי אחרי 18:00", "ca": "Dimarts a partir de les sis"}
NOTE_LABELS = {"he": ("לשמור כפתק", "כן, לשלוח עכשיו", "הודעה קולית"),
               "ca": ("Guardar-lo com a nota", "Sí, envia-la ara", "missatge de veu")}


async def _due_now(bot: InProcessBot, kind: str) -> None:
    """The scheduler's row for this comes due now (the running bot's tick starts it)."""
    async with bot.store.sessionmaker() as session, session.begin():
        await session.execute(update(PlannedCheckin).where(PlannedCheckin.kind == kind)
                              .values(due_at=datetime.now(UTC) - timedelta(seconds=5)))


@pytest.mark.parametrize("language", ["he", "ca"])
async def test_a_coach_schedules_and_the_client_prepares_and_recaps(
        bot: InProcessBot, language: str) -> None:
    zone, words, tomorrow_word = CLIENTS[language]
    await make_coaches(bot, COACH)
    coach = bot.user(COACH, first_name="Marta", language_code="it")
    client = bot.user(CLIENT, first_name="Noa", language_code=language)
    await bot.agree(CLIENT)
    await link(coach, client, accept=None)  # "yes, share" in their language
    async with bot.store.sessionmaker() as session, session.begin():
        for user_id, where in ((COACH, "Europe/Rome"), (CLIENT, zone)):
            person = await session.get(User, user_id)
            assert person is not None
            person.time_zone = where
        session.add(Goal(user_id=CLIENT, title="Parlare con la mia responsabile",
                         baseline=3, current=3, target=8))

    # The coach, in Italian: client, the day after tomorrow (Rome), 18:00, an hour, video.
    await coach.send("/schedule")
    await coach.press("\u2068Noa\u2069")
    day = datetime.now(UTC).astimezone(zone_of("Europe/Rome")).date() + timedelta(days=2)
    await coach.press(format_skeleton("MMMEd", day, locale="it"))
    await coach.press("18:00")
    await coach.press("18:00")
    await coach.press("60 min")
    await coach.press("In videochiamata")
    place = await coach.press("Solo questa volta")
    assert "link della videochiamata" in (place[-1].text or "")
    done = await coach.send("https://meet.example/noa")
    assert (done[-2].text or "").startswith("Sessione fissata con \u2068Noa\u2069:")
    assert "18:00" in (done[-2].text or "")
    assert "Quante sessioni" in (done[-1].text or "")  # how many were agreed: asked

    told = await client.replies()
    assert told[-1].kind == "document"
    calendar = Calendar.from_ical(bot.fake.documents[-1].content)
    [event] = calendar.walk("VEVENT")
    async with bot.store.sessionmaker() as session:
        session_row = (await session.execute(select(CoachingSession))).scalar_one()
    assert event.decoded("dtstart").astimezone(UTC) == session_row.starts_at
    local = session_row.starts_at.astimezone(zone_of(zone))
    assert f"{local:%H:%M}" in (told[0].text or "")  # the client's own clock
    agreed = await coach.press("1")
    assert "Sessioni concordate: 1 · svolte: 0 · non svolte: 0 · da svolgere: 1" in (
        agreed[0].text or "")
    assert "/sessions" in ((await client.replies())[0].text or "")

    # The reminder, with "I can't make it"; the coach hears of it.
    await _due_now(bot, "session_reminder")
    reminder = await client.replies()
    assert reminder[0].reply_markup is not None
    await coach.replies()  # the coach's own reminder
    asked = await client.press(client.button_labels()[-1])
    heard = await coach.replies()
    assert "Non potrà partecipare a questa sessione: \u2068Noa\u2069" in (heard[0].text or "")
    assert "/skip" in (asked[-1].text or "")  # which times would suit them instead
    await client.send(OTHER_TIMES[language])
    proposed = await coach.replies()
    assert f"\u2068{OTHER_TIMES[language]}\u2069" in (proposed[0].text or "")
    assert proposed[0].reply_markup is not None  # move it, or cancel it

    # A voice message with no question open: offered as a note, sent to the coach on yes.
    bot.fake.send_media(CLIENT, "voice")
    await client.replies()
    assert NOTE_LABELS[language][0] in client.button_labels()
    assert not bot.fake.copies  # nothing passed on before the client's yes
    await client.press(NOTE_LABELS[language][0])
    await client.press(NOTE_LABELS[language][1])
    passed_on = await coach.replies()
    assert "\u2068Noa\u2069 ti ha mandato una nota" in (passed_on[0].text or "")
    assert passed_on[-1].kind == "voice"
    assert [(to, source) for to, source, _ in bot.fake.copies] == [(COACH, CLIENT)]

    # The preparation the day before, in the client's language.
    await _due_now(bot, "session_prep")
    prep = await client.replies()
    [[way_out]] = (prep[0].reply_markup or {})["inline_keyboard"]  # the session, first
    assert way_out["text"] == CANT_LABELS[language]
    assert "/cancel" in (prep[1].text or "")
    await client.send(words[0])
    await client.send(words[1])
    closing = await client.press("6")
    assert closing[-1].text
    assert NOTE_LABELS[language][2] in "\n".join(m.text or "" for m in closing)  # the note

    # The recap when it is over: what they commit to becomes an action with its date.
    await _due_now(bot, "session_recap")
    recap = await client.replies()
    assert recap
    await client.send(words[2])
    await client.send(words[3])
    noted = await client.send(tomorrow_word)
    assert f"\u2068{words[3]}\u2069" in (noted[-1].text or "")
    async with bot.store.sessionmaker() as session:
        action = (await session.execute(select(CommitmentAction))).scalar_one()
    assert action.words == words[3] and action.source == "session"
    assert action.due_on == datetime.now(UTC).astimezone(zone_of(zone)).date() + timedelta(1)

    # The held-or-missed prompt for the coach once it is over, then the counts.
    async with bot.store.sessionmaker() as session, session.begin():
        await session.execute(update(CoachingSession).values(
            starts_at=datetime.now(UTC) - timedelta(hours=2)))
    await _due_now(bot, "session_outcome")
    await coach.replies()
    counted = await coach.press("Si è svolta")
    assert "Sessioni concordate: 1 · svolte: 1 · non svolte: 0 · da svolgere: 0" in (
        counted[0].text or "")
