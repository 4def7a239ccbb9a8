"""The CLI's tests run `verify` in this process without its kernel-loading child.

`verify` first has a child process run every kernel its checks use, so that its own process loads
them from Numba's cache and compiles none (`lab.cli.kernel_cache`; tested end to end, child included,
in test_kernel_cache.py). Here the kernels are compiled once per test session anyway, so the child
would only repeat seconds of imports and two-step training runs in every test that runs `verify`.
"""

import pytest


@pytest.fixture(autouse=True)
def verify_without_the_kernel_child(monkeypatch):
    from lab.cli import verify

    monkeypatch.setattr(verify, "compile_in_child", lambda configs: None)
