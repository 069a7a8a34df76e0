"""How the zoo decides that a provider gave the oracle's answer.

Same number of outputs, each of the same kind (tensor, sequence, map). Tensors: same dtype and
shape, then floats within ``ATOL * max(1, max|expected|) + RTOL * |expected|`` element-wise (NaN
where the oracle has NaN, the same infinities); integers, booleans and strings equal, except that
integer outputs of a quantized model may differ by one (a rounding step). Sequences (lists) element
by element; maps (dicts, as ZipMap gives) with the same keys, their values by the rules above.

:func:`compare_outputs` returns the problems found (empty when everything matches), one line each,
naming the output and where it differs.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

RTOL = 1e-3
ATOL = 1e-4
#: How far an integer output of a quantized model may be from the oracle's.
QUANTIZED_INTEGER_SLACK = 1


def _is_float(dtype: np.dtype) -> bool:
    # ml_dtypes' bfloat16 and float8 types have kind "V"
    return dtype.kind in "fc" or (dtype.kind == "V" and dtype.name.startswith(("float", "bfloat")))


def _show(value: Any) -> str:
    """A value as Python writes it (``0.5``, ``3``, ``'red'``), not as numpy's repr does."""
    value = value.item() if hasattr(value, "item") else value
    return f"{value:.7g}" if isinstance(value, float) else repr(value)


def _compare_floats(got: np.ndarray, want: np.ndarray, where: str, rtol: float, atol: float) -> list[str]:
    complex_ = got.dtype.kind == "c" or want.dtype.kind == "c"
    g = got.astype(np.complex128 if complex_ else np.float64)
    w = want.astype(np.complex128 if complex_ else np.float64)
    finite = np.isfinite(w)
    scale = max(1.0, float(np.max(np.abs(w[finite]))) if finite.any() else 1.0)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(g - w)
        bad = np.asarray(~(diff <= atol * scale + rtol * np.abs(w)))  # 0-d stays an array
    # NaN matches NaN, an infinity only the same infinity (inf - -inf is within rtol * inf)
    bad &= ~(np.isnan(g) & np.isnan(w))
    infinite = np.isinf(w)
    bad[infinite] = g[infinite] != w[infinite]
    if not bad.any():
        return []
    worst = np.unravel_index(int(np.argmax(np.where(bad, np.nan_to_num(diff, nan=np.inf), -1))), w.shape)
    return [f"{where}: {int(bad.sum())} of {w.size} values differ beyond rtol {rtol:g}, atol {atol:g} x {scale:.3g}; "
            f"worst at {tuple(int(i) for i in worst)}: got {_show(g[worst])}, expected {_show(w[worst])}"]


def _compare_exact(got: np.ndarray, want: np.ndarray, where: str, slack: int) -> list[str]:
    if slack and got.dtype.kind in "iu":
        diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
        bad = diff > slack
        rule = f"by more than {slack}"
    else:
        bad = np.asarray(got != want, dtype=bool).reshape(want.shape)
        rule = "(exact)"
    if not bad.any():
        return []
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    return [f"{where}: {int(bad.sum())} of {want.size} values differ {rule}; first at {first}: "
            f"got {_show(got[first])}, expected {_show(want[first])}"]


def _compare_tensor(got: Any, want: np.ndarray, where: str, quantized: bool, rtol: float, atol: float) -> list[str]:
    if not isinstance(got, np.ndarray):
        if isinstance(got, (list, tuple, dict)):
            return [f"{where}: got a {type(got).__name__}, expected a tensor"]
        got = np.asarray(got)
    if got.dtype != want.dtype:
        return [f"{where}: dtype {got.dtype}, expected {want.dtype}"]
    if got.shape != want.shape:
        return [f"{where}: shape {got.shape}, expected {want.shape}"]
    if _is_float(want.dtype):
        return _compare_floats(got, want, where, rtol, atol)
    return _compare_exact(got, want, where, QUANTIZED_INTEGER_SLACK if quantized else 0)


def compare_value(got: Any, want: Any, where: str, *, quantized: bool = False,
                  rtol: float = RTOL, atol: float = ATOL) -> list[str]:
    """Problems between one output value and the oracle's (tensor, sequence, map or scalar)."""
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return [f"{where}: got a {type(got).__name__}, expected a map"]
        if set(got) != set(want):
            missing, extra = sorted(map(repr, set(want) - set(got))), sorted(map(repr, set(got) - set(want)))
            return [f"{where}: map keys differ (missing {', '.join(missing) or 'none'}; "
                    f"extra {', '.join(extra) or 'none'})"]
        problems: list[str] = []
        for key in want:
            problems += compare_value(got[key], want[key], f"{where}[{key!r}]", quantized=quantized,
                                      rtol=rtol, atol=atol)
        return problems
    if isinstance(want, (list, tuple)):
        if not isinstance(got, (list, tuple)):
            return [f"{where}: got a {type(got).__name__}, expected a sequence"]
        if len(got) != len(want):
            return [f"{where}: sequence of {len(got)}, expected {len(want)}"]
        problems = []
        for index, (g, w) in enumerate(zip(got, want)):
            problems += compare_value(g, w, f"{where}[{index}]", quantized=quantized, rtol=rtol, atol=atol)
        return problems
    if isinstance(want, np.ndarray):
        return _compare_tensor(got, want, where, quantized, rtol, atol)
    # a Python scalar (a map's value): compare as 0-d arrays of the oracle's kind
    want_array = np.asarray(want)
    got_array = np.asarray(got)
    if _is_float(want_array.dtype):
        if not _is_float(got_array.dtype):
            return [f"{where}: got {got!r}, expected a float"]
        return _compare_floats(got_array, want_array, where, rtol, atol)
    if got_array.dtype.kind != want_array.dtype.kind:
        return [f"{where}: got {type(got).__name__} {got!r}, expected {type(want).__name__} {want!r}"]
    return _compare_exact(got_array, want_array, where, QUANTIZED_INTEGER_SLACK if quantized else 0)


def compare_outputs(actual: Sequence[Any], expected: Sequence[Any], names: Sequence[str] | None = None, *,
                    quantized: bool = False, rtol: float = RTOL, atol: float = ATOL) -> list[str]:
    """Problems between a run's outputs and the oracle's; empty when they match."""
    if len(actual) != len(expected):
        return [f"{len(actual)} outputs, expected {len(expected)}"]
    names = list(names) if names is not None else [str(i) for i in range(len(expected))]
    problems: list[str] = []
    for name, got, want in zip(names, actual, expected):
        problems += compare_value(got, want, f"output {name!r}", quantized=quantized, rtol=rtol, atol=atol)
    return problems
