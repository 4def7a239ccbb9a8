"""The code fingerprint follows what the code means: docstrings, comments and layout do not count."""

from __future__ import annotations

import os

import pytest

from lab.core import provenance

TASK = "lab.chen2022.runs"
STACK = ["python", "moe-lab", "numpy", "scipy", "numba", "hypothesis"]  # what every report's versions name


@pytest.fixture
def cleared():
    """Each root's fingerprint computed afresh in the test, and forgotten after it."""
    provenance.code_fingerprint.cache_clear()
    yield
    provenance.code_fingerprint.cache_clear()


@pytest.fixture
def edit(monkeypatch, tmp_path, cleared):
    """`edit(module, change)`: the fingerprint then reads `change(source)` for that module."""
    original = provenance._module_file

    def apply(module, change):
        def module_file(name):
            path = original(name)
            if name != module:
                return path
            copy = tmp_path / f"{name}.py"
            copy.write_text(change(path.read_text()))
            return copy

        monkeypatch.setattr(provenance, "_module_file", module_file)
        provenance.code_fingerprint.cache_clear()
        return provenance.code_fingerprint(TASK)

    return apply


def _docstring_and_layout(source: str) -> str:
    """Another module docstring, a comment, and a blank line and a trailing comma's worth of layout."""
    body = source.split('"""', 2)[2]
    return '"""Reworded."""\n# a comment\n\n' + body.replace("\n\n", "\n\n\n", 3) + "\n# the end\n"


def test_a_docstring_comment_or_layout_edit_keeps_the_fingerprint(edit):
    before = provenance.code_fingerprint(TASK)
    assert "lab.kernels.router" in provenance.science_modules(TASK)
    assert edit("lab.kernels.router", _docstring_and_layout) == before


def test_an_operator_changed_in_a_module_the_task_uses_changes_it(edit):
    before = provenance.code_fingerprint(TASK)
    assert edit("lab.kernels.router", lambda s: s.replace(" + ", " - ", 1)) != before


def test_an_edit_to_a_module_the_task_does_not_use_keeps_it(edit):
    before = provenance.code_fingerprint(TASK)
    assert "lab.makkuva2020.losses" not in provenance.science_modules(TASK)
    assert edit("lab.makkuva2020.losses", lambda s: s.replace(" + ", " - ", 1)) == before


def test_meaning_drops_function_and_class_docstrings_only():
    with_doc = 'def f(x):\n    """Doc."""\n    return x + 1\n\n\nclass C:\n    """Doc."""\n'
    without = "def f(x):\n    return x + 1  # note\n\n\nclass C:\n    pass\n"
    assert provenance.meaning(with_doc) == provenance.meaning(without)
    assert provenance.meaning(without) != provenance.meaning(without.replace("x + 1", "x * 1"))
    assert provenance.meaning('x = "kept"\n') != provenance.meaning('x = "other"\n')


def test_versions_name_each_installed_plugin_package_and_leave_out_an_unknown_name(install_plugin):
    install_plugin("jj-plugin", "")
    found = provenance.versions(["jj-plugin", "no-such-distribution"])
    assert found["jj-plugin"] == "0.1" and "no-such-distribution" not in found
    assert list(provenance.versions()) == STACK


def test_an_edit_in_place_is_read_again_after_the_file_was_parsed(monkeypatch, tmp_path, cleared):
    """Each file is parsed once per state (path, inode, times, size): the same file edited in place, with
    its size unchanged, gives the new meaning."""
    original = provenance._module_file
    copy = tmp_path / "router.py"
    copy.write_text(original("lab.kernels.router").read_text())
    monkeypatch.setattr(
        provenance, "_module_file", lambda name: copy if name == "lab.kernels.router" else original(name)
    )
    before = provenance.code_fingerprint(TASK)
    stamp = copy.stat().st_mtime_ns
    copy.write_text(copy.read_text().replace(" + ", " - ", 1))
    os.utime(copy, ns=(stamp + 1_000_000_000, stamp + 1_000_000_000))  # a coarse clock's next tick
    provenance.code_fingerprint.cache_clear()
    assert provenance.code_fingerprint(TASK) != before


def test_versions_read_no_distributions_metadata_unless_a_plugin_outside_the_stack_is_named(monkeypatch):
    """The stack's versions are read by name; scanning every installed distribution is for plugins only."""

    def refuse():
        raise AssertionError("every distribution's metadata read")

    monkeypatch.setattr(provenance, "distributions", refuse)
    assert list(provenance.versions()) == list(provenance.versions(["moe-lab", "numpy"])) == STACK


def test_the_environment_names_the_blas_libraries_in_one_order_whatever_order_they_loaded_in(monkeypatch):
    import threadpoolctl

    libs = [
        {
            "user_api": "blas",
            "internal_api": "openblas",
            "version": v,
            "architecture": "SkylakeX",
            "num_threads": t,
        }
        for v, t in (("0.3.31", 2), ("0.3.30", 1))
    ]
    seen = []
    for order in (libs, libs[::-1]):
        monkeypatch.setattr(threadpoolctl, "threadpool_info", lambda order=order: list(order))
        seen.append(provenance.environment())
    assert seen[0] == seen[1]
    assert seen[0]["blas"] == "openblas 0.3.30 (SkylakeX); openblas 0.3.31 (SkylakeX)"
    assert seen[0]["blas_threads"] == "1; 2"  # each library's threads beside it
