import json

import pytest

from notebook_bcc.errors import RunLocked, UsageError
from notebook_bcc.rundir.store import RunStore, write_durable


def test_write_durable_replaces_atomically(tmp_path):
    target = tmp_path / "state.json"
    write_durable(target, '{"a": 1}')
    write_durable(target, '{"a": 2}')
    assert json.loads(target.read_text()) == {"a": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]


def test_create_copies_inputs_read_only_and_locks(tmp_path):
    problem = tmp_path / "p.md"
    problem.write_text("Predict y")
    data = tmp_path / "d.csv"
    data.write_text("x,y\n1,2\n")
    store = RunStore.create(tmp_path / "run", problem, [data])
    root = tmp_path / "run"
    assert (root / "problem.md").read_text() == "Predict y"
    assert (root / "assets" / "d.csv").stat().st_mode & 0o222 == 0
    assert (root / "logs").is_dir() and (root / "outputs").is_dir()
    other = RunStore(root)
    with pytest.raises(RunLocked, match=str(__import__("os").getpid())):
        other.lock()
    store.unlock()
    other.lock()
    other.unlock()


def test_out_must_be_new_or_empty(tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("1")
    with pytest.raises(UsageError):
        RunStore.choose_dir(tmp_path / "full", tmp_path, "s")
    (tmp_path / "empty").mkdir()
    assert RunStore.choose_dir(tmp_path / "empty", tmp_path, "s") == tmp_path / "empty"


def test_events_drop_a_torn_last_line(tmp_path):
    store = RunStore(tmp_path)
    store.append_event({"seq": 1})
    store.append_event({"seq": 2})
    with open(tmp_path / "events.jsonl", "a") as fh:
        fh.write('{"seq": 3, "ev')
    assert [e["seq"] for e in store.events()] == [1, 2]
