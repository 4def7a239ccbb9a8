"""Hypothesis strategies shared by the checks, the tests and fuzzing: routing, patchwise, makkuva."""
