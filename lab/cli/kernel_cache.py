"""The kernels compiled in a child process, so that every process that computes runs them as cached.

A parallel Numba kernel compiled in the running process and the same kernel loaded from Numba's
on-disk cache are not the same machine code (each is deterministic; most likely the cached object
is optimised again once the loop's parallel body is linked into it). Where σ' has a fused form
(CELU, GELU and tanh, in float64) the gradient then differs in its last bits, and a run's numbers
depended on whether its process had compiled the kernels or loaded them (a Table 7 tanh single,
quick tier, setting 3, seed 0: 75.70 % in the compiling process, 75.55 % in every later one).
`compile_in_child(configs)` trains each distinct Chen et al. run configuration for two steps and
calls every stand-alone kernel once, in child processes (`python -m lab.cli.kernel_cache`; two at
once on two cores), so that any compiling happens there; the calling process and the workers it
starts then load every kernel from the cache, as every later invocation does. With the cache
complete the children only load. `replicate`, `sweep run` (the replicate task) and `verify` call
it before they compute.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile

from lab.sweeps.sweep import machine_cores

# sizes, coefficients and data: they change no array's type, so one child run covers all their values
_VALUES_ONLY = ("setting", "seed", "tier", "steps", "filters", "J", "M", "lb_coef")
_CHILD_STEPS = 2


def _distinct(configs: list[dict]) -> list[dict]:
    """One quick two-step run per configuration that differs in more than `_VALUES_ONLY`."""
    chosen: dict[str, dict] = {}
    for config in configs:
        rest = {k: v for k, v in config.items() if k not in _VALUES_ONLY}
        quick = {k: config[k] for k in _VALUES_ONLY if k in config} | {"seed": 0, "tier": "quick"}
        chosen.setdefault(json.dumps(rest, sort_keys=True), rest | quick)
    return [config | {"steps": _CHILD_STEPS} for config in chosen.values()]


def every_training_config() -> list[dict]:
    """One run of every replicate target in both variants and both arithmetics, float64: the
    models that verify's training checks train too."""
    from lab.chen2022 import runs as chen

    return [
        config
        for target in chen.TARGETS
        for variant in chen.VARIANTS
        for arithmetic in chen.ARITHMETIC
        for config in chen.expand(target, [1, 2, 3, 4], 1, variant=variant, arithmetic=arithmetic)
    ]


def compile_in_child(configs: list[dict]) -> None:
    """Have child processes run the kernels of these Chen et al. run configs and the stand-alone
    kernels, compiling what the cache lacks: on two or more cores two children at once, one for the
    structured single CNNs and one for the rest (on an empty cache each takes about 75 s on one core of
    an AMD EPYC); RuntimeError with a child's last line if one fails (a bug)."""
    runs = _distinct(configs)
    single = [c for c in runs if c.get("arithmetic") == "structured" and c["model"].startswith("single")]
    two = single and machine_cores() > 1
    shares = [[c for c in runs if c not in single], single] if two else [runs]
    with tempfile.TemporaryFile("w+") as errors:
        children = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "lab.cli.kernel_cache",
                    json.dumps(share),
                    *(["--standalone"] if i == 0 else []),
                ],
                stdout=subprocess.DEVNULL,
                stderr=errors,
            )
            for i, share in enumerate(shares)
        ]
        try:
            failed = any([child.wait() != 0 for child in children])  # every child waited for
        except BaseException:  # Ctrl-C: a child inside one long LLVM call would only see it after that call
            for child in children:
                child.kill()  # Numba writes a cache file whole (a temporary file, then a rename)
            raise
        if failed:
            errors.seek(0)
            last = (errors.read().strip().splitlines() or ["no output"])[-1]
            raise RuntimeError(f"compiling the kernels in a child process failed: {last}")


def _call_kernels() -> None:
    """Each stand-alone kernel once, on small float64 arrays as the public functions pass them."""
    import numpy as np

    from lab import kernels
    from lab.kernels._shared import NOISE_CODES

    lib, rng = kernels.backend("numba"), np.random.default_rng(0)
    n, M, k, d = 8, 4, 2, 3
    clean, xi, ones = rng.normal(size=(n, M)), rng.normal(size=(n, M)), np.ones((n, M))
    lib.noisy_top_k_gate_and_load(clean, rng.normal(size=(n, M)), xi, k)
    lib.top_k_membership_counts(clean, ones, xi, k, 4, 0, False)
    A, x, q = rng.normal(size=(k, d)), rng.normal(size=(n, d)), np.ones(n)
    lib.l4_gradient(A, x, q, q, 1.0, 1.0, 0.1, 0.1, 0.1)
    for code in NOISE_CODES.values():
        lib.perturbed_argmax(clean, 0, code, 1.0, 2.0)
        lib.routing_counts(clean[0], 4, 0, code, 1.0, 2.0)
        lib.noise(lib.stream_key(0), np.arange(4), code, 1.0, 2.0)
    lib.softmax_gate(clean, rng.integers(0, M, n))


def _main(argv: list[str]) -> None:
    """A child's work: a JSON list of configurations to train for two steps (and, with `--standalone`,
    the stand-alone kernels)."""
    from lab.chen2022.runs import run_one

    if "--standalone" in argv:
        _call_kernels()
    for config in json.loads(argv[0]):
        run_one(config)


if __name__ == "__main__":
    _main(sys.argv[1:])
