"""Numba kernels, each module beside its NumPy twin (`X.py` and `X_numpy.py`), and σ of eq. (3.1).

`backend(name)` is the one switch between them: it returns the kernels of one backend as a
namespace with the same attribute names for both, so a caller resolves its backend once and
calls `lib.routed_forward(...)` without testing a flag again. `DEFAULT_BACKEND` is the default of
every public function that takes a `backend` argument.

Every function a backend serves checks its arguments in Python, once per call, with the same
checks on both sides (`lab.kernels._checks`): an unknown activation or noise code, a negative
count, a seed outside [0, 2**64), an index outside [0, M) or mismatched shapes raise the same
TypeError or ValueError on both backends. The jitted loops (`_name` in each Numba module) trust
their arguments and are called only from these entry points. Finiteness of the data is left to
the public science functions (`lab.core.validate`), which check it before they dispatch.

Every jitted loop is compiled with `error_model="numpy"`: a division by zero gives inf or NaN as in
the NumPy twins instead of raising inside the kernel, so a run that overflows reaches its caller's
finiteness test (`lab.chen2022.training.finite_step`) and ends as a diverged run on both backends.
"""

from __future__ import annotations

import importlib
from types import SimpleNamespace

__all__ = ["BACKENDS", "DEFAULT_BACKEND", "KERNEL_MODULES", "backend"]  # the modules: KERNEL_MODULES

BACKENDS = ("numba", "numpy")
DEFAULT_BACKEND = "numba"
# each X.py has its twin X_numpy.py, with the same __all__
KERNEL_MODULES = ("routed", "router", "gating", "l4", "structured")

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
