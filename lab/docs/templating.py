"""Pages from Jinja2 templates (`lab/docs/templates/`): an undefined name stops the render with one line
naming the page (a `ResultsError`), the formatting helpers of `lab.docs.markdown` are filters, and a
template names a verify record by claim and key.

`record(claim, key)` is the record of `claim` with `key` in the verify results; when there is none the
render stops with one line naming the page, the claim and the key (a `ResultsError`, exit status 2).
`others(claim, keys)` are the claim's records whose keys are not among `keys`: a template that shows
records beyond those it names says so with it.
"""

from __future__ import annotations

from typing import Any

import jinja2

from lab.docs import markdown
from lab.docs.results import VERIFY_COMMAND, Results, ResultsError, record_by_key

ENVIRONMENT = jinja2.Environment(
    loader=jinja2.PackageLoader("lab.docs", "templates"),
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
    autoescape=False,  # Markdown, not HTML
)
ENVIRONMENT.filters.update(
    num=markdown.num,
    fixed=markdown.fixed,
    pct=markdown.pct,
    times=markdown.times,  # `{{ ratio | times }}`: 3.49×
    in_unit=markdown.in_unit,  # `{{ value | in_unit("%") }}`: a fraction as a percentage, else the unit
    bound=markdown.bound,  # `{{ threshold | bound("≤", "%") }}`: a target's comparison and threshold
    interval=markdown.interval,
    basis=markdown.basis,  # `{{ r | basis }}`: the record's stored interval level, method and n
    law=markdown.law,  # `{{ r.params | law }}`: the data law a record ran on, from its params
    code=markdown.code,
    anchor=markdown.anchor,
    row=markdown.row,  # one line of a table: `{{ [a, b, c] | row }}`
    outcomes=markdown.outcome_summary,
    notes=markdown.notes,
)
ENVIRONMENT.globals.update(generated=markdown.GENERATED, verify_command=VERIFY_COMMAND)


def render(template: str, page: str, results: Results, **context: Any) -> str:
    """The page `page` (its path under docs/) from `template`, with the verify records of `results`."""

    def record(claim: str, key: str) -> dict[str, Any]:
        return record_by_key(results, claim, key, page)

    def others(claim: str, keys: list[str]) -> list[dict[str, Any]]:
        return [r for r in results.records if r["claim"] == claim and r.get("key") not in keys]

    variables = {"page": page, "results": results, "record": record, "others": others}
    try:
        return ENVIRONMENT.get_template(template).render(**variables, **context)
    except jinja2.UndefinedError as exc:  # a value the template names and the page was not given
        raise ResultsError(f"{page}: {template}: {exc}") from None
