"""Train the crisis classifier from the labelled corpus and write ``data/crisis_model.npz``.

    python -m bot.engine.crisis_train [--corpus crisis_corpus] [--out bot/engine/data/...]

Only ``crisis_corpus/dev/`` and ``crisis_corpus/seed/`` (the project's own regression cases,
from tests/engine/test_crisis.py) are read for training and for choosing the thresholds (by
cross-validation on them), with everyday coaching talk derived from the catalogs;
``crisis_corpus/test/``, ``heldout/`` and ``unseen/`` are never used here, so that ``python -m bench
bench.crisis`` reports on text the model and its thresholds never saw. The run is
deterministic: the same corpus gives the same model.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from babel.messages.pofile import read_po

from bot.engine.crisis import CrisisCategory, has_telling_word, message_features, urgent_score
from bot.engine.crisis_model import (
    BUCKETS,
    SAFE_CLASSES,
    IntArray,
    Model,
    arrays_from_model,
)

CLASSES: tuple[str, ...] = (*SAFE_CLASSES, *(c.value for c in CrisisCategory))
DEFAULT_CORPUS = Path("crisis_corpus")
DEFAULT_OUT = Path(__file__).parent / "data" / "crisis_model.npz"
# What the thresholds are chosen for, on cross-validated dev predictions of hard negatives.
ANY_FLAG_BUDGET = 0.09
URGENT_BUDGET = 0.04
EPOCHS = 60
L2 = 2e-6
# The project's own regression cases (seed/) count more than one written message each.
SEED_WEIGHT = 3.0
LEARNING_RATE = 0.05
FOLDS = 4


@dataclass(frozen=True, slots=True)
class Example:
    text: str
    category: str  # a CrisisCategory value, or a negative category
    language: str
    scale: float = 1.0  # how much its folder counts (seed/ more than dev/)

    @property
    def weight(self) -> float:
        """Derived everyday talk counts less than written messages: its coaching words must
        not teach the model that a cry mentioning a check-in is safe. The clients' written
        everyday replies count more: a short one ("bye", "my pills") has few words to go on,
        and it is what most messages are."""
        return self.scale * {ORDINARY: ORDINARY_WEIGHT,
                             ORDINARY_ANSWER: ORDINARY_ANSWER_WEIGHT}.get(self.category, 1.0)

    @property
    def label(self) -> int:
        """The class: a risk category, everyday talk, or none (a hard case)."""
        if self.category in EVERYDAY:
            return CLASSES.index("everyday")
        return CLASSES.index(self.category) if self.category in CLASSES else 0


def read_corpus(folder: Path, scale: float = 1.0) -> list[Example]:
    """Every example of every language file in ``folder`` (``<lang>.jsonl``)."""
    examples: list[Example] = []
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                examples.append(Example(row["text"], row["category"], path.stem, scale))
    return examples


LOCALES = Path(__file__).parents[2] / "locales"
ORDINARY = "ordinary"  # derived from the catalogs
ORDINARY_WEIGHT = 0.25
ORDINARY_ANSWER = "ordinary_answer"  # clients' everyday replies, written for the corpus
ORDINARY_ANSWER_WEIGHT = 4.0
# Everyday talk is not among the hard negatives the false-alarm budget is spent on; its own,
# far smaller budget is kept on the written replies.
EVERYDAY = frozenset({ORDINARY, ORDINARY_ANSWER})
EVERYDAY_BUDGET = 0.01
# The bot's own texts about crisis and help are not ordinary coaching talk: left out.
_NOT_ORDINARY = ("crisis", "danger", "ending your life", "hurting yourself", "/sos",
                 "emergency", "talk to someone", "person to talk", "worried about someone",
                 "carry this alone", "Still very hard")
_SHORT_ANSWERS = ("ok", "okay", "yes", "no", "maybe", "idk", "thanks", "fine", "good", "so so",
                  "08:00", "7:30", "21:00", "tomorrow", "next week", "Rome", "London")


def ordinary_messages() -> list[Example]:
    """Everyday coaching talk the detector must never flag, derived rather than written: the
    bot's own questions and answer buttons in every language, and short answers (numbers,
    times, yes and no). Without them a message with no telling word has no safe example."""
    texts = {text: "en" for text in (*_SHORT_ANSWERS, *map(str, range(101)))}
    for path in sorted(LOCALES.glob("*/LC_MESSAGES/coachbot.po")):
        language = path.parts[-3]
        with path.open("rb") as handle:
            catalog = read_po(handle)
        for message in catalog:
            if not message.id or not isinstance(message.id, str) or not message.string:
                continue
            if any(word in message.id for word in _NOT_ORDINARY):
                continue
            texts.setdefault(message.id.replace("{", "").replace("}", ""), "en")
            texts.setdefault(str(message.string).replace("{", "").replace("}", ""), language)
    return [Example(text, ORDINARY, language) for text, language in texts.items()]


def training_examples(corpus: Path) -> list[Example]:
    """What the model learns from: dev/, seed/ and the everyday talk of the catalogs."""
    return (read_corpus(corpus / "dev") + read_corpus(corpus / "seed", SEED_WEIGHT)
            + ordinary_messages())


def whole(sentences: Sequence[IntArray]) -> IntArray:
    """A message's features as one window, as it is trained."""
    return np.concatenate(sentences) if sentences else np.zeros(0, dtype=np.int64)


def train(features: Sequence[IntArray], labels: Sequence[int],
          weights: Sequence[float] | None = None) -> Model:
    """Softmax regression by full-batch Adam, weighted to balance risk and none."""
    sizes = np.array([max(f.size, 1) for f in features])
    index = np.concatenate(features)
    doc = np.repeat(np.arange(len(features)), [f.size for f in features])
    value = (1.0 / np.sqrt(sizes))[doc].astype(np.float32)
    y = np.asarray(labels)
    # Safe and risk weigh half each; within risk each message counts the same, so a message
    # with no telling features keeps the prior of a safe one.
    risky = y >= len(SAFE_CLASSES)
    sample_weight = np.where(risky, len(y) / (2 * max(risky.sum(), 1)),
                             len(y) / (2 * max((~risky).sum(), 1))).astype(np.float32)
    if weights is not None:
        sample_weight *= np.asarray(weights, dtype=np.float32)
    onehot = np.eye(len(CLASSES), dtype=np.float32)[y]
    w = np.zeros((BUCKETS, len(CLASSES)), dtype=np.float32)
    b = np.zeros(len(CLASSES), dtype=np.float32)
    moments = [np.zeros_like(w), np.zeros_like(w), np.zeros_like(b), np.zeros_like(b)]
    beta1, beta2 = 0.9, 0.999
    for step in range(1, EPOCHS + 1):
        logits = np.zeros((len(features), len(CLASSES)), dtype=np.float32)
        for c in range(len(CLASSES)):
            logits[:, c] = np.bincount(doc, weights=w[index, c] * value, minlength=len(features))
        logits += b
        logits -= logits.max(axis=1, keepdims=True)
        probs = np.exp(logits)
        probs /= probs.sum(axis=1, keepdims=True)
        error = (probs - onehot) * sample_weight[:, None] / len(y)
        grad_w = np.empty_like(w)
        for c in range(len(CLASSES)):
            grad_w[:, c] = np.bincount(index, weights=error[doc, c] * value, minlength=BUCKETS)
        grad_w += L2 * w
        grad_b = error.sum(axis=0)
        for param, grad, m, v in ((w, grad_w, moments[0], moments[1]),
                                  (b, grad_b, moments[2], moments[3])):
            m *= beta1
            m += (1 - beta1) * grad
            v *= beta2
            v += (1 - beta2) * grad * grad
            step_size = LEARNING_RATE * np.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
            param -= step_size * m / (np.sqrt(v) + 1e-8)
    w[np.abs(w) < 1e-3] = 0.0
    return Model(CLASSES, w, b, {"check": 0.5, "urgent": 0.5})


def _quantile_threshold(scores: npt.NDArray[np.float64], budget: float) -> float:
    """The lowest threshold that flags at most ``budget`` of ``scores``."""
    if scores.size == 0:
        return 0.5
    ordered = np.sort(scores)[::-1]
    allowed = int(np.floor(budget * scores.size))
    return float(min(max(ordered[allowed] + 1e-4, 0.2), 0.95))


def _gated_check(risk: npt.NDArray[np.float64], telling: npt.NDArray[np.bool_], sure: float,
                 budget: float) -> float:
    """The lowest ``check`` threshold whose flags (see crisis.flagged) stay within budget."""
    allowed = int(np.floor(budget * risk.size)) - int((risk >= sure).sum())
    band = np.sort(risk[telling & (risk < sure)])[::-1]
    if allowed < 0:
        return sure
    if allowed >= band.size:
        return 0.2
    return float(min(max(band[allowed] + 1e-4, 0.2), sure))


def folds(count: int) -> list[IntArray]:
    """The held-out indices of each cross-validation fold: one fixed permutation, so that the
    trainer and crisis_corpus/cv.py hold out the same messages."""
    order = np.random.default_rng(7).permutation(count)
    return [order[fold::FOLDS] for fold in range(FOLDS)]


def fold_model(examples: Sequence[Example], sentences: Sequence[list[IntArray]],
               held: IntArray) -> Model:
    """The model trained on every example but the ``held`` ones."""
    kept = np.setdiff1d(np.arange(len(examples)), held)
    return train([whole(sentences[i]) for i in kept], [examples[i].label for i in kept],
                 [examples[i].weight for i in kept])


def read_held(model: Model, sentences: Sequence[list[IntArray]], held: IntArray,
              risk: npt.NDArray[np.float64], urgent_risk: npt.NDArray[np.float64]) -> None:
    """Fill ``risk`` and ``urgent_risk`` for the ``held`` examples, as ``model`` reads them."""
    for i in held:
        probs = model.score(sentences[i]).probabilities
        risk[i] = 1.0 - float(probs[:len(SAFE_CLASSES)].sum())
        urgent_risk[i] = urgent_score(CLASSES, [float(p) for p in probs])


def choose_thresholds(examples: Sequence[Example],
                      sentences: Sequence[list[IntArray]]) -> dict[str, float]:
    """Thresholds that keep cross-validated false alarms within budget: ``sure`` on clients'
    everyday replies, ``check`` (with a word of risk) and ``urgent`` on hard negatives."""
    risk = np.zeros(len(examples))
    urgent_risk = np.zeros(len(examples))
    for held in folds(len(examples)):
        read_held(fold_model(examples, sentences, held), sentences, held, risk, urgent_risk)
    return thresholds_from(examples, risk, urgent_risk)


def thresholds_from(examples: Sequence[Example], risk: npt.NDArray[np.float64],
                    urgent_risk: npt.NDArray[np.float64]) -> dict[str, float]:
    """The thresholds for cross-validated readings of ``examples`` (see choose_thresholds)."""
    telling = np.array([has_telling_word(e.text) for e in examples])
    hard = np.array([e.label == 0 for e in examples])
    everyday = np.array([e.category == ORDINARY_ANSWER for e in examples])
    sure = _quantile_threshold(risk[everyday], EVERYDAY_BUDGET)
    check = _gated_check(risk[hard], telling[hard], sure, ANY_FLAG_BUDGET)
    raised = (risk >= sure) | (telling & (risk >= check))
    return {"sure": sure, "check": check,
            "urgent": _quantile_threshold(np.where(raised, urgent_risk, 0.0)[hard],
                                          URGENT_BUDGET)}


def build(corpus: Path) -> tuple[Model, int]:
    examples = training_examples(corpus)
    sentences = [message_features(e.text)[0] for e in examples]
    thresholds = choose_thresholds(examples, sentences)
    model = train([whole(s) for s in sentences], [e.label for e in examples],
                  [e.weight for e in examples])
    return Model(model.classes, model.weights, model.bias, thresholds), len(examples)


def save(model: Model, out: Path) -> None:
    np.savez_compressed(out, allow_pickle=False, **arrays_from_model(model))


def main(argv: Iterable[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(list(argv) if argv is not None else None)
    model, count = build(args.corpus)
    save(model, args.out)
    print(f"trained on {count} dev examples; thresholds {model.thresholds}; "
          f"wrote {args.out} ({args.out.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
