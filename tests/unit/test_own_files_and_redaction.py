"""The two primitives under bcc's own files: writes that never follow a link, and redaction."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from notebook_bcc.own_files import open_own, read_own, write_replacing
from notebook_bcc.redaction import StreamRedactor, redact, redact_bytes, redact_tree

KEY = "sk-0123456789abcdef"


@pytest.fixture
def secret(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_ORGANIZATION", "org")  # too short to be taken for a secret
    monkeypatch.setenv("OPENAI_API_BASE", "http://127.0.0.1:9")  # a setting, not a secret
    return KEY


def test_a_secret_is_redacted_in_text_bytes_and_trees(secret: str) -> None:
    assert redact(f"key={secret} org") == "key=[redacted] org"
    assert redact("http://127.0.0.1:9") == "http://127.0.0.1:9"
    assert redact_bytes(f"<a>{secret}</a>".encode()) == b"<a>[redacted]</a>"
    tree = {"text": [f"x {secret}"], "data": {"text/plain": secret}, "n": 1}
    assert redact_tree(tree) == {
        "text": ["x [redacted]"],
        "data": {"text/plain": "[redacted]"},
        "n": 1,
    }


@pytest.mark.parametrize("cut", [1, 5, len(KEY) - 1])
def test_a_secret_split_between_pieces_is_still_found(secret: str, cut: int) -> None:
    stream = StreamRedactor()
    pieces = ["before ", secret[:cut], secret[cut:], " after"]
    assert "".join(stream.feed(p) for p in pieces) + stream.flush() == "before [redacted] after"


def test_a_write_replaces_a_link_and_never_writes_through_it(tmp_path: Path) -> None:
    host = tmp_path / "host.txt"
    host.write_text("host")
    run = tmp_path / "run"
    run.mkdir()
    (run / "state.json").symlink_to(host)
    (run / ".state.json.tmp").symlink_to(host)
    write_replacing(run / "state.json", b"ours", run)
    assert host.read_text() == "host"
    assert not (run / "state.json").is_symlink() and (run / "state.json").read_text() == "ours"
    (run / "events.jsonl").symlink_to(host)
    with pytest.raises(OSError):  # nor is one read through
        read_own(run / "events.jsonl", run)


def test_an_appended_file_that_is_a_link_or_a_hard_link_is_replaced(tmp_path: Path) -> None:
    host = tmp_path / "host.txt"
    host.write_text("host")
    run = tmp_path / "run"
    run.mkdir()
    (run / "events.jsonl").symlink_to(host)
    os.link(host, run / "run.lock")
    for name in ("events.jsonl", "run.lock"):
        fd, replaced = open_own(run / name, os.O_WRONLY | os.O_APPEND, run)
        os.write(fd, b"ours")
        os.close(fd)
        assert replaced and (run / name).read_text() == "ours"
    assert host.read_text() == "host"


def test_a_directory_replaced_by_a_link_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    run = tmp_path / "run"
    run.mkdir()
    (run / "logs").symlink_to(outside)
    with pytest.raises(OSError):
        write_replacing(run / "logs" / "0001_X.xml", b"x", run)
    assert list(outside.iterdir()) == []
