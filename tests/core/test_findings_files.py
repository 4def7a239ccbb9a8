"""Findings as data: the lab's findings files load, name committed records by claim and key, and a damaged
file is refused in one line naming it and the finding."""

import json
import re
from pathlib import Path

import pytest

from lab.core import registry
from lab.core.descriptions import GRADES, LAB, load_findings

FINDING = """paper = "p"

[x-floor]
title = "t"
records = ["X1/attained"]
evidence = [["proven", "why"], ["measured", "how"]]
text = "{{ record('X1', 'attained').measured | num }}"
"""


def test_a_findings_file_loads_in_order_with_its_lists(tmp_path):
    path = tmp_path / "f.findings.toml"
    path.write_text(FINDING + '\n[x-other]\ntitle = "u"\nevidence = [["conditional", "c"]]\ntext = "t"\n')
    first, second = load_findings(path)
    assert (first.name, first.paper, first.records) == ("x-floor", "p", (("X1", "attained"),))
    assert first.evidence == (("proven", "why"), ("measured", "how")) and first.path == str(path)
    assert (second.name, second.records, second.sources, second.choices) == ("x-other", (), (), ())


@pytest.mark.parametrize(
    "text, says",
    [
        (FINDING.replace('paper = "p"\n', ""), 'needs a top-level paper = "<key>"'),
        (FINDING.replace('title = "t"\n', ""), "finding x-floor: fields missing ['title']"),
        (FINDING + 'claims = ["X1"]\n', "finding x-floor: fields unknown ['claims']"),
        (FINDING.replace('"proven"', '"plausible"'), "evidence grade must be one of"),
        (FINDING.replace('["measured", "how"]', '["measured"]'), "must list [grade, what it rests on] pairs"),
        (FINDING.replace('"X1/attained"', '"attained"'), 'must list "<claim>/<key>" names'),
        (FINDING + "sources = [1]\n", "field 'sources' must list strings"),
    ],
)
def test_a_damaged_findings_file_is_one_line_naming_it(refuses_in_one_line, text, says):
    refuses_in_one_line(load_findings, "f.findings.toml", text, says)


def test_the_labs_findings_name_committed_records_and_known_grades():
    verify = Path(__file__).resolve().parents[2] / "results" / "verify.json"
    committed = {(r["claim"], r["key"]) for r in json.loads(verify.read_text())["records"]}
    own = [f for f in registry.declared("finding").values() if registry.is_own(f)]
    assert len(own) >= 15
    papers = registry.declared("paper")
    for finding in own:
        assert set(finding.records) <= committed, finding.name
        assert {grade for grade, _ in finding.evidence} <= set(GRADES) and finding.paper in {*papers, LAB}


def test_a_finding_reading_what_its_file_does_not_list_is_refused_naming_the_file():
    from lab.core.descriptions import Finding
    from lab.docs.findings_data import render_finding
    from lab.docs.results import ResultsError, load_results

    results = load_results(Path(__file__).resolve().parents[2] / "results")
    listed = (("B2", "floor-setting-3"),)
    for text, what in (
        ("{{ record('B2', 'attained').measured }}", "the record B2/attained"),
        ("{{ sweep('tightness') }}", "results/sweeps/tightness.json"),
    ):
        item = Finding("x", "chen2022", "t", (("proven", "p"),), text, listed, path="x.findings.toml")
        with pytest.raises(ResultsError) as refused:
            render_finding("findings.md", item, results)
        assert (
            str(refused.value) == f"findings.md: finding x reads {what}, which x.findings.toml does not list"
        )


def test_every_finding_the_page_shows_is_one_of_the_labs_findings_files():
    template = Path(__file__).resolve().parents[2] / "lab" / "docs" / "templates" / "findings.md.j2"
    shown = re.findall(r'finding\("([\w-]+)"\)', template.read_text())
    own = {name for name, finding in registry.declared("finding").items() if registry.is_own(finding)}
    assert sorted(shown) == sorted(own) and {"tables-1-3", "tables-10-11"} <= own
