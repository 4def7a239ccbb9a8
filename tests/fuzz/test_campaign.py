"""The fuzz campaign's pieces: how workers split the tests, the seeds, the counts it reports."""

import argparse

import pytest

from lab.testing import load_profile
from tests.fuzz.campaign import Round, parse, round_seed, summarize
from tests.fuzz.plugin import seed_of_test, shard
from tests.fuzz.plugin import summarize as counts_of


def test_shards_split_the_tests_between_workers():
    names = [f"t{i}" for i in range(7)]
    shares = [shard(names, f"{i}/3") for i in range(3)]
    assert set().union(*shares) == set(names) and sum(map(len, shares)) == 7
    assert {len(s) for s in shares} == {2, 3}
    with pytest.raises(ValueError, match="i/n"):
        shard(names, "3/3")


def test_every_round_of_every_worker_has_its_own_seed_and_each_test_its_own():
    seeds = {round_seed(2026, r, w, 2) for r in range(10) for w in range(2)}
    assert len(seeds) == 20
    assert (
        seed_of_test(1, "a::b")
        == seed_of_test(1, "a::b")
        != seed_of_test(1, "a::c")
        != seed_of_test(2, "a::c")
    )
    assert 0 <= seed_of_test(1, "a::b") < 2**64


def test_counts_come_from_hypothesis_statistics_over_all_phases():
    stats = {
        "reuse-phase": {"test-cases": [{"status": "valid"}], "distinct-failures": 0},
        "generate-phase": {
            "test-cases": [{"status": s} for s in ("valid", "invalid", "overrun", "interesting")],
            "distinct-failures": 1,
        },
        "shrink-phase": {
            "test-cases": [{"status": "interesting"}, {"status": "valid"}],
            "distinct-failures": 1,
        },
        "stopped-because": "settings.max_examples=2",
    }
    row = counts_of("m.py::t", stats)
    assert (row["examples"], row["valid"], row["invalid"], row["interesting"]) == (7, 3, 2, 2)
    assert row["distinct_failures"] == 1


def test_the_summary_counts_runs_examples_and_failures_with_a_replay_command():
    args = argparse.Namespace(started="now", minutes=1.0, workers=2, examples=5, seed=0, pytest_args=[])
    one = Round(0, 0, 0, "l0", "s0", tests=[{"nodeid": "m.py::t[1]", "examples": 5, "seed": 11}])
    two = Round(
        1,
        0,
        1,
        "l1",
        "s1",
        tests=[
            {"nodeid": "m.py::t[2]", "examples": 3, "seed": 12},
            {"nodeid": "m.py::u", "examples": 4, "seed": 13},
            {"nodeid": "m.py::u", "failed": True, "when": "call"},
        ],
    )
    summary = summarize([one, two], args, 61.0)
    assert (summary["test_functions"], summary["test_functions_unparametrized"]) == (3, 2)
    assert (summary["test_runs"], summary["examples"]) == (3, 12)
    [failure] = summary["failures"]
    assert failure["rounds"] == [{"round_seed": 1, "test_seed": 13}]
    assert failure["replay"] == "HYPOTHESIS_PROFILE=replay python -m pytest 'm.py::u'"
    assert "--hypothesis-seed=13" in failure["regenerate"]


def test_the_command_line_needs_a_time_and_passes_the_rest_to_pytest():
    args = parse(["--minutes", "2", "--workers", "2", "-k", "b1_", "tests/checks"])
    assert (args.minutes, args.workers, args.pytest_args) == (2.0, 2, ["-k", "b1_", "tests/checks"])
    with pytest.raises(SystemExit):
        parse(["--minutes", "0"])


def test_the_replay_profile_only_replays():
    from hypothesis import Phase, settings

    load_profile("replay")
    try:
        assert tuple(settings.default.phases) == (Phase.explicit, Phase.reuse)
        assert settings.default.database is not None
    finally:
        load_profile()
