"""What every driver shares: the answer line, and which runtime served ``import onnxruntime``.

A driver prints one JSON line: ``{"runtime": ..., "answer": ..., "tolerance": {...}}``. ``runtime``
is read from the ``InferenceSession`` class that the client got, so the runner can tell that the
second run really went through onnxplug. ``tolerance`` maps a key of the answer to the absolute
difference its numbers may have (boxes in pixels, scores); other numbers compare almost exactly.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Mapping


def runtime() -> str:
    """``"onnxplug"`` when ``onnxruntime.InferenceSession`` is onnxplug's, else ``"onnxruntime"``."""
    ort = sys.modules.get("onnxruntime")
    if ort is None:
        return "none"
    session = getattr(ort, "InferenceSession", None)
    mro = getattr(session, "__mro__", ())
    return "onnxplug" if any(c.__module__.split(".")[0] == "onnxplug" for c in mro) else "onnxruntime"


def rounded(value: Any, digits: int = 4) -> Any:
    """``value`` with numpy scalars and arrays turned into Python numbers and lists, floats rounded."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, float):
        return round(value, digits)
    if isinstance(value, (list, tuple)):
        return [rounded(v, digits) for v in value]
    if isinstance(value, dict):
        return {str(k): rounded(v, digits) for k, v in value.items()}
    return value


def emit(answer: Any, tolerance: Mapping[str, float] | None = None) -> None:
    print(json.dumps({"runtime": runtime(), "answer": rounded(answer), "tolerance": dict(tolerance or {})},
                     sort_keys=True, ensure_ascii=False), flush=True)
