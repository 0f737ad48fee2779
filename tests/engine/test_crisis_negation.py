"""How far a negation reaches: it ends at a clause mark, a denied joke affirms, and a goal said
as a negation of risk is no denial (bot.engine.crisis)."""

from __future__ import annotations

import pytest

from bot.engine.crisis import concept_features, detect_crisis, has_telling_word, normalize


def concepts(text: str) -> set[str]:
    """The single concepts of ``text`` as the detector reads it (clause marks kept)."""
    return {f for f in concept_features(normalize(text, clauses=True)) if ">" not in f}


def test_normalize_keeps_clause_marks_only_when_asked() -> None:
    assert normalize("no, vull morir: ara") == "no vul morir ara"
    assert normalize("no, vull morir: ara", clauses=True) == "no , vul morir , ara"
    assert normalize("Prou, , . ja n'hi ha prou,", clauses=True) == "prou . ja n'hi ha prou"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("non voglio più vivere, voglio morire e basta", "c:-DIE"),
        ("no vull seguir vivint, vull acabar amb tot", "c:-SUICIDE"),
        ("ако тя не се върне, ще се самоубия", "c:-SUICIDE"),
        ("ako ne se vyrne, shte se samoubiya", "c:-SUICIDE"),
        ("not sleeping again, thinking about killing myself", "c:-KILL"),
        ("ne spavam, razmišljam kako se ubiti", "c:-KILL"),
        ("לא ישנה כבר שבוע, רוצה למות", "c:-DIE"),
        ("lo yashen, rotze lamut", "c:-DIE"),
    ],
)
def test_a_clause_mark_ends_a_negations_reach(text: str, said: str) -> None:
    found = concepts(text)
    assert said not in found and "c:NEGATED_ONLY" not in found, found
    # Without the comma the same words are read as denied, as before.
    assert said in concepts(text.replace(",", ""))


@pytest.mark.parametrize(
    "text",
    ["I would never, ever hurt myself", "no, no em vull matar", "nope, not gonna kill myself"],
)
def test_a_comma_right_after_a_negation_or_a_bare_no_keeps_the_denial(text: str) -> None:
    assert "c:NEGATED_ONLY" in concepts(text)


@pytest.mark.parametrize(
    "text",
    [
        "not joking i want to die",
        "i no és conya, vull morir",
        "не се шегувам, искам да умра",
        "ne se shegyvam, iskam da umra",
        "ne šalim se, želim umrijeti",
        "non sto scherzando, voglio morire",
        "אני לא צוחקת, רוצה למות",
        "lo tzohek, rotze lamut",
    ],
)
def test_a_denied_joke_is_an_affirmation(text: str) -> None:
    found = concepts(text)
    assert "c:NOT_JOKING" in found
    assert not found & {"c:NEGATION", "c:JOKE", "c:-DIE", "c:NEGATED_ONLY"}, found


@pytest.mark.parametrize(
    "text",
    [
        "i want to kill myself. not joking this time",
        "non sto scherzando, mi ammazzo stanotte",
        "i no és conya, em vull matar",
        "не се шегувам, ще се самоубия",
        "ne šalim se, ubit ću se večeras",
        "אני לא צוחק, אני הולך להתאבד",
    ],
)
def test_suicide_said_with_a_denied_joke_is_urgent(text: str) -> None:
    signal = detect_crisis(text)
    assert signal and signal.level == "urgent", (text, signal)


@pytest.mark.parametrize(
    "text",
    ["my goal this week? not killing myself", "il mio obiettivo? non ammazzarmi",
     "цел за седмицата: да не се самоубия"],
)
def test_a_goal_said_as_a_negation_of_risk_still_tells(text: str) -> None:
    assert has_telling_word(text)


@pytest.mark.parametrize(
    "text",
    [
        "can't stop thinking about killing myself",
        "no puc parar de pensar en matar-me",
        "не мога да спра да мисля да се самоубия",
        "ne mogu prestati misliti kako se ubiti",
        "non riesco a smettere di pensare di ammazzarmi",
        "לא מצליחה להפסיק לחשוב להתאבד",
    ],
)
def test_not_being_able_to_stop_is_an_affirmation(text: str) -> None:
    found = concepts(text)
    assert "c:CANT_STOP" in found
    assert "c:NEGATED_ONLY" not in found and "c:-SUICIDE" not in found, found


def test_an_emoji_between_two_clauses_ends_a_negations_reach() -> None:
    found = concepts("non voglio più vivere 😭😭 voglio farla finita davvero")
    assert "c:NEGATED_ONLY" not in found and "c:-SUICIDE" not in found, found


def test_the_catalan_head_is_no_negation() -> None:
    assert "c:NEGATION" not in concepts("em passa pel cap matar-me")
    assert "c:NEGATION" in concepts("no tinc cap ganes de matar-me")


@pytest.mark.parametrize(
    "text",
    [
        "I'm not going to kill myself, I just need a long holiday away from work and from him",
        "no penso en morir-me, penso en canviar de feina aviat i anar a viure a Girona",
        "не искам да умра, искам да спя три дни без прекъсване и никой да не ми звъни",
        "ne želim umrijeti, samo želim spavati tri dana bez prekida i bez poziva",
        "non voglio morire, voglio solo dormire tre giorni di fila senza sveglia",
        "אני לא רוצה למות, אני רק רוצה לישון שלושה ימים ברצף בלי טלפונים",
    ],
)
def test_a_long_message_whose_every_word_of_risk_is_denied_is_never_urgent(text: str) -> None:
    signal = detect_crisis(text)
    assert not signal or signal.level == "check", (text, signal)
