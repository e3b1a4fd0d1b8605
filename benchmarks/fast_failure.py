"""A bad key fails fast: the whole `bcc run` process, from its start to its exit, when the
provider answers the first call with 401 (the loopback server plays the provider).

Prints the whole-process wall time of five runs (min, median, max; target: under 5 s) and how
much of it came after the 401 reached bcc (from the key check, made while the kernel boots).
Usage: .venv/bin/python benchmarks/fast_failure.py
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakellm import FakeLLM, Reply  # noqa: E402
from tests.integration.test_llm import llm_run  # noqa: E402


def main() -> None:
    whole, after = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(5):
            with FakeLLM() as fake:
                fake.push(Reply(401))
                done = llm_run(fake, Path(tmp) / f"r{i}")
                first = [*fake.key_checks, *done.requests][0]  # the key check answers first
            if done.proc.returncode != 4:
                raise SystemExit(f"expected exit 4, got {done.proc.returncode}: {done.proc.stderr}")
            whole.append(done.seconds)
            after.append(done.started + done.seconds - first.at)
    print(
        f"401 -> exit 4, whole process: min {min(whole):.2f} s, median "
        f"{statistics.median(whole):.2f} s, max {max(whole):.2f} s (target < 5 s)"
    )
    print(f"of which after the 401: median {statistics.median(after):.2f} s")


if __name__ == "__main__":
    main()
