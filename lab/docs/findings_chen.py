"""Findings on Chen et al. 2022: every number is read from results/verify.json or results/replicate."""

from __future__ import annotations

from lab.docs.findings_chain import proof_chain
from lab.docs.findings_proof import proof_steps
from lab.docs.findings_tables import tables_1_3, tables_10_11


def _path(module) -> str:
    return module.__name__.replace(".", "/") + ".py"


FINDINGS = {  # by anchor
    "proof-chain": proof_chain,
    "proof-lemmas": proof_steps,
    "tables-1-3": tables_1_3,
    "tables-10-11": tables_10_11,
}
