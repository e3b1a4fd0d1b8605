"""Prompt sizes and the cacheable share (issues 11 and 28).

Each recorded run given (a real-model trial: its logs hold the model's replies) is replayed with
``bcc replay``, so its prompts are rendered by the code under test, and measured from the
replay's logs. With ``--baseline REV`` the same runs are replayed by the code of commit REV too
(a ``git worktree``, with this checkout's environment), so one run prints before and after.

Figures per run: model calls; prompt characters (system + user, every request as sent); the
cacheable share (of those characters, the ones within a prefix that an earlier prompt of the
same run already sent: what OpenAI, DeepSeek and Gemini cache by themselves, and Anthropic
caches where the request marks it); prompts with history left out by the budget. Per prompt
kind: count, first, largest and total characters.

Usage: .venv/bin/python benchmarks/prompt_sizes.py [--baseline REV] [RUN_DIR ...]
(no RUN_DIR: the trial kept in benchmarks/fixtures/penguins_trial)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
from collections import defaultdict
from pathlib import Path

from lxml import etree

ROOT = Path(__file__).resolve().parents[1]
TRIAL = ROOT / "benchmarks" / "fixtures" / "penguins_trial"
PYTHON = ROOT / ".venv" / "bin" / "python"


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
    }


def replay(run: Path, out: Path, code: Path) -> Path:
    """``bcc replay`` of ``run`` by the package in ``code`` (a checkout)."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    proc = subprocess.run(
        [str(PYTHON), "-m", "notebook_bcc", "replay", str(run), "--out", str(out), "--quiet"],
        env=env,
        cwd=code,
        capture_output=True,
        text=True,
        timeout=1800,
    )
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
    args = parser.parse_args()
    runs = args.runs or [TRIAL]
    with tempfile.TemporaryDirectory() as tmp:
        codes = {"after": ROOT}
        if args.baseline:
            before = Path(tmp) / "baseline"
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(before),
                 args.baseline],
                check=True,
            )  # fmt: skip
            codes = {"before": before, "after": ROOT}
        totals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
        try:
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
                        f"{m['share']:.2f}, prompts with history left out: {m['trimmed']}"
                    )
                    kinds_table(m["kinds"])  # type: ignore[arg-type]
        finally:
            if args.baseline:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(before)],
                    check=False,
                )
        print("\nall runs")
        for label, (calls, chars, shared) in totals.items():
            print(f"  {label:<6} {calls:>4} calls {chars:>11,} chars, cacheable share "
                  f"{shared / max(1, chars):.2f}")  # fmt: skip
        if "before" in totals:
            b, a = totals["before"][1], totals["after"][1]
            print(f"  after/before characters: {a / b:.2f} ({1 - a / b:.0%} fewer)")


if __name__ == "__main__":
    main()
