"""The feeds of a command-line run: ``--input NAME=FILE.npy`` files, and random values from the
declared types for the other inputs (``--dim SYMBOL=SIZE`` sizes symbolic dimensions, default 1)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from onnxplug.errors import OnnxplugError


def model_feeds(engine: Any, inputs: Sequence[str] | None, dims: Sequence[str] | None,
                seed: int = 0) -> dict[str, np.ndarray]:
    """Every input of ``engine``'s model without a default value: from a file, else random."""
    feeds: dict[str, np.ndarray] = {}
    for item in inputs or []:
        name, _, path = item.partition("=")
        if not path:
            raise OnnxplugError(f"--input {item!r}: expected NAME=FILE.npy")
        try:
            feeds[name] = np.load(path, allow_pickle=False)
        except OSError as e:
            raise OnnxplugError(f"--input {name}: cannot read {path!r}: {e.strerror or e}") from None
    sizes = {}
    for d in dims or []:
        symbol, _, size = d.partition("=")
        if not size.isdigit():
            raise OnnxplugError(f"--dim {d!r}: expected SYMBOL=SIZE")
        sizes[symbol] = int(size)
    rng = np.random.default_rng(seed)
    for vi in engine.inputs:
        if vi.name not in feeds and vi.name not in engine.defaults:
            feeds[vi.name] = _random_feed(vi.type, rng, sizes)
    return feeds


def _random_feed(arg, rng: np.random.Generator, dims: dict[str, int]) -> np.ndarray:
    from onnxplug.ir import numpy_dtype
    from onnxplug.ir.types import ValueType

    t: ValueType | None = arg
    if t is None or t.kind != "tensor" or t.shape is None:
        raise OnnxplugError(f"cannot make a random value for an input of type "
                            f"{t.ort_string() if t else 'unknown'}; pass it with --input NAME=FILE.npy")
    shape = tuple(d if isinstance(d, int) else dims.get(str(d), 1) for d in t.shape)
    dtype = numpy_dtype(t.elem_type)
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if dtype.kind in "iu":
        return rng.integers(0, 10, shape).astype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) > 0.5
    raise OnnxplugError(f"cannot make a random {dtype} value; pass it with --input NAME=FILE.npy")
