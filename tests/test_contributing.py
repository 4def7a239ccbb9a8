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
