"""Output comparison with the semantics of onnx's backend runner.

Mirrors ``onnx.backend.test.runner.Runner.assert_similar_outputs`` (onnx 1.23): same number of
outputs, per tensor the same shape, strings compared exactly, everything else with the same dtype and
``np.testing.assert_allclose(actual, expected, rtol, atol)`` (NaN equals NaN; bfloat16 in float32
with ``rtol >= 2**-6``). Where the runner is loose or crashes this is stricter and says why: sequence
lengths, empty optionals and map keys must match, and the message names the output. The ml_dtypes
types onnx uses (bfloat16, float8, float4, int4, int2) are widened exactly to float32 / int64 first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

# ml_dtypes names (``np.dtype.name``) of narrow floats and integers onnx can produce.
_NARROW_FLOATS = frozenset(
    {
        "bfloat16",
        "float8_e4m3fn",
        "float8_e4m3fnuz",
        "float8_e5m2",
        "float8_e5m2fnuz",
        "float8_e8m0fnu",
        "float4_e2m1fn",
    }
)
_NARROW_INTS = frozenset({"int4", "uint4", "int2", "uint2"})
_BFLOAT16_MIN_RTOL = 2.0**-6


def compare_outputs(
    expected: Sequence[Any], actual: Sequence[Any], rtol: float, atol: float
) -> None:
    """Assert that ``actual`` outputs match ``expected`` ones; raise AssertionError if not.

    Both are sequences with one entry per graph output: numpy arrays, lists (ONNX
    sequences), dicts (maps) or ``None`` (empty optionals).
    """
    if isinstance(actual, (np.ndarray, Mapping)) or not isinstance(actual, Sequence):
        raise AssertionError(
            f"actual outputs must be a list with one entry per output, got {type(actual).__name__}"
        )
    if len(actual) != len(expected):
        raise AssertionError(f"expected {len(expected)} outputs, got {len(actual)}")
    for index, (ref, out) in enumerate(zip(expected, actual)):
        compare_value(ref, out, rtol, atol, where=f"output {index}")


def compare_value(expected: Any, actual: Any, rtol: float, atol: float, where: str) -> None:
    """Compare one output value (tensor, sequence, map or optional) recursively."""
    if expected is None or actual is None:
        if expected is not actual:
            raise AssertionError(
                f"{where}: expected {_describe(expected)}, got {_describe(actual)}"
            )
        return
    if isinstance(expected, (list, tuple)):
        _compare_sequence(expected, actual, rtol, atol, where)
    elif isinstance(expected, Mapping):
        _compare_map(expected, actual, rtol, atol, where)
    else:
        _compare_array(np.asarray(expected), actual, rtol, atol, where)


def _describe(value: Any) -> str:
    if value is None:
        return "None (empty optional)"
    if isinstance(value, np.ndarray):
        return f"array {value.dtype} {value.shape}"
    return type(value).__name__


def _compare_sequence(
    expected: Sequence[Any], actual: Any, rtol: float, atol: float, where: str
) -> None:
    if not isinstance(actual, (list, tuple)):
        raise AssertionError(f"{where}: expected a sequence (list), got {_describe(actual)}")
    if len(actual) != len(expected):
        raise AssertionError(
            f"{where}: expected a sequence of {len(expected)} items, got {len(actual)}"
        )
    for index, (ref, out) in enumerate(zip(expected, actual)):
        compare_value(ref, out, rtol, atol, where=f"{where}[{index}]")


def _compare_map(
    expected: Mapping[Any, Any], actual: Any, rtol: float, atol: float, where: str
) -> None:
    if not isinstance(actual, Mapping):
        raise AssertionError(f"{where}: expected a map (dict), got {_describe(actual)}")
    if set(actual) != set(expected):
        raise AssertionError(
            f"{where}: map keys differ: expected {sorted(expected)!r}, got {sorted(actual)!r}"
        )
    for key in expected:
        compare_value(expected[key], actual[key], rtol, atol, where=f"{where}[{key!r}]")


def _compare_array(
    expected: np.ndarray, actual: Any, rtol: float, atol: float, where: str
) -> None:
    if isinstance(actual, np.generic):
        actual = np.asarray(actual)
    if not isinstance(actual, np.ndarray):
        raise AssertionError(f"{where}: expected {_describe(expected)}, got {_describe(actual)}")
    if actual.shape != expected.shape:
        raise AssertionError(
            f"{where}: incorrect shape: expected {expected.shape}, got {actual.shape}"
        )
    if expected.dtype == object:  # strings: exact, whatever the actual string dtype
        _raise_from_numpy(where, np.testing.assert_array_equal, actual, expected)
        return
    if actual.dtype != expected.dtype:
        raise AssertionError(
            f"{where}: incorrect dtype: expected {expected.dtype}, got {actual.dtype}"
        )
    if expected.dtype.name == "bfloat16":
        rtol = max(rtol, _BFLOAT16_MIN_RTOL)
    _raise_from_numpy(
        where,
        np.testing.assert_allclose,
        widen(actual),
        widen(expected),
        rtol=rtol,
        atol=atol,
    )


def widen(array: np.ndarray) -> np.ndarray:
    """Exact float32 / int64 copy of an ml_dtypes array (numpy cannot promote those)."""
    if array.dtype.name in _NARROW_FLOATS:
        return array.astype(np.float32)
    if array.dtype.name in _NARROW_INTS:
        return array.astype(np.int64)
    return array


def _raise_from_numpy(where: str, check: Any, *args: Any, **kwargs: Any) -> None:
    try:
        check(*args, **kwargs)
    except AssertionError as error:
        raise AssertionError(f"{where}: values differ{str(error)}") from None
