"""The lab's Hypothesis profiles (`ci` unless HYPOTHESIS_PROFILE says otherwise)."""

from lab.testing import load_profile

load_profile()
