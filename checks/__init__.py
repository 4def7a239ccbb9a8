"""Claim checks by paper (`chen2022`, `makkuva2020`, `shazeer2017`) and their Hypothesis strategies.

Each check is a plain function `check(seed, tier) -> Record | list[Record]` declared with
`lab.core.registry.register(claim, ..., name=...)`. The registry finds them through the
`moe_lab.plugins` entry points in pyproject.toml, which name these packages; `lab` never
imports `checks`.
"""
