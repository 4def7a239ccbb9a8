"""The guides: the example plugin quoted, signatures as written, a missing value named, the test profiles."""

import tomllib
from pathlib import Path

import pytest
from hypothesis import settings

from lab.docs.guides import EXAMPLE, adding_page, entry_point_lines
from lab.docs.results import ResultsError, load_results
from lab.docs.signatures import signature
from lab.docs.templating import render
from lab.testing import PROFILES, load_profile

RESULTS = Path(__file__).resolve().parents[2] / "results"


def test_the_guide_quotes_the_example_plugins_entry_point_and_check():
    pyproject = (EXAMPLE / "pyproject.toml").read_text()
    lines = entry_point_lines(pyproject)
    assert tomllib.loads(lines) == {
        "project": {"entry-points": {"moe_lab.plugins": {"switch_aux_loss": "switch_aux_loss"}}}
    }
    page = adding_page(load_results(RESULTS))
    assert "   " + lines.splitlines()[1] in page
    assert '   @register(CLAIM, name="switch_aux_loss.balanced_dispatch")' in page


def test_the_api_section_renders_signatures_as_written():
    def example(a: "int", *, b: "float | None" = None, **fields) -> "str":
        """Doc."""

    assert signature("example", example) == "example(a: int, *, b: float | None = None, **fields) -> str"
    page = adding_page(load_results(RESULTS))
    for expected in (
        "upper_bound_record(*, claim: str,",
        "clopper_pearson(successes: int, trials: int, level: float = 0.99) -> tuple[float, float]",
        "hypothesis_maximum(score: Callable[[object], dict[str, float]], strategy,",
        "gate_vectors(M=None, scale: float = 1.0,",
        "load_profile(name: str | None = None) -> None",
    ):
        assert expected in page


def test_a_value_the_template_names_and_the_page_lacks_stops_the_render_naming_the_page():
    with pytest.raises(ResultsError, match=r"^index\.md: index\.md\.j2: 'papers' is undefined$"):
        render("index.md.j2", "index.md", load_results(RESULTS))


def test_the_hypothesis_profiles_are_importable_and_named():
    load_profile("dev")
    try:
        assert settings.default.max_examples == 50
    finally:
        load_profile()
    assert settings.get_profile("ci").max_examples == 25 and PROFILES == ("ci", "dev", "fuzz", "replay")
    with pytest.raises(ValueError, match="one of"):
        load_profile("huge")
