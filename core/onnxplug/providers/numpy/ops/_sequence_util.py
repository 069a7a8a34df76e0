"""Helpers for the sequence kernels: positions in a sequence, checked like onnxruntime does."""

from __future__ import annotations

from typing import Any

import numpy as np


def position(pos: np.ndarray | None, length: int, default: int, *, inclusive_end: bool = False) -> int:
    """A non-negative index from a scalar ``pos`` tensor (negative counts from the end).

    ``inclusive_end`` accepts ``length`` itself (SequenceInsert may append at the end).
    """
    if pos is None:
        return default
    p = int(np.asarray(pos).reshape(-1)[0])
    upper = length if inclusive_end else length - 1
    if not -length <= p <= upper:
        raise IndexError(f"position {p} is out of range for a sequence of length {length}")
    return p + length if p < 0 else p


def as_sequence(value: Any, what: str) -> list[Any]:
    """``value`` as a Python list, refusing tensors passed where a sequence is expected."""
    if not isinstance(value, list):
        raise TypeError(f"{what} must be a sequence (list), got {type(value).__name__}")
    return value
