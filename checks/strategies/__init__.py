"""Hypothesis strategies shared by the checks, the tests, fuzzing and the CLI's searches."""
