"""Cross-validate the detector on crisis_corpus/dev + seed, scored through detect_crisis.

    PYTHONPATH=<code> python crisis_corpus/cv.py OUT.json [variant ...]

The trainer's 4 folds and thresholds (crisis_train.choose_thresholds, repeated here so that the
fold models are kept); each held-out message is then read by ``detect_crisis`` with its fold's
model and the cross-validated thresholds. A variant names module flags of bot.engine.crisis to
set (``base`` sets none; ``N`` sets ``_RULE_N``), so rule variants share one training. Only dev/
and seed/ are read: never test/, heldout/ or unseen/.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

import bot.engine.crisis as crisis
from bot.engine.crisis_model import SAFE_CLASSES, Model
from bot.engine.crisis_train import (
    ANY_FLAG_BUDGET,
    CLASSES,
    EVERYDAY_BUDGET,
    FOLDS,
    ORDINARY,
    ORDINARY_ANSWER,
    URGENT_BUDGET,
    _gated_check,
    _quantile_threshold,
    ordinary_messages,
    read_corpus,
    train,
    whole,
)

CORPUS = Path(__file__).parent


def main() -> None:
    out = Path(sys.argv[1])
    variants = sys.argv[2:] or ["base"]
    examples = read_corpus(CORPUS / "dev") + read_corpus(CORPUS / "seed") + ordinary_messages()
    sentences = [crisis.message_features(e.text)[0] for e in examples]
    order = np.random.default_rng(7).permutation(len(examples))
    risk = np.zeros(len(examples))
    urgent_risk = np.zeros(len(examples))
    fold_of = np.zeros(len(examples), dtype=int)
    models = []
    for fold in range(FOLDS):
        held = order[fold::FOLDS]
        kept = np.setdiff1d(order, held)
        model = train([whole(sentences[i]) for i in kept], [examples[i].label for i in kept],
                      [examples[i].weight for i in kept])
        models.append(model)
        for i in held:
            fold_of[i] = fold
            probs = model.score(sentences[i]).probabilities
            risk[i] = 1.0 - float(probs[:len(SAFE_CLASSES)].sum())
            urgent_risk[i] = crisis.urgent_score(CLASSES, [float(p) for p in probs])
        print(f"fold {fold} trained", flush=True)
    telling = np.array([crisis.has_telling_word(e.text) for e in examples])
    hard = np.array([e.label == 0 for e in examples])
    everyday = np.array([e.category == ORDINARY_ANSWER for e in examples])
    sure = _quantile_threshold(risk[everyday], EVERYDAY_BUDGET)
    check = _gated_check(risk[hard], telling[hard], sure, ANY_FLAG_BUDGET)
    raised = (risk >= sure) | (telling & (risk >= check))
    thresholds = {"sure": sure, "check": check,
                  "urgent": _quantile_threshold(np.where(raised, urgent_risk, 0.0)[hard],
                                                URGENT_BUDGET)}
    print("thresholds", thresholds, flush=True)
    fold_models = [Model(m.classes, m.weights, m.bias, thresholds) for m in models]
    rows: list[dict[str, object]] = []
    current = [0]
    crisis.load_model = lambda: fold_models[current[0]]  # type: ignore[assignment]
    for i, example in enumerate(examples):
        if example.category == ORDINARY:
            continue
        current[0] = int(fold_of[i])
        row: dict[str, object] = {"text": example.text, "category": example.category,
                                  "language": example.language}
        for variant in variants:
            if hasattr(crisis, "_RULE_N"):
                crisis._RULE_N = variant == "N"
            signal = crisis.detect_crisis(example.text)
            row[variant] = "" if signal is None else signal.level.value
        rows.append(row)
    out.write_text(json.dumps({"thresholds": thresholds, "rows": rows}, ensure_ascii=False))
    print("wrote", out, len(rows))


if __name__ == "__main__":
    main()
