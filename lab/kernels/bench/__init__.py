"""The kernels' benchmark summary: its writer (`report`, the one reader of pytest-benchmark's saved files),
the performance targets it judges (`targets`, `targets.toml`) and the lab's findings on its kernels
(`report.findings.toml`), which read it."""
