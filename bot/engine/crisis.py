"""Crisis detection and helpline lookup.

A coach is not a psychotherapist. When a client's message shows a risk (suicidal thoughts,
plans or means, self-harm, abuse, threats, intent to harm someone, or worry for someone at
risk), the bot stops coaching and points to real help. This module only decides *whether*
and *how surely* a message shows that risk, and *which* helplines to offer; what the bot
says is up to the engine (``runner``).

:func:`detect_crisis` is the one entry point. The text is normalised (case, accents,
niqqud, look-alike letters, invisible characters, letters spelled out one by one), listed
idioms are taken out ("this deadline is killing me"), and the packaged classifier
(``crisis_model``) scores it, with the phrase lists' matches and shared concepts
(``data/crisis_concepts.yaml``; Bulgarian and Hebrew in Latin letters found through their
listed forms, words within a negation's reach marked so: the reach ends at a clause mark, and
a denied joke or "can't stop" affirms) among its features. Below the
model's "sure" threshold a message is flagged only when a word of risk is there, which keeps
ordinary coaching replies ("because I want to feel strong") out; a euphemism of self-harm
next to a coached habit ("had a relapse with sugar") is no word of risk and never urgent, and
neither is a word of risk that a short reply denies ("no, never thought of killing myself");
medication named alone in a reply of a few words ("took my pills") is asked about, never
urgent, unless something says intent ("took all my pills", "took 40", "pills tonight"); suicide
said outright ("gonna kms", "em vull matar") and read as explicit intent or a plan is urgent,
unless the message denies it or makes it fiction, a joke, hyperbole or the past; a message whose
every word of risk is denied is never urgent, however long.
The thresholds were chosen by cross-validation for a budget of false alarms
(``crisis_train``); ``python -m bench bench.crisis`` measures the result on text never
trained on.

Everything here is pure: the packaged data and the tz database tables are read once and
cached.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cache, lru_cache
from importlib import resources
from typing import Any

import yaml

from bot.engine.crisis_model import IntArray, load_model, sentence_features, split_sentences
from bot.engine.places import country_for_timezone
from bot.i18n.languages import LOCALE_COUNTRY, SUPPORTED_LOCALES

__all__ = [
    "LANGUAGES",
    "URGENT_CATEGORIES",
    "CrisisCategory",
    "CrisisLevel",
    "CrisisSignal",
    "Helpline",
    "country_for_timezone",
    "default_country_for_locale",
    "detect_crisis",
    "emergency_number",
    "flagged",
    "has_telling_word",
    "helplines_for",
    "message_features",
    "normalize",
    "phrase_languages",
    "phrase_match",
]

#: Languages whose phrase lists are always checked, whatever the user's locale.
LANGUAGES: tuple[str, ...] = SUPPORTED_LOCALES

_DATA_PACKAGE = "bot.engine"

# --------------------------------------------------------------------------------------
# Normalisation
# --------------------------------------------------------------------------------------

_APOSTROPHES = str.maketrans(
    {
        "\u2019": "'",  # right single quotation mark
        "\u2018": "'",  # left single quotation mark
        "\u02bc": "'",  # modifier letter apostrophe
        "\u02b9": "'",  # modifier letter prime
        "\u2032": "'",  # prime
        "\u00b4": "'",  # acute accent
        "`": "'",
        "\uff07": "'",  # fullwidth apostrophe
        "\u05f3": "'",  # Hebrew geresh
    }
)

# Letters that do not decompose under NFD but that people routinely type without the stroke.
_EXTRA_FOLDS = str.maketrans({"đ": "dj", "ł": "l", "ø": "o", "æ": "ae", "œ": "oe"})

# Cyrillic letters that look like Latin ones; applied only inside tokens that mix both
# scripts (e.g. "kill mysеlf" typed with a Cyrillic "е").
_CYR_TO_LAT = str.maketrans(
    {
        "а": "a", "в": "b", "е": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p",
        "с": "c", "т": "t", "у": "y", "х": "x", "і": "i", "ј": "j", "ѕ": "s",
    }
)  # fmt: skip

# Blank letters that show nothing (Hangul fillers; NFKC turns U+3164 and U+FFA0 into U+1160).
# With the format characters (zero-width space, word joiner, U+180E...) they are deleted, never
# turned into spaces: "sui\u200bcide" is one word, "suicide".
_FILLERS = frozenset({0x115F, 0x1160, 0x3164, 0xFFA0})


class _Drop(dict[int, int | None]):
    """str.translate table deleting the characters of some Unicode categories (and the
    fillers), filled lazily."""

    def __init__(self, *categories: str) -> None:
        super().__init__()
        self.categories = categories

    def __missing__(self, cp: int) -> int | None:
        gone = cp in _FILLERS or unicodedata.category(chr(cp)).startswith(self.categories)
        self[cp] = None if gone else cp
        return self[cp]


_DROP_INVISIBLE = _Drop("Cf")
_DROP_MARKS = _Drop("M", "Cf")  # with the combining marks, once the letters are decomposed


def strip_invisible(text: str) -> str:
    """``text`` without the characters that show nothing: format characters (zero-width
    space and joiners, word joiner, bidi marks, U+180E) and blank fillers."""
    return text if text.isascii() else text.translate(_DROP_INVISIBLE)

# An ellipsis is a pause, not the end of a sentence ("I... want... to... die").
_ELLIPSIS = re.compile(r"\.{2,}|\u2026")
_SENTENCE_END = re.compile(r"[.!?;\n\r\u0589\u061f\u06d4\u3002\uff01\uff1f\uff0e]+")
_NOT_WORD = re.compile(r"[^\w'.]+")
# Clause marks (comma, colon, dashes), kept as a "," token on request: a negation's reach ends
# there ("non voglio più vivere, voglio morire" does not deny dying).
# Emoji between two clauses part them as a comma does ("non voglio più vivere 😭 voglio...").
_CLAUSE_MARKS = re.compile(
    r"[,:\u2013\u2014\u060c\uff0c\u2600-\u27bf\U0001f000-\U0001faff]+")
_NOT_WORD_OR_CLAUSE = re.compile(r"[^\w'.,]+")
CLAUSE = ","
_APOS_RUN = re.compile(r"'+")
_REPEATS = re.compile(r"(\w)\1+")
_LATIN = re.compile(r"[a-z]")
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")


def _fix_mixed_script(token: str) -> str:
    if _LATIN.search(token) and _CYRILLIC.search(token):
        return token.translate(_CYR_TO_LAT)
    return token


def normalize(text: str, clauses: bool = False) -> str:
    """Return the canonical form used for matching.

    NFKC, casefold, strip combining marks (Latin accents, Hebrew niqqud and cantillation),
    fold a few letters that do not decompose (``đ`` → ``dj``), unify apostrophes, drop
    format characters and blank fillers (zero-width spaces and joiners, bidi marks: they
    never split a word), turn punctuation, symbols and emoji
    into spaces, keep sentence ends as a ``.`` token, fix Cyrillic look-alikes inside Latin
    words, squeeze repeated letters (``diiie`` → ``die``, ``kill`` → ``kil``) and collapse
    whitespace. With ``clauses``, clause marks (comma, colon, dashes) are kept as a ``,`` token.
    """
    text = unicodedata.normalize("NFKC", text.translate(_APOSTROPHES)).casefold()
    if not text.isascii():
        kept = unicodedata.normalize("NFD", text).translate(_DROP_MARKS)
        text = unicodedata.normalize("NFC", kept).translate(_EXTRA_FOLDS)
    text = _SENTENCE_END.sub(" . ", _ELLIPSIS.sub(" ", text))
    if clauses:
        text = _NOT_WORD_OR_CLAUSE.sub(" ", _CLAUSE_MARKS.sub(" , ", text))
    else:
        text = _NOT_WORD.sub(" ", text)
    text = _APOS_RUN.sub("'", text.replace("_", " "))
    tokens: list[str] = []
    for raw in text.split():
        tok = _fix_mixed_script(raw.strip("'"))
        if tok in (".", CLAUSE) and (not tokens or tokens[-1] in (".", CLAUSE)):
            if tokens and tok == ".":
                tokens[-1] = "."  # a sentence end outweighs a clause mark before it
            continue
        if tok:
            tokens.append(tok)
    if tokens and tokens[-1] in (".", CLAUSE):
        tokens.pop()
    return _REPEATS.sub(r"\1", _join_spelled_out(tokens))


def _join_spelled_out(tokens: list[str]) -> str:
    """Join words spelled out letter by letter ("k i l l myself" -> "kill myself")."""
    out: list[str] = []
    run: list[str] = []
    for tok in [*tokens, ""]:
        if len(tok) == 1 and tok.isalpha():
            run.append(tok)
            continue
        out.extend(["".join(run)] if len(run) >= 3 else run)
        run = []
        if tok:
            out.append(tok)
    return " ".join(out)


# --------------------------------------------------------------------------------------
# Phrase compilation
# --------------------------------------------------------------------------------------

# Mini-syntax of the phrase lists (see the comment at the top of crisis_phrases.yaml):
#   (a|b|c)  alternatives            (...)?  optional group
#   ~        up to three arbitrary words
#   -        optional space ("suïcidar-me" matches "suicidar me" and "suicidarme")
#   '        optional apostrophe ("don't" matches "dont")
#   $        end of the sentence or of the message ("don't want to live $")
_SYNTAX = re.compile(r"\s*[~$]\s*|[()|?]|[^()|?~$]+?(?=\s*[~$]|[()|?]|$)")
_GAP = r"(?: [^ .|]+){0,3} "
_END = r"(?=$| \.)"


def _literal(chunk: str) -> str:
    if not chunk.strip():
        return " "
    lead = " " if chunk[:1].isspace() else ""
    trail = " " if chunk[-1:].isspace() else ""
    parts = [normalize(part) for part in chunk.split("-")]
    body = " ?".join(re.escape(part).replace("\\ ", " ") for part in parts)
    return (lead + body + trail).replace("'", "'?")


def _compile_phrase(phrase: str) -> str:
    out: list[str] = []
    for tok in _SYNTAX.findall(phrase):
        if tok == "(":
            out.append("(?:")
        elif tok in (")", "|", "?"):
            out.append(tok)
        elif tok.strip() == "~":
            out.append(_GAP)
        elif tok.strip() == "$":
            out.append(_END)
        else:
            out.append(_literal(tok))
    pattern = "".join(out)
    re.compile(pattern)  # fail early, with the offending phrase in the traceback
    return pattern


def _alternation(phrases: Iterable[str], prefix: str = "") -> str:
    body = "|".join(f"(?:{_compile_phrase(p)})" for p in phrases)
    return f"(?<!\\w){prefix}(?:{body})(?!\\w)" if body else ""


@dataclass(frozen=True, slots=True)
class _Language:
    phrases: re.Pattern[str] | None
    exceptions: str  # uncompiled: all languages' exceptions are applied together
    phrase_count: int
    exception_count: int


def _read_yaml(name: str) -> Any:
    ref = resources.files(_DATA_PACKAGE).joinpath("data", name)
    return yaml.safe_load(ref.read_text(encoding="utf-8"))


def _str_list(value: object, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{where} must be a list of strings")
    return list(value)


@cache
def _languages() -> Mapping[str, _Language]:
    data = _read_yaml("crisis_phrases.yaml")
    if not isinstance(data, dict):
        raise ValueError("crisis_phrases.yaml must be a mapping of language codes")
    result: dict[str, _Language] = {}
    for lang, entry in data.items():
        if not isinstance(entry, dict):
            raise ValueError(f"crisis_phrases.yaml: {lang} must be a mapping")
        phrases = _str_list(entry.get("phrases"), f"{lang}.phrases")
        exceptions = _str_list(entry.get("exceptions"), f"{lang}.exceptions")
        prefixes = _str_list(entry.get("prefixes"), f"{lang}.prefixes")
        prefix = ""
        if prefixes:
            prefix = "(?:" + "|".join(re.escape(normalize(p)) for p in prefixes) + ")?"
        ph = _alternation(phrases, prefix)
        ex = _alternation(exceptions)
        result[str(lang)] = _Language(
            phrases=re.compile(ph) if ph else None,
            exceptions=ex,
            phrase_count=len(phrases),
            exception_count=len(exceptions),
        )
    return result


def phrase_languages() -> frozenset[str]:
    """The languages that have crisis phrases (each language the bot speaks needs them)."""
    return frozenset(code for code, lang in _languages().items() if lang.phrase_count)


@cache
def _all_exceptions() -> re.Pattern[str] | None:
    parts = [lang.exceptions for lang in _languages().values() if lang.exceptions]
    return re.compile("|".join(parts)) if parts else None


@cache
def _all_phrases() -> re.Pattern[str] | None:
    """Every language's phrases in one pattern: one pass over the message, not six."""
    parts = [lang.phrases.pattern for lang in _languages().values() if lang.phrases]
    return re.compile("|".join(f"(?:{p})" for p in parts)) if parts else None


# --------------------------------------------------------------------------------------
# Concepts: words of every language mapped to shared ideas, so what the model learns of
# "pills" in Croatian also counts for "хапчета" (see the top of crisis_concepts.yaml)
# --------------------------------------------------------------------------------------

_HEBREW_PREFIXES = ("וכש", "ושה", "וש", "וה", "של", "כש", "מה", "שה", "ו", "ש", "ה", "ל", "ב",
                    "כ", "מ")
_CONCEPT_WINDOW = 3  # words apart at most, for a pair of concepts to count together


@dataclass(frozen=True, slots=True)
class _Concepts:
    words: Mapping[str, frozenset[str]]
    stems: Mapping[str, frozenset[str]]
    stem_lengths: tuple[int, ...]
    phrases: Mapping[str, tuple[tuple[tuple[str, ...], frozenset[str]], ...]]  # by first word


# Bulgarian typed in Latin letters ("belezite", "hap4eta", "mrazq se"): each Cyrillic form of
# the Bulgarian concepts is also found under a Latin key, and a Latin word that no list knows is
# looked up by the same key, so every Bulgarian word learnt gets its Latin spellings for free.
# Both sides fold to one spelling: ж j, ч ch (typed 4), ш sh (6), щ sht (6t), ъ a (typed a, y,
# 1), я ya (q, ia, ja), ю yu (iu, ju), ц c (ts, tz), й i, х h (x), ь dropped.
_CYR_KEY = str.maketrans({
    "а": "a", "б": "b", "в": "v", "г": "g", "д": "d", "е": "e", "ж": "j", "з": "z", "и": "i",
    "й": "i", "к": "k", "л": "l", "м": "m", "н": "n", "о": "o", "п": "p", "р": "r", "с": "s",
    "т": "t", "у": "u", "ф": "f", "х": "h", "ц": "c", "ч": "ch", "ш": "sh", "щ": "sht",
    "ъ": "a", "ь": "", "ю": "yu", "я": "ya",
})  # fmt: skip
_LATIN_FOLDS = (("6t", "sht"), ("6", "sh"), ("4", "ch"), ("zh", "j"), ("w", "v"), ("x", "h"),
                ("ts", "c"), ("tz", "c"), ("q", "ya"), ("ia", "ya"), ("ja", "ya"), ("iu", "yu"),
                ("ju", "yu"), ("1", "a"))
_Y_AS_ER = re.compile(r"y(?![aeiouy])")  # "sym", "pyt": y typed for ъ
_BG_LATIN_MIN = 4  # shorter keys collide with words of the Latin-script languages
# Everyday words of the Latin-script languages that a Bulgarian key would misread ("smart" as
# смърт, Croatian "jela" as желая); found in the corpus's development part and the catalogs.
_BG_LATIN_CLASHES = ("smart", "strik", "spray", "jela", "jely", "plat", "segat")
_BG_ARTICLES = ("та", "то", "те", "ът", "ят", "ия")
_BG_LATIN_ARTICLES = ("ta", "to", "te", "at", "yat", "iya")
_BG_CYRILLIC_WORD = re.compile(r"[\u0400-\u04ff]+")


@lru_cache(maxsize=1 << 16)
def bg_latin_key(word: str) -> str:
    """The key a Bulgarian word is found under whether typed in Cyrillic or in Latin letters."""
    if _CYRILLIC.search(word):
        key = word.translate(_CYR_KEY)
    else:
        key = word
        for typed, folded in _LATIN_FOLDS:
            key = key.replace(typed, folded)
        key = _Y_AS_ER.sub("a", key)
    return _REPEATS.sub(r"\1", key)


class _Forms:
    """Words, stems and phrases of the concepts as they are being read."""

    def __init__(self) -> None:
        self.words: dict[str, set[str]] = {}
        self.stems: dict[str, set[str]] = {}
        self.phrases: dict[str, list[tuple[tuple[str, ...], frozenset[str]]]] = {}

    def add(self, norm: str, stem: bool, concept: str) -> None:
        if " " in norm:
            first, *rest = norm.split()
            self.phrases.setdefault(first, []).append((tuple(rest), frozenset({concept})))
        else:
            (self.stems if stem else self.words).setdefault(norm, set()).add(concept)

    def frozen(self) -> _Concepts:
        return _Concepts(
            words={k: frozenset(v) for k, v in self.words.items()},
            stems={k: frozenset(v) for k, v in self.stems.items()},
            stem_lengths=tuple(sorted({len(k) for k in self.stems}, reverse=True)),
            phrases={k: tuple(v) for k, v in self.phrases.items()},
        )


@cache
def _all_concepts() -> tuple[_Concepts, _Concepts, _Concepts]:
    """Every language's concepts, the Bulgarian ones under their Latin keys, and the Hebrew
    ones typed in Latin letters."""
    data = _read_yaml("crisis_concepts.yaml") or {}
    if not isinstance(data, dict):
        raise ValueError("crisis_concepts.yaml must be a mapping of language codes")
    forms, latin, hebrew_latin = _Forms(), _Forms(), _Forms()
    for lang, entry in data.items():
        if not isinstance(entry, dict):
            raise ValueError(f"crisis_concepts.yaml: {lang} must be a mapping")
        for concept, listed in entry.items():
            for form in _str_list(listed, f"{lang}.{concept}"):
                stem = form.endswith("*")
                norm = normalize(form.rstrip("*"))
                if not norm:
                    continue
                forms.add(norm, stem, str(concept))
                if lang == "bg" and _BG_CYRILLIC_WORD.fullmatch(norm.replace(" ", "")):
                    key = " ".join(bg_latin_key(w) for w in norm.split())
                    if len(key.replace(" ", "")) >= _BG_LATIN_MIN:
                        latin.add(key, stem, str(concept))
                if lang == "he" and norm.isascii() and " " not in norm:
                    hebrew_latin.add(norm, stem, str(concept))
    return forms.frozen(), latin.frozen(), hebrew_latin.frozen()


def _concepts() -> _Concepts:
    return _all_concepts()[0]


# Hebrew typed in Latin letters glues its prefixes as the script does ("vehamavet",
# "shelo", "lehitorer"): a word no list knows is looked up without them among the Hebrew
# Latin forms only, so an English or Croatian word is not misread.
_HEBREW_LATIN_PREFIXES = ("she", "ve", "ha", "ba", "be", "la", "le", "mi", "me", "ke", "u")
_HEBREW_LATIN_MIN = 4  # letters left after the prefix


def _hebrew_latin(word: str) -> frozenset[str] | None:
    lexicon = _all_concepts()[2]
    for prefix in _HEBREW_LATIN_PREFIXES:
        if word.startswith(prefix) and len(word) - len(prefix) >= _HEBREW_LATIN_MIN:
            found = _listed(word[len(prefix):], lexicon)
            if found:
                return found
    return None


def _listed(word: str, lexicon: _Concepts) -> frozenset[str] | None:
    """The concepts of ``word`` as listed, whole or by its longest listed stem; None if none."""
    found = lexicon.words.get(word)
    for length in lexicon.stem_lengths:
        if length <= len(word):
            stem = lexicon.stems.get(word[:length])
            if stem is not None:
                return stem if found is None else found | stem
    return found


def _word_concepts(word: str, lexicon: _Concepts) -> frozenset[str]:
    found = _listed(word, lexicon)
    if found is not None:
        return found
    if "'" in word:  # "don't" as "dont"; "knife's" as "knife"; an elided article or pronoun:
        # "l'impulso", "m'he"
        found = _listed(word.replace("'", ""), lexicon)
        if found is None and word.endswith("'s") and len(word) > _BG_LATIN_MIN:
            found = _listed(word[:-2], lexicon)
        if found is None and len(word) - word.rfind("'") > _BG_LATIN_MIN:
            found = _listed(word[word.rfind("'") + 1:], lexicon)
        return found or frozenset()
    if "\u05d0" <= word[:1] <= "\u05ea":  # Hebrew: one- to three-letter prefixes attach
        for prefix in _HEBREW_PREFIXES:
            if word.startswith(prefix) and len(word) - len(prefix) >= 2:
                rest = _word_concepts(word[len(prefix):], lexicon)
                if rest:
                    return rest
    elif _CYRILLIC.match(word):  # a Bulgarian noun with its article: "белезите", "животът"
        for article in _BG_ARTICLES:
            if word.endswith(article) and len(word) - len(article) >= _BG_LATIN_MIN - 1:
                return _listed(word[:-len(article)], lexicon) or frozenset()
    elif len(word) >= _BG_LATIN_MIN and word.isascii() and not word.startswith(_BG_LATIN_CLASHES):
        found = _hebrew_latin(word)
        if found:
            return found
        latin = _all_concepts()[1]
        key = bg_latin_key(word)
        found = _listed(key, latin)
        if found is None:
            article = next((a for a in _BG_LATIN_ARTICLES if key.endswith(a)), "")
            if article and len(key) - len(article) >= _BG_LATIN_MIN:
                found = _listed(key[:-len(article)], latin)
        return found or frozenset()
    return frozenset()


def _tag_phrases(words: Sequence[str], tags: list[frozenset[str]]) -> list[tuple[int, int]]:
    """Add the concepts of the listed phrases to their first word's tags, in one pass: as
    written, without apostrophes ("wouldn't miss me" as the list has it, "wouldnt miss me")
    and by the Bulgarian Latin keys. Returns where a negation affirms ("not joking", "can't
    stop"): the phrase's first word and how many words follow it."""
    forms, latin, _ = _all_concepts()
    listed, keyed = forms.phrases, latin.phrases
    bare = [w.replace("'", "") for w in words] if any("'" in w for w in words) else None
    keys: list[str] | None = None
    not_joking: list[tuple[int, int]] = []
    for i, word in enumerate(words):
        candidates = []
        if word in listed:
            candidates.append((words, listed[word]))
        if bare is not None and bare[i] in listed:
            candidates.append((bare, listed[bare[i]]))
        if word.isascii() and len(word) > 1:
            key = _latin_key(word)
            if key in keyed:
                keys = keys or [_latin_key(w) if w.isascii() else w for w in words]
                candidates.append((keys, keyed[key]))
        for seq, found in candidates:
            for rest, concepts in found:
                if tuple(seq[i + 1:i + 1 + len(rest)]) == rest:
                    tags[i] = tags[i] | concepts
                    if concepts & _AFFIRMING:
                        not_joking.append((i, len(rest)))
    return not_joking


@lru_cache(maxsize=1 << 16)
def _latin_key(word: str) -> str:
    """bg_latin_key, once a word: a long message repeats its words in every window."""
    return bg_latin_key(word)


@lru_cache(maxsize=1 << 16)
def _concepts_of(word: str) -> frozenset[str]:
    """A word's concepts; words recur, within a long message and across messages."""
    return _word_concepts(word, _concepts())


@lru_cache(maxsize=1 << 12)
def _sentence_tags(sentence: str) -> tuple[frozenset[str], ...]:
    """The concepts of each word of a normalised sentence, a listed phrase's on its first word
    (cached: the rules and the features read the same sentences of a long message again)."""
    words = sentence.split()
    tags: list[frozenset[str]] = [_CLAUSE_TAG if w == CLAUSE else _concepts_of(w) for w in words]
    # A negation that affirms ("non sto scherzando", "not joking", "can't stop thinking of it")
    # opens no reach, and its joke makes nothing a joke.
    for first, rest in _tag_phrases(words, tags):
        tags[first:first + rest + 1] = [tags[first] & _AFFIRMING, *([frozenset()] * rest)]
    # "el cap", "pel cap" (Catalan): the head, not "no" or "any".
    for k in range(1, len(words)):
        if words[k] in _NOUN_AFTER and words[k - 1] in _NOUN_AFTER[words[k]]:
            tags[k] = tags[k] - {"NEGATION"}
    return tuple(tag & _AFFIRMING if tag & _AFFIRMING else tag for tag in tags)


def concept_features(sentence: str) -> list[str]:
    """The concepts of a normalised sentence's words, and the ordered pairs of concepts at
    most three words apart ("WANT>DIE"), as named features for the model."""
    clauses = _sentence_tags(sentence)
    tags = [tag for tag in clauses if tag is not _CLAUSE_TAG]
    features = [f"c:{c}" for tag in tags for c in tag] + _negation_features(clauses)
    for i, first in enumerate(tags):
        if not first:
            continue
        for second in tags[i + 1:i + 1 + _CONCEPT_WINDOW]:
            features += [f"c:{a}>{b}" for a in first for b in second]
    return features


# How far a negation reaches: "I don't want to die, I want to quit" denies dying, "I don't want
# to live" does not deny the risk. A negation word covers the words after it up to a new
# subject ("I"), a contrast ("but", "just"), another negation or this many words.
# A clause mark ends it too ("no vull seguir vivint, vull acabar amb tot"), unless it follows
# the negation word inside a sentence ("I would never, ever hurt myself").
_NEGATION_SCOPE = 5
_SCOPE_ENDS = frozenset({"I", "NEGATION", "CONTRAST"})
_NOT_JOKING = "NOT_JOKING"
_GOAL = "GOAL"
_UNSCOPED = frozenset({"I", "SELF", "WANT", "NEGATION", "CONTRAST", "JOKE", _NOT_JOKING,
                       "CANT_STOP"})
_CLAUSE_TAG = frozenset({"CLAUSE"})
_AFFIRMING = frozenset({_NOT_JOKING, "CANT_STOP"})
_NOUN_AFTER = {"cap": frozenset({"el", "pel", "del", "al", "un", "meu", "teu", "seu", "nostre"})}


@dataclass(frozen=True, slots=True)
class _Negation:
    """What a sentence's negations reach: the concepts denied, and whether a word of risk was
    said within a negation's reach and outside of one."""

    denied: tuple[str, ...]
    negated_risk: bool
    affirmed_risk: bool


def _negation(tags: Sequence[frozenset[str]]) -> _Negation:
    denied: list[str] = []
    reach = 0
    negated_risk = affirmed_risk = False
    for k, tag in enumerate(tags):
        if tag is _CLAUSE_TAG:
            if not (reach == _NEGATION_SCOPE and k > 1):
                reach = 0
            continue
        risk = bool(tag - _NEUTRAL_CONCEPTS)
        opens = "NEGATION" in tag and not risk
        # A new subject ends the reach, but a verb in the first person that is itself denied
        # ("no penso en matar-me", "non penso di farla finita": "I don't think of...") does not.
        negated_verb = reach == _NEGATION_SCOPE and "WANT" in tag
        if reach and not opens and tag & _SCOPE_ENDS and not negated_verb:
            reach = 0
        if reach and tag:
            denied += sorted(tag - _UNSCOPED)
            negated_risk |= risk
        elif risk:
            affirmed_risk = True
        reach = _NEGATION_SCOPE if opens else max(reach - 1, 0)
    return _Negation(tuple(denied), negated_risk, affirmed_risk)


def _negation_features(tags: Sequence[frozenset[str]]) -> list[str]:
    """Each concept within a negation's reach, marked so ("c:-LIFE"), and whether every word of
    risk in the sentence was within one ("c:NEGATED_ONLY"): the same words said and denied
    weigh differently, and what the model learns of it holds for every language."""
    negation = _negation(tags)
    features = [f"c:-{c}" for c in negation.denied]
    if negation.negated_risk and not negation.affirmed_risk:
        features.append("c:NEGATED_ONLY")
    return features


# A reply this short whose every word of risk is denied ("no, never thought of killing myself",
# "не, не се режа") has no word of risk: it is flagged only when the model is sure.
_DENIAL_WORDS = 8


def _denied_reply(pieces: Sequence[str]) -> bool:
    """Whether a short message's words of risk are all within a negation's reach."""
    return _word_count(pieces) <= _DENIAL_WORDS and _all_denied(pieces)


def _all_denied(pieces: Sequence[str]) -> bool:
    """Whether a message's words of risk are all within a negation's reach; a goal said as a
    negation of risk ("my goal this week? not killing myself") is no denial."""
    tags = [_sentence_tags(p) for p in pieces]
    if any(_GOAL in tag for sentence in tags for tag in sentence):
        return False
    found = [_negation(sentence) for sentence in tags]
    return any(n.negated_risk for n in found) and not any(n.affirmed_risk for n in found)


# Suicide said outright ("gonna kms", "em vull matar", "I just want to die"): the words of suicide,
# or a wish and death in one sentence, with nothing in the message that denies them or sets them
# in fiction, a joke, hyperbole or the past. The model often splits such a message between
# explicit intent and a wish to be asked about; read as explicit intent or a plan, it is urgent.
_SUICIDE = frozenset({"SUICIDE"})
_WISH_OF_DEATH = frozenset({"WANT", "DIE"})
_NOT_STATED = frozenset({"NEGATION", "FICTION", "JOKE", "HYPERBOLE", "RESOLVED"})


def _stated_suicide(pieces: Sequence[str]) -> bool:
    """Whether a message says suicide outright, with nothing that denies it or makes it
    fiction, a joke, hyperbole or the past."""
    said = [frozenset().union(*_sentence_tags(p)) for p in pieces]
    found = frozenset().union(*said)
    return not found & _NOT_STATED \
        and (bool(found & _SUICIDE) or any(s >= _WISH_OF_DEATH for s in said))


# Rule S: suicide said outright in a clause of its own, a negation in an earlier clause ("no és
# que estigui trist, és que vull morir", "7? no. 1. i wish i was dead"). A negation in the clause
# of the words of suicide, or in any clause after them ("suicide? the answer is no"), still
# denies them; fiction, a joke, hyperbole or the past anywhere in the message still set them
# aside.
def _clauses(pieces: Sequence[str]) -> list[frozenset[str]]:
    """The concepts of each clause of a message, in order (a sentence ends a clause too)."""
    clauses: list[frozenset[str]] = []
    for piece in pieces:
        current: frozenset[str] = frozenset()
        for tag in _sentence_tags(piece):
            if tag is _CLAUSE_TAG:
                clauses.append(current)
                current = frozenset()
            else:
                current |= tag
        clauses.append(current)
    return [c for c in clauses if c]


def _suicide_clause(clause: frozenset[str], outright: bool) -> bool:
    return bool(clause & _SUICIDE) or (not outright and clause >= _WISH_OF_DEATH)


def _stated_in_clause(pieces: Sequence[str], outright: bool = False) -> bool:
    """Whether a message says suicide (``outright``: its words, not a wish to die) in a clause
    with no negation and no negation after it, and nothing that makes it fiction, a joke,
    hyperbole or the past."""
    clauses = _clauses(pieces)
    if frozenset().union(*clauses) & (_NOT_STATED - {"NEGATION"}):
        return False
    first = next((k for k, c in enumerate(clauses) if _suicide_clause(c, outright)), None)
    if first is None:
        return False
    # An earlier negation denies a word of risk of its own ("не съм мислила да се нараня,
    # искам просто да си почина"): the message is a denial, not a cry.
    return not any("NEGATION" in c for c in clauses[first:]) \
        and not any("NEGATION" in c and c - _NEUTRAL_CONCEPTS for c in clauses[:first])


# Rule L: not wanting to live ("I don't want to live anymore", "non voglio più vivere", "ne
# iskam da jiveq", "אני לא רוצה להיות בחיים") is explicit intent, not a wish to be asked about:
# a negation, then a wish at most two words on with no new subject between, then life at most
# three words on, and at most one word after it in its clause ("anymore", "više"), none of them
# a manner ("like this", "così", "ovako": a life that should change, a low mood).
_MANNER = frozenset({"this", "that", "cosi", "aixi", "taka", "така", "ovako", "ovak", "ovakav",
                     "ovakva", "ככה", "kaha", "kacha", "kakha", "asi", "like", "so", "here",
                     "there", "with", "without"})
_NOT_A_LIFE_WISH = frozenset({"FICTION", "JOKE", "HYPERBOLE", "OTHER_PERSON", "HOME_PERSON"})


def _not_wanting_to_live(pieces: Sequence[str]) -> bool:
    """Whether a clause says the speaker does not want to live."""
    if frozenset().union(*(t for p in pieces for t in _sentence_tags(p))) & _NOT_A_LIFE_WISH:
        return False
    for piece in pieces:
        words = piece.split()
        tags = _sentence_tags(piece)
        ends = [k for k, t in enumerate(tags) if t is _CLAUSE_TAG] + [len(tags)]
        for k, tag in enumerate(tags):
            if "NEGATION" not in tag or tag is _CLAUSE_TAG:
                continue
            # A negation before it ("זה לא שאני לא רוצה לחיות", "no és que no vulgui viure")
            # or in a clause after it ("...però era la ràbia, no ho penso") takes it back.
            end = next(e for e in ends if e > k)
            later = tags[end:]
            if any("NEGATION" in t for t in tags[:k]) or (
                    any("NEGATION" in t for t in later) and any("CONTRAST" in t for t in later)):
                return False
            want = next((w for w in range(k + 1, min(k + 3, end))
                         if "WANT" in tags[w]), None)
            if want is None or any("I" in tags[w] for w in range(k + 1, want)):
                continue
            life = next((v for v in range(want + 1, min(want + 4, end))
                         if "LIFE" in tags[v]), None)
            if life is None or any("NEGATION" in tags[v] for v in range(k + 1, life)):
                continue
            after = words[life + 1:end]
            if len(after) <= 1 and not set(words[want + 1:end]) & _MANNER \
                    and not any(tags[v] - {"RESOLVED"} for v in range(life + 1, end)):
                return True
    return False


def _said_outright(pieces: Sequence[str], category: CrisisCategory) -> str | None:
    """The rule by which a message the model flags says suicide outright, if one does: its
    name, for ``fired``."""
    if category in _STATED_CATEGORIES:
        if _stated_suicide(pieces):
            return "stated"
        if _RULE_S and _stated_in_clause(pieces):
            return "stated_in_clause"
    if _RULE_I and category is CrisisCategory.INDIRECT_IDEATION and (
            _stated_in_clause(pieces, outright=True) if _RULE_S else
            _stated_suicide(pieces) and any(_SUICIDE & t for p in pieces
                                            for t in _sentence_tags(p))):
        return "stated_outright"
    if _RULE_L and category in _LIFE_WISH_CATEGORIES and _not_wanting_to_live(pieces):
        return "not_wanting_to_live"
    return None


# A dose already taken, said in numbers ("took 25 tylenol", "לקחתי 20 אקמול") or a poison
# swallowed ("mi sono bevuto mezza bottiglia di candeggina"), with no word of suicide: read as
# explicit intent or a plan, it is urgent, unless its sentence has a negation or the message
# sets it in medicine, fiction, sport or food, grooming, the past or someone else's hands.
_DOSE_MIN = 5
_NUMBER = re.compile(r"\d+")
_NOT_A_DOSE = frozenset({"FICTION", "JOKE", "HYPERBOLE", "RESOLVED", "MEDICAL_OK", "SPORT_FOOD",
                         "GROOMING", "OTHER_PERSON", "HOME_PERSON"})


def _dose_taken(pieces: Sequence[str]) -> bool:
    """Whether a sentence says a dose was taken: a poison swallowed, or pills in a number of at
    least five (of the first three numbers, under 1,000: not a year or a price)."""
    said = [frozenset().union(*_sentence_tags(p)) for p in pieces]
    if frozenset().union(*said) & _NOT_A_DOSE:
        return False
    return any("TOOK" in s and "NEGATION" not in s and ("POISON" in s or ("PILLS" in s and any(
        int(n) >= _DOSE_MIN for n in _NUMBER.findall(p)[:3] if len(n) < 4)))
        for s, p in zip(said, pieces, strict=True))


# Concepts that say nothing of risk on their own (a short message needs another one).
_NEUTRAL_CONCEPTS = frozenset({
    "I", "SELF", "WANT", "LIFE", "END", "NEGATION", "RESOLVED", "MEDICAL_OK", "FICTION", "WORK",
    "SPORT_FOOD", "GROOMING", "JOKE", "HYPERBOLE", "OTHER_PERSON", "HOME_PERSON", "PLAN_TIME",
    "TOOK", "CONTRAST", "HABIT", "QUANTITY", "CLAUSE", _NOT_JOKING, "CANT_STOP", _GOAL})
_SHORT = 2  # words


def _risk_concepts(piece: str) -> bool:
    """Whether a sentence has a word of risk: a concept's word or listed phrase ("שרפתי את
    עצמי"); a euphemism only as a word ("relapsed"), not as the everyday phrases it hides in
    ("I did it again", "I burned myself")."""
    return any(tag - _NEUTRAL_CONCEPTS - _EUPHEMISMS for tag in _sentence_tags(piece)) \
        or any(_concepts_of(word) & _EUPHEMISMS for word in piece.split())


# Euphemisms of self-harm ("relapsed", "slipped up", "old habits") are the words clients use for
# the habits they coach; next to one of those habits they are coaching talk ("had a relapse with
# sugar"), never a word of risk and never urgent.
_EUPHEMISMS = frozenset({"RELAPSE"})
_COACHING_CONTEXT = frozenset({"HABIT", "SPORT_FOOD"})


def _coaching_euphemism(pieces: Sequence[str]) -> bool:
    """Whether a message's only words of risk are euphemisms, said next to a coached habit."""
    found = frozenset().union(*(tag for p in pieces for tag in _sentence_tags(p)))
    risky = found - _NEUTRAL_CONCEPTS
    return bool(risky) and risky <= _EUPHEMISMS and bool(found & _COACHING_CONTEXT)


def phrase_counts() -> dict[str, tuple[int, int]]:
    """Number of (phrases, exceptions) per language, for reports and tests."""
    return {k: (v.phrase_count, v.exception_count) for k, v in _languages().items()}


class CrisisLevel(StrEnum):
    """How sure the detector is: ask a direct safety question, or stop and help at once."""

    CHECK = "check"
    URGENT = "urgent"


class CrisisCategory(StrEnum):
    """What a flagged message is about; the classes of the model, less ``none``."""

    EXPLICIT_IDEATION = "explicit_ideation"
    INDIRECT_IDEATION = "indirect_ideation"
    PLAN_MEANS = "plan_means"
    SELF_HARM = "self_harm"
    ABUSE = "abuse"
    THREATENED = "threatened"
    HARM_OTHERS = "harm_others"
    CONCERN_OTHER = "concern_other"  # someone else is at risk: help lines to pass on


#: Categories that are urgent when the model is sure enough; the others are asked about.
URGENT_CATEGORIES = frozenset({
    CrisisCategory.EXPLICIT_IDEATION, CrisisCategory.PLAN_MEANS, CrisisCategory.SELF_HARM,
    CrisisCategory.ABUSE, CrisisCategory.THREATENED, CrisisCategory.HARM_OTHERS,
})
#: Categories in which suicide said outright is urgent whatever the model's urgent score.
_STATED_CATEGORIES = frozenset({CrisisCategory.EXPLICIT_IDEATION, CrisisCategory.PLAN_MEANS})
_LIFE_WISH_CATEGORIES = _STATED_CATEGORIES | {CrisisCategory.INDIRECT_IDEATION}
_LEXICON = "lexicon"
# Rule N of crisis_corpus/README.md (every word of risk denied: never urgent); a switch so that
# crisis_corpus/cv.py measures the rules with and without it from one training.
_RULE_N = True
# Rule D: a dose taken in numbers or a poison swallowed, read as explicit intent or a plan,
# is urgent.
_RULE_D = True
# Rule S: a negation denies suicide said outright only in its clause or after it.
_RULE_S = True
# Rule L: not wanting to live, read as a wish or as explicit intent or a plan, is urgent.
_RULE_L = True
# Rule I: the words of suicide said outright are urgent when the model reads an indirect wish.
_RULE_I = True
_COACHING = "coaching_context"  # a euphemism next to a coached habit: asked about at most
_DOSE = "dose_taken"  # a dose taken in numbers or a poison swallowed (rule D)


@dataclass(frozen=True, slots=True)
class CrisisSignal:
    """A message that shows a risk. Always truthy; ``fired`` names what fired, never words."""

    level: CrisisLevel
    category: CrisisCategory
    risk: float
    fired: tuple[str, ...]

    @property
    def about_someone_else(self) -> bool:
        return self.category is CrisisCategory.CONCERN_OTHER

    def audit(self) -> str:
        """One line for logs and tests: the level, the category and what fired."""
        return f"level={self.level} category={self.category} fired={','.join(self.fired)}"


def urgent_score(classes: tuple[str, ...], probabilities: Sequence[float]) -> float:
    """How likely the message is in one of the urgent categories, all of them together."""
    return float(sum(p for c, p in zip(classes, probabilities, strict=True)
                     if c in URGENT_CATEGORIES))


def _without_idioms(text: str) -> str:
    """The normalised text with every listed idiom ("this deadline is killing me") taken out
    and a sentence break in its place, so what follows it is read on its own ("dying of
    laughter, but I want to die"). Exceptions of every language go together: the same word
    can be a phrase in one language and part of an idiom in another ("career suicide")."""
    exceptions = _all_exceptions()
    return exceptions.sub(" . ", text) if exceptions is not None else text


def _plain(piece: str) -> str:
    """A piece without its clause marks, as the phrase lists and the n-grams read it."""
    return piece.replace(f" {CLAUSE} ", " ") if CLAUSE in piece else piece


def _lexicon_hit(piece: str) -> bool:
    phrases = _all_phrases()
    return phrases is not None and phrases.search(_plain(piece)) is not None


# A lone word of risk says less in a reply of a few words ("bye", "my pills") than in a
# sentence: in a message this short the length and every single concept are marked so
# ("len:2", "short:c:GOODBYE"), for the model to learn how much less.
_SHORT_MESSAGE = 6  # words


def _piece_features(piece: str, short: int = 0) -> tuple[IntArray, bool]:
    """A piece's features, and whether a listed phrase matched it; ``short`` is the message's
    length in words when it is a short one, else 0."""
    hit = _lexicon_hit(piece)
    flags = concept_features(piece) + ([_LEXICON] if hit else [])
    if short:
        flags += [f"len:{short}", *(f"short:{f}" for f in flags if ">" not in f)]
    return sentence_features(_plain(piece), flags), hit


def _pieces(text: str) -> list[str]:
    """The sentences of ``text``, normalised, idioms taken out."""
    return _read(text)[0]


def _read(text: str) -> tuple[list[str], bool]:
    """The sentences of ``text``, normalised, idioms taken out, and whether one was."""
    normalized = normalize(text, clauses=True)
    without = _without_idioms(normalized)
    pieces = split_sentences(f" {without} ")
    return [piece for piece in (p.strip(" .,") for p in pieces) if piece], without != normalized


def message_features(text: str) -> tuple[list[IntArray], bool]:
    """The model's features of each piece of ``text`` (its sentences, split at idioms too),
    and whether a listed phrase matched."""
    return _features(_pieces(text))


def _features(pieces: list[str]) -> tuple[list[IntArray], bool]:
    words = _word_count(pieces)
    scored = [_piece_features(p, words if words <= _SHORT_MESSAGE else 0) for p in pieces]
    return [features for features, _ in scored], any(hit for _, hit in scored)


def phrase_match(text: str) -> bool:
    """Whether a listed phrase matches ``text`` (the phrase lists alone, as the detector was
    before its model: the baseline of bench.crisis)."""
    return any(_lexicon_hit(p) for p in _pieces(text))


def has_telling_word(text: str) -> bool:
    """Whether ``text`` has a word of risk: a listed phrase, or a risk concept (not merely
    "I", "want", "life", "tonight"...)."""
    pieces = _pieces(text)
    return _telling(pieces, any(_lexicon_hit(p) for p in pieces))


def _word_count(pieces: Sequence[str]) -> int:
    return sum(len(_plain(p).split()) for p in pieces)


# Means that everyday replies name too ("took my pills", "my meds", "כדורים ✅"): in a message
# of a few words with no listed phrase, where they are the only word of risk, they are asked
# about, never urgent, unless something in it says intent: a quantity ("all", "30"), a time or
# readiness ("tonight", "ready"), a wish or an end.
_AMBIGUOUS_MEANS = frozenset({"PILLS"})
_INTENT_CUES = frozenset({"WANT", "PLAN_TIME", "END", "QUANTITY"})
_QUALIFIED_WORDS = 4
_DIGIT = re.compile(r"\d")


def _lone_ambiguous_means(pieces: Sequence[str], phrase_hit: bool) -> bool:
    """Whether a short message's only word of risk is a means everyday replies name too, with
    no listed phrase and no sign of intent: it cannot be urgent."""
    if phrase_hit or _word_count(pieces) > _QUALIFIED_WORDS \
            or any(_DIGIT.search(p) for p in pieces):
        return False
    found = frozenset().union(*(tag for p in pieces for tag in _sentence_tags(p)))
    risky = found - _NEUTRAL_CONCEPTS
    return bool(risky) and risky <= _AMBIGUOUS_MEANS and not found & _INTENT_CUES


def _telling(pieces: Sequence[str], phrase_hit: bool) -> bool:
    return (phrase_hit or any(_risk_concepts(p) for p in pieces)) \
        and not _coaching_euphemism(pieces) and not _denied_reply(pieces)


def flagged(risk: float, telling: bool, thresholds: Mapping[str, float]) -> bool:
    """The model is sure (``sure``), or fairly sure (``check``) and a word of risk is there:
    everyday replies ("because I want to feel strong") score high for their first person
    and their wishes, and this keeps them out without losing the oblique cries."""
    return risk >= thresholds["sure"] or (telling and risk >= thresholds["check"])


def detect_crisis(text: str) -> CrisisSignal | None:
    """A CrisisSignal when ``text`` shows a risk (suicide, self-harm, abuse, threats, harm to
    others, or concern for someone at risk) in any supported language, else None.

    The packaged classifier scores the message and each pair of neighbouring sentences; the
    phrase lists' matches are one of its features. Every language is checked, whatever the
    user's locale.
    """
    pieces, idiom = _read(text)
    if not pieces:
        return None
    sentences, lexicon = _features(pieces)
    telling = _telling(pieces, lexicon)
    # "I", "ok", "7": too little to go on without one telling word; and once a listed idiom is
    # taken out ("I want to take my life back"), what is left without one says nothing.
    if not telling and (idiom or _word_count(pieces) <= _SHORT):
        return None
    model = load_model()
    scores = model.score(sentences)
    risk = scores.risk()
    if not flagged(risk, telling, model.thresholds):
        return None
    category = CrisisCategory(model.classes[scores.riskiest_class()])
    coaching = _coaching_euphemism(pieces)
    # A message whose every word of risk is denied ("no em vull matar, vull matar el wifi") is
    # asked about at most, however long.
    denied = _RULE_N and _all_denied(pieces)
    dose = _RULE_D and category in _STATED_CATEGORIES and _dose_taken(pieces)
    # A listed phrase the model is sure of and reads as urgent ("non voglio più vivere": explicit
    # and indirect wishes split the model's probability) is urgent too.
    possible = category is not CrisisCategory.CONCERN_OTHER and not coaching and not denied \
        and not _lone_ambiguous_means(pieces, lexicon)
    read_urgent = possible and (
        urgent_score(model.classes, scores.probabilities.tolist()) >= model.thresholds["urgent"]
        or (lexicon and risk >= model.thresholds["sure"] and category in URGENT_CATEGORIES))
    rule = _said_outright(pieces, category) if possible and not read_urgent else None
    urgent = read_urgent or rule is not None or (possible and dose)
    fired = (f"model:{category}:{risk:.2f}",) + ((_LEXICON,) if lexicon else ()) \
        + ((_COACHING,) if coaching else ()) + ((rule,) if rule else ()) \
        + ((_DOSE,) if dose and urgent else ())
    return CrisisSignal(CrisisLevel.URGENT if urgent else CrisisLevel.CHECK, category, risk,
                        fired)


# --------------------------------------------------------------------------------------
# Helplines
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Helpline:
    """A real, public support service."""

    name: str
    phone: str | None = None
    url: str | None = None
    hours: str | None = None
    notes: str | None = None
    source: str = ""  # where the number was checked
    checked: str = ""  # when (ISO date)
    names: tuple[tuple[str, str], ...] = ()  # (language, the service's name in it)

    @property
    def around_the_clock(self) -> bool:
        """Open at every hour of every day, as its ``hours`` say ("24/7", "24/7, free")."""
        return self.hours is not None and self.hours.startswith("24/7")

    def name_in(self, language: str) -> str:
        """The service's name as speakers of ``language`` know it, else its default name."""
        return dict(self.names).get(language, self.name)


_COUNTRY_ALIASES = {"UK": "GB", "EL": "GR"}


def _helpline(raw: object, where: str) -> Helpline:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise ValueError(f"helplines.yaml: {where} needs at least a name")

    def opt(key: str) -> str | None:
        value = raw.get(key)
        return None if value is None else str(value)

    names = raw.get("names") or {}
    if not isinstance(names, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in names.items()):
        raise ValueError(f"helplines.yaml: {where}.names must map a language to a name")
    line = Helpline(
        name=str(raw["name"]),
        names=tuple(sorted(names.items())),
        phone=opt("phone"),
        url=opt("url"),
        hours=opt("hours"),
        notes=opt("notes"),
        source=opt("source") or "",
        checked=opt("checked") or "",
    )
    if line.phone is None and line.url is None and line.notes is None:
        raise ValueError(f"helplines.yaml: {where} has no phone, url or notes")
    if not line.source or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", line.checked):
        raise ValueError(f"helplines.yaml: {where} needs 'source' and 'checked' (a date)")
    return line


def _helpline_list(raw: object, where: str) -> tuple[Helpline, ...]:
    """The lines of one list; a line marked ``status: unsure`` is left out (the directories
    that follow every list stand in for it)."""
    if not isinstance(raw, list):
        raise ValueError(f"helplines.yaml: {where} must be a list")
    return tuple(_helpline(item, f"{where}[{i}]") for i, item in enumerate(raw)
                 if not (isinstance(item, dict) and item.get("status") == "unsure"))


_Lines = tuple[Helpline, ...]


@cache
def _helplines() -> tuple[dict[str, _Lines], _Lines, _Lines]:
    data = _read_yaml("helplines.yaml")
    if not isinstance(data, dict):
        raise ValueError("helplines.yaml must be a mapping")
    intl = data.get("international")
    if not isinstance(intl, dict):
        raise ValueError("helplines.yaml: international must be a mapping")
    emergency = _helpline_list(intl.get("emergency"), "international.emergency")
    directories = _helpline_list(intl.get("directories"), "international.directories")
    countries_raw = data.get("countries")
    if not isinstance(countries_raw, dict):
        raise ValueError("helplines.yaml: countries must be a mapping")
    countries: dict[str, tuple[Helpline, ...]] = {}
    for code, entry in countries_raw.items():
        if not isinstance(entry, dict):
            raise ValueError(f"helplines.yaml: countries.{code} must be a mapping")
        countries[str(code).upper()] = _helpline_list(entry.get("lines"), f"countries.{code}")
    return countries, emergency, directories


def _country_code(country: str | None) -> str:
    code = (country or "").strip().upper()
    return _COUNTRY_ALIASES.get(code, code)


@cache
def _emergency_numbers() -> dict[str, str]:
    """Country code -> the number to call in immediate danger (helplines.yaml)."""
    raw = _read_yaml("helplines.yaml").get("emergency_numbers")
    if not isinstance(raw, dict) or not raw.get("source") or not isinstance(
            raw.get("numbers"), dict):
        raise ValueError("helplines.yaml: emergency_numbers needs a source and numbers")
    by_country: dict[str, str] = {}
    for number, codes in raw["numbers"].items():
        for code in map(str, codes):
            if code.upper() in by_country:
                raise ValueError(f"helplines.yaml: emergency_numbers lists {code} twice")
            by_country[code.upper()] = str(number)
    return by_country


def emergency_number(country: str | None) -> str | None:
    """The number to call in immediate danger in ``country``; None when it is unknown (the
    client's country, or the number for it)."""
    return _emergency_numbers().get(_country_code(country))


def has_country_lines(country: str | None) -> bool:
    """Whether ``country`` has help lines of its own; else only directories of lines (and
    the emergency numbers) are offered."""
    return bool(_helplines()[0].get(_country_code(country)))


def helplines_for(country: str | None) -> tuple[Helpline, ...]:
    """Helplines to offer a user in ``country`` (ISO 3166-1 alpha-2, any case).

    A known country gets its own lines followed by the international directories; an
    unknown or missing country gets the international fallback (an emergency-number
    reminder plus the directories).
    """
    countries, emergency, directories = _helplines()
    lines = countries.get(_country_code(country))
    if not lines:
        return emergency + directories
    return lines + directories


# --------------------------------------------------------------------------------------
# Country guessing
# --------------------------------------------------------------------------------------




def default_country_for_locale(locale: str) -> str | None:
    """Best-guess country for a bare language locale; None when it is ambiguous (``en``).

    A region in the locale wins: ``it_CH`` → ``CH``, ``en-GB`` → ``GB``.
    """
    parts = [p for p in re.split(r"[-_.@]", locale.strip()) if p]
    if not parts:
        return None
    for part in parts[1:]:
        if len(part) == 2 and part.isalpha():
            return part.upper()
    return LOCALE_COUNTRY.get(parts[0].lower())
