"""The crisis classifier: a linear model over hashed character and word n-grams, run with numpy.

Pure and local: the weights ship in ``data/crisis_model.npz`` (written by
``python -m bot.engine.crisis_train`` from the labelled corpus under ``crisis_corpus/``), are
read once, and nothing leaves the process. ``bot.engine.crisis`` turns the probabilities into
a level; this module only scores text.

A message is scored in windows of one or two neighbouring sentences as well as whole, and the
riskiest window counts, so a cry at the end of a long message about work is not diluted by the
rest of it.
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources

import numpy as np
import numpy.typing as npt

__all__ = ["BUCKETS", "Model", "Scores", "load_model", "sentence_features"]

#: Hashed feature space; a power of two.
BUCKETS = 1 << 18
_MASK = np.uint64(BUCKETS - 1)
_CHAR_NS = (3, 4, 5)
_PRIME = np.uint64(0x100000001B3)
_MIX = np.uint64(0x9E3779B97F4A7C15)
# A sentence longer than this many words is cut into pieces of this length for scoring.
_WINDOW_WORDS = 40
# Distinct salts keep word and character features of the same text in different buckets.
_WORD_SALT = 0x57
_BIGRAM_SALT = 0xB1
_FLAG_SALT = 0xF1

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float32]


def _char_grams(text: str) -> IntArray:
    """Bucket of every character n-gram of ``text`` (n = 3, 4, 5), by a rolling hash."""
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    parts: list[IntArray] = []
    with np.errstate(over="ignore"):
        for n in _CHAR_NS:
            count = codes.size - n + 1
            if count <= 0:
                break
            h = np.full(count, np.uint64(n), dtype=np.uint64)
            for k in range(n):
                h = h * _PRIME + codes[k:k + count]
            parts.append(((h * _MIX) >> np.uint64(40) & _MASK).astype(np.int64))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _word_bucket(word: str, salt: int) -> int:
    return (zlib.crc32(word.encode("utf-8"), salt) * 2654435761 >> 7) & (BUCKETS - 1)


def flag_bucket(name: str) -> int:
    """The bucket of a named flag feature (for example that a lexicon phrase matched)."""
    return _word_bucket(name, _FLAG_SALT)


def sentence_features(sentence: str, flags: Sequence[str] = ()) -> IntArray:
    """Feature buckets of one normalised sentence: character n-grams across word borders,
    words, word pairs, and the named flags."""
    words = sentence.split()
    buckets = [_word_bucket(w, _WORD_SALT) for w in words]
    buckets += [_word_bucket(f"{a} {b}", _BIGRAM_SALT) for a, b in itertools.pairwise(words)]
    buckets += [flag_bucket(f) for f in flags]
    return np.concatenate((_char_grams(f" {sentence} "), np.array(buckets, dtype=np.int64)))


#: Classes that show no risk: hard cases that only look like it, and everyday coaching talk.
SAFE_CLASSES = ("none", "everyday")


@dataclass(frozen=True, slots=True)
class Scores:
    """Class probabilities of the riskiest window of a message."""

    probabilities: FloatArray  # one per class, in Model.classes order
    safe: int  # the first ``safe`` classes show no risk

    def risk(self) -> float:
        """Probability that the window shows any risk."""
        return float(1.0 - self.probabilities[:self.safe].sum())

    def riskiest_class(self) -> int:
        return self.safe + int(self.probabilities[self.safe:].argmax())


@dataclass(frozen=True, slots=True)
class Model:
    classes: tuple[str, ...]  # the SAFE_CLASSES first
    weights: FloatArray  # (BUCKETS, len(classes))
    bias: FloatArray  # (len(classes),)
    thresholds: dict[str, float]

    def logits(self, features: Sequence[IntArray]) -> FloatArray:
        """Raw class scores of each window, given each window's feature buckets."""
        rows = [self.weights[f].sum(axis=0) / np.sqrt(max(f.size, 1)) for f in features]
        return np.vstack(rows) + self.bias if rows else np.zeros((0, len(self.classes)),
                                                                 dtype=np.float32)

    def score(self, sentences: Sequence[IntArray]) -> Scores:
        """Probabilities of the riskiest window: the whole message, or a sentence with its
        neighbour when there are several."""
        windows = _windows(sentences)
        logits = self.logits(windows)
        logits = logits - logits.max(axis=1, keepdims=True)
        probs = np.exp(logits)
        probs /= probs.sum(axis=1, keepdims=True)
        safe = sum(1 for c in self.classes if c in SAFE_CLASSES)
        riskiest = int(np.argmin(probs[:, :safe].sum(axis=1)))
        return Scores(probs[riskiest].astype(np.float32), safe)


def _windows(pieces: Sequence[IntArray]) -> list[IntArray]:
    """The whole message and, for a longer one, each piece with its neighbour (a piece alone
    was tried too: it raised false alarms more than recall)."""
    whole = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)
    windows = [whole]
    if len(pieces) > 1:
        windows += [np.concatenate(pair) for pair in itertools.pairwise(pieces)]
    return windows


def split_sentences(normalized: str) -> list[str]:
    """Pieces of a normalised text: its sentences (``.`` tokens end them), longer ones cut
    into pieces of a few words, so a short cry is not drowned by the words around it."""
    pieces: list[str] = []
    for sentence in normalized.split(" . "):
        words = sentence.replace(" .", " ").split()
        for start in range(0, len(words), _WINDOW_WORDS):
            pieces.append(" ".join(words[start:start + _WINDOW_WORDS]))
    return [p for p in pieces if p]


def model_from_arrays(arrays: dict[str, npt.NDArray[np.generic]]) -> Model:
    classes = tuple(str(c) for c in arrays["classes"])
    names = [str(n) for n in arrays["threshold_names"]]
    values = [float(v) for v in arrays["threshold_values"]]
    weights = np.zeros((BUCKETS, len(classes)), dtype=np.float32)
    weights[arrays["rows"].astype(np.int64)] = arrays["values"].astype(np.float32)
    return Model(classes, weights, arrays["bias"].astype(np.float32), dict(zip(names, values,
                                                                               strict=True)))


def arrays_from_model(model: Model) -> dict[str, npt.NDArray[np.generic]]:
    """The model in the compact form it is stored in (only the buckets with weight)."""
    rows = np.flatnonzero(np.abs(model.weights).max(axis=1) > 0)
    return {
        "classes": np.array(model.classes),
        "rows": rows.astype(np.int32),
        "values": model.weights[rows].astype(np.float16),
        "bias": model.bias.astype(np.float32),
        "threshold_names": np.array(list(model.thresholds)),
        "threshold_values": np.array(list(model.thresholds.values()), dtype=np.float32),
    }


@cache
def load_model() -> Model:
    """The packaged model, read once."""
    ref = resources.files("bot.engine").joinpath("data", "crisis_model.npz")
    with ref.open("rb") as handle, np.load(handle, allow_pickle=False) as stored:
        return model_from_arrays({name: stored[name] for name in stored.files})
