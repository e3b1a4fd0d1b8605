"""Prompt sizes and the cacheable share (issues 11 and 28).

Each recorded run given (a real-model trial: its logs hold the model's replies) is replayed with
``bcc replay``, so its prompts are rendered by the code under test, and measured from the
replay's logs. With ``--baseline REV`` the same runs are replayed by the code of commit REV too
(a ``git worktree``, with this checkout's environment), so one run prints before and after.

Figures per run: model calls; prompt characters (system + user, every request as sent); the
problems :func:`what_is_seen` finds (what an agent needs and does not get whole); the
cacheable share (of those characters, the ones within a prefix that an earlier prompt of the
same run already sent: what OpenAI, DeepSeek and Gemini cache by themselves, and Anthropic
caches where the request marks it); the billed equivalent (uncached characters plus the cached
ones at ``--cached-price``, the share of the full price a provider bills a cache read: 0.1 for
Anthropic, DeepSeek and OpenAI's current models, 0.25 for Gemini); prompts with history left
out by the budget. Per prompt kind: count, first, largest and total characters.

Usage: .venv/bin/python benchmarks/prompt_sizes.py [--baseline REV] [RUN_DIR ...]
(no RUN_DIR: the trial kept in benchmarks/fixtures/penguins_trial)
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from lxml import etree

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.checkouts import ROOT, bcc_of, checkout

TRIAL = ROOT / "benchmarks" / "fixtures" / "penguins_trial"


def requests(run: Path) -> list[tuple[str, str]]:
    """(event, system + user) of every request of a run, in log order."""
    parser = etree.XMLParser(huge_tree=True, resolve_entities=False, no_network=True)
    out = []
    for path in sorted((run / "logs").glob("[0-9]*_*.xml")):
        if path.name.endswith((".attempts.xml", ".abandoned.xml")):
            continue
        root = etree.parse(str(path), parser).getroot()
        for request in root.iter("request"):
            text = "\n".join(p.text or "" for p in request.iter("prompt"))
            out.append((root.get("event") or "", text))
    return out


def cacheable(texts: list[str]) -> int:
    """Characters of each prompt within a prefix an earlier prompt of the run already sent."""
    total = 0
    for i, text in enumerate(texts):
        total += max((len(os.path.commonprefix([text, t])) for t in texts[:i]), default=0)
    return total


def _logs(run: Path) -> list[etree._Element]:
    parser = etree.XMLParser(huge_tree=True, resolve_entities=False, no_network=True)
    paths = sorted((run / "logs").glob("[0-9]*_*.xml"))
    keep = [p for p in paths if not p.name.endswith((".attempts.xml", ".abandoned.xml"))]
    return [etree.parse(str(p), parser).getroot() for p in keep]


def _sent(log: etree._Element) -> str:
    request = log.findall("request")[-1]
    return "\n".join(p.text or "" for p in request.iter("prompt"))


def what_is_seen(run: Path) -> list[str]:
    """Where a replay's prompts miss what their agent needs: each behavior's task and every
    criterion whole in the generator's and the behavior reflector's prompts; every stage and
    step goal whole where it is shown (the text after "Goal: " or " — " matches the plan's);
    no "chars omitted" marker outside a cell's output; some of the step's output in every
    stage reflector prompt."""
    problems, task, criteria = [], "", []
    goals: dict[str, str] = {}
    for log in _logs(run):
        event = log.get("event")
        if log.find("request") is not None:  # the prompt, before this reply changes the plan
            problems += _missed(log, task, criteria, goals)
        payload = log.find("payload")
        if payload is None:
            continue
        for el in payload.iter("stage", "step", "revise_step", "revise_stage", "add_step"):
            goal = el.findtext("goal")
            if goal and el.get("id"):
                goals[el.get("id")] = goal.strip()
        behavior = payload.find("behavior")
        if behavior is not None and event == "START_BEHAVIOR":
            task = (behavior.findtext("task") or "").strip()
            criteria = [(c.text or "").strip() for c in behavior.iter("criterion")]
    return problems


def _missed(
    log: etree._Element, task: str, criteria: list[str], goals: dict[str, str]
) -> list[str]:
    event, text = log.get("event"), _sent(log)
    where, problems = f"{log.get('seq')} {event}", []
    if event in ("COMPLETE_ACTION", "COMPLETE_STEP"):
        if task not in text:
            problems.append(f"{where}: the behavior's task is not whole")
        problems += [f"{where}: criterion not whole: {c[:60]}" for c in criteria if c not in text]
    for ident, goal in goals.items():
        if f"`{ident}`" in text and goal[:40] in text and goal not in text:
            problems.append(f"{where}: the goal of {ident} is cut")
    for line in text.splitlines():
        if "chars omitted]" in line and not line.startswith("... ["):
            problems.append(f"{where}: text cut outside a cell's output")
    if event == "COMPLETE_STAGE" and "\ncell 1:" not in text:
        problems.append(f"{where}: no output of the step")
    return problems


def measure(run: Path) -> dict[str, object]:
    sent = requests(run)
    texts = [t for _, t in sent]
    chars = sum(len(t) for t in texts)
    kinds: dict[str, list[int]] = defaultdict(list)
    for event, text in sent:
        kinds[event].append(len(text))
    marker = "left out to keep this prompt within its budget"
    return {
        "calls": len(texts),
        "chars": chars,
        "share": cacheable(texts) / chars if chars else 0.0,
        "trimmed": sum(marker in t for t in texts),
        "kinds": dict(kinds),
        "problems": what_is_seen(run),
    }


def replay(run: Path, out: Path, code: Path) -> Path:
    """``bcc replay`` of ``run`` by the package in ``code`` (a checkout)."""
    proc = bcc_of(code, ["replay", str(run), "--out", str(out), "--quiet"])
    if proc.returncode != 0:
        raise SystemExit(f"replay of {run} failed ({proc.returncode}): {proc.stderr[-1500:]}")
    return out


def kinds_table(kinds: dict[str, list[int]]) -> None:
    print(f"    {'prompt':<16} {'count':>5} {'first':>8} {'largest':>8} {'total':>10}")
    for event, sizes in kinds.items():
        print(f"    {event:<16} {len(sizes):>5} {sizes[0]:>8,} {max(sizes):>8,} {sum(sizes):>10,}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="*", type=Path, help="recorded run directories")
    parser.add_argument("--baseline", help="a commit whose prompts to compare against")
    parser.add_argument(
        "--cached-price", type=float, default=0.1, help="a cached character's share of the price"
    )
    args = parser.parse_args()

    def billed(chars: float, shared: float) -> float:
        """Characters at the full price that cost what these prompts cost."""
        return chars - shared + args.cached_price * shared

    runs = args.runs or [TRIAL]
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory())
        codes = {"after": ROOT}
        if args.baseline:
            codes = {"before": stack.enter_context(checkout(args.baseline, Path(tmp))), **codes}
        totals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
        for n, run in enumerate(runs, 1):
            print(f"\n{run} (recorded: {len(requests(run))} requests)")
            for label, code in codes.items():
                m = measure(replay(run, Path(tmp) / f"{label}-{n}", code))
                t = totals[label]
                t[0] += m["calls"]  # type: ignore[operator]
                t[1] += m["chars"]  # type: ignore[operator]
                t[2] += round(m["share"] * m["chars"])  # type: ignore[operator]
                print(
                    f"  {label:<6} {m['calls']:>3} calls {m['chars']:>10,} chars "
                    f"({m['chars'] // max(1, m['calls']):,} a call), cacheable share "  # type: ignore[operator]
                    f"{m['share']:.2f}, billed as "
                    f"{billed(m['chars'], m['share'] * m['chars']):,.0f}, "  # type: ignore[operator]
                    f"prompts with history left out: {m['trimmed']}"
                )
                problems = m["problems"]
                print(f"    what the agents need, whole: {len(problems)} problems")  # type: ignore[arg-type]
                for problem in problems[:10]:  # type: ignore[index]
                    print(f"      {problem}")
                kinds_table(m["kinds"])  # type: ignore[arg-type]
        print("\nall runs")
        for label, (calls, chars, shared) in totals.items():
            print(f"  {label:<6} {calls:>4} calls {chars:>11,} chars, cacheable share "
                  f"{shared / max(1, chars):.2f}, billed as {billed(chars, shared):,.0f} "
                  f"(cached at {args.cached_price})")  # fmt: skip
        if "before" in totals:
            (_, b, bs), (_, a, as_) = totals["before"], totals["after"]
            print(f"  after/before characters: {a / b:.2f} ({1 - a / b:.0%} fewer)")
            ratio = billed(a, as_) / billed(b, bs)
            print(f"  after/before billed: {ratio:.2f} ({1 - ratio:.0%} less)")


if __name__ == "__main__":
    main()
