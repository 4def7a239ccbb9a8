"""Task keys: the XOR of SHA-256 digests of the task name and of each configuration field, one task or a grid.

A key names exactly one configuration. Its terms are the SHA-256 of canonical JSON (sorted keys;
TOML's 1 and 1.0 stay apart): one of the task name, one of each top-level field as `[name, value]`.
Two different configurations differ in at least one term, so their keys agree by accident with
probability 2⁻²⁵⁶, and their 128-bit prefixes (what `sweep status` compares) with 2⁻¹²⁸: about
10⁻²⁷ for some pair among 10⁶ keys. (A key guards against accidents, not against collisions
forged on purpose, which an XOR of digests does not resist.) Because the terms are XORed, the keys
of a whole grid are one small table of digests per field XORed over the Cartesian product in NumPy:
`grid_keys` and `task_key` give the same keys, one in bulk and one per task.
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

import numpy as np

canonical = json.JSONEncoder(sort_keys=True, separators=(",", ":"), allow_nan=False).encode


@functools.lru_cache(maxsize=1 << 12)
def _term(text: str) -> bytes:
    """SHA-256 of one term's canonical JSON (fields repeat across a grid's tasks, hence the cache)."""
    return hashlib.sha256(text.encode()).digest()


def task_key(task: str, params: dict[str, Any]) -> str:
    """The key of one task (64 hex digits): the task name's term XOR each field's `[name, value]` term."""
    key = int.from_bytes(_term(canonical(task)))
    for item in params.items():
        key ^= int.from_bytes(_term(canonical(item)))
    return f"{key:064x}"


def grid_keys(task: str, fixed: dict[str, Any], grid: dict[str, list[Any]], lanes: int = 4) -> np.ndarray:
    """Keys of the configurations `fixed` plus one value per grid field, in grid order (last field fastest).

    Returns an (n, lanes) uint64 array, the key's big-endian 64-bit lanes: 4 is the whole key, 2 the
    128-bit prefix. The grid's values must be distinct (by canonical JSON) within each field.
    """
    keys = _lanes([_term(canonical(task)), *(_term(canonical(item)) for item in fixed.items())], lanes)
    keys = np.bitwise_xor.reduce(keys, axis=0, keepdims=True)
    for name, values in grid.items():
        table = _lanes([_term(canonical([name, value])) for value in values], lanes)
        keys = (keys[:, None, :] ^ table[None, :, :]).reshape(-1, lanes)
    return keys


def _lanes(digests: list[bytes], lanes: int) -> np.ndarray:
    return np.frombuffer(b"".join(digests), dtype=">u8").reshape(-1, 4)[:, :lanes].astype(np.uint64)


def prefix_array(raw: bytes) -> np.ndarray:
    """16-byte key prefixes, concatenated, as an (n, 2) array of uint64: the high and low 64 bits."""
    return np.frombuffer(raw, dtype=">u8").astype(np.uint64).reshape(-1, 2)


def contains(keys: np.ndarray, probes: np.ndarray) -> np.ndarray:
    """Which rows of `probes` are rows of `keys` (both (n, 2) uint64 prefixes): exact, by sort and search.

    The keys are sorted by their high half; the probes need not be (the store's come in a few
    sorted runs, which makes the search one sweep each).
    """
    found = np.zeros(len(probes), dtype=bool)
    if not len(keys):
        return found
    order = np.argsort(keys[:, 0])
    high = keys[order, 0]
    first = np.searchsorted(high, probes[:, 0]).clip(max=len(high) - 1)
    found[:] = (high[first] == probes[:, 0]) & (keys[order[first], 1] == probes[:, 1])
    repeated = high[1:][high[1:] == high[:-1]]  # equal high halves: ~10⁻⁷ per 10⁶ keys
    if len(repeated):
        for i in np.flatnonzero(np.isin(probes[:, 0], repeated)):
            same = slice(first[i], np.searchsorted(high, probes[i, 0], side="right"))
            found[i] = bool(np.any(keys[order[same], 1] == probes[i, 1]))
    return found
