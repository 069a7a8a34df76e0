"""Element-type conversion with ONNX Cast semantics: strings, float8 saturation, float8e8m0 rounding."""

from __future__ import annotations

import ml_dtypes
import numpy as np
from onnx import TensorProto

from onnxplug.ir.types import numpy_dtype

#: The float8 types whose overflow saturates to +-max by default (``saturate=1``).
_SATURATING_FLOAT8 = frozenset(
    {TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E4M3FNUZ, TensorProto.FLOAT8E5M2, TensorProto.FLOAT8E5M2FNUZ})
_FLOAT8E8M0 = getattr(TensorProto, "FLOAT8E8M0", -1)
_E8M0_NAN = 0xFF
_E8M0_MAX = 0xFE


def cast_array(x: np.ndarray, to: int, saturate: bool = True, round_mode: str = "up") -> np.ndarray:
    """Convert ``x`` to the ONNX element type ``to`` (strings are object arrays of ``str``)."""
    if to == TensorProto.STRING:
        return x.copy() if x.dtype == object else _to_strings(x)
    target = numpy_dtype(to)
    if x.dtype == object:
        x = _parse_strings(x, target)
    if to == _FLOAT8E8M0:
        return _to_float8e8m0(x, saturate, round_mode)
    with np.errstate(all="ignore"):  # out-of-range float -> int is undefined in ONNX; no warnings
        if to in _SATURATING_FLOAT8 and saturate:
            if x.dtype.kind in "iub":  # go through float32 so large integers saturate too
                x = x.astype(np.float32)
            info = ml_dtypes.finfo(target)
            x = np.clip(x, x.dtype.type(float(info.min)), x.dtype.type(float(info.max)))
        return np.asarray(x.astype(target))


def _to_strings(x: np.ndarray) -> np.ndarray:
    """Numbers as onnxruntime writes them: ``%.8g`` floats with NaN/INF/-INF, integers, bools as 1/0."""
    if x.dtype == np.bool_:
        return np.where(x, "1", "0").astype(object)
    if x.dtype.kind in "iu":
        return x.astype(np.str_).astype(object)
    wide = x.astype(np.float64)  # exact for every narrower float type
    text = np.char.mod("%.8g", wide).astype(object)
    text[np.isnan(wide)] = "NaN"
    text[wide == np.inf] = "INF"
    text[wide == -np.inf] = "-INF"
    return text


def _parse_strings(x: np.ndarray, target: np.dtype) -> np.ndarray:
    """Parse numeric strings ("3.14", "1e-5", "+INF", "NaN"); integer targets accept "100.5" -> 100."""
    text = np.array([s.decode() if isinstance(s, bytes) else s for s in x.ravel()], dtype=object)
    text = text.reshape(x.shape)
    if target.kind in "iu":
        try:
            return text.astype(target)  # exact for large int64 values
        except (ValueError, OverflowError):
            pass
    if target == np.bool_:
        lowered = np.char.lower(text.astype(np.str_))
        words = (lowered == "true") | (lowered == "false")
        if words.all():
            return lowered == "true"
    return text.astype(np.float64)


def _to_float8e8m0(x: np.ndarray, saturate: bool, round_mode: str) -> np.ndarray:
    """float8e8m0 keeps only the float32 exponent; the mantissa decides the rounding."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32)
    exponent = ((bits >> 23) & 0xFF).astype(np.uint16)
    special = exponent == _E8M0_NAN  # NaN and +-inf
    if round_mode == "up":
        round_up = (bits & 0x7FFFFF) > 0
    elif round_mode == "nearest":
        guard = (bits & 0x400000) > 0
        rest = (bits & 0x3FFFFF) > 0
        round_up = guard & (rest | (exponent > 0))
    elif round_mode == "down":
        round_up = np.zeros(bits.shape, dtype=np.bool_)
    else:
        raise ValueError(f"Cast: unsupported round_mode {round_mode!r} (expected up, down or nearest)")
    round_up &= ~special
    if saturate:
        round_up &= exponent != _E8M0_MAX
    exponent = exponent + round_up
    out = np.where(special, _E8M0_NAN, exponent).astype(np.uint8)
    return out.view(ml_dtypes.float8_e8m0fnu)
