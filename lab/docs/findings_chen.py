"""The findings on Chen et al. 2022 still written in Python (the others: `checks/chen2022/*.findings.toml`):
the replications of Tables 1, 3, 10 and 11, whose numbers the renderer still computes from the committed
sweeps and replications."""

from __future__ import annotations

from lab.docs.findings_tables import tables_1_3, tables_10_11

FINDINGS = {  # by anchor
    "tables-1-3": tables_1_3,
    "tables-10-11": tables_10_11,
}
