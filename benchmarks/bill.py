"""The bill of recorded runs: model calls, prompt tokens and billed tokens (issue 41).

For each recorded run directory (a real-model or relay trial: its logs hold every request as
sent): model calls (requests), agent transitions and how many an earlier reply answered
(compact rounds, summary.json ``rounds``), prompt tokens (the provider's count from each log's
``<usage>``; four characters a token where it gave none), cached tokens (the tokens within a
prefix an earlier request of the run already sent: what OpenAI, DeepSeek and Gemini cache by
themselves, and Anthropic where the request marks it) and billed tokens (uncached ones plus
cached ones at ``--cached-price`` of the full price: 0.1 for Anthropic, DeepSeek and OpenAI's
current models, 0.25 for Gemini). Per run, per question (the problem's and its follow-ups'),
and totals per rounds mode, so a compact and a full run of the same problems compare in one
print.

Usage: .venv/bin/python benchmarks/bill.py [--cached-price P] RUN_DIR [RUN_DIR ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

from lxml import etree

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.prompt_sizes import cacheable, requests


def _prompt_tokens(run: Path, chars: int) -> int:
    parser = etree.XMLParser(huge_tree=True, resolve_entities=False, no_network=True)
    total = 0
    for path in sorted((run / "logs").glob("[0-9]*_*.xml")):
        if not path.name.endswith((".attempts.xml", ".abandoned.xml")):
            usage = etree.parse(str(path), parser).getroot().find("usage")
            total += int(usage.get("prompt_tokens", 0)) if usage is not None else 0
    return total or chars // 4


def measure(run: Path, price: float) -> dict[str, object]:
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    texts = [text for _, text in requests(run)]
    chars = sum(len(t) for t in texts)
    tokens = _prompt_tokens(run, chars)
    cached = round(tokens * cacheable(texts) / chars) if chars else 0
    questions = len(summary.get("answers") or []) + sum(
        len(f.get("answers") or []) for f in summary.get("follow_ups") or []
    )
    rounds = summary.get("rounds") or {}
    return {
        "run": run.name,
        "mode": rounds.get("mode", "full"),
        "calls": len(texts),
        "transitions": rounds.get("agent_transitions"),
        "answered_ahead": rounds.get("answered_without_a_call", 0),
        "questions": questions,
        "prompt_tokens": tokens,
        "cached_tokens": cached,
        "billed_tokens": round(tokens - cached + price * cached),
        "verified": (summary.get("verification") or {}).get("status"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="recorded run directories")
    parser.add_argument("--cached-price", type=float, default=0.1, help="share of full price")
    args = parser.parse_args()
    rows = [measure(run, args.cached_price) for run in args.runs]
    head = "run mode calls transitions answered_ahead questions prompt_tokens billed_tokens"
    print(head.replace(" ", "\t"))
    for r in rows:
        print("\t".join(str(r[k]) for k in head.split()))
    by_mode: dict[str, list[dict[str, object]]] = defaultdict(list)
    for r in rows:
        by_mode[str(r["mode"])].append(r)
    for mode, group in sorted(by_mode.items()):
        n = sum(int(r["questions"]) for r in group) or 1  # type: ignore[call-overload]
        calls = sum(int(r["calls"]) for r in group)  # type: ignore[call-overload]
        billed = sum(int(r["billed_tokens"]) for r in group)  # type: ignore[call-overload]
        prompt = sum(int(r["prompt_tokens"]) for r in group)  # type: ignore[call-overload]
        print(
            f"{mode}: {len(group)} runs, {n} questions: {calls / len(group):.2f} calls a run, "
            f"{calls / n:.2f} calls, {prompt / n:,.0f} prompt tokens and {billed / n:,.0f} "
            f"billed tokens a question (cached at {args.cached_price})"
        )


if __name__ == "__main__":
    main()
