"""`lab.kernels.backend`: one namespace per backend, same names and signatures, ValueError on a bad name."""

import importlib
import inspect
import re

import pytest

from lab import kernels


def _signature(fn) -> list[str]:
    return list(inspect.signature(getattr(fn, "py_func", fn)).parameters)


def test_both_backends_have_the_same_names():
    numba, numpy = kernels.backend("numba"), kernels.backend("numpy")
    assert (numba.name, numpy.name) == ("numba", "numpy")
    assert sorted(vars(numba)) == sorted(vars(numpy))
    expected = {
        "routed_forward",
        "routed_backward",
        "routed_step",
        "softmax_gate",
        "softmax_logit_gradient",
        "dense_forward",
        "perturbed_argmax",
        "routing_counts",
        "stream_key",
        "noise",
        "NOISE_CODES",
        "noisy_top_k_gate_and_load",
        "top_k_membership_counts",
        "l4_gradient",
    }
    assert expected <= set(vars(numba))


@pytest.mark.parametrize("module", kernels.KERNEL_MODULES)
def test_each_kernel_module_and_its_twin_export_the_same_signatures(module):
    fast = importlib.import_module(f"lab.kernels.{module}")
    twin = importlib.import_module(f"lab.kernels.{module}_numpy")
    assert sorted(fast.__all__) == sorted(twin.__all__)
    for name in fast.__all__:
        a, b = getattr(fast, name), getattr(twin, name)
        if callable(a):
            assert _signature(a) == _signature(b), name
        else:
            assert a == b, name


def test_no_name_is_exported_by_two_kernel_modules():
    names = [n for m in kernels.KERNEL_MODULES for n in importlib.import_module(f"lab.kernels.{m}").__all__]
    assert len(names) == len(set(names))


def test_the_default_backend_and_the_cache():
    assert kernels.DEFAULT_BACKEND in kernels.BACKENDS
    assert kernels.backend() is kernels.backend(kernels.DEFAULT_BACKEND)
    assert kernels.backend("numpy") is kernels.backend("numpy")


@pytest.mark.parametrize("bad", ["gpu", "Numba", "", None, 1])
def test_a_bad_backend_name_is_a_value_error_naming_the_choices(bad):
    with pytest.raises(ValueError, match=r"backend must be one of \('numba', 'numpy'\)"):
        kernels.backend(bad)


@pytest.mark.parametrize("module", kernels.KERNEL_MODULES)
def test_no_kernel_uses_numbas_parallel_loops(module):
    """Every thread the kernels use is the lab's (`lab.kernels._threads`): a `parallel=True` kernel would
    start Numba's own pool beside it (two pools spinning on two cores), cost about 2.7 times the compile
    CPU, and differ in its last bits between compiled and cached. Pinned here."""
    mod = importlib.import_module(f"lab.kernels.{module}")
    kernels = {n: f for n, f in vars(mod).items() if hasattr(f, "targetoptions") and hasattr(f, "py_func")}
    for name, kernel in kernels.items():
        assert not kernel.targetoptions.get("parallel"), f"{module}.{name}: parallel=True"
        assert "prange(" not in inspect.getsource(kernel.py_func), f"{module}.{name}: prange"


@pytest.mark.parametrize("module", kernels.KERNEL_MODULES)
def test_every_kernel_run_on_the_labs_threads_releases_the_gil(module):
    """A kernel that `over_threads` runs without nogil=True holds the GIL: its ranges run one after the
    other, every result the same, only the cores lost. Pinned here."""
    mod = importlib.import_module(f"lab.kernels.{module}")
    driven = set(re.findall(r"over_threads\(\s*(\w+)", inspect.getsource(mod)))
    for name in driven - NUMPY_RANGES.get(module, set()):
        kernel = getattr(mod, name)
        assert kernel.targetoptions.get("nogil") is True, f"{module}.{name}: on threads, yet holds the GIL"


NUMPY_RANGES = {"routed": {"_exp_rows"}}  # Python range functions whose one NumPy ufunc loop releases the GIL


@pytest.mark.parametrize(("module", "name"), [(m, n) for m, names in NUMPY_RANGES.items() for n in names])
def test_a_python_range_function_is_one_numpy_ufunc_call_in_place(module, name):
    """A range function that is not jitted is one in-place NumPy ufunc call on its rows, whose inner loop
    releases the GIL; anything more would hold the GIL while the other threads wait for it."""
    source = inspect.getsource(getattr(importlib.import_module(f"lab.kernels.{module}"), name))
    body = [line.strip() for line in source.splitlines()[2:] if line.strip()]
    assert len(body) == 1 and re.fullmatch(r"np\.\w+\((\w+)\[lo:hi\], out=\1\[lo:hi\]\)", body[0]), body
