"""The ``cupy`` provider's options: names, defaults, and parsing of the values users pass.

onnxruntime users pass provider options as strings (``{"device_id": "1"}``); Python users pass
ints and bools. Both are accepted; anything else is refused with a message naming the option.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from onnxplug_sdk import errors

#: Accepted options and their defaults (unknown keys are refused by the SDK's base class).
DEFAULT_OPTIONS: Mapping[str, Any] = {
    # Which CUDA device (as CuPy numbers them, i.e. after CUDA_VISIBLE_DEVICES).
    "device_id": 0,
    # Bytes the session's memory pool may hold; 0 shares CuPy's default pool, without a limit.
    "gpu_mem_limit": 0,
    # Compile chains of elementwise nodes into one kernel at session creation.
    "fuse_elementwise": True,
}

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


class CupyOptionError(errors.UnsupportedOptionError):
    """A ``cupy`` provider option has a value the provider cannot use."""


@dataclass(frozen=True)
class CupyOptions:
    """Parsed provider options."""

    device_id: int = 0
    gpu_mem_limit: int = 0
    fuse_elementwise: bool = True


def _integer(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool):
        raise CupyOptionError(f"provider 'cupy' option {name!r} expects an integer, got {value!r}")
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and value.strip().lstrip("+").isdigit():
        number = int(value.strip())
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    else:
        raise CupyOptionError(f"provider 'cupy' option {name!r} expects an integer, got {value!r}")
    if number < minimum:
        raise CupyOptionError(f"provider 'cupy' option {name!r} must be >= {minimum}, got {number}")
    return number


def _boolean(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    raise CupyOptionError(f"provider 'cupy' option {name!r} expects a boolean "
                          f"(True/False, '1'/'0', 'true'/'false'), got {value!r}")


def parse_options(raw: Mapping[str, Any]) -> CupyOptions:
    """Check and convert the option values (keys were checked against ``DEFAULT_OPTIONS``)."""
    merged = {**DEFAULT_OPTIONS, **raw}
    unknown = sorted(set(merged) - set(DEFAULT_OPTIONS))
    if unknown:
        raise CupyOptionError(f"provider 'cupy' does not support option(s) {', '.join(map(repr, unknown))} "
                              f"(supported: {', '.join(sorted(DEFAULT_OPTIONS))})")
    return CupyOptions(
        device_id=_integer("device_id", merged["device_id"], 0),
        gpu_mem_limit=_integer("gpu_mem_limit", merged["gpu_mem_limit"], 0),
        fuse_elementwise=_boolean("fuse_elementwise", merged["fuse_elementwise"]),
    )
