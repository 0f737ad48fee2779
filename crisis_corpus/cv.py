"""Cross-validate the detector on crisis_corpus/dev + seed, scored through detect_crisis.

    PYTHONPATH=<code> python crisis_corpus/cv.py OUT.json [variant ...] [--models DIR] [--reuse]

The trainer's 4 folds (crisis_train.folds and fold_model, here so that the fold models can be
kept) and its thresholds (crisis_train.thresholds_from); each held-out message is then read by
``detect_crisis`` with its fold's model and the cross-validated thresholds. A variant names,
joined by ``+``, the module flags of bot.engine.crisis to set (``base`` sets none, so every rule
is off: the shipped detector is ``N+D+S+L+I``; ``N`` sets ``_RULE_N``, ``N+P`` sets ``_RULE_N``
and ``_RULE_P``; every other ``_RULE_*`` flag is cleared), so rule variants share one training.
``--models DIR`` keeps the fold models and thresholds there; with ``--reuse`` they are read back
instead of trained, for rule variants that do not change the features. Only dev/ and seed/ are
read: never test/, heldout/ or unseen/.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

import bot.engine.crisis as crisis
from bot.engine.crisis_model import Model, arrays_from_model, model_from_arrays
from bot.engine.crisis_train import (
    ORDINARY,
    fold_model,
    folds,
    read_held,
    thresholds_from,
    training_examples,
)

CORPUS = Path(__file__).parent


def _flags(variant: str) -> dict[str, bool]:
    names = [n for n in dir(crisis) if n.startswith("_RULE_")]
    wanted = set() if variant == "base" else {f"_RULE_{v}" for v in variant.split("+")}
    unknown = wanted - set(names)
    if unknown:
        raise SystemExit(f"unknown flags {sorted(unknown)}")
    return {n: n in wanted for n in names}


def main() -> None:
    args = sys.argv[1:]
    reuse = "--reuse" in args
    args = [a for a in args if a != "--reuse"]
    models_dir: Path | None = None
    if "--models" in args:
        k = args.index("--models")
        models_dir = Path(args[k + 1])
        del args[k:k + 2]
    out = Path(args[0])
    variants = args[1:] or ["base"]
    for variant in variants:
        _flags(variant)
    examples = training_examples(CORPUS)
    sentences = [crisis.message_features(e.text)[0] for e in examples]
    risk = np.zeros(len(examples))
    urgent_risk = np.zeros(len(examples))
    fold_of = np.zeros(len(examples), dtype=int)
    models = []
    for fold, held in enumerate(folds(len(examples))):
        if reuse and models_dir is not None:
            with np.load(models_dir / f"fold{fold}.npz", allow_pickle=False) as stored:
                model = model_from_arrays({name: stored[name] for name in stored.files})
        else:
            model = fold_model(examples, sentences, held)
            if models_dir is not None:
                # Read back as stored (float16), so a --reuse run scores exactly the same.
                arrays = arrays_from_model(model)
                models_dir.mkdir(parents=True, exist_ok=True)
                np.savez_compressed(models_dir / f"fold{fold}.npz", **arrays)
                model = model_from_arrays(arrays)
        models.append(model)
        fold_of[held] = fold
        read_held(model, sentences, held, risk, urgent_risk)
        print(f"fold {fold} ready", flush=True)
    thresholds = thresholds_from(examples, risk, urgent_risk)
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
            for name, value in _flags(variant).items():
                setattr(crisis, name, value)
            signal = crisis.detect_crisis(example.text)
            row[variant] = "" if signal is None else signal.level.value
            if signal is not None:
                row[f"{variant}:fired"] = signal.fired[0]
        rows.append(row)
    out.write_text(json.dumps({"thresholds": thresholds, "rows": rows}, ensure_ascii=False))
    print("wrote", out, len(rows))


if __name__ == "__main__":
    main()
