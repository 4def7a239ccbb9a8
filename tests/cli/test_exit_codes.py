"""Exit codes and one-line messages: 2 bad input (checked before any compute), 3 a bug, 130 Ctrl-C."""

import pytest

from lab.cli.main import EXIT_BAD_INPUT, EXIT_BUG, EXIT_INTERRUPTED, main
from lab.core import registry
from lab.core.records import Record


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    return err


def _check_that(raises):
    def check(seed, tier):
        raise raises

    return registry.Check("test.raises", ("Z7",), check)


@pytest.mark.parametrize(
    "argv",
    [
        ["verify", "--only", "A1", "--json", "/proc/moe-lab/x.json"],
        ["verify", "--only", "A1", "--markdown", "{tmp}"],
        ["replicate", "table1", "--out", "/proc/moe-lab"],
        ["replicate", "table1", "--out", "{tmp}/file"],
        ["replicate", "table1", "--json", "/proc/moe-lab/t.json"],
        ["sweep", "run", "{tmp}"],
        ["sweep", "report", "sweeps/smoke.toml", "--out", "{tmp}/file"],
    ],
)
def test_bad_output_paths_exit_2_before_any_compute(argv, tmp_path, capsys, registered):
    (tmp_path / "file").write_text("")
    ran = []
    registered(registry.Check("test.spy", ("A1",), lambda seed, tier: ran.append(1) or []))
    assert main([a.replace("{tmp}", str(tmp_path)) for a in argv]) == EXIT_BAD_INPUT
    assert _one_line(capsys).startswith("python -m lab: error:")
    assert not ran


def _lab_bug(*args):
    raise ValueError("not enough values to unpack\nsecond line")


def test_a_bug_of_the_lab_is_not_reported_as_bad_input(capsys, registered, monkeypatch):
    """A check's own exception is its claim's `error` (tests/cli/test_plugins.py); the lab's is exit 3."""
    monkeypatch.delenv("MOE_LAB_DEBUG", raising=False)
    monkeypatch.setattr("lab.cli.verify.markdown_report", _lab_bug)
    registered(_check_that(ZeroDivisionError("boom")))
    assert main(["verify", "--only", "Z7", "--quiet"]) == EXIT_BUG
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "internal error" in err and "ValueError: not enough values to unpack" in err
    assert "MOE_LAB_DEBUG=1" in err


def test_debug_shows_the_traceback(registered, monkeypatch):
    monkeypatch.setenv("MOE_LAB_DEBUG", "1")
    monkeypatch.setattr("lab.cli.verify.markdown_report", _lab_bug)
    registered(_check_that(ZeroDivisionError("boom")))
    with pytest.raises(ValueError, match="not enough values"):
        main(["verify", "--only", "Z7", "--quiet"])


@pytest.mark.parametrize("raised", [KeyboardInterrupt(), SystemError("result with an exception set")])
def test_ctrl_c_prints_one_line_and_exits_130(raised, capsys, registered):
    if isinstance(raised, SystemError):  # how Numba re-raises Ctrl-C while boxing a kernel's returned tuple
        raised.__context__ = KeyboardInterrupt()
    registered(_check_that(raised))
    assert main(["verify", "--only", "Z7", "--quiet"]) == EXIT_INTERRUPTED
    assert "interrupted" in _one_line(capsys)


def test_known_records_still_exit_0(capsys, registered):
    def fine(seed, tier):
        return [
            Record(
                claim="Z8",
                key=kind,
                statement="s",
                kind=kind,
                params={},
                measured=m,
                bound=1,
                verdict=verdict,
                rule="upper",
            )
            for kind, m, verdict in (("premise", 0, "holds"), ("negative-control", 2, "violated"))
        ]

    registered(registry.Check("test.fine", ("Z8",), fine))
    assert main(["verify", "--only", "Z8", "--quiet"]) == 0
