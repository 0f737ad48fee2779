"""The crisis detector on its labelled corpus: recall, false alarms, levels and latency.

`python -m bench bench.crisis` reports the parts of `crisis_corpus/` never trained or tuned on
(test, held-out and unseen) and, for comparison, the development part the model was trained
on. The corpus was written by native-level writers who had not seen the detector (see
crisis_corpus/README.md).

Targets (issue 21): recall >= 90 % on suicide and self-harm and >= 85 % over all risk
categories in every language; >= 90 % of explicit intent, plans and means returned as urgent;
urgent false alarms <= 3 % and any flag <= 10 % on hard negatives; median < 1 ms a message,
< 20 ms for a 4,096-character message. The baseline of the same run is the phrase list alone
(the detector as it was before the model).
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

from bench.common import machine, table
from bot.engine.crisis import (
    CrisisCategory,
    CrisisLevel,
    detect_crisis,
    phrase_match,
)
from bot.engine.crisis_train import EVERYDAY, Example, read_corpus

CORPUS = Path(__file__).parents[1] / "crisis_corpus"
SUICIDE_AND_SELF_HARM = frozenset({CrisisCategory.EXPLICIT_IDEATION.value,
                                   CrisisCategory.INDIRECT_IDEATION.value,
                                   CrisisCategory.PLAN_MEANS.value,
                                   CrisisCategory.SELF_HARM.value})
MUST_BE_URGENT = frozenset({CrisisCategory.EXPLICIT_IDEATION.value,
                            CrisisCategory.PLAN_MEANS.value})
RISK = frozenset(c.value for c in CrisisCategory)
LONG_MESSAGE = 4096

Verdict = str  # "urgent", "check" or "" (not flagged)

#: The parts measured, never trained or tuned on, each with its title.
MEASURED = (
    ("test", "Test part (waves A and R, never tuned on)"),
    ("heldout", "Held-out part (wave B, other writers, never tuned on)"),
    ("unseen", "Unseen part (waves AE, AF, AI and AJ, other writers, written after the "
               "model, measuring only)"),
)


def model_verdict(text: str) -> Verdict:
    signal = detect_crisis(text)
    return "" if signal is None else signal.level.value


def phrase_list_verdict(text: str) -> Verdict:
    """The phrase lists alone, as the detector was before the model: a match is urgent."""
    return "urgent" if phrase_match(text) else ""


def _pct(hits: int, total: int) -> str:
    return f"{100 * hits / total:.0f} % ({hits}/{total})" if total else "-"


def evaluate(examples: Sequence[Example], verdict: Callable[[str], Verdict]) -> dict[str, object]:
    """Counts by language and category of flagged and urgent verdicts."""
    flagged: dict[tuple[str, str], int] = defaultdict(int)
    urgent: dict[tuple[str, str], int] = defaultdict(int)
    total: dict[tuple[str, str], int] = defaultdict(int)
    for example in examples:
        v = verdict(example.text)
        key = (example.language, example.category)
        total[key] += 1
        flagged[key] += v != ""
        urgent[key] += v == CrisisLevel.URGENT.value
    return {"flagged": flagged, "urgent": urgent, "total": total}


def _sum(counts: dict[tuple[str, str], int], language: str | None,
         categories: frozenset[str] | None) -> int:
    return sum(n for (lang, cat), n in counts.items()
               if (language is None or lang == language)
               and (cat in RISK if categories is None else cat in categories))


def _negative(counts: dict[tuple[str, str], int], language: str | None,
              everyday: bool = False) -> int:
    """Hard negatives, or (``everyday``) clients' ordinary replies to the bot's questions."""
    return sum(n for (lang, cat), n in counts.items()
               if (language is None or lang == language) and cat not in RISK
               and (cat in EVERYDAY) == everyday)


def summary_rows(result: dict[str, object], languages: Sequence[str]) -> list[list[str]]:
    flagged, urgent, total = (result[k] for k in ("flagged", "urgent", "total"))
    assert isinstance(flagged, dict) and isinstance(urgent, dict) and isinstance(total, dict)
    rows = []
    for lang in [*languages, None]:
        rows.append([
            lang or "all",
            _pct(_sum(flagged, lang, None), _sum(total, lang, None)),
            _pct(_sum(flagged, lang, SUICIDE_AND_SELF_HARM), _sum(total, lang,
                                                                  SUICIDE_AND_SELF_HARM)),
            _pct(_sum(urgent, lang, MUST_BE_URGENT), _sum(total, lang, MUST_BE_URGENT)),
            _pct(_negative(urgent, lang), _negative(total, lang)),
            _pct(_negative(flagged, lang), _negative(total, lang)),
            _pct(_negative(flagged, lang, everyday=True), _negative(total, lang, everyday=True)),
        ])
    return rows


def category_rows(result: dict[str, object]) -> list[list[str]]:
    flagged, urgent, total = (result[k] for k in ("flagged", "urgent", "total"))
    assert isinstance(flagged, dict) and isinstance(urgent, dict) and isinstance(total, dict)
    categories = sorted({cat for _, cat in total}, key=lambda c: (c not in RISK, c))
    rows = []
    for cat in categories:
        n = sum(v for (_, c), v in total.items() if c == cat)
        f = sum(v for (_, c), v in flagged.items() if c == cat)
        u = sum(v for (_, c), v in urgent.items() if c == cat)
        kind = "risk" if cat in RISK else "everyday" if cat in EVERYDAY else "hard negative"
        rows.append([cat, kind, str(n), _pct(f, n), _pct(u, n)])
    return rows


def language_category_rows(result: dict[str, object]) -> tuple[list[str], list[list[str]]]:
    """Recall (any flag) per risk category and language; false alarms per negative one."""
    flagged, total = result["flagged"], result["total"]
    assert isinstance(flagged, dict) and isinstance(total, dict)
    languages = sorted({lang for lang, _ in total})
    categories = sorted({cat for _, cat in total}, key=lambda c: (c not in RISK, c))
    rows = [[cat, *(f"{100 * flagged[(lang, cat)] / total[(lang, cat)]:.0f} %"
                    if total.get((lang, cat)) else "-" for lang in languages)]
            for cat in categories]
    return ["category (risk: recall; negative: flagged)", *languages], rows


def latency(examples: Sequence[Example]) -> tuple[float, float, float]:
    """(median ms a corpus message, ms for a 4,096-character message, ms for the same by the
    phrase list alone)."""
    detect_crisis("warm up")
    times = []
    for example in examples:
        started = time.perf_counter()
        detect_crisis(example.text)
        times.append(time.perf_counter() - started)
    text = " ".join(e.text for e in examples)[:LONG_MESSAGE]
    runs = []
    for _ in range(20):
        started = time.perf_counter()
        detect_crisis(text)
        runs.append(time.perf_counter() - started)
    base = []
    for _ in range(20):
        started = time.perf_counter()
        phrase_list_verdict(text)
        base.append(time.perf_counter() - started)
    return (1000 * statistics.median(times), 1000 * statistics.median(runs),
            1000 * statistics.median(base))


def report() -> str:
    parts = {name: read_corpus(CORPUS / name) for name in (*(n for n, _ in MEASURED), "dev")}
    header = ["language", "recall, all risk", "recall, suicide and self-harm",
              "explicit and plans as urgent", "urgent false alarms", "any flag on negatives",
              "ordinary replies flagged"]
    out = [f"# Crisis detection ({machine()})\n",
           "Messages: " + ", ".join(f"{name} {len(examples)}"
                                    for name, examples in parts.items()) + ".\n"]
    for name, title in MEASURED:
        examples = parts[name]
        if not examples:
            continue
        languages = sorted({e.language for e in examples})
        result = evaluate(examples, model_verdict)
        out.append(table(f"{title}: detector", header, summary_rows(result, languages)))
        out.append(table(f"{title}: the phrase list alone (baseline)", header,
                         summary_rows(evaluate(examples, phrase_list_verdict), languages)))
        out.append(table(f"{title} by category: detector",
                         ["category", "kind", "messages", "flagged", "urgent"],
                         category_rows(result)))
        out.append(table(f"{title}, language by category: detector",
                         *language_category_rows(result)))
    dev = parts["dev"]
    out.append(table("Development part (trained on): detector", header,
                     summary_rows(evaluate(dev, model_verdict),
                                  sorted({e.language for e in dev}))))
    median, long_ms, long_base = latency(parts["test"] + parts["heldout"])
    out.append(table("Latency", ["what", "detector", "phrase list alone", "target"], [
        ["median, a corpus message", f"{median:.3f} ms", "-", "< 1 ms"],
        [f"a {LONG_MESSAGE:,}-character message", f"{long_ms:.2f} ms", f"{long_base:.2f} ms",
         "< 20 ms"],
    ]))
    return "\n".join(out)


if __name__ == "__main__":
    print(report())
