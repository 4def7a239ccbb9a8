"""CONTRIBUTING.md against the code: its commands parse, the files it names exist, and a claim's
description goes where `lab.core.descriptions` reads it (a TOML file beside the check)."""

import re
import shlex
from pathlib import Path

import pytest

from lab.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[1]
TEXT = (ROOT / "CONTRIBUTING.md").read_text()
COMMANDS = sorted(set(re.findall(r"^python -m lab ([^#\n]+?)\s*(?:#.*)?$", TEXT, re.MULTILINE)))


@pytest.mark.parametrize("command", COMMANDS)
def test_each_lab_command_it_shows_parses(command):
    words = shlex.split(command)
    build_parser(words[0]).parse_args(words)


def test_every_file_it_names_exists():
    named = set(re.findall(r"`((?:lab|tests|checks|docs|examples)/[\w./-]+\.(?:py|md|toml))`", TEXT))
    assert named and not sorted(p for p in named if not (ROOT / p).exists())


def test_a_claim_is_described_in_toml_beside_its_check():
    step = re.search(r"Describe the claim in (?:a TOML file beside its check\s+\(`([^`]+)`|`([^`]+)`)", TEXT)
    assert step is not None, "CONTRIBUTING.md says where a claim's description goes"
    where = step.group(1) or step.group(2)
    assert where.startswith("checks/") and where.endswith(".toml"), where


def _recipe_files(text: str, heading: str) -> set[str]:
    """The generic paths (`checks/<paper>/...`, `results/verify.json`, `docs/`) a recipe section names."""
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`([\w<>./-]+/[\w<>./-]*)`", section))
    return {path for path in named if "<" in path or path in ("results/verify.json", "docs/")}


def test_the_claim_change_recipe_names_the_same_files_here_and_in_the_guide():
    guide = (ROOT / "lab" / "docs" / "templates" / "adding-a-claim.md.j2").read_text()
    ours, theirs = _recipe_files(TEXT, "## Changing a claim"), _recipe_files(guide, "## Changing a claim")
    assert ours and ours == theirs
