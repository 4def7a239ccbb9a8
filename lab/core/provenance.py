"""Where a result came from: the interpreter's and the numerical stack's versions, stored with reports."""

from __future__ import annotations

import platform
from importlib.metadata import PackageNotFoundError, version


def versions() -> dict[str, str]:
    """Versions of the interpreter and the numerical stack, for every JSON report."""
    found = {"python": platform.python_version()}
    for dist in ("moe-lab", "numpy", "scipy", "numba", "hypothesis"):
        try:
            found[dist] = version(dist)
        except PackageNotFoundError:
            found[dist] = "not installed"
    return found
