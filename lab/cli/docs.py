"""`python -m lab docs`: render docs/ from the templates in lab/docs and the results under results/.

`--check` renders in memory and exits 1, naming each page that differs from the committed one,
when docs/ is out of date; 0 when it is current. A missing or damaged results file is one line
naming it, exit status 2; so is a record a template names by claim and key that the results lack
(the line names the page, the claim and the key). A figure a page links that is missing from the
results folder is one line naming the command that draws it, exit status 1, with or without `--check`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lab.cli.main import UsageError
from lab.core.registry import register_command

EPILOG = """examples:
  python -m lab docs                      render docs/ from results/
  python -m lab docs --check              exit 1 if docs/ differs from a fresh render
  python -m lab docs --results /tmp/results --out /tmp/docs
  python -m lab docs --out /tmp/docs --plugins   the lab's pages and one per installed plugin
"""


@register_command("docs", "render docs/ from committed results (or --check that it is current)")
def configure(parser: argparse.ArgumentParser):
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = EPILOG
    parser.add_argument("--out", metavar="DIR", default="docs", help="the docs folder (default docs)")
    parser.add_argument(
        "--results", metavar="DIR", default="results", help="results folder (default results)"
    )
    parser.add_argument("--sweeps", metavar="DIR", default="sweeps", help="sweep specs (default sweeps)")
    parser.add_argument(
        "--check", action="store_true", help="compare with the committed pages; write nothing"
    )
    parser.add_argument(
        "--plugins", action="store_true", help="also a page per installed plugin (needs --out, not docs)"
    )

    def run(args: argparse.Namespace) -> int:
        from lab.docs.render import differences, missing_figures, render_all, write_pages
        from lab.docs.results import ResultsError

        if args.plugins and Path(args.out).resolve() == Path("docs").resolve():
            raise UsageError("--plugins needs an --out DIR other than docs, the lab's own committed pages")
        try:
            pages = render_all(args.results, args.sweeps, plugins=args.plugins, out=args.out)
        except ResultsError as exc:
            print(f"python -m lab docs: error: {exc}", file=sys.stderr)
            return 2
        if args.check:
            lines = differences(pages, args.out)
            for line in lines:
                print(line)
            if not lines:
                print(f"{args.out}: all {len(pages)} pages are current")
            return 1 if lines else 0
        written = write_pages(pages, args.out)
        print(f"{args.out}: {len(pages)} pages rendered, {len(written)} changed")
        missing = missing_figures(pages)
        for line in missing:
            print(line)
        return 1 if missing else 0

    return run
