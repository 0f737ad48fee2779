"""A dose already taken, said in numbers, or a poison swallowed, is urgent in every language
(rule D of crisis_corpus/README.md, bot.engine.crisis)."""

from __future__ import annotations

import pytest

from bot.engine.crisis import CrisisLevel, detect_crisis

DOSE = "dose_taken"


@pytest.mark.parametrize(
    "text",
    # Written for these tests, two a language (one in Latin letters for bg and he).
    [
        "swallowed 40 of my sleeping tablets, feeling weird",
        "drank a cup of bleach 10 min ago",
        "m'he pres 25 pastilles per dormir",
        "m'he begut mig pot de lleixiu",
        "изпих 40 хапчета наведнъж",
        "izpih 40 hap4eta navednaj",
        "popila sam 30 tableta za spavanje",
        "popio sam pola boce varikine",
        "ho preso 40 pillole per dormire",
        "mi sono bevuto mezza bottiglia di candeggina",
        "לקחתי 40 כדורי שינה",
        "lakachti 25 kadurim",
    ],
)
def test_a_dose_taken_in_numbers_or_a_poison_swallowed_is_urgent(text: str) -> None:
    signal = detect_crisis(text)
    assert signal is not None and signal.level is CrisisLevel.URGENT, signal
    assert DOSE in signal.fired, signal


@pytest.mark.parametrize(
    "text",
    [
        "took 2 tablets as my doctor prescribed",
        "the character took 40 pills in the film",
        "never took 30 pills, that was a lie",
        "vaig prendre 2 pastilles per la febre",
        "изпих 2 хапчета за главоболие",
        "popila sam 2 tablete za glavobolju",
        "ho preso 2 pillole per il mal di testa",
        "לקחתי 2 כדורים נגד כאב ראש",
        "my nan takes 8 pills a day",
    ],
)
def test_a_few_pills_medicine_fiction_or_a_denial_is_no_dose(text: str) -> None:
    signal = detect_crisis(text)
    assert signal is None or DOSE not in signal.fired, signal
