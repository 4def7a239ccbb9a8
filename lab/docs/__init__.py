"""The documentation under docs/, rendered from the text in this package and the files under results/.

`render.render_all` returns every page as text; `python -m lab docs` writes them and
`python -m lab docs --check` compares them with the committed pages.
"""

__all__ = [  # the public modules, each a one-line docstring away from what it holds
    "catalogue",
    "claims_pages",
    "evidence",
    "findings_data",
    "guides",
    "lab_choices",
    "markdown",
    "mutation_page",
    "performance_page",
    "render",
    "replications_page",
    "results",
    "signatures",
    "templating",
    "timing_section",
]
