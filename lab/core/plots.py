"""Optional figures: matplotlib is an extra (`pip install "moe-lab[plots]"`); without it none are drawn."""

from __future__ import annotations

import importlib.util
import os
from typing import Any

from lab.core.io import atomic_path

PLOTS_HINT = 'figures skipped: matplotlib is not installed (pip install "moe-lab[plots]")'


def available() -> bool:
    """Whether matplotlib can be imported."""
    return importlib.util.find_spec("matplotlib") is not None


def pyplot() -> Any:
    """matplotlib.pyplot on the non-interactive Agg backend (call only when `available()`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, path: str | os.PathLike[str], dpi: int = 120) -> None:
    """Write `fig` atomically as PNG and close it."""
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=dpi, format="png")
    pyplot().close(fig)
