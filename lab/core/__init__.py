"""The lab's machinery: result records, registries, statistics, atomic writes, progress, plots."""
