"""The seed of random ops that have no ``seed`` attribute (onnxruntime's ``set_seed``)."""

from __future__ import annotations

import operator
from onnxplug.errors import OptionValueError

_state: dict[str, int | None] = {"seed": None}


def set_seed(seed: int) -> None:
    """onnxruntime's ``set_seed``: random ops without a ``seed`` attribute draw from a generator
    seeded with ``seed`` from now on (until then, from the operating system's entropy)."""
    try:
        value = None if isinstance(seed, bool) else operator.index(seed)
    except TypeError:
        value = None
    if value is None or not -2 ** 63 <= value < 2 ** 63:
        raise OptionValueError(f"set_seed takes a 64-bit integer, not {seed!r}")
    _state["seed"] = value


def default_seed() -> int | None:
    """The seed :func:`set_seed` set, or None."""
    return _state["seed"]

