"""What a plugin's author meets beside SW1, on a throwaway plugin installed in tmp_path and run in a
subprocess (its own registry): a check that raises renders as its claim's `error`, and a claim id of the
lab's is refused by the render as by `verify`, in one line naming both packages."""

import os
import subprocess
import sys
import textwrap

CHECK = """
from pathlib import Path

from lab.core.descriptions import load_claims, load_paper
from lab.core.registry import register

DESCRIPTIONS = load_claims(Path(__file__).with_suffix(".toml"))
PAPER = load_paper(Path(__file__).with_name("paper.toml"))


@register("{claim}", name="throwaway.check")
def check(seed, tier):
    raise ZeroDivisionError("division by zero")
"""
CLAIMS = """
paper = "throwaway2024"

[{claim}]
title = "A claim whose check raises"
reference = "eq. (1)"
statement = "Nothing."
premise = "None."
controls = "None."
records = ["exactly-k"]
"""
PAPER = """
key = "throwaway2024"
short = "Throwaway 2024"
cite = "Throwaway (2024)"
title = "A throwaway paper"
scope = "A check that raises."
"""


def lab(tmp_path, *args: str) -> subprocess.CompletedProcess:
    """`python -m lab ARGS` with the throwaway plugin on the path."""
    env = os.environ | {
        "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")])
    }
    return subprocess.run(
        [sys.executable, "-m", "lab", *args], capture_output=True, text=True, env=env, cwd=tmp_path
    )


def install(tmp_path, claim: str) -> None:
    """The package `throwaway-plugin`: module `throwaway_plugin`, one check of `claim` that raises, its
    description (listing a record key) and its paper, advertised in the `moe_lab.plugins` group."""
    site = tmp_path / "site"
    info = site / "throwaway_plugin-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: throwaway-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[moe_lab.plugins]\nthrowaway_plugin = throwaway_plugin\n")
    for name, text in (
        ("throwaway_plugin.py", CHECK),
        ("throwaway_plugin.toml", CLAIMS),
        ("paper.toml", PAPER),
    ):
        (site / name).write_text(textwrap.dedent(text.format(claim=claim) if "{claim}" in text else text))
    for folder in ("results", "sweeps"):
        (tmp_path / folder).mkdir()


def render(tmp_path) -> subprocess.CompletedProcess:
    return lab(tmp_path, "docs", "--plugins", "--results", "results", "--sweeps", "sweeps", "--out", "pages")


def test_a_check_that_raises_renders_as_its_claims_error(tmp_path):
    install(tmp_path, "TW1")
    verified = lab(tmp_path, "verify", "--only", "TW1", "--quiet", "--json", "results/verify.json")
    assert verified.returncode == 1, verified.stderr
    rendered = render(tmp_path)
    assert rendered.returncode == 0, rendered.stderr
    page = (tmp_path / "pages" / "claims" / "throwaway2024.md").read_text()
    assert "Latest verdicts (1 error):" in page and "A check of TW1 errored in these results" in page
    assert "raised ZeroDivisionError: division by zero" in page
    assert "made with package `throwaway-plugin` 0.1" in page


def test_a_claim_id_of_the_labs_is_refused_by_the_render(tmp_path):
    install(tmp_path, "C1")
    rendered = render(tmp_path)
    assert rendered.returncode == 2
    said = rendered.stderr.strip()
    assert "\n" not in said and said.startswith("python -m lab: error: ")
    assert "(package moe-lab) and throwaway_plugin (package throwaway-plugin)" in said
    assert not (tmp_path / "pages").exists()
