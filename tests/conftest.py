"""Hypothesis profiles: `ci` (default, derandomized), `dev`, and `fuzz` (many examples, database kept)."""

import os

from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase

_common = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("ci", max_examples=25, derandomize=True, database=None, print_blob=True, **_common)
settings.register_profile("dev", max_examples=50, **_common)
settings.register_profile(
    "fuzz",
    max_examples=int(os.environ.get("MOE_LAB_FUZZ_EXAMPLES", "2000")),
    database=DirectoryBasedExampleDatabase(".hypothesis/examples"),
    **_common,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
