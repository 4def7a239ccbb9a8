"""The Hypothesis profiles of the lab's tests, importable by a plugin's: `ci`, `dev`, `fuzz`, `replay`.

`ci` (the default) runs 25 derandomized examples per test without a database (Hypothesis allows
none with `derandomize`), `dev` 50 random ones, `fuzz` MOE_LAB_FUZZ_EXAMPLES (default 2000) with
the example database kept in `.hypothesis/examples`, and `replay` only the `@example`s and the
examples stored in that database (the failures a fuzz campaign found), reading it without writing.
A plugin's `conftest.py` calls `load_profile()` as the lab's does.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings
from hypothesis.database import DirectoryBasedExampleDatabase, ReadOnlyDatabase

PROFILES = ("ci", "dev", "fuzz", "replay")
DATABASE = ".hypothesis/examples"  # relative to the folder pytest runs in (the repository's root)


def register_profiles() -> None:
    """Register the four profiles with Hypothesis (loads none)."""
    common = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
    settings.register_profile(
        "ci", max_examples=25, derandomize=True, database=None, print_blob=True, **common
    )
    settings.register_profile("dev", max_examples=50, **common)
    settings.register_profile(
        "fuzz",
        max_examples=int(os.environ.get("MOE_LAB_FUZZ_EXAMPLES", "2000")),
        database=DirectoryBasedExampleDatabase(DATABASE),
        **common,
    )
    settings.register_profile(
        "replay",
        phases=[Phase.explicit, Phase.reuse],
        database=ReadOnlyDatabase(DirectoryBasedExampleDatabase(DATABASE)),
        print_blob=True,
        **common,
    )


def load_profile(name: str | None = None) -> None:
    """Register the profiles and load `name` (default: env HYPOTHESIS_PROFILE, else `ci`)."""
    chosen = name or os.environ.get("HYPOTHESIS_PROFILE", "ci")
    if chosen not in PROFILES:
        raise ValueError(f"Hypothesis profile must be one of {PROFILES}, got {chosen!r}")
    register_profiles()
    settings.load_profile(chosen)
