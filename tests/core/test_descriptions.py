"""Claims and papers as data: the lab's files load, every claim the lab checks is described, and a damaged
file is refused in one line naming it and the claim."""

import pytest

from lab.core import registry
from lab.core.descriptions import DescriptionError, load_claims, load_paper, load_proof

CLAIM = 'paper = "p"\n\n[X1]\ntitle = "t"\nreference = "r"\nstatement = "s"\npremise = "p"\ncontrols = "c"\n'


def test_every_claim_the_lab_checks_is_described_on_a_paper_the_lab_describes():
    papers, claims = registry.declared("paper"), registry.declared("claim")
    own = {c for check in registry.checks() if registry.is_own(check) for c in check.claims}
    assert own <= set(claims)
    assert {claims[c].paper for c in own} <= set(papers)


def test_a_claims_file_loads_in_order_with_its_optional_fields(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(
        CLAIM + 'also = "a"\nrecords = ["k1", "k2"]\n\n' + CLAIM.split("\n\n", 1)[1].replace("X1", "X2")
    )
    first, second = load_claims(path)
    assert (first.name, first.paper, first.also, first.records) == ("X1", "p", "a", ("k1", "k2"))
    assert (second.name, second.also, second.records, second.claims) == ("X2", "", (), ("X2",))


@pytest.mark.parametrize(
    "text, says",
    [
        (CLAIM.replace('paper = "p"\n', ""), 'needs a top-level paper = "<key>"'),
        (CLAIM.replace('premise = "p"\n', ""), "claim X1: fields missing ['premise']"),
        (CLAIM + 'proof = "x"\n', "claim X1: fields unknown ['proof']"),
        (CLAIM + "records = [1]\n", "claim X1: field 'records' must list record keys"),
        (CLAIM.replace('title = "t"', "title = 3"), "claim X1: field 'title' must be str"),
        ("[X1\n", "not valid TOML"),
    ],
)
def test_a_damaged_claims_file_is_one_line_naming_it(refuses_in_one_line, text, says):
    refuses_in_one_line(load_claims, "c.toml", text, says)


def test_a_paper_without_its_scope_is_refused(tmp_path):
    path = tmp_path / "paper.toml"
    path.write_text('key = "p"\nshort = "s"\ncite = "c"\ntitle = "t"\n')
    with pytest.raises(DescriptionError, match="the paper: fields missing \\['scope'\\]"):
        load_paper(path)


PROOF = 'stages = ["s"]\nsections = ["A"]\n[categories]\nexplicit = "e"\n\n'
PROOF += '[[step]]\nlemma = "A.1"\nkind = "Lemma"\nsection = "A"\nstatement = "t"\nquantity = "q"\n'
PROOF += 'stage = "s"\ncategory = "explicit"\nwhy = "w"\n'


def test_a_paper_names_its_proof_steps_file_beside_it(tmp_path):
    (tmp_path / "steps.toml").write_text(PROOF + 'checked_by = "X1"\n')
    (tmp_path / "paper.toml").write_text(
        'key = "p"\nshort = "s"\ncite = "c"\ntitle = "t"\nscope = "x"\nproof = "steps.toml"\n'
    )
    proof = load_paper(tmp_path / "paper.toml").proof
    assert (proof.stages, proof.sections, proof.categories) == (("s",), ("A",), (("explicit", "e"),))
    assert [(s.lemma, s.category, s.checked_by) for s in proof.steps] == [("A.1", "explicit", "X1")]


@pytest.mark.parametrize(
    "text, says",
    [
        (PROOF.replace('category = "explicit"', 'category = "rate"'), "step A.1: category must be one of"),
        (PROOF.replace('stage = "s"', 'stage = "t"'), "step A.1: stage must be one of ['s'], got 't'"),
        (PROOF.replace('why = "w"\n', ""), "step A.1: fields missing ['why']"),
        (PROOF.replace('sections = ["A"]\n', ""), "the proof: fields missing ['sections']"),
    ],
)
def test_a_damaged_proof_file_is_one_line_naming_it_and_the_step(refuses_in_one_line, text, says):
    refuses_in_one_line(load_proof, "steps.toml", text, says)


def test_each_description_lists_the_keys_of_its_claims_committed_records():
    """At the committed tier a claim's verdict table is in its description's order, every record listed."""
    import json
    from pathlib import Path

    verify = Path(__file__).resolve().parents[2] / "results" / "verify.json"
    committed: dict[str, list[str]] = {}
    for record in json.loads(verify.read_text())["records"]:
        committed.setdefault(record["claim"], []).append(record["key"])
    for claim, about in registry.declared("claim").items():
        if registry.is_own(about):
            assert list(about.records) == committed.get(claim, []), claim
