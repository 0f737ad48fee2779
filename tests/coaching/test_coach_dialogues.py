"""Dialogues a coach sends as YAML files (issue 26): checked like ``coachbot validate`` with
file:line:column errors, refused when unsafe or when they would take a platform dialogue's
place, kept per coach (encrypted), given only to that coach's clients in its language, and
run for them. On SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import date, timedelta
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import select, text

from bot.coaching import coach_dialogues
from bot.coaching.assignments import assign_exercise, checked_exercise
from bot.coaching.coach_errors import NotACoach, UnknownExercise
from bot.coaching.conversation import Start
from bot.coaching.managing import assigned_to
from bot.dialogue import DialogueSet, load_dialogues
from bot.dialogue.loader import MAX_UPLOAD_BYTES, check_uploaded
from bot.engine import Turn
from bot.i18n import SUPPORTED_LOCALES, translator_for
from bot.store import Answer, CoachDialogue, CoachLink, Store, User
from tests.coaching.turns import NOW, run

REPO = Path(__file__).parents[2]
COACH, OTHER_COACH, CLIENT, OTHER_CLIENT, ITALIAN, BULGARIAN = 1, 2, 10, 11, 12, 13

GOOD = """\
id: jutarnje_stranice
title: Jutarnje stranice
kind: exercise
language: hr
start: uvod
steps:
  uvod:
    say: "Ujutro napiši tri stranice rukom, prije mobitela."
    next: kako
  kako:
    say: "Kako je prošlo?"
    ask:
      type: choice
      save: exercise.status
      options: {done: "Napravljeno", partly: "Djelomično", skipped: "Preskočeno"}
    next: osjecaj
  osjecaj:
    say: "Koliko ti je lakše u glavi, od 1 do 10?"
    ask: {type: scale, min: 1, max: 10, save: stranice.lakse}
    next: end
"""
#: GOOD with an Italian translation of every text (lines 21 to 31).
TRANSLATED = GOOD + """\
translations:
  it:
    title: Pagine del mattino
    steps:
      uvod:
        say: "Al mattino scrivi tre pagine a mano, prima di guardare il telefono."
      kako:
        say: "Com'è andata?"
        options: {done: "Fatto", partly: "In parte", skipped: "Saltato"}
      osjecaj:
        say: "Quanto senti la mente più leggera, da 1 a 10?"
"""


@pytest.fixture(scope="module")
def dialogues() -> DialogueSet:
    return load_dialogues(REPO / "dialogues")


@pytest.fixture
async def db(db_url: str) -> AsyncIterator[Store]:
    store = Store(db_url, encryption_key=Fernet.generate_key().decode())
    await store.start()
    async with store.sessionmaker() as s, s.begin():
        s.add_all([User(id=COACH, first_name="Carla", is_coach=True),
                   User(id=OTHER_COACH, first_name="Oscar", is_coach=True),
                   User(id=CLIENT, first_name="Ana", locale="hr", consent_at=NOW),
                   User(id=OTHER_CLIENT, first_name="Bo", locale="hr", consent_at=NOW),
                   User(id=ITALIAN, first_name="Lia", locale="it", consent_at=NOW),
                   User(id=BULGARIAN, first_name="Bozhidar", locale="bg", consent_at=NOW)])
        await s.flush()
        for coach, client in ((COACH, CLIENT), (OTHER_COACH, OTHER_CLIENT), (COACH, ITALIAN),
                              (COACH, BULGARIAN)):
            s.add(CoachLink(coach_id=coach, client_id=client, created_at=NOW,
                            consent_at=NOW - timedelta(days=3)))
    yield store
    await store.close()


async def upload(store: Store, coach: int, source: str, dialogues: DialogueSet,
                 name: str = "stranice.yaml") -> int:
    async with store.sessionmaker() as s, s.begin():
        row = await coach_dialogues.upload(s, coach, source.encode(), name, dialogues, NOW)
        return row.id



# -- the checks, pure --------------------------------------------------------------------------


@pytest.mark.parametrize(("source", "expected"), [
    (GOOD.replace('say: "Kako je prošlo?"', 'say: "Kako je prošlo?'),
     "f.yaml:11:5: YAML syntax"),
    (GOOD.replace("next: osjecaj", "next: nigdje"), "f.yaml:16:11: goes to step 'nigdje'"),
    (GOOD.replace("  osjecaj:\n", "  osjecaj:\n    sey: x\n"), "f.yaml:18:5: unknown key 'sey'"),
    (GOOD.replace("language: hr\n", ""), "f.yaml:1:1: say which language"),
    (GOOD.replace("kind: exercise\n", ""), "f.yaml:1:1: a dialogue you send must be an exercise"),
    (GOOD.replace("id: jutarnje_stranice", "id: daily_checkin"),
     "f.yaml:1:5: the id 'daily_checkin' belongs to one of the bot's own dialogues"),
    (GOOD.replace("next: end", "next:\n      - call: daily_checkin\n        then: end"),
     "f.yaml:21:15: calls dialogue 'daily_checkin'"),
    (GOOD.replace('"Kako je prošlo?"', '&a "Kako je prošlo?"'), "f.yaml:11:10: anchors"),
    (GOOD.replace("start: uvod\n", "start: uvod\nrequires: [goal.title]\n"),
     "f.yaml:6:11: a dialogue you send cannot require"),
    (GOOD.replace("Ujutro napiši", "{goal.title}: ujutro napiši"),
     "f.yaml:8:10: 'goal.title' is read here"),
])
def test_a_bad_file_is_refused_with_line_and_column(source: str, expected: str) -> None:
    dialogue, errors = check_uploaded(source.encode(), "f.yaml", reserved={"daily_checkin"})
    assert dialogue is None
    assert any(str(e).startswith(expected) for e in errors), [str(e) for e in errors]


def test_a_huge_or_explosive_file_is_refused_before_it_is_built() -> None:
    _, errors = check_uploaded(b"#" * (MAX_UPLOAD_BYTES + 1), "big.yaml")
    assert [str(e) for e in errors] == ["big.yaml:1:1: the file is larger than 64 KB"]
    laughs = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(20))
    _, errors = check_uploaded(laughs.encode(), "laughs.yaml")
    assert len(errors) == 1 and "anchors and aliases" in str(errors[0])


def test_a_good_file_passes_and_a_single_language_one_asks_for_no_translations() -> None:
    from bot.dialogue.loader import texts_of

    dialogue, errors = check_uploaded(GOOD.encode(), "f.yaml")
    assert errors == [] and dialogue is not None and dialogue.language == "hr"
    assert list(texts_of(dialogue)) == []


def test_a_translated_file_passes_and_reads_in_each_of_its_languages() -> None:
    dialogue, errors = check_uploaded(TRANSLATED.encode(), "f.yaml",
                                      languages=SUPPORTED_LOCALES)
    assert errors == [] and dialogue is not None
    assert dialogue.languages == ("hr", "it")
    italian = dialogue.in_language("it")
    assert (italian.title, italian.language) == ("Pagine del mattino", "it")
    assert italian.steps["kako"].say == "Com'è andata?"
    assert [o.label for o in italian.steps["kako"].ask.options] == [
        "Fatto", "In parte", "Saltato"]
    assert italian.steps["kako"].ask.save == "exercise.status"  # only the texts change
    assert dialogue.in_language("hr") is dialogue and dialogue.in_language("bg") is dialogue


@pytest.mark.parametrize(("source", "expected"), [
    # a missing step, option or title: said where, and which (with the original's line)
    (TRANSLATED.replace("      osjecaj:\n        say: \"Quanto", "      # \"Quanto"),
     "f.yaml:24:5: the 'it' translation has no step 'osjecaj' (line 17)"),
    (TRANSLATED.replace('partly: "In parte", ', ""),
     "f.yaml:29:18: the 'it' translation of step 'kako' has no option 'partly'"),
    (TRANSLATED.replace("    title: Pagine del mattino\n", ""),
     "f.yaml:22:3: the 'it' translation has no 'title'"),
    (TRANSLATED.replace("      uvod:\n        say:", "      uvod:\n        sey:"),
     "f.yaml:26:9: unknown key 'sey' in step 'uvod' of the 'it' translation"),
    # extra texts: a step, an option or a text the original does not have
    (TRANSLATED + "      nigdje:\n        say: \"Da nessuna parte\"\n",
     "f.yaml:32:7: there is no step 'nigdje' to translate"),
    (TRANSLATED.replace('skipped: "Saltato"', 'skipped: "Saltato", later: "Dopo"'),
     "f.yaml:29:74: step 'kako' has no option 'later'"),
    (TRANSLATED.replace('      uvod:\n', '      uvod:\n        say_plural: {one: a, other: b}\n'),
     "f.yaml:26:9: step 'uvod' has no 'say_plural' to translate"),
    # the placeholders of the original, no more, no fewer
    (TRANSLATED.replace("Quanto senti", "{name}, quanto senti"),
     "f.yaml:31:14: 'say' must use the placeholders of the original, —, not {name}"),
    # language codes: one the bot speaks, not the dialogue's own, only with 'language'
    (TRANSLATED.replace("  it:\n", "  xx:\n"),
     "f.yaml:22:3: the bot does not speak 'xx'; it speaks bg, ca, en, he, hr, it"),
    (TRANSLATED.replace("  it:\n", "  hr:\n"),
     "f.yaml:22:3: the dialogue is written in 'hr' already"),
    (TRANSLATED.replace("language: hr\n", ""), "f.yaml:20:1: 'translations' go with 'language'"),
])
def test_a_translation_missing_or_adding_a_text_is_refused_by_line(source: str,
                                                                    expected: str) -> None:
    dialogue, errors = check_uploaded(source.encode(), "f.yaml", languages=SUPPORTED_LOCALES)
    assert dialogue is None
    assert any(str(e).startswith(expected) for e in errors), [str(e) for e in errors]


# -- kept, given, run -------------------------------------------------------------------------


async def test_kept_encrypted_per_coach_and_nothing_kept_when_refused(
        db: Store, dialogues: DialogueSet) -> None:
    with pytest.raises(coach_dialogues.UploadRefused) as refused:
        await upload(db, COACH, GOOD.replace("next: osjecaj", "next: nigdje"), dialogues)
    assert str(refused.value.errors[0]).startswith("stranice.yaml:16:11:")
    with pytest.raises(NotACoach):
        await upload(db, CLIENT, GOOD, dialogues)
    async with db.sessionmaker() as s:
        assert (await s.execute(select(CoachDialogue))).all() == []
    first = await upload(db, COACH, GOOD, dialogues)
    again = await upload(db, COACH, GOOD.replace("Jutarnje stranice", "Stranice"), dialogues)
    assert first == again  # a new version of the same id replaces the old
    async with db.engine.connect() as conn:
        raw = (await conn.execute(text("SELECT title, source FROM coach_dialogues"))).one()
    assert "Stranice" not in raw[0] and "jutarnje" not in raw[1]


async def test_only_the_coachs_own_clients_in_its_language_can_be_given_it(
        db: Store, dialogues: DialogueSet) -> None:
    row = await upload(db, COACH, GOOD, dialogues)
    slug = coach_dialogues.run_id(row)
    schedule = {"kind": "daily", "days": 7, "hour": 8}
    async with db.sessionmaker() as s, s.begin():
        made = await assign_exercise(s, COACH, CLIENT, slug, schedule, date(2026, 3, 5), None,
                                     NOW, frozenset())
        assert made > 0
        for coach, client in ((OTHER_COACH, OTHER_CLIENT), (COACH, ITALIAN)):
            with pytest.raises(UnknownExercise):
                await assign_exercise(s, coach, client, slug, schedule, date(2026, 3, 5), None,
                                      NOW, frozenset())
        with pytest.raises(UnknownExercise):  # a group: no one language
            await checked_exercise(s, COACH, slug, frozenset(), None)


async def test_a_linked_client_runs_it_and_no_one_else_can(
        db: Store, dialogues: DialogueSet) -> None:
    row = await upload(db, COACH, GOOD, dialogues)
    slug = coach_dialogues.run_id(row)
    outcome = await run(db, dialogues, CLIENT, Start(slug), Turn(text="1"), Turn(text="7"))
    assert outcome.finished == (slug,) or slug in outcome.finished
    async with db.sessionmaker() as s:
        answers = [(a.dialogue_id, a.variable, a.value) for a in (await s.execute(
            select(Answer).where(Answer.user_id == CLIENT))).scalars()]
    assert (slug, "stranice.lakse", 7) in answers
    async with db.sessionmaker() as s:
        for stranger in (OTHER_CLIENT, OTHER_COACH):
            assert await coach_dialogues.dialogue_of(s, slug, stranger) is None
        assert await coach_dialogues.dialogue_of(s, slug, COACH) is not None
        assert await coach_dialogues.dialogue_of(s, "cd999999", CLIENT) is None



async def test_a_coachs_own_questions_become_a_dialogue_in_their_language(
        db: Store, dialogues: DialogueSet) -> None:
    async with db.sessionmaker() as s, s.begin():
        coach = await s.get(User, COACH)
        assert coach is not None
        coach.locale = "hr"
    steps = [Start("new_exercise"), Turn(text="Jutarnja šetnja {10 min}"),
             Turn(text="Prošetaj prije posla."), Turn(text="da"),  # questions: yes
             Turn(text="Što si primijetio/la?"), Turn(text="1"),  # in words
             Turn(text="da"), Turn(text="Koliko energije imaš?"), Turn(text="2"),  # 1-10
             Turn(text="da"), Turn(text="Kada?"), Turn(text="3"),  # options
             Turn(text="Jutro, podne, večer"), Turn(text="da")]  # save
    await run(db, dialogues, COACH, *steps)
    async with db.sessionmaker() as s:
        row = (await s.execute(select(CoachDialogue))).scalar_one()
    assert (row.coach_id, row.locale, row.title) == (COACH, "hr", "Jutarnja šetnja {10 min}")
    slug = coach_dialogues.run_id(row.id)
    first = await run(db, dialogues, CLIENT, Start(slug))
    assert [r.text for r in first.replies][:2] == ["Jutarnja šetnja {10 min}",
                                                   "Prošetaj prije posla."]
    done = await run(db, dialogues, CLIENT, Turn(text="1"), Turn(text="Mirnije"),
                     Turn(text="8"), Turn(text="2"))
    assert slug in done.finished
    async with db.sessionmaker() as s:
        answers = {a.variable: a.value for a in (await s.execute(
            select(Answer).where(Answer.user_id == CLIENT))).scalars()}
    assert (answers["own.q1"], answers["own.q2"], answers["own.q3"]) == ("Mirnije", 8, "o2")


async def test_at_the_limit_a_new_file_is_refused_and_a_new_version_of_a_kept_one_replaces_it(
        db: Store, dialogues: DialogueSet, monkeypatch: pytest.MonkeyPatch) -> None:
    """The refusal's advice (send its new version with the same id) is what still works."""
    monkeypatch.setattr(coach_dialogues, "MAX_PER_COACH", 1)
    kept = await upload(db, COACH, GOOD, dialogues)
    with pytest.raises(coach_dialogues.LibraryFull) as refused:
        await upload(db, COACH, GOOD.replace("id: jutarnje_stranice", "id: vecernje"), dialogues)
    assert refused.value.lines(translator_for("en")) == [
        "stranice.yaml:1:1: you have 1 exercises and dialogues of your own already, the most I "
        "can keep; to change one of them, send its new version with the same id"]
    assert await upload(db, COACH, GOOD.replace("Jutarnje stranice", "Stranice"),
                        dialogues) == kept


async def test_an_own_exercise_over_the_limit_is_said_not_kept_instead_of_saved(
        db: Store, dialogues: DialogueSet, monkeypatch: pytest.MonkeyPatch) -> None:
    """The dialogue's "Saved." comes before the platform stores it: a refusal takes its
    place, saying that nothing was kept and why, in words a coach of /newexercise can act on
    (r36-en, r38): not the file's advice to send a new version with the same id, since the
    exercise's id was made for it (r45-he)."""
    monkeypatch.setattr(coach_dialogues, "MAX_PER_COACH", 1)
    await upload(db, COACH, GOOD, dialogues)
    outcome = await run(db, dialogues, COACH, Start("new_exercise"), Turn(text="Walk"),
                        Turn(text="Walk before work."), Turn(text="yes"),
                        Turn(text="What did you notice?"), Turn(text="1"), Turn(text="no"),
                        Turn(text="yes"))
    assert [r.text for r in outcome.replies] == [
        "Sorry: I could not save that exercise, so /assign does not offer it. You already "
        "have 1 exercise or dialogue of your own, the most I can keep. An exercise without "
        "questions of your own does not count towards this limit: to keep this one, write it "
        "again with /newexercise, this time without your questions."]
    async with db.sessionmaker() as s:
        assert len((await s.execute(select(CoachDialogue))).all()) == 1


async def test_a_croatian_dialogue_with_an_italian_translation_reaches_an_italian_client_in_italian(
        db: Store, dialogues: DialogueSet) -> None:
    row = await upload(db, COACH, TRANSLATED, dialogues)
    slug = coach_dialogues.run_id(row)
    schedule = {"kind": "daily", "days": 7, "hour": 8}
    async with db.sessionmaker() as s, s.begin():
        for client in (CLIENT, ITALIAN):
            assert await assign_exercise(s, COACH, client, slug, schedule, date(2026, 3, 5),
                                         None, NOW, frozenset()) > 0
        with pytest.raises(UnknownExercise):  # Bulgarian: neither written nor translated
            await assign_exercise(s, COACH, BULGARIAN, slug, schedule, date(2026, 3, 5), None,
                                  NOW, frozenset())
    italian = await run(db, dialogues, ITALIAN, Start(slug))
    assert [r.text for r in italian.replies] == [
        "Al mattino scrivi tre pagine a mano, prima di guardare il telefono.", "Com'è andata?"]
    assert [b.label for b in italian.replies[-1].buttons] == ["Fatto", "In parte", "Saltato"]
    await run(db, dialogues, ITALIAN, Turn(text="2"), Turn(text="7"))
    croatian = await run(db, dialogues, CLIENT, Start(slug))
    assert croatian.replies[-1].text == "Kako je prošlo?"
    async with db.sessionmaker() as s:
        answers = {(a.user_id, a.variable): a.value for a in (await s.execute(
            select(Answer))).scalars() if a.dialogue_id == slug}
        titles = [item.custom_title for item in await assigned_to(s, ITALIAN)]
    assert answers[(ITALIAN, "exercise.status")] == "partly"  # stored like any answer
    assert answers[(ITALIAN, "stranice.lakse")] == 7
    assert titles == ["Pagine del mattino"]  # the client's /exercises, in their language


def test_the_errors_read_in_the_coachs_language_and_a_hebrew_line_stays_right_to_left() -> None:
    source = TRANSLATED.replace("      uvod:\n        say:", "      uvod:\n        s\u202eey:")
    _, errors = check_uploaded(source.encode(), "f.yaml", languages=SUPPORTED_LOCALES)
    refused = coach_dialogues.UploadRefused(errors)
    assert str(errors[-1]) == ("f.yaml:26:9: unknown key 's\u202eey' in step 'uvod' of the 'it' "
                               "translation; expected one of: options, say, say_plural")
    croatian = refused.lines(translator_for("hr"))
    assert croatian[-1] == ("f.yaml:26:9: korak 'uvod' u prijevodu 'it': nepoznat ključ "
                            "'sey'; očekuje se jedan od ovih: options, say, say_plural")
    hebrew = refused.lines(translator_for("he"))[-1]
    # What comes from the file is isolated, so the line takes its direction from the Hebrew.
    assert hebrew.startswith("\u2068f.yaml:26:9\u2069: השלב '\u2068uvod\u2069' בתרגום")
    assert "\u202e" not in hebrew
