"""The ONNX tensor element types as numpy dtypes, and sample values of each for round trips."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from onnxplug.ir import numpy_dtype


def _onnx_dtypes() -> dict[str, np.dtype]:
    found: dict[str, np.dtype] = {}
    for name, elem_type in TensorProto.DataType.items():
        if elem_type == TensorProto.UNDEFINED:
            continue
        try:
            dtype = numpy_dtype(elem_type)
        except (KeyError, TypeError, ValueError):  # an element type numpy cannot hold
            continue
        found[dtype.name if dtype != np.dtype(object) else "string"] = dtype
    return found


#: Every ONNX element type numpy (with ml_dtypes) can hold, keyed by a stable name
#: (``float32``, ``bfloat16``, ``int4``, ``string``...); parameters of the dtype tests.
ONNX_DTYPES: dict[str, np.dtype] = _onnx_dtypes()


def dtype_key(dtype: np.dtype) -> str:
    """The :data:`ONNX_DTYPES` key of a dtype."""
    dtype = np.dtype(dtype)
    return "string" if dtype == np.dtype(object) else dtype.name


def sample_array(key: str, shape: tuple[int, ...] = (3, 5), seed: int = 0) -> np.ndarray:
    """A host array of the dtype ``key`` with varied values, edge cases first where they exist
    (NaN, infinities, -0.0, integer extremes), the rest random."""
    dtype = ONNX_DTYPES[key]
    size = int(np.prod(shape))
    rng = np.random.default_rng(seed)
    if key == "string":
        words = ["", "a", "ONNX", "naïve", "日本語", "with space", "x" * 40]
        return np.array([words[i % len(words)] + str(i // len(words) or "") for i in range(size)],
                        dtype=object).reshape(shape)
    if key == "bool":
        return (rng.random(size) > 0.5).reshape(shape)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        edges = [info.min, info.max, 0, 1]
        values = rng.integers(info.min, int(info.max) + 1, size, dtype=np.int64 if dtype.kind == "i" else np.uint64)
        values[: min(size, len(edges))] = edges[: min(size, len(edges))]
        return values.astype(dtype).reshape(shape)
    if dtype.kind == "c":
        values = rng.standard_normal(size) + 1j * rng.standard_normal(size)
        return values.astype(dtype).reshape(shape)
    if dtype.kind == "f" and dtype.itemsize >= 2 and key in ("float16", "float32", "float64"):
        edges = [np.nan, np.inf, -np.inf, -0.0, np.finfo(dtype).max, np.finfo(dtype).tiny]
    else:  # ml_dtypes narrow types (bfloat16, float8, int4...): narrow, maybe NaN-free ranges
        edges = [0.0, 1.0, -1.0, 0.5, 2.0]
    values = (rng.standard_normal(size) * 3).astype(np.float64)
    values[: min(size, len(edges))] = edges[: min(size, len(edges))]
    with np.errstate(all="ignore"):
        return values.astype(np.float32).astype(dtype).reshape(shape)


def same_array(actual: object, expected: np.ndarray) -> str:
    """Empty when ``actual`` is an ndarray equal to ``expected`` bit for bit (NaN payloads
    included), else what differs."""
    if not isinstance(actual, np.ndarray):
        return f"got {type(actual).__name__}, not a numpy array"
    if actual.dtype != expected.dtype:
        return f"dtype {actual.dtype}, expected {expected.dtype}"
    if actual.shape != expected.shape:
        return f"shape {actual.shape}, expected {expected.shape}"
    if expected.dtype == object:
        return "" if actual.tolist() == expected.tolist() else "string values differ"
    if np.ascontiguousarray(actual).tobytes() != np.ascontiguousarray(expected).tobytes():
        return "values differ"
    return ""
