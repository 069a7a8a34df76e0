"""Window and padding geometry of Conv, ConvTranspose and the pools, the one copy every provider uses.

Pure integer arithmetic on spatial sizes (no arrays, no device): ``auto_pad`` to pads, the number
of windows along an axis (dilations, strides, ``ceil_mode`` with ONNX's rule that the last window
starts inside the input or its head padding), a pool's full geometry, and ConvTranspose's output
size and pads, and Slice's clamping of start and end. Sizes are ints; attribute values may come as ONNX gives them (lists, ``bytes``
strings). Bad arguments raise :class:`ShapeError` naming the attribute.

``SAME_*`` padding is ``(ceil(in / stride) - 1) * stride + (kernel - 1) * dilation + 1 - in``,
clamped at 0, the odd element at the end (UPPER) or the beginning (LOWER); a provider that pads
as onnxruntime's pools do under ``SAME_*`` (undilated kernel) passes no dilations for the pads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from onnxplug.errors import OnnxplugError

__all__ = ["AUTO_PADS", "SAME_PADS", "ShapeError", "WindowGeometry", "conv_transpose_pads", "decode_auto_pad",
           "output_size", "per_axis", "resolve_pads", "same_pads", "slice_bounds", "window_geometry"]

AUTO_PADS = ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER")
SAME_PADS = ("SAME_UPPER", "SAME_LOWER")


class ShapeError(OnnxplugError, ValueError):
    """Shapes or shape attributes that do not fit together."""


def decode_auto_pad(value: Any) -> str:
    """``auto_pad`` as ``str`` (ONNX attributes may hold ``bytes``); ``None`` is ``NOTSET``."""
    if value is None:
        return "NOTSET"
    text = value.decode() if isinstance(value, bytes) else str(value)
    if text not in AUTO_PADS:
        raise ShapeError(f"auto_pad {text!r} is not one of {', '.join(AUTO_PADS)}")
    return text


def per_axis(name: str, value: Sequence[int] | None, rank: int, default: int) -> list[int]:
    """``value`` as ``rank`` ints, ``default`` for each when absent or empty."""
    if value is None or len(value) == 0:
        return [default] * rank
    if len(value) != rank:
        raise ShapeError(f"{name} {list(value)} has {len(value)} entries, expected {rank} (one per spatial axis)")
    return [int(v) for v in value]


def same_pads(auto_pad: str, size: int, kernel: int, stride: int = 1, dilation: int = 1) -> tuple[int, int]:
    """(begin, end) padding of one axis under ``SAME_UPPER``/``SAME_LOWER``."""
    out = -(-int(size) // stride)
    total = max(0, (out - 1) * stride + (kernel - 1) * dilation + 1 - int(size))
    small = total // 2
    return (small, total - small) if auto_pad == "SAME_UPPER" else (total - small, small)


def resolve_pads(auto_pad: Any, in_spatial: Sequence[int], kernel: Sequence[int],
                 strides: Sequence[int] | None = None, dilations: Sequence[int] | None = None,
                 pads: Sequence[int] | None = None) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The (begin, end) padding of each spatial axis for a Conv or pool, as ONNX defines ``auto_pad``.

    ``NOTSET`` uses ``pads`` (``[b1.., e1..]``, zeros when absent); ``VALID`` pads nothing;
    ``SAME_UPPER``/``SAME_LOWER`` pad so the output has ``ceil(in / stride)`` elements (see
    :func:`same_pads`).
    """
    auto_pad = decode_auto_pad(auto_pad)
    rank = len(kernel)
    if len(in_spatial) != rank:
        raise ShapeError(f"input has {len(in_spatial)} spatial axes but the kernel {list(kernel)} has {rank}")
    strides_ = per_axis("strides", strides, rank, 1)
    dilations_ = per_axis("dilations", dilations, rank, 1)
    if auto_pad == "NOTSET":
        flat = per_axis("pads", pads, 2 * rank, 0)
        return tuple(flat[:rank]), tuple(flat[rank:])
    if auto_pad == "VALID":
        return (0,) * rank, (0,) * rank
    found = [same_pads(auto_pad, size, int(k), s, d) for size, k, s, d in zip(in_spatial, kernel, strides_, dilations_)]
    return tuple(b for b, _ in found), tuple(e for _, e in found)


def output_size(size: int, kernel: int, stride: int = 1, dilation: int = 1, pad_begin: int = 0,
                pad_end: int = 0, ceil_mode: bool = False) -> int:
    """Windows along one axis of ``size`` padded by ``pad_begin`` and ``pad_end``, at least 0.

    With ``ceil_mode`` the count rounds up, but the last window must start inside the input or its
    head padding (ONNX, onnxruntime): one starting in the end padding is dropped."""
    room = size + pad_begin + pad_end - ((kernel - 1) * dilation + 1)
    out = (-(-room // stride) if ceil_mode else room // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + pad_begin:
        out -= 1
    return max(out, 0)


@dataclass(frozen=True)
class WindowGeometry:
    """Kernel, strides, dilations, pads and output size of a windowed op (pool or conv) on one input.

    ``extra`` is the tail padding beyond ``end`` that the last ``ceil_mode`` window reaches."""

    in_spatial: tuple[int, ...]
    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    begin: tuple[int, ...]
    end: tuple[int, ...]
    out: tuple[int, ...]
    extra: tuple[int, ...]

    def require_windows(self, what: str) -> None:
        """Raise :class:`ShapeError` naming ``what`` (the node) when an axis has no window: the
        window is larger than the padded input (onnxruntime fails such a pool too)."""
        for axis, (o, k, d, i, b, e) in enumerate(zip(self.out, self.kernel, self.dilations, self.in_spatial,
                                                      self.begin, self.end)):
            if o == 0 and (k - 1) * d + 1 > i + b + e:
                raise ShapeError(f"{what}: window {k} (dilation {d}) of spatial axis {axis} is larger than "
                                 f"the padded input size {i + b + e}")

    def tap_counts(self, include_pad: bool) -> Any:
        """Per output position (an int64 array of shape ``out``), how many taps fall in the input,
        or with ``include_pad`` in the input and its explicit pads (AveragePool's divisors)."""
        import numpy as np

        total = np.ones((), dtype=np.int64)
        for i in range(len(self.kernel)):
            pos = (np.arange(self.out[i])[:, None] * self.strides[i]
                   + np.arange(self.kernel[i])[None, :] * self.dilations[i] - self.begin[i])
            lo, hi = (-self.begin[i], self.in_spatial[i] + self.end[i]) if include_pad else (0, self.in_spatial[i])
            total = total[..., None] * ((pos >= lo) & (pos < hi)).sum(axis=1)
        return total


def window_geometry(in_spatial: Sequence[int], kernel: Sequence[int], strides: Sequence[int] | None = None,
                    dilations: Sequence[int] | None = None, auto_pad: Any = "NOTSET",
                    pads: Sequence[int] | None = None, ceil_mode: bool = False,
                    same_dilated: bool = True) -> WindowGeometry:
    """The geometry of a pool (or conv) window over ``in_spatial``.

    Under ``SAME_*`` the output has ``ceil(in / stride)`` elements whatever ``ceil_mode``; with
    ``same_dilated=False`` the SAME pads come from the undilated kernel (the numpy and CuPy pools;
    onnxruntime's pools pad so)."""
    auto_pad = decode_auto_pad(auto_pad)
    rank = len(kernel)
    kernel_ = [int(k) for k in kernel]
    strides_ = per_axis("strides", strides, rank, 1)
    dilations_ = per_axis("dilations", dilations, rank, 1)
    sizes = [int(i) for i in in_spatial]
    begin, end = resolve_pads(auto_pad, sizes, kernel_, strides_, dilations_ if same_dilated else None, pads)
    if auto_pad in SAME_PADS:
        out = [-(-i // s) for i, s in zip(sizes, strides_)]
    else:
        out = [output_size(i, k, s, d, b, e, bool(ceil_mode))
               for i, k, s, d, b, e in zip(sizes, kernel_, strides_, dilations_, begin, end)]
    extra = [max(0, (o - 1) * s + (k - 1) * d + 1 - (i + b + e))
             for o, s, k, d, i, b, e in zip(out, strides_, kernel_, dilations_, sizes, begin, end)]
    return WindowGeometry(tuple(sizes), tuple(kernel_), tuple(strides_), tuple(dilations_), tuple(begin),
                          tuple(end), tuple(out), tuple(extra))


def conv_transpose_pads(in_spatial: Sequence[int], kernel: Sequence[int], strides: Sequence[int] | None = None,
                        dilations: Sequence[int] | None = None, output_padding: Sequence[int] | None = None,
                        auto_pad: Any = "NOTSET", pads: Sequence[int] | None = None,
                        output_shape: Sequence[int] | None = None
                        ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(begin, end, output spatial size) of a ConvTranspose, by the ONNX spec's equations.

    The full (unpadded) output is ``stride * (in - 1) + output_padding + (kernel - 1) * dilation + 1``.
    ``output_shape`` (its trailing spatial entries), or under ``SAME_*`` without ``pads``
    ``in * stride``, fixes the output size and the padding is what is left, the odd element at the
    beginning except for ``SAME_UPPER``; otherwise ``pads`` (zeros when absent) crops the full output."""
    auto_pad = decode_auto_pad(auto_pad)
    rank = len(kernel)
    strides_ = per_axis("strides", strides, rank, 1)
    dilations_ = per_axis("dilations", dilations, rank, 1)
    adj = [int(a) for a in (output_padding or [0] * rank)][:rank]
    full = [s * (int(i) - 1) + a + (int(k) - 1) * d + 1
            for s, i, a, k, d in zip(strides_, in_spatial, adj, kernel, dilations_)]
    if output_shape is not None or (pads is None and auto_pad in SAME_PADS):
        out = [int(o) for o in output_shape][-rank:] if output_shape is not None else \
            [int(i) * s for i, s in zip(in_spatial, strides_)]
        total = [f - o for f, o in zip(full, out)]
        begin = [t // 2 if auto_pad == "SAME_UPPER" else t - t // 2 for t in total]
        end = [t - b for t, b in zip(total, begin)]
    else:
        flat = per_axis("pads", pads, 2 * rank, 0)
        begin, end = flat[:rank], flat[rank:]
        out = [f - b - e for f, b, e in zip(full, begin, end)]
    return tuple(begin), tuple(end), tuple(out)


def slice_bounds(start: int, end: int, step: int, dim: int) -> slice:
    """ONNX Slice's ``start``/``end`` on an axis of ``dim`` elements, clamped as the spec says, as a
    Python slice (whose negative bounds would mean something else). ``step`` is not 0."""
    start = start + dim if start < 0 else start
    end = end + dim if end < 0 else end
    if step > 0:
        return slice(min(max(start, 0), dim), min(max(end, 0), dim), step)
    start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
    return slice(start, None if end < 0 else end, step)  # end -1 means "through index 0"
