"""The performance targets of the structured path load from `lab/docs/bench_targets.toml`."""

import pytest

from lab.docs.bench_targets import load_targets, named


def test_a_bench_target_file_with_a_bad_target_is_one_line_naming_the_file_and_the_target(tmp_path):
    assert named("Algorithm 1 step, structured time").bound == "≤ 3 ms"  # the committed targets load
    path = tmp_path / "targets.toml"
    entry = '[[target]]\nname = "t"\npattern = "b"\nmeasure = "min_ms"\nthreshold = 1.0\nunit = "ms"\n'
    path.write_text(entry + 'comparison = "<"\ndescription = "d"\n')
    with pytest.raises(ValueError, match=r"^targets\.toml: target 't': comparison must be ≤ or ≥, got '<'$"):
        load_targets(path)
    path.write_text(entry + 'comparison = "≤"\n')
    with pytest.raises(ValueError, match=r"^targets\.toml: target 't': .*'description'"):
        load_targets(path)
