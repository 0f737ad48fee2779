"""The crisis model's named features: Bulgarian in Latin letters, articles, apostrophes and the
reach of a negation (bot.engine.crisis.concept_features)."""

from __future__ import annotations

import pytest

from bot.engine.crisis import (
    CrisisLevel,
    bg_latin_key,
    concept_features,
    detect_crisis,
    has_telling_word,
    message_features,
    normalize,
)
from bot.engine.crisis_model import flag_bucket


def concepts(text: str) -> set[str]:
    """The single concepts (not the pairs) found in ``text``."""
    return {f for f in concept_features(normalize(text)) if ">" not in f}


@pytest.mark.parametrize(
    ("cyrillic", "latin"),
    [
        ("белезите", "belezite"),
        ("хапчета", "hap4eta"),
        ("хапчета", "hapcheta"),
        ("мразя", "mrazq"),
        ("мразя", "mrazia"),
        ("щях", "6tqh"),
        ("съм", "sym"),
        ("ръкави", "rykavi"),
        ("ръкави", "r1kavi"),
        ("живот", "zhivot"),
    ],
)
def test_a_bulgarian_word_has_one_key_in_either_alphabet(cyrillic: str, latin: str) -> None:
    assert bg_latin_key(normalize(cyrillic)) == bg_latin_key(normalize(latin))


@pytest.mark.parametrize(
    ("text", "concept"),
    [
        # Only the Cyrillic forms are listed: the Latin spellings follow from them.
        ("izgorih se s jelqzoto", "c:CUT"),
        ("kutiqta s hap4etata", "c:PILLS"),
        # A noun with its article: "белезите" is "белези" + "те".
        ("белезите ми личат", "c:CUT"),
        ("skrivam belezite", "c:CUT"),
    ],
)
def test_bulgarian_in_latin_letters_and_with_articles(text: str, concept: str) -> None:
    assert concept in concepts(text)


def test_latin_words_of_other_languages_rarely_take_a_bulgarian_reading() -> None:
    for text in ("see you at the meeting on monday", "we went to the seaside",
                 "the smartest pizza in town", "vado al mare sabato"):
        assert not has_telling_word(text), text


@pytest.mark.parametrize(
    ("text", "concept"),
    [
        ("I don't want to live anymore", "c:NEGATION"),  # "don't" is listed as "dont"
        ("they wouldn't miss me", "c:BURDEN"),  # a listed phrase, typed with an apostrophe
        ("ho pensato all'overdose", "c:PILLS"),  # an elided article
        ("knife's next to me", "c:WEAPON"),  # "'s": is, has or a possessive
        ("note's written", "c:GOODBYE"),
    ],
)
def test_apostrophes(text: str, concept: str) -> None:
    assert concept in concepts(text)


@pytest.mark.parametrize(
    "text",
    [
        "I don't want to die, I want to quit my job",
        "no, not thinking about hurting myself",
        "не искам да умра, просто съм уморена",
        "non voglio morire ma voglio che questa settimana finisca",
        "אני לא רוצה למות, אני רוצה לעזוב את העבודה",
        "ne želim umrijeti, samo odmor",
        "no vull morir, només descansar",
    ],
)
def test_a_denied_risk_is_marked_denied(text: str) -> None:
    assert "c:NEGATED_ONLY" in concepts(text)


@pytest.mark.parametrize(
    ("text", "denied"),
    [
        # The negation reaches the wish to live: this is a cry, not a denial.
        ("I don't want to live anymore", "c:-LIFE"),
        ("ne iskam da jiveq veche", "c:-LIFE"),
        ("nobody would miss me if I died", None),
        ("I don't want to die but I want to kill myself", "c:-DIE"),
    ],
)
def test_what_a_negation_does_not_reach_is_not_denied(text: str, denied: str | None) -> None:
    found = concepts(text)
    assert "c:NEGATED_ONLY" not in found
    if denied:
        assert denied in found


@pytest.mark.parametrize(
    "text",
    [
        "relapsed last night after 3 months",
        "снощи релапс",
        "opet sam to napravila, recidiv",
        "ci sono ricascata ieri sera",
        "he recaigut aquesta nit",
        "מעדתי שוב אתמול",
    ],
)
def test_a_relapse_is_a_concept_in_every_language(text: str) -> None:
    assert "c:RELAPSE" in concepts(text)


@pytest.mark.parametrize(
    "text",
    [
        "I gave away my guitar, won't need it",
        "раздадох си нещата",
        "sve sam sredila, kad me ne bude",
        "ho sistemato tutto per quando non ci sarò",
        "ja ho tinc tot lligat",
        "סידרתי הכל",
    ],
)
def test_putting_affairs_in_order_is_a_concept_in_every_language(text: str) -> None:
    assert "c:AFFAIRS" in concepts(text)


# Coaching talk in the words of self-harm's euphemisms (relapse, slip, streak, sleeves, a
# lighter): what clients say of the habits they coach. Written for these tests, not taken from
# the corpus, and not trained on.
COACHING_TALK = [
    "Had a relapse with the chocolate on Saturday, back on track today",
    "I slipped up on the diet at my cousin's wedding",
    "relapsed into scrolling my phone till 2am again",
    "my Duolingo streak is gone after 90 days, gutted",
    "Old habits: two cigarettes at the party. Not proud of it",
    "Wore long sleeves to the gym, it was freezing",
    "He tingut una recaiguda amb el sucre aquest cap de setmana",
    "he trencat la ratxa de l'app de meditació",
    "Имах рецидив със сладкишите тази седмица",
    "pak zapochnah da pusha cigari, star navik",
    "Opet sam se vratio cigaretama, mali recidiv",
    "Prekinuo sam niz na aplikaciji za trčanje",
    "Ho avuto una ricaduta con le sigarette dopo cena",
    "sono ricascata nei dolci, domani riprendo la dieta",
    "הייתה לי מעידה עם הסוכר השבוע",
    "מעדתי בדיאטה בחתונה של אחותי",
]


@pytest.mark.parametrize("text", COACHING_TALK)
def test_a_relapse_next_to_a_coached_habit_is_no_word_of_risk(text: str) -> None:
    assert not has_telling_word(text)


@pytest.mark.parametrize("text", COACHING_TALK)
def test_coaching_talk_in_the_words_of_self_harm_is_never_urgent(text: str) -> None:
    signal = detect_crisis(text)
    assert signal is None or signal.level is not CrisisLevel.URGENT, signal


@pytest.mark.parametrize(
    "text",
    [
        "relapsed last night, the cuts are deep",
        "I relapsed. 40 days clean, gone",
        "recaiguda aquesta nit, torno a tenir talls als braços",
        "пак... снощи релапс, ръцете ми пак са в белези",
        "ricaduta stanotte, ho usato la lametta",
        "מעדתי שוב אתמול, חתכתי",
    ],
)
def test_a_relapse_without_a_coached_habit_still_tells(text: str) -> None:
    assert has_telling_word(text)


@pytest.mark.parametrize(
    ("text", "concept"),
    [
        # Hebrew in Latin letters glues its prefixes: "ve" + "ha" + "mavet" (death).
        ("vehamavet kvar lo mafchid oti", "c:DIE"),
        ("ani rotsa lishon ve lo lehit'orer", "c:DISAPPEAR"),  # a listed phrase, apostrophe
    ],
)
def test_hebrew_in_latin_letters_with_its_prefixes(text: str, concept: str) -> None:
    assert concept in concepts(text)


def test_latin_words_of_other_languages_take_no_hebrew_prefix_reading() -> None:
    for text in ("she became a teacher", "behave at the meeting", "lepo mi je", "meglio così"):
        assert not has_telling_word(text), text


@pytest.mark.parametrize("text", ["non voglio più vivere", "не искам да живея вече"])
def test_a_listed_cry_the_model_is_sure_of_is_urgent(text: str) -> None:
    # The model splits "I don't want to live any more" between explicit and indirect wishes.
    signal = detect_crisis(text)
    assert signal is not None and signal.level is CrisisLevel.URGENT, signal


@pytest.mark.parametrize(
    "text",
    [
        # Written for these tests: short replies that deny every word of risk they use.
        "no, never thought of killing myself",
        "не, не се режа",
        "לא, אני לא רוצה למות",
        "no no, non mi taglio",
        "ne, ne želim umrijeti",
        "no, no penso en matar-me",
        "non penso di farla finita",
    ],
)
def test_a_short_reply_that_denies_every_word_of_risk_has_no_word_of_risk(text: str) -> None:
    assert not has_telling_word(text)


@pytest.mark.parametrize(
    "text",
    [
        "I don't want to live anymore",
        "nobody would miss me",
        "no one would care if I died",
        "I won't be here tomorrow",
        "I don't want to die but I want to kill myself",
    ],
)
def test_a_negation_that_is_itself_the_cry_still_tells(text: str) -> None:
    assert has_telling_word(text)


@pytest.mark.parametrize(
    ("text", "concept"),
    [
        # Hebrew and Bulgarian words of indirect wishes, self-harm and means that no concept
        # held, typed in either alphabet (written for these tests).
        ("עייפה מלחיות", "c:CANT_GO_ON"),
        ("ayef mi lichyot kvar", "c:CANT_GO_ON"),
        ("אין לי עתיד", "c:NO_POINT"),
        ("הלוואי לישון לתמיד", "c:DISAPPEAR"),
        ("kulam yihyu beseder bli", "c:BURDEN"),
        ("שתיתי את חומרי הניקוי", "c:POISON"),
        ("омръзна ми да съм жив", "c:CANT_GO_ON"),
        ("вече не виждам изход", "c:CANT_GO_ON"),
        ("izpih 20 tramadola", "c:PILLS"),
        ("отидох до язовира", "c:JUMP"),
        ("сбогувам се с вас", "c:GOODBYE"),
    ],
)
def test_hebrew_and_bulgarian_words_of_indirect_wishes_self_harm_and_means(
        text: str, concept: str) -> None:
    assert concept in concepts(text)


@pytest.mark.parametrize(
    "text",
    ["took all of them", "m'he pres totes les pastilles", "изпих всичките", "izpih vsichkite",
     "popila sam cijelu kutiju", "ho preso tutte le pillole", "לקחתי את כל הכדורים",
     "lakachti et kol ha kadurim"],
)
def test_a_quantity_is_a_concept_in_every_language(text: str) -> None:
    assert "c:QUANTITY" in concepts(text)


@pytest.mark.parametrize("text", ["tablete su spremne", "le pillole sono pronte",
                                  "הכדורים מוכנים", "les pastilles són preparades"])
def test_means_said_ready_are_a_plan(text: str) -> None:
    assert "c:PLAN_TIME" in concepts(text)


def test_a_short_message_has_its_length_and_concepts_marked_short() -> None:
    short = set(message_features("my pills")[0][0].tolist())
    assert {flag_bucket("len:2"), flag_bucket("short:c:PILLS")} <= short
    long = set(message_features("I finally went to the pharmacy for my pills today")[0][0]
               .tolist())
    assert flag_bucket("short:c:PILLS") not in long and flag_bucket("c:PILLS") in long


@pytest.mark.parametrize(
    "text",
    ["took my pills", "my pills", "pills", "yes, took my meds", "כדורים ✅",
     "lakachti et hakadurim", "popila tablete"],
)
def test_a_short_reply_whose_only_cue_is_medication_is_never_urgent(text: str) -> None:
    signal = detect_crisis(text)
    assert signal is None or signal.level is CrisisLevel.CHECK


@pytest.mark.parametrize(
    "text",
    ["took all my pills", "took 40 pills", "pills tonight", "swallowed the whole box of pills",
     "izpih vsichki hapcheta", "הכדורים מוכנים. הלילה", "uzela sam sve tablete"],
)
def test_a_short_message_of_pills_with_intent_is_still_urgent(text: str) -> None:
    signal = detect_crisis(text)
    assert signal is not None and signal.level is CrisisLevel.URGENT


@pytest.mark.parametrize(
    "text",
    [
        # Written for these tests: suicide in slang and as people type it, in English and Catalan.
        "gonna kill meself this weekend",
        "might just top myself",
        "keep thinkin about toppin myself",
        "endin it all is all i think about",
        "em trauré la vida",
        "vull traure'm la vida",
    ],
)
def test_suicide_in_slang_and_typed_forms_is_a_concept(text: str) -> None:
    assert "c:SUICIDE" in concepts(text)


@pytest.mark.parametrize(
    "text",
    ["cada nit penso en matar-me", "pensava en suïcidar-me", "tot el dia pensant en morir-me"],
)
def test_the_catalan_word_en_is_no_negation(text: str) -> None:
    # "en" ("of", "in", a name's article) was read as Hebrew typed in Latin letters ("ein": no).
    found = concepts(text)
    assert "c:NEGATED_ONLY" not in found
    assert not {"c:-SUICIDE", "c:-DIE"} & found


@pytest.mark.parametrize(
    "text",
    # Written for these tests: the model splits them between explicit intent and a question.
    ["work sucks and suicide sounds good rn", "la meva resposta és fàcil: suïcidi"],
)
def test_suicide_said_outright_is_urgent(text: str) -> None:
    signal = detect_crisis(text)
    assert signal is not None and signal.level is CrisisLevel.URGENT, signal


@pytest.mark.parametrize(
    "text",
    ["I'd never kill myself, I just need a holiday", "in the novel she decides to kill herself",
     "years ago I tried suicide, I'm fine now", "this commute is killing me",
     "I could kill for a coffee", "no, no penso en matar-me", "em mato a treballar"],
)
def test_suicide_denied_or_in_fiction_the_past_or_an_idiom_is_not_urgent(text: str) -> None:
    signal = detect_crisis(text)
    assert signal is None or signal.level is CrisisLevel.CHECK, signal
