"""Tests for bot.engine.crisis. When you add a phrase or exception, add a sentence here."""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.engine.crisis import (
    LANGUAGES,
    CrisisCategory,
    CrisisLevel,
    CrisisSignal,
    Helpline,
    country_for_timezone,
    default_country_for_locale,
    detect_crisis,
    helplines_for,
    normalize,
    phrase_counts,
    phrase_match,
    strip_invisible,
)
from bot.engine.runner import is_sos, sos_words
from bot.i18n.languages import SUPPORTED_LOCALES

TRUE_POSITIVES: dict[str, list[str]] = {
    "en": [
        "I want to DIE",
        "honestly I just want to die",
        "I've been thinking about killing myself",
        "I'm going to kill myself tonight",
        "I want to end my life",
        "there's no reason to live anymore",
        "everyone would be better off without me",
        "I'd be better off dead",
        "I don't want to be alive anymore",
        "I don't want to be here anymore",
        "I don't want to live.",
        "I keep having suicidal thoughts",
        "I've started cutting myself again",
        "I want to hurt myself",
        "I'm planning to take my own life",
        "I'm thinking of taking all my pills",
        "I want to overdose on my sleeping pills",
        "life isn't worth living",
        "I wish I was dead",
        "this deadline is killing me and honestly I want to die",
    ],
    "ca": [
        "vull morir-me",
        "Vull morir",
        "em vull morir, no puc més",
        "estic pensant a suïcidar-me",
        "vull suicidarme",
        "penso matar-me",
        "vull treure'm la vida",
        "ja no vull viure",
        "no vull viure més així",
        "no tinc cap motiu per viure",
        "tothom estaria millor sense mi",
        "vull fer-me mal",
        "tinc pensaments suïcides",
    ],
    "bg": [
        "искам да умра",
        "Искам да умра!!!",
        "ще се самоубия",
        "мисля да се самоубия",
        "не искам да живея повече",
        "вече не искам да живея",
        "не искам да живея.",
        "нямам за какво да живея",
        "всички ще са по-добре без мен",
        "ще изпия всички хапчета",
        "пак започнах да се режа",
        "iskam da umra",
        "shte se samoubia",
    ],
    "hr": [
        "želim umrijeti",
        "zelim umrijeti",
        "ubit ću se",
        "ubit cu se veceras",
        "mislim se ubiti",
        "ne želim više živjeti",
        "ne zelim vise zivjeti",
        "više ne mogu živjeti",
        "nemam razloga za život",
        "razmišljam o samoubojstvu",
        "svima bi bilo bolje bez mene",
        "popit ću sve tablete",
        "htjela bih si oduzeti život",
        "opet se režem",
    ],
    "it": [
        "Voglio morire",
        "vorrei morire stanotte",
        "penso di ammazzarmi",
        "voglio uccidermi",
        "voglio farla finita",
        "voglio togliermi la vita",
        "non voglio più vivere",
        "non voglio piu vivere",
        "non ho più motivi per vivere",
        "starebbero tutti meglio senza di me",
        "ho pensieri suicidi",
        "voglio farmi del male",
        "voglio prendere tutte le pillole",
        "ho voglia di farla finita con tutto",
    ],
    "he": [
        "אני רוצה למות",
        "בא לי להתאבד",
        "חושב להתאבד",
        "ואני רוצה להתאבד",
        "אני רוצה לשים קץ לחיי",
        "אני רוצה לפגוע בעצמי",
        "אין לי בשביל מה לחיות",
        "אני לא רוצה לחיות יותר",
        "אני לא רוצה לחיות.",
        "יש לי מחשבות אובדניות",
        "לכולם יהיה יותר טוב בלעדיי",
        "אני רוצה לבלוע את כל הכדורים",
    ],
}

FALSE_POSITIVES: dict[str, list[str]] = {
    "en": [
        "this deadline is killing me",
        "I'm dying to try it",
        "I could kill for a coffee",
        "I had to kill the process and restart",
        "I killed it at the presentation",
        "my phone died during the call",
        "dead tired after the workshop",
        "I'm killing myself at the gym this month",
        "quitting now would be career suicide",
        "I need to cut myself some slack",
        # Coaching talk a retrained model once flagged as urgent self-harm.
        "My head felt lighter",
        "I broke my streak yesterday",
        "I wore long sleeves to the interview",
        "I bought a lighter for the candles",
        "I want to take my life back",
        "I hurt my back at the gym",
        "I don't want to live in London",
        "we watched Suicide Squad",
        "I cut myself off from social media",
        "I wanted to die of embarrassment",
        "I need to cut my hair",
    ],
    "ca": [
        "em moro de riure",
        "mor de riure amb aquest vídeo",
        "aquesta feina em mata",
        "estic mort de son",
        "se m'ha mort el mòbil",
        "em moro de ganes de provar-ho",
        "no vull viure a Barcelona",
        "m'he de tallar els cabells",
    ],
    "bg": [
        "умирам от смях",
        "този срок ме убива",
        "умрях от срам на презентацията",
        "телефонът ми умря",
        "мъртъв съм от умора",
        "не искам да живея в София",
        "това би било професионално самоубийство",
        "ще се убия от работа тази седмица",
    ],
    "hr": [
        "umirem od smijeha",
        "ovaj rok me ubija",
        "mrtav sam umoran",
        "mobitel mi je crkao",
        "umrijeti ću od srama",
        "ne želim živjeti u Zagrebu",
        "ubit ću se od posla ovaj tjedan",
        "šef će me ubiti",
    ],
    "it": [
        "muoio dal ridere",
        "ammazza che bello",
        "questa scadenza mi sta uccidendo",
        "sono stanco morto",
        "il telefono è morto",
        "mi ammazzo di lavoro",
        "voglio farla finita con le sigarette",
        "devo tagliarmi i capelli",
        "non voglio vivere a Milano",
        "sarebbe un suicidio politico",
        "il capo vuole uccidermi",
    ],
    "he": [
        "אני מת על זה",
        "מתתי מצחוק",
        "אני מת לנסות את זה",
        "הדדליין הזה הורג אותי",
        "אני הורג את עצמי בעבודה",
        "אני רוצה לקחת את החיים שלי בידיים",
        "לא רוצה לחיות בתל אביב",
        "הטלפון שלי מת",
    ],
}


def _cases(table: dict[str, list[str]]) -> list[tuple[str, str]]:
    return [(lang, text) for lang, texts in table.items() for text in texts]


@pytest.mark.parametrize(("lang", "text"), _cases(TRUE_POSITIVES))
def test_true_positives(lang: str, text: str) -> None:
    assert detect_crisis(text), (lang, text, normalize(text))


@pytest.mark.parametrize(("lang", "text"), _cases(FALSE_POSITIVES))
def test_false_positives(lang: str, text: str) -> None:
    assert not detect_crisis(text), (lang, text, normalize(text))


def test_enough_cases_per_language() -> None:
    for lang in LANGUAGES:
        assert len(TRUE_POSITIVES[lang]) >= 8, lang
        assert len(FALSE_POSITIVES[lang]) >= 6, lang


def test_every_language_has_phrases() -> None:
    counts = phrase_counts()
    assert set(LANGUAGES) <= set(counts)
    for lang in LANGUAGES:
        assert counts[lang][0] >= 25, lang


@pytest.mark.parametrize(
    "text",
    [
        "I WANT TO DIE",
        "i want to dieeee",
        "I... want... to... die!!!",
        "I want to die 😭😭",
        "I  want\tto   die",
        "I want to die\nplease help",
        "I want to die… really",
        "kill mysеlf",  # Cyrillic "е"
        "kill my\u200bself",  # zero-width space inside a word
        "i don’t want to be alive anymore",  # typographic apostrophe
        "suicidar me",
        "SUÏCIDAR-ME",
        "ŽELIM UMRIJETI",
        "ZELIM UMRIJETI",
        "ИСКАМ ДА УМРА",
        "אֲנִי רוֹצֶה לָמוּת",  # niqqud
        "ל֑הִתְאַבֵּד",  # cantillation + niqqud
        "Ｉ ｗａｎｔ ｔｏ ｄｉｅ",  # fullwidth (NFKC)
    ],
)
def test_normalisation_variants(text: str) -> None:
    assert detect_crisis(text), normalize(text)


@pytest.mark.parametrize("text", [
    "sui\u200bcide",  # zero-width space
    "su\u200bi\u200bcide",
    "sui\u2060cide",  # word joiner
    "sui\u180ecide",  # Mongolian vowel separator
    "sui\u200ccide",  # zero-width non-joiner
    "sui\ufeffcide",  # zero-width no-break space
    "sui\u00adcide",  # soft hyphen
    "sui\u3164cide",  # Hangul filler (a blank letter)
    "I want to ki\u200bll myself",
])
def test_an_invisible_character_never_splits_a_word(text: str) -> None:
    # Both the phrase lists and the model see the word whole.
    assert normalize(text).replace("kil ", "kill ").endswith(("suicide", "kill myself"))
    assert phrase_match(text), normalize(text)
    signal = detect_crisis(text)
    assert signal is not None and signal.level is CrisisLevel.URGENT, signal
    assert "lexicon" in signal.fired


def test_real_spaces_still_separate_words() -> None:
    assert normalize("kill\u200b myself") == "kil myself"
    # no-break, ideographic and em spaces
    assert normalize("want\u00a0to\u3000die\u2003now") == "want to die now"
    assert strip_invisible("S\u200bO\u2060S\u200d") == "SOS"
    assert strip_invisible("plain text") == "plain text"


@pytest.mark.parametrize("text", ["/sos", "/SOS@coachbot", "sos", "SOS!", " ¡SOS! ",
                                  "S\u200bOS", "SOS\u200b", "\u200bsos", "/s\u2060os"])
def test_sos_alone_whatever_is_invisible_around_it(text: str) -> None:
    assert is_sos(text) and sos_words(text) == ""


@pytest.mark.parametrize("text", ["sos please", "/sosx", "/goal sos", "SOS SOS", "", "S O S"])
def test_not_an_sos(text: str) -> None:
    assert not is_sos(text) and sos_words(text) is None


def test_the_words_after_sos() -> None:
    assert sos_words("/sos I took all the pills") == "I took all the pills"
    assert sos_words("/sos@coachbot\nhelp me") == "help me"
    assert sos_words("/SOS!  me  ") == "me"


#: Flagged messages in every language, none of whose words is also a word of an audit line.
SAID = [
    "i want to kill myself tonight, i have the pills ready",
    "sui\u200bcide",
    "sometimes I wish I could just disappear",
    "my best friend told me she wants to kill herself",
    "ho preso tutte le pastiglie",
    "vull morir",
    "искам да умра",
    "želim umrijeti",
    "אני רוצה למות",
]


@pytest.mark.parametrize("text", SAID)
def test_what_fired_and_the_audit_line_hold_no_word_of_the_message(text: str) -> None:
    signal = detect_crisis(text)
    assert signal is not None
    said = set(normalize(text).split()) | set(normalize(strip_invisible(text)).split())
    line = signal.audit() + " " + " ".join(signal.fired)
    # The line's own words: "level", "model", "lexicon", the level and the category's name.
    audit_words = set(normalize(line.replace("_", " ").replace(":", " ")).split())
    assert not said & audit_words, said & audit_words
    assert all(word not in line for word in said if len(word) > 2 and not word.isdigit())


@pytest.mark.parametrize("text", [
    "sometimes I wish I could just disappear",
    "I wish I could sleep and not wake up",
    "a volte vorrei solo sparire",
])
def test_a_passive_wish_is_asked_about_not_urgent(text: str) -> None:
    signal = detect_crisis(text)
    assert signal is not None and signal.level is CrisisLevel.CHECK
    assert signal.category is CrisisCategory.INDIRECT_IDEATION


def test_worry_for_someone_else_is_never_urgent() -> None:
    signal = detect_crisis("my best friend told me she wants to kill herself")
    assert signal is not None and signal.about_someone_else
    assert signal.level is CrisisLevel.CHECK


def test_normalize_examples() -> None:
    assert normalize("  Vull   MORIR-me!!! ") == "vul morir me"
    assert normalize("אֲנִי רוֹצֶה") == "אני רוצה"
    assert normalize("don’t") == "don't"
    assert normalize("Đuro") == "djuro"
    assert normalize("") == ""
    assert normalize("!!! ...") == ""


@pytest.mark.parametrize("text", [
    # Written for these tests: explicit intent in slang and typos (en) and in everyday Catalan.
    "gonna kill meself", "might top myself tonight", "wnt 2 die", "wanna die fr",
    "endin it all soon", "tinc ganes de matar-me", "em trauré la vida",
    "vull acabar amb la meua vida",
])
def test_explicit_intent_in_slang_and_everyday_words_is_a_listed_phrase(text: str) -> None:
    assert phrase_match(text), normalize(text)


def test_word_boundaries() -> None:
    # Phrases must not match inside other words.
    assert not detect_crisis("the antisuicidefoo was fine")
    assert not detect_crisis("unsuicidal")
    assert detect_crisis("suicide.")
    assert detect_crisis("(suicide)")


def test_exception_does_not_hide_a_real_phrase_elsewhere() -> None:
    assert detect_crisis("ammazza che bello, ma voglio morire")
    assert detect_crisis("umirem od smijeha, ali želim umrijeti")
    assert detect_crisis("I'm killing myself at the gym. Also I want to kill myself.")


def test_empty_and_whitespace() -> None:
    assert not detect_crisis("")
    assert not detect_crisis("   \n\t ")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=2000))
def test_never_raises_on_arbitrary_text(text: str) -> None:
    result = detect_crisis(text)
    assert result is None or isinstance(result, CrisisSignal)


# A guard against catastrophic backtracking (minutes, not milliseconds), loose enough for a
# loaded machine; the detector's speed is measured by bench.crisis.
_NO_BACKTRACKING = 5.0


@pytest.mark.timed
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(min_size=1, max_size=64).map(lambda s: (s * (65536 // len(s) + 1))[:65536]))
def test_large_inputs_are_fast(text: str) -> None:
    detect_crisis("warm up: load and compile the phrase lists")
    start = time.perf_counter()
    detect_crisis(text)
    assert time.perf_counter() - start < _NO_BACKTRACKING


@pytest.mark.timed
@pytest.mark.parametrize(
    "text",
    [
        "a " * 32768,
        "kill " * 13107,
        "want to " * 8192,
        "l" * 65536,
        "не искам " * 7281,
        "לא רוצה " * 8192,
        "😀" * 16384,
        "'" * 65536,
        "-" * 65536,
    ],
)
def test_pathological_inputs_are_fast(text: str) -> None:
    detect_crisis("warm up")
    start = time.perf_counter()
    detect_crisis(text)
    assert time.perf_counter() - start < _NO_BACKTRACKING


# --- helplines ----------------------------------------------------------------------


def _phones(lines: tuple[Helpline, ...]) -> set[str]:
    return {line.phone for line in lines if line.phone}


def _urls(lines: tuple[Helpline, ...]) -> set[str]:
    return {line.url for line in lines if line.url}


def test_helpline_is_frozen() -> None:
    line = helplines_for("IT")[0]
    with pytest.raises(AttributeError):
        line.name = "x"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("country", "phones"),
    [
        ("ES", {"024", "112"}),
        ("AD", {"112"}),
        ("IT", {"02 2327 2327", "06 77208977", "112"}),
        ("HR", {"01 4833 888", "116 111", "112"}),
        ("BG", {"112"}),
        ("IL", {"1201", "101", "100"}),
        ("GB", {"116 123"}),
        ("US", {"988"}),
    ],
)
def test_helplines_per_country(country: str, phones: set[str]) -> None:
    lines = helplines_for(country)
    assert phones <= _phones(lines)
    assert "https://findahelpline.com" in _urls(lines)
    assert helplines_for(country.lower()) == lines


def test_israel_has_sahar() -> None:
    assert any("sahar" in (line.url or "") for line in helplines_for("IL"))


@pytest.mark.parametrize("country", [None, "", "ZZ", "FR", "  "])
def test_helplines_fallback(country: str | None) -> None:
    lines = helplines_for(country)
    assert "https://findahelpline.com" in _urls(lines)
    assert any("iasp" in url for url in _urls(lines))
    assert any("112" in (line.notes or "") for line in lines)


def test_every_helpline_has_a_way_to_reach_it() -> None:
    for country in ["ES", "AD", "IT", "HR", "BG", "IL", "GB", "US", None]:
        for line in helplines_for(country):
            assert line.name
            assert line.phone or line.url or line.notes


def test_uk_alias() -> None:
    assert helplines_for("UK") == helplines_for("GB")


# --- countries ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tz", "country"),
    [
        ("Europe/Rome", "IT"),
        ("Asia/Jerusalem", "IL"),
        ("Europe/Zagreb", "HR"),
        ("Europe/Sofia", "BG"),
        ("Europe/Madrid", "ES"),
        ("Europe/Andorra", "AD"),
        ("Europe/London", "GB"),
        ("America/New_York", "US"),
        ("Atlantic/Canary", "ES"),
        ("Asia/Tel_Aviv", "IL"),  # backward link
        ("UTC", None),
        ("Not/AZone", None),
        ("", None),
    ],
)
def test_country_for_timezone(tz: str, country: str | None) -> None:
    assert country_for_timezone(tz) == country


@pytest.mark.parametrize(
    ("locale", "country"),
    [
        ("ca", "ES"),
        ("bg", "BG"),
        ("hr", "HR"),
        ("it", "IT"),
        ("he", "IL"),
        ("en", None),
        ("en-GB", "GB"),
        ("it_CH", "CH"),
        ("", None),
    ],
)
def test_default_country_for_locale(locale: str, country: str | None) -> None:
    assert default_country_for_locale(locale) == country


def test_every_helpline_says_where_and_when_it_was_checked() -> None:
    from bot.engine.crisis import _helplines

    countries, emergency, directories = _helplines()
    lines = [*emergency, *directories, *(line for ls in countries.values() for line in ls)]
    assert lines and all(line.source and line.checked for line in lines)


def test_a_line_marked_unsure_is_left_to_the_directories() -> None:
    from bot.engine.crisis import _helpline_list

    raw = [{"name": "Sure", "phone": "1", "source": "s", "checked": "2026-12-04"},
           {"name": "Unsure", "phone": "2", "source": "s", "checked": "2026-12-04",
            "status": "unsure"}]
    assert [line.name for line in _helpline_list(raw, "test")] == ["Sure"]
    with pytest.raises(ValueError, match="needs 'source' and 'checked'"):
        _helpline_list([{"name": "No source", "phone": "3"}], "test")


def test_a_helplines_name_in_the_clients_language() -> None:
    """A Hebrew client in Israel reads the services' Hebrew names, a Catalan client in Spain
    the Catalan ones; others read the default name."""
    assert [line.name_in("he") for line in helplines_for("IL")][:2] == [
        'ער"ן – עזרה ראשונה נפשית', 'סה"ר – תמיכה רגשית ברשת']
    assert helplines_for("ES")[1].name_in("ca") == "Telèfon de l'Esperança"
    assert helplines_for("ES")[1].name_in("it") == "Teléfono de la Esperanza"


def test_helpline_names_are_in_languages_the_bot_speaks_and_never_mix_in_english() -> None:
    from bot.engine.crisis import _helplines

    countries, emergency, directories = _helplines()
    every = [line for lines in (*countries.values(), emergency, directories) for line in lines]
    assert all(language in SUPPORTED_LOCALES for line in every for language, _ in line.names)
    for locale in SUPPORTED_LOCALES:  # in the language's own country no English aside
        home = default_country_for_locale(locale)
        if locale != "en" and home is not None:
            for line in helplines_for(home):
                assert "children and" not in line.name_in(locale), (locale, line.name)
