"""Claim checks: one module per paper or claim group, each registering its checks with `lab.registry`.

Importing this package imports every module in it, so a check appears in `python -m lab
verify` by being defined in a module here (the package is found through the
`moe_lab.plugins` entry point; `lab` never imports `checks`).
"""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
