"""The cells of Chen et al. 2022's synthetic Tables 1, 3, 7/8, 10 and 11, with the paper's numbers.

A cell is one table row: the model, the run parameters that `lab.chen2022.runs.run_one` takes, and
the paper's reported accuracy and dispatch entropy (6.1) per setting of Def. 3.1 / Table 2.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lab.chen2022.baselines import single_config
from lab.chen2022.training import TrainConfig

MODELS = ("single (linear)", "single (nonlinear)", "moe (linear)", "moe (nonlinear)")
MOE_DEFAULTS = {
    "M": 8,
    "J": 16,
    "load_balancing": "none",
    "lb_coef": 0.0,
    "same_init": False,
    "expert_update": "normalized",
}
TABLE11_LB_COEF = 0.01  # not stated in the paper; the lab's choice


@dataclass(frozen=True)
class Cell:
    """One table row: the paper's row name, run parameters, and the paper's numbers per setting.

    paper[setting] = (accuracy %, its std or None, dispatch entropy or None, its std or None).
    """

    model: str
    label: str
    params: dict[str, Any]
    paper: dict[int, tuple]
    extra: dict[str, Any] = field(default_factory=dict)


def _moe(act: str, label: str, paper: dict[int, tuple], **params: Any) -> Cell:
    model = "moe (linear)" if act == "linear" else "moe (nonlinear)"
    return Cell(model, label, {"activation": act, **MOE_DEFAULTS, **params}, paper)


def _single(act: str, filters: int, label: str, paper: dict[int, tuple]) -> Cell:
    model = "single (linear)" if act == "linear" else "single (nonlinear)"
    readout = single_config(activation=act).expert.readout  # the rule is `single_config`'s
    signed = {} if readout == TrainConfig.readout else {"readout": readout}  # keys of (3.1) runs unchanged
    return Cell(model, label, {"activation": act, "filters": filters, **signed}, paper)


_T3 = {  # Table 3 (settings 1–4); Table 1 is its settings 1–2 with 128 filters
    "single (linear) 128": {1: 68.71, 2: 60.59, 3: 74.81, 4: 74.63},
    "single (linear) 512": {1: 67.63, 2: 63.04, 3: 74.54, 4: 72.98},
    "single (nonlinear) 128": {1: 79.48, 2: 72.29, 3: 72.69, 4: 68.60},
    "single (nonlinear) 512": {1: 78.18, 2: 52.09, 3: 67.78, 4: 61.65},
    "moe (linear)": {
        1: (92.99, 2.11, 1.300, 0.044),
        2: (88.48, 1.96, 1.294, 0.036),
        3: (95.93, 1.34, 1.160, 0.100),
        4: (93.30, 1.48, 1.160, 0.155),
    },
    "moe (nonlinear)": {
        1: (99.46, 0.55, 0.098, 0.087),
        2: (98.09, 1.27, 0.171, 0.103),
        3: (99.99, 0.02, 0.008, 0.011),
        4: (98.92, 1.18, 0.089, 0.120),
    },
}
_T78 = {  # Table 7 (setting 3) and Table 8 (settings 1, 2): single models, 128 filters
    "linear": {1: 68.71, 2: 60.59, 3: 74.81},
    "cubic": {1: 79.48, 2: 72.29, 3: 72.69},
    "relu": {1: 72.28, 2: 80.12, 3: 73.45},
    "celu": {1: 81.75, 2: 78.99, 3: 76.91},
    "gelu": {1: 79.04, 2: 82.01, 3: 74.01},
    "tanh": {1: 81.72, 2: 81.03, 3: 74.76},
}


def _acc_only(values: dict[int, float]) -> dict[int, tuple]:
    return {s: (v, None, None, None) for s, v in values.items()}


def _table3_cells(filters: tuple[int, ...], settings: tuple[int, ...]) -> list[Cell]:
    cells = []
    for act, kind in (("linear", "single (linear)"), ("cubic", "single (nonlinear)")):
        for J in filters:
            paper = {s: v for s, v in _T3[f"{kind} {J}"].items() if s in settings}
            cells.append(_single(act, J, f"{kind}, {J} filters", _acc_only(paper)))
    for act, kind in (("linear", "moe (linear)"), ("cubic", "moe (nonlinear)")):
        paper = {s: v for s, v in _T3[kind].items() if s in settings}
        cells.append(_moe(act, f"{kind}, 8×16 filters", paper))
    return cells


TARGETS: dict[str, list[Cell]] = {
    "table1": _table3_cells((128,), (1, 2)),
    "table3": _table3_cells((128, 512), (1, 2, 3, 4)),
    "table7": [_single(act, 128, f"single ({act})", _acc_only(v)) for act, v in _T78.items()],
    "table10": [
        _moe(
            "cubic",
            f"same init, switch LB {coef}, M={M}",
            {1: paper},
            M=M,
            same_init=True,
            load_balancing="switch",
            lb_coef=coef,
        )
        for coef, by_m in (
            (0.1, {8: (72.18, 1.16, 1.358, 0.010), 32: (70.88, 0.60, 1.381, 0.002)}),
            (0.03, {8: (79.97, 1.61, 1.237, 0.041), 32: (77.02, 0.51, 1.252, 0.010)}),
            (0.01, {8: (78.59, 2.19, 1.252, 0.048), 32: (79.15, 0.87, 1.221, 0.014)}),
        )
        for M, paper in by_m.items()
    ],
    "table11": [
        _moe(
            "cubic",
            f"{'normalized GD' if update == 'normalized' else 'GD'}, {'with' if coef else 'no'} LB, M=32",
            {1: (acc, std, None, None)},
            M=32,
            expert_update=update,
            load_balancing="switch" if coef else "none",
            lb_coef=coef,
        )
        for update, coef, acc, std in (
            ("normalized", TABLE11_LB_COEF, 99.01, 0.97),
            ("gd", TABLE11_LB_COEF, 98.64, 0.34),
            ("normalized", 0.0, 99.47, 0.48),
            ("gd", 0.0, 79.53, 1.41),
        )
    ],
}
TARGET_HELP = {
    "table1": "Table 1: single vs MoE (linear/nonlinear), settings 1-2",
    "table3": "Table 3: Table 1 for settings 1-4 with 128 and 512-filter single models",
    "table7": "Tables 7/8: single CNNs with six activations, settings 3 and 1-2",
    "table10": "Table 10: nonlinear MoE with identical expert init and load balancing, setting 1",
    "table11": "Table 11: normalized GD vs GD, with/without load balancing, M=32, setting 1",
}
