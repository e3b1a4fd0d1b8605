"""Which branch a fork keeps (``Fork.join``): the best score among those that can be kept,
``better`` deciding the direction, a tie going to the first."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from notebook_bcc.contract.payloads import AlternativesPayload
from notebook_bcc.workflow.fork import Fork


def _fork(better: str, *branches: tuple[float | None, str]) -> tuple[Fork, list[SimpleNamespace]]:
    fork = Fork.__new__(Fork)  # join reads only the payload and the branches
    fork.payload = AlternativesPayload("s", (), "score", better)
    fork.branches = [SimpleNamespace(score=s, dropped=d, error=None) for s, d in branches]
    return fork, fork.branches  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("better", "scores", "kept"),
    [
        ("higher", [(0.7, ""), (0.9, ""), (0.8, "")], 1),
        ("lower", [(0.7, ""), (0.9, ""), (0.8, "")], 0),
        ("higher", [(0.9, ""), (0.9, "")], 0),  # a tie: the first
        ("lower", [(0.5, ""), (0.5, "")], 0),
        ("higher", [(0.99, "did not complete"), (0.1, "")], 1),  # a dropped one never wins
        ("higher", [(None, "no number"), (-3.0, "")], 1),
    ],
)
def test_the_best_branch_that_can_be_kept_is_kept(better, scores, kept) -> None:
    fork, branches = _fork(better, *scores)
    assert fork.join() is branches[kept]


def test_no_branch_to_keep() -> None:
    fork, branches = _fork("higher", (None, "no number"), (0.5, "did not complete"))
    assert fork.join() is None
    branches[1].dropped, branches[1].error = "", RuntimeError("kernel died")
    assert fork.join() is None
