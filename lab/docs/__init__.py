"""The documentation under docs/, rendered from the text in this package and the files under results/.

`render.render_all` returns every page as text; `python -m lab docs` writes them and
`python -m lab docs --check` compares them with the committed pages.
"""
