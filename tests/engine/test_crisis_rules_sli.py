"""Rules S, L and I of crisis_corpus/README.md (cr29), read without the model: a negation that
denies suicide only in its own clause or after it (S), not wanting to live as explicit intent
(L); and the shapes that must stay apart (a denial, a life that should change, a double
negation, a negation taken back)."""

from __future__ import annotations

import pytest

from bot.engine import crisis
from bot.engine.crisis import (
    CrisisLevel,
    _not_wanting_to_live,
    _pieces,
    _stated_in_clause,
    _stated_suicide,
    detect_crisis,
)
from bot.engine.crisis_model import Model


@pytest.mark.parametrize(
    "text",
    # Written for these tests.
    [
        "I don't want to live anymore",
        "i dont wanna live",
        "no vull viure més",
        "не искам да живея вече",
        "ne iskam da jiveq",
        "ne želim više živjeti",
        "non voglio più vivere",
        "אני לא רוצה להיות בחיים",
    ],
)
def test_not_wanting_to_live_is_read(text: str) -> None:
    assert _not_wanting_to_live(_pieces(text))


@pytest.mark.parametrize(
    "text",
    [
        "I don't want to live like this",
        "no i want to live",
        "I didn't want to live back then, but I do now",
        "my character doesn't want to live in the novel",
        "no és que no vulgui viure, és que no vull viure a Barcelona amb aquests preus",
        "не искам да живея така",
        "ne želim ovako živjeti",
        "non voglio vivere così",
        "זה לא שאני לא רוצה לחיות, אני פשוט לא רוצה לקום לעבודה הזאת",
    ],
)
def test_a_life_that_should_change_or_a_double_negation_is_no_wish_to_die(text: str) -> None:
    assert not _not_wanting_to_live(_pieces(text))


@pytest.mark.parametrize(
    "text",
    [
        "not sad. i want to kill myself",
        "7? no. 1. i wish i was dead",
        "no és que estigui trist, és que vull morir",
        "no, no es tristesa, em vull matar",
        "no, non sono triste, voglio ammazzarmi",
        "לא, אני לא עצובה. אני רוצה להתאבד",
    ],
)
def test_suicide_said_after_a_negation_of_something_else_is_stated(text: str) -> None:
    pieces = _pieces(text)
    assert _stated_in_clause(pieces)
    assert not _stated_suicide(pieces)  # the message-wide negation of before


@pytest.mark.parametrize(
    "text",
    [
        "have I thought about suicide? the answer is no",
        "I'm not suicidal, I just want a break",
        "I want to die. not really, just tired",
        "I tried to kill myself years ago, I'm not there now",
        "no, pensar en suïcidi no, mai",
        "не съм мислила да се нараня, искам просто да си почина",
    ],
)
def test_a_denial_in_the_clause_or_after_it_still_denies(text: str) -> None:
    assert not _stated_in_clause(_pieces(text))


@pytest.mark.parametrize(
    "text",
    [
        "I don't want to live anymore",  # the model reads a wish; rule L makes it urgent
        "no vull viure més",
        "ne iskam da jiveq",
        "ne želim više živjeti",
        "non voglio più vivere",
        "אני לא רוצה להיות בחיים",
        "no és que estigui trist, és que vull morir",
        "not sad. i want to kill myself",
    ],
)
def test_not_wanting_to_live_and_suicide_after_a_negation_are_urgent(text: str) -> None:
    signal = detect_crisis(text)
    assert signal is not None and signal.level is CrisisLevel.URGENT, signal


@pytest.mark.parametrize(
    "text",
    [
        "I don't want to live like this, I need a new job",
        "I tried to kill myself years ago, I'm not there now",
        "I volunteer for a suicide prevention hotline",
        "non voglio vivere così, devo cambiare lavoro",
        "ne želim ovako živjeti, moram promijeniti posao",
        "не искам да живея така, трябва да сменя работата",
    ],
)
def test_a_life_that_should_change_a_past_attempt_or_prevention_is_not_urgent(text: str) -> None:
    signal = detect_crisis(text)
    assert signal is None or signal.level is not CrisisLevel.URGENT, signal


def test_the_rule_that_made_it_urgent_is_named_for_the_audit_log(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The model alone reads this as urgent; with its own ways to urgency out of reach, the
    # rule decides, and says so.
    model = crisis.load_model()
    out_of_reach = {**model.thresholds, "sure": 1.01, "urgent": 1.01}
    monkeypatch.setattr(crisis, "load_model",
                        lambda: Model(model.classes, model.weights, model.bias, out_of_reach))
    signal = detect_crisis("I don't want to live anymore")
    assert signal is not None and signal.level is CrisisLevel.URGENT
    assert "not_wanting_to_live" in signal.fired
    calm = detect_crisis("I don't want to live like this, I want a job I like")
    assert calm is None or "not_wanting_to_live" not in calm.fired
