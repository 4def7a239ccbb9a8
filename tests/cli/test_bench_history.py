"""`python -m lab bench-history`: the report of a written history (a planted regression named with its
commit, exit 1; none, exit 0; a damaged file in one line, exit 2), its figure, and the walk over the
commits that touched `lab/kernels/` of a tiny git repository, with pytest replaced by a fake."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from lab.cli import bench_history as cli
from lab.cli.main import main
from lab.core.io import write_json_atomic
from lab.kernels.bench import history

STEP = "benchmarks/test_bench_structured.py::test_algorithm1_step[numba-structured]"
TWIN = "benchmarks/test_bench_kernels.py::test_routed_forward[numpy]"
COMMITS = [
    {"hash": "1111111", "date": "2025-01-01", "subject": "kernels: first"},
    {"hash": "2222222", "date": "2025-01-02", "subject": "kernels: the planted regression"},
]
MACHINE = {"cpu": "Fake CPU", "cores": 2}


def _written(tmp_path: Path, step: float) -> Path:
    measured = [
        {(STEP, "fraction_of_dgemm"): 0.5, (STEP, "ratio_to_dense"): 0.25, (TWIN, "fraction_of_dgemm"): 0.01},
        {
            (STEP, "fraction_of_dgemm"): step,
            (STEP, "ratio_to_dense"): 0.24,
            (TWIN, "fraction_of_dgemm"): 0.011,
        },
    ]
    data = history.history(COMMITS, measured, MACHINE, "2025-02-01")
    return write_json_atomic(tmp_path / "history.json", data)


def test_a_planted_regression_is_named_with_its_commit_and_exits_1(tmp_path, capsys):
    path = _written(tmp_path, step=0.3)  # a 40 % drop at the second commit
    assert main(["bench-history", "--report-only", str(path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"regression: {STEP} fraction_of_dgemm 0.5 → 0.3 (-40.0 %) at 2222222 "
        "kernels: the planted regression",
        "1 regression beyond 20 % across 2 commits (2 measured), 3 series",
    ]
    assert main(["bench-history", "--report-only", str(path), "--threshold", "0.5"]) == 0


def test_a_history_without_a_regression_exits_0(tmp_path, capsys):
    path = _written(tmp_path, step=0.45)  # -10 %
    assert main(["bench-history", "--report-only", str(path)]) == 0
    assert capsys.readouterr().out.startswith("no regressions beyond 20 % across 2 commits")


def test_a_damaged_history_is_one_line_and_exit_status_2(tmp_path, capsys):
    path = _written(tmp_path, step=0.3)
    data = json.loads(path.read_text())
    del data["commits"][1]["subject"]
    path.write_text(json.dumps(data))
    for mode in ("--report-only", "--figure"):
        if mode == "--figure" and not cli.plots.available():
            continue
        assert main(["bench-history", mode, str(path)]) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and err.endswith(f"{path}: commit 1: field 'subject' is missing")
    assert not path.with_suffix(".png").exists()


@pytest.mark.parametrize(
    "args",
    [["--threshold", "20"], ["--range", "main"], ["--commits", "0"], ["--commits", "2", "--range", "a..b"]],
)
def test_bad_arguments_exit_2(args, capsys):
    assert main(["bench-history", *args]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_the_figure_is_redrawn_beside_the_history_from_it_alone(tmp_path):
    pytest.importorskip("matplotlib")
    path = _written(tmp_path, step=0.3)
    assert main(["bench-history", "--figure", str(path)]) == 0
    assert path.with_suffix(".png").read_bytes().startswith(b"\x89PNG")


def test_the_line_why_is_pytest_s_first_failure():
    output = (
        "..F\nE   AssertionError: wrong\nFAILED benchmarks/b.py::test_x - AssertionError: wrong\n1 failed\n"
    )
    assert (
        cli._why(1, output, None)
        == "pytest exit status 1: FAILED benchmarks/b.py::test_x - AssertionError: wrong"
    )
    assert (
        cli._why(2, "E   ModuleNotFoundError: x\n1 error\n", None)
        == "pytest exit status 2: E   ModuleNotFoundError: x"
    )
    assert cli._why(5, "", "structured") == "no benchmark collected for -k 'structured'"


# ---------------------------------------------------------------- the walk over a tiny repository


def _git(repo: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false"]
    return subprocess.run([*command, *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def _commit(repo: Path, subject: str, files: dict[str, str]) -> None:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", subject)


def fake_benchmarks(seen: list):
    """pytest replaced: a pytest-benchmark file whose fraction of DGEMM is `benchmarks/rate.txt` of the
    worktree, or a failure when it says so."""

    def run(tree: Path, out: Path, env: dict, args) -> str | None:
        cache = Path(env["NUMBA_CACHE_DIR"])
        seen.append((tree, env["PYTHONPATH"], cache, list(cache.iterdir()), args.select))
        rate = (tree / "benchmarks" / "rate.txt").read_text()
        if rate == "fail":
            return cli._why(1, "FAILED benchmarks/b.py::test_step - AssertionError\n", args.select)
        extra = {"fraction_of_dgemm": float(rate), "gflops": 9.0}
        out.write_text(json.dumps({"benchmarks": [{"fullname": STEP, "extra_info": extra}]}))
        return None

    return run


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """Five commits; the second touches no kernel, the fourth's benchmarks fail, the fifth drops 44 %."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _commit(repo, "kernels: a", {"lab/kernels/k.py": "1", "benchmarks/rate.txt": "0.5"})
    _commit(repo, "docs only", {"README": "x", "benchmarks/rate.txt": "0.1"})
    _commit(repo, "kernels: b", {"lab/kernels/k.py": "2", "benchmarks/rate.txt": "0.45"})
    _commit(repo, "kernels: c", {"lab/kernels/k.py": "3", "benchmarks/rate.txt": "fail"})
    _commit(repo, "kernels: d", {"lab/kernels/k.py": "4", "benchmarks/rate.txt": "0.25"})
    monkeypatch.chdir(repo)
    return repo


def test_each_kernel_commit_runs_in_its_own_worktree_and_the_regression_is_named(
    repo, tmp_path, monkeypatch, capsys
):
    seen: list = []
    monkeypatch.setattr(cli, "run_benchmarks", fake_benchmarks(seen))
    out = tmp_path / "out" / "history.json"
    assert main(["bench-history", "--out", str(out), "--select", "structured"]) == 1
    data = history.load_history(out)
    short = _git(repo, "log", "--format=%h %s", "--", "lab/kernels/").splitlines()[::-1]
    assert [f"{c['hash']} {c['subject']}" for c in data["commits"]] == short
    assert [c["subject"] for c in data["commits"]] == ["kernels: a", "kernels: b", "kernels: c", "kernels: d"]
    assert (
        data["commits"][2]["failed"]
        == "pytest exit status 1: FAILED benchmarks/b.py::test_step - AssertionError"
    )
    assert data["series"] == [
        {
            "benchmark": STEP,
            "unit": "fraction_of_dgemm",
            "better": "higher",
            "values": [0.5, 0.45, None, 0.25],
        }
    ]
    assert data["select"] == "structured"
    lines = capsys.readouterr().out.splitlines()
    d = data["commits"][3]["hash"]
    assert f"regression: {STEP} fraction_of_dgemm 0.45 → 0.25 (-44.4 %) at {d} kernels: d" in lines
    assert f"{data['commits'][2]['hash']} not measured: {data['commits'][2]['failed']}" in lines
    trees = [tree for tree, *_ in seen]
    assert all(str(tree) == path for tree, path, *_ in seen)  # PYTHONPATH: the worktree's lab
    assert len({cache for _, _, cache, *_ in seen}) == 4 and all(not found for *_, found, _ in seen)
    assert all(select == "structured" for *_, select in seen)
    assert not any(tree.exists() for tree in trees)
    assert _git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert _git(repo, "status", "--porcelain") == ""


def test_the_last_n_commits_or_a_range(repo, tmp_path, monkeypatch):
    monkeypatch.setattr(cli, "run_benchmarks", fake_benchmarks([]))
    out = tmp_path / "history.json"
    assert main(["bench-history", "--commits", "2", "--out", str(out)]) == 0  # failed, then 0.25
    assert [c["subject"] for c in history.load_history(out)["commits"]] == ["kernels: c", "kernels: d"]
    first = _git(repo, "rev-list", "--max-parents=0", "HEAD").strip()
    assert main(["bench-history", "--range", f"{first}..HEAD~1", "--out", str(out)]) == 0
    assert [c["subject"] for c in history.load_history(out)["commits"]] == ["kernels: b", "kernels: c"]


def test_a_bad_range_is_one_line_and_exit_status_2(repo, tmp_path, capsys):
    assert main(["bench-history", "--range", "nothing..HEAD", "--out", str(tmp_path / "h.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "git log: fatal:" in err
