"""The test files' order (tests/durations.py): longest first, each file whole; a damaged durations file
named in a warning and no order; a stored run keeps the seconds of the files it did not run."""

import json
from types import SimpleNamespace

import pytest

from tests import durations


def _items(*nodeids):
    return [SimpleNamespace(nodeid=n) for n in nodeids]


def test_files_go_longest_first_each_whole_and_in_its_own_order_unknown_files_last():
    items = _items("a.py::x", "a.py::y", "new.py::z", "b.py::u", "b.py::v", "c.py::w")
    durations.longest_first(items, {"a.py": 1.0, "b.py": 9.0, "c.py": 3.0})
    assert [i.nodeid for i in items] == ["b.py::u", "b.py::v", "c.py::w", "a.py::x", "a.py::y", "new.py::z"]


@pytest.mark.parametrize("text", ["{damaged", "[1, 2]", '{"a.py": "long"}'])
def test_a_damaged_durations_file_is_named_and_gives_no_order(tmp_path, text):
    path = tmp_path / "durations.json"
    path.write_text(text)
    with pytest.warns(UserWarning, match=f"{path} is damaged"):
        assert durations.load(path) == {}


def test_no_durations_file_gives_no_order_and_no_warning(tmp_path, recwarn):
    assert durations.load(tmp_path / "durations.json") == {} and not recwarn


def test_storing_a_run_keeps_the_seconds_of_the_files_it_did_not_run(tmp_path):
    path = tmp_path / "durations.json"
    path.write_text(json.dumps({"a.py": 5.0, "b.py": 2.0}))
    durations.store(path, {"b.py": 3.04, "c.py": 0.26})
    assert json.loads(path.read_text()) == {"a.py": 5.0, "b.py": 3.0, "c.py": 0.3}


def test_the_committed_file_names_files_that_exist():
    seconds = durations.load(durations.DURATIONS)
    root = durations.DURATIONS.parents[1]
    assert seconds and all((root / name).is_file() for name in seconds)
