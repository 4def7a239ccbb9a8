"""Numba kernels, each module beside its NumPy twin (`X.py` and `X_numpy.py`), and σ of eq. (3.1).

`backend(name)` is the one switch between them: it returns the kernels of one backend as a
namespace with the same attribute names for both, so a caller resolves its backend once and
calls `lib.routed_forward(...)` without testing a flag again. `DEFAULT_BACKEND` is the default of
every public function that takes a `backend` argument.
"""

from __future__ import annotations

import importlib
from types import SimpleNamespace

BACKENDS = ("numba", "numpy")
DEFAULT_BACKEND = "numba"
KERNEL_MODULES = ("routed", "gating", "l4")  # each X.py has its twin X_numpy.py, with the same __all__

_LOADED: dict[str, SimpleNamespace] = {}


def backend(name: str = DEFAULT_BACKEND) -> SimpleNamespace:
    """The kernels of backend `name` ('numba' or 'numpy'): one namespace, the same names for both."""
    if name not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {name!r}")
    if name not in _LOADED:
        suffix = "" if name == "numba" else "_numpy"
        found: dict[str, object] = {}
        for module_name in KERNEL_MODULES:
            module = importlib.import_module(f"{__name__}.{module_name}{suffix}")
            found.update({k: v for k, v in vars(module).items() if k in module.__all__})
        _LOADED[name] = SimpleNamespace(name=name, **found)
    return _LOADED[name]
