"""Prompts laid out for providers' prompt caches, and cached tokens counted and priced
(issue 28), through the real CLI and litellm against ``tests.fakellm.FakeLLM`` on 127.0.0.1,
which answers in OpenAI's or Anthropic's format and plays the provider's cache. The prompts
and the bill are the point, not the kernel: ``bcc`` runs in this process with scripted kernels
(``tests/inprocess.py``); the requests still go through litellm over HTTP."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.fakellm import FakeLLM
from tests.inprocess import bcc_in_process

pytestmark = pytest.mark.timeout(240)

PROBLEM = "# Widgets\n\nSummarise the zorblat widget measurements and report their mean width.\n"


def _run(fake: FakeLLM, tmp: Path, model: str, api_base: str, columns: int = 2) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "problem.md").write_text(PROBLEM)
    names = ["width", "height", *(f"extra_measure_{i}" for i in range(columns - 2))]
    rows = [",".join(f"{r + c / 10:.1f}" for c in range(columns)) for r in range(5)]
    (tmp / "widgets.csv").write_text("\n".join([",".join(names), *rows]) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(
        OPENAI_API_KEY="sk-test", ANTHROPIC_API_KEY="sk-ant-test", NO_PROXY="127.0.0.1",
        no_proxy="127.0.0.1", LITELLM_LOCAL_MODEL_COST_MAP="True",
    )  # fmt: skip
    env.pop("BCC_MODEL", None)
    run = tmp / "run"
    proc = bcc_in_process(
        "run", str(tmp / "problem.md"), str(tmp / "widgets.csv"), "--model", model,
        "--api-base", api_base, "--out", str(run), "--no-verify", "--quiet", environ=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return run


def _price(model: str) -> dict[str, float]:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    return litellm.model_cost[model]


def _summary(run: Path) -> dict:
    return json.loads((run / "summary.json").read_text())


def test_an_anthropic_request_marks_the_cache_after_the_runs_block_and_pays_less(
    tmp_path: Path,
) -> None:
    with FakeLLM() as fake:
        run = _run(fake, tmp_path, "anthropic/claude-sonnet-4-5", f"http://127.0.0.1:{fake.port}")
    requests, usages = fake.requests, fake.usages
    assert len(requests) == 6 and all(r.path.endswith("/v1/messages") for r in requests)
    blocks = [r.body["system"] for r in requests]
    assert all(len(b) == 2 for b in blocks)
    assert all(part["cache_control"] == {"type": "ephemeral"} for b in blocks for part in b)
    run_block = blocks[0][0]["text"]
    assert all(b[0]["text"] == run_block for b in blocks)  # the same text in every prompt
    assert run_block.startswith("# A notebook-bcc run")
    assert "Summarise the zorblat widget" in run_block and "widgets.csv" in run_block
    assert "## Preview of the data files" in run_block
    assert all(b[1]["text"].startswith("You are the **") for b in blocks)  # the agent's own
    assert all("Summarise the zorblat" not in r.last_user for r in requests)  # said once
    # the server's cache served the run's block from the second call on
    assert usages[0]["cache_read_input_tokens"] == 0
    assert all(u["cache_read_input_tokens"] >= len(run_block) // 4 for u in usages[1:])
    usage = _summary(run)["usage"]
    read = sum(u["cache_read_input_tokens"] for u in usages)
    written = sum(u["cache_creation_input_tokens"] for u in usages)
    uncached = sum(u["input_tokens"] for u in usages)
    out = sum(u["output_tokens"] for u in usages)
    assert usage["cached_tokens"] == read and usage["cache_write_tokens"] == written
    assert usage["prompt_tokens"] == uncached + read + written
    price = _price("claude-sonnet-4-5")
    expected = (
        uncached * price["input_cost_per_token"]
        + read * price["cache_read_input_token_cost"]
        + written * price["cache_creation_input_token_cost"]
        + out * price["output_cost_per_token"]
    )
    assert usage["cost_usd"] == pytest.approx(expected, abs=2e-6)
    full = (uncached + read + written) * price["input_cost_per_token"]
    assert expected < full + out * price["output_cost_per_token"]  # the discount is real
    status = bcc_in_process("status", str(run))
    assert f'"cached_tokens": {read}' in status.stdout
    assert f"({read} of them cached)" in (run / "summary.md").read_text()


def test_an_openai_request_stays_plain_and_its_cached_tokens_are_priced(tmp_path: Path) -> None:
    with FakeLLM() as fake:
        # a wider table: its preview makes the run's block pass OpenAI's 1,024-token minimum
        run = _run(fake, tmp_path, "openai/gpt-4o", fake.url, columns=30)
    assert all(isinstance(m["content"], str) for r in fake.requests for m in r.messages)
    usages = fake.usages
    cached = sum(u["prompt_tokens_details"]["cached_tokens"] for u in usages)
    assert cached > 0
    usage = _summary(run)["usage"]
    assert usage["cached_tokens"] == cached and usage["cache_write_tokens"] == 0
    prompt = sum(u["prompt_tokens"] for u in usages)
    out = sum(u["completion_tokens"] for u in usages)
    price = _price("gpt-4o")
    expected = (
        (prompt - cached) * price["input_cost_per_token"]
        + cached * price["cache_read_input_token_cost"]
        + out * price["output_cost_per_token"]
    )
    assert usage["prompt_tokens"] == prompt
    assert usage["cost_usd"] == pytest.approx(expected, abs=2e-6)
    assert "cached" in (run / "report.html").read_text()
