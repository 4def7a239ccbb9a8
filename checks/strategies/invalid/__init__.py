"""Invalid inputs for every public function of the science packages, as Hypothesis strategies.

Public, shared by the tests (`tests/core/test_invalid_inputs.py`), fuzzing (`nox -s fuzz`) and
anyone hardening a new function. `CASES` maps the qualified name of each public function (and
of each constructor that checks its fields) of `SCIENCE_MODULES` to a `Case`: a small valid call
and, per argument, the ways to break it. `invalid_calls(name)` draws one such call with exactly one
argument broken; the function must refuse it with a ValueError or TypeError whose message starts
with the broken argument's name (`InvalidCall.names`), the same on both backends where it takes
one. `EXEMPT` names the public classes that are results or protocols, not entry points, with the
reason; every other public name of those modules (their `__all__`, which must list every public
def and class) needs a case, so a new public function without validation fails the test.

The breaks (`arrays`, `labels`, `counts`, `reals`, `choices`, ...) are the vocabulary: NaN and ±inf,
bool, string, object and complex arrays, a dimension too many or too few, an empty or a shorter
axis, an index outside its range, a float or a bool where an integer count belongs, a value
outside its interval, an unknown name, an object of the wrong type. A break marked `related` may
be blamed on any argument of `Case.related` (x (n, d) against A (k, d) names x when A lost a column).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import NamedTuple

import numpy as np
from hypothesis import strategies as st

SCIENCE_MODULES = (
    "lab.core.stats",
    "lab.chen2022.baselines",
    "lab.chen2022.data",
    "lab.chen2022.linear_optimum",
    "lab.chen2022.load_balancing",
    "lab.chen2022.metrics",
    "lab.chen2022.model",
    "lab.chen2022.patch_functions",
    "lab.chen2022.patch_optimum",
    "lab.chen2022.patchwise",
    "lab.chen2022.routing",
    "lab.chen2022.routing_coupling",
    "lab.chen2022.routing_exact",
    "lab.chen2022.theorem_sets",
    "lab.makkuva2020.fig1_experiment",
    "lab.makkuva2020.fit",
    "lab.makkuva2020.gated_regression",
    "lab.makkuva2020.losses",
    "lab.shazeer2017.gating",
)
BACKENDS = ("numba", "numpy")


class Broken(NamedTuple):
    """One broken value: a label for reports, the value, and whether another argument may be blamed."""

    how: str
    value: object
    related: bool = False


Breaker = Callable[[object, dict], list[Broken]]  # (the valid value, all valid arguments) -> breaks


@dataclass(frozen=True)
class Case:
    """A small valid call of one public function and, per argument, how to break it.

    valid(world) returns the keyword arguments of a valid call; call(function, kwargs) makes it
    (default: function(**kwargs)); blame maps an argument to the names its message may start with
    (default: the argument itself); related lists who a related break may name (default: every
    argument); backends: the call takes `backend=` and must fail alike on both.
    """

    valid: Callable[[World], dict]
    breaks: Mapping[str, Breaker]
    blame: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    related: tuple[str, ...] | None = None
    backends: bool = False
    call: Callable[[Callable, dict], object] | None = None
    runs: bool = True  # the valid call is cheap enough (and needs no files or plots) to run in tests


@dataclass(frozen=True)
class InvalidCall:
    """A drawn call with one argument broken: what to call, and who the message may name."""

    name: str
    case: Case
    kwargs: dict
    target: str
    how: str
    names: tuple[str, ...]

    def __call__(self, backend: str | None = None) -> object:
        return run(self.name, self.case, self.kwargs, backend)

    def __repr__(self) -> str:
        return f"InvalidCall({self.name}: {self.target} broken by {self.how!r}; may name {self.names})"


def function(name: str) -> Callable:
    module, _, attr = name.rpartition(".")
    return getattr(importlib.import_module(module), attr)


def run(name: str, case: Case, kwargs: dict, backend: str | None = None) -> object:
    """Call the function of `name` with `kwargs` (and `backend`, for a case on both backends)."""
    kwargs = {**kwargs, "backend": backend} if case.backends else dict(kwargs)
    fn = function(name)
    return case.call(fn, kwargs) if case.call is not None else fn(**kwargs)


def public_names(module: ModuleType) -> set[str]:
    """Every public def and class defined in `module` (what its `__all__` must list)."""
    return {
        n
        for n, v in vars(module).items()
        if not n.startswith("_")
        and (inspect.isfunction(v) or inspect.isclass(v))
        and getattr(v, "__module__", None) == module.__name__
    }


class World:
    """Sizes and random arrays of one small valid problem, from a NumPy generator."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.n = int(rng.integers(2, 6))
        self.M = int(rng.integers(2, 4))
        self.J, self.P, self.d = 2, 3, 4

    def normal(self, *shape: int) -> np.ndarray:
        return self.rng.normal(size=shape)

    def positive(self, *shape: int) -> np.ndarray:
        return 0.5 + self.rng.random(shape)

    def index(self, high: int, size: int) -> np.ndarray:
        return self.rng.integers(0, high, size)


# ------------------------------------------------------------------------------------- breaks


def _float_copy(a: np.ndarray, value: float) -> np.ndarray:
    a = np.array(a, dtype=np.result_type(a.dtype, np.float64))
    a.flat[-1] = value
    return a


def arrays(
    *,
    ndim: bool = True,
    fewer: bool | None = None,
    axes: Sequence[int] = (),
    empty: Sequence[int] = (),
    nan: bool = True,
    inf: bool = True,
    complex_ok: bool = False,
    extra: Callable[[np.ndarray, dict], list[Broken]] | None = None,
) -> Breaker:
    """Breaks of a numeric array: NaN, ±inf, bool, str, object, complex (unless complex_ok); with
    ndim a dimension more and (fewer, default ndim) one fewer; a shorter and a longer `axes` (they
    must agree with another argument: related); an empty `empty` axis."""

    def breaks(value, kwargs) -> list[Broken]:
        a = np.asarray(value)
        out = [Broken("bool", a > 0), Broken("str", a.astype(str)), Broken("object", a.astype(object))]
        if a.size:
            out += [Broken("nan", _float_copy(a, np.nan))] if nan else []
            out += (
                [Broken("inf", _float_copy(a, np.inf)), Broken("-inf", _float_copy(a, -np.inf))]
                if inf
                else []
            )
        if not complex_ok:
            out.append(Broken("complex", a + 0j))
        if ndim:
            out.append(Broken("ndim+", np.ascontiguousarray(a[..., None]), True))
        if ndim if fewer is None else fewer:
            out.append(Broken("ndim-", a.reshape(-1) if a.ndim > 1 else a.reshape(-1)[0], True))
        for axis in axes:
            if a.shape[axis] > 1:
                out.append(Broken(f"shorter{axis}", np.delete(a, -1, axis=axis), True))
            out.append(Broken(f"longer{axis}", np.concatenate([a, np.take(a, [0], axis=axis)], axis), True))
        for axis in empty:
            out.append(Broken(f"empty{axis}", np.take(a, [], axis=axis), True))
        return out + (extra(a, kwargs) if extra is not None else [])

    return breaks


def elementwise() -> Breaker:
    """Breaks of an elementwise function's input: only its dtype (NaN propagates, documented)."""

    def breaks(value, kwargs) -> list[Broken]:
        a = np.asarray(value)
        return [Broken("bool", a > 0), Broken("str", a.astype(str)), Broken("object", a.astype(object))]

    return breaks


def labels(
    high: Callable[[dict], int] | int | None, *, axes: Sequence[int] = (0,), ndim: bool = True
) -> Breaker:
    """Breaks of an integer array with entries in [0, high) (high None: no upper end): floats, bools,
    strings, -1, high, a huge index, a dimension more, and a shorter or longer `axes` (related)."""

    def breaks(value, kwargs) -> list[Broken]:
        a = np.asarray(value)
        top = high(kwargs) if callable(high) else high
        out = [Broken("float", a.astype(np.float64)), Broken("bool", a > 0), Broken("str", a.astype(str))]
        for how, entry in (("-1", -1), ("high", top), ("huge", 2**40))[: 1 if top is None else 3]:
            if a.size:
                b = a.copy()
                b.flat[-1] = entry
                out.append(Broken(how, b))
        if ndim:
            out.append(Broken("ndim+", np.ascontiguousarray(a[..., None]), True))
        for axis in axes:
            if a.shape[axis] > 1:
                out.append(Broken(f"shorter{axis}", np.delete(a, -1, axis=axis), True))
            out.append(Broken(f"longer{axis}", np.concatenate([a, np.take(a, [0], axis=axis)], axis), True))
        return out

    return breaks


NOT_INTEGERS = (2.5, True, "3", None, np.float64(2.0))


def counts(low: int | None = None, high: Callable[[dict], int] | int | None = None) -> Breaker:
    """Breaks of an integer count: a float, a bool, a string, None; below `low`, above `high`."""

    def breaks(value, kwargs) -> list[Broken]:
        out = [Broken(repr(v), v) for v in NOT_INTEGERS]
        if low is not None:
            out.append(Broken("low - 1", low - 1))
        if high is not None:
            top = high(kwargs) if callable(high) else high
            out += [Broken("high + 1", top + 1), Broken("huge", 2**70)]
        return out

    return breaks


SEEDS = counts(0, 2**64 - 1)


def reals(
    low: float | None = None,
    high: float | None = None,
    *,
    low_open: bool = False,
    high_open: bool = False,
    nan: bool = True,
) -> Breaker:
    """Breaks of a real number: NaN, ±inf, a string, None, a bool, a complex; the interval's outside."""

    def breaks(value, kwargs) -> list[Broken]:
        out = [Broken(repr(v), v) for v in (np.inf, -np.inf, "0.5", None, True, 1 + 1j)]
        out += [Broken("nan", np.nan)] if nan else []
        if low is not None:
            out.append(Broken("low", low) if low_open else Broken("below", low - 1.0))
        if high is not None:
            out.append(Broken("high", high) if high_open else Broken("above", high + 1.0))
        return out

    return breaks


def choices(*extra: object) -> Breaker:
    """Breaks of a name from a list: an unknown name, a number, None, a list; and `extra` values."""

    def breaks(value, kwargs) -> list[Broken]:
        return [Broken(repr(v), v) for v in ("no-such-name", 3, None, ["x"], *extra)]

    return breaks


def instances(*extra: object) -> Breaker:
    """Breaks of an object argument: None, a string, a number, a bare object; and `extra` values."""

    def breaks(value, kwargs) -> list[Broken]:
        return [Broken(repr(v)[:40], v) for v in (None, "x", 1.5, object(), *extra)]

    return breaks


def generators() -> Breaker:
    """Breaks of an rng: an integer seed, None, a legacy RandomState."""

    def breaks(value, kwargs) -> list[Broken]:
        return [Broken(repr(v)[:40], v) for v in (0, None, np.random.RandomState(0))]

    return breaks


def flags() -> Breaker:
    """Breaks of a bool: 1, 0, a string, None."""

    def breaks(value, kwargs) -> list[Broken]:
        return [Broken(repr(v), v) for v in (1, 0, "yes", None)]

    return breaks


def values(*bad: object, related: bool = False, label: str = "value") -> Breaker:
    """Explicit invalid values (functions of the valid arguments are called with them)."""

    def breaks(value, kwargs) -> list[Broken]:
        return [Broken(f"{label} {i}", v(kwargs) if callable(v) else v, related) for i, v in enumerate(bad)]

    return breaks


def combine(*breakers: Breaker) -> Breaker:
    def breaks(value, kwargs) -> list[Broken]:
        return [b for breaker in breakers for b in breaker(value, kwargs)]

    return breaks


# ------------------------------------------------------------------------------------- cases


PARTS = (
    "stats",
    "chen2022",
    "chen2022_metrics",
    "chen2022_patch",
    "chen2022_baselines",
    "chen2022_linear",
    "chen2022_theorem_sets",
    "shazeer2017",
    "makkuva2020",
    "makkuva2020_fit",
)


def _load_cases() -> tuple[dict[str, Case], dict[str, str]]:
    cases: dict[str, Case] = {}
    exempt: dict[str, str] = {}
    for part in PARTS:
        module = importlib.import_module(f"{__name__}.{part}")
        assert not set(module.CASES) & set(cases), set(module.CASES) & set(cases)
        cases.update(module.CASES)
        exempt.update(getattr(module, "EXEMPT", {}))
    return cases, exempt


def names_for(case: Case, target: str, broken: Broken, kwargs: dict) -> tuple[str, ...]:
    """The names a refusal's message may start with when `target` is broken as `broken`."""
    own = case.blame.get(target, (target,))
    if not broken.related:
        return own
    related = case.related if case.related is not None else tuple(kwargs)
    return tuple(dict.fromkeys((*own, *related, *(n for r in related for n in case.blame.get(r, ())))))


@st.composite
def invalid_calls(draw, name: str) -> InvalidCall:
    """A call of the public function `name` (a key of CASES) with one argument broken."""
    case = CASES[name]
    world = World(np.random.default_rng(draw(st.integers(0, 2**32 - 1), label="seed")))
    kwargs = case.valid(world)
    target = draw(st.sampled_from(sorted(case.breaks)), label="target")
    candidates = case.breaks[target](kwargs[target], kwargs)
    broken = draw(st.sampled_from(candidates), label="break")
    return InvalidCall(
        name,
        case,
        {**kwargs, target: broken.value},
        target,
        broken.how,
        names_for(case, target, broken, kwargs),
    )


def valid_call(name: str, seed: int = 0) -> dict:
    """The keyword arguments of the case's valid call for a seed."""
    return CASES[name].valid(World(np.random.default_rng(seed)))


def message_names(message: str, names: Sequence[str]) -> bool:
    """Does the message start with one of the names (followed by a space, a dot, a bracket or a colon)?"""
    return any(
        message.startswith(n) and message[len(n) : len(n) + 1] in (" ", ".", "[", ":", "") for n in names
    )


CASES, EXEMPT = _load_cases()

__all__ = [
    "BACKENDS",
    "CASES",
    "EXEMPT",
    "NOT_INTEGERS",
    "SCIENCE_MODULES",
    "SEEDS",
    "Breaker",
    "Broken",
    "Case",
    "InvalidCall",
    "World",
    "arrays",
    "choices",
    "combine",
    "counts",
    "elementwise",
    "flags",
    "function",
    "generators",
    "instances",
    "invalid_calls",
    "labels",
    "message_names",
    "names_for",
    "public_names",
    "reals",
    "run",
    "valid_call",
    "values",
]
