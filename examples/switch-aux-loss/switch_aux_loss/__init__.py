"""An example moe-lab plugin: claim SW1, Switch Transformer's auxiliary loss under balanced dispatch.

Fedus, Zoph and Shazeer (2022), *Switch Transformers*, eq. (4): with N experts, f_i the fraction of
tokens dispatched (top-1) to expert i and P_i the mean router probability of expert i, the auxiliary
loss is N·Σ f_i P_i, and under uniform routing it equals 1.
"""

from pathlib import Path

from lab.core.descriptions import load_claims, load_findings, load_paper

# SW1 and its paper as data, beside the check (check.toml) and in the package (paper.toml)
DESCRIPTIONS = load_claims(Path(__file__).with_name("check.toml"))
PAPER = load_paper(Path(__file__).with_name("paper.toml"))
# a finding on the paper that rests on SW1's records, shown on its page after the claims
FINDINGS = load_findings(Path(__file__).with_name("check.findings.toml"))
