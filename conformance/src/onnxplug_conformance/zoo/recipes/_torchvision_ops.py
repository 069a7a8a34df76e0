"""Importing torchvision when its compiled operators do not load (a CUDA build beside a CPU torch).

torchvision registers fake kernels for ``torchvision::nms`` at import time and calls its compiled
``nms``/``roi_align`` in detection models, so :func:`import_torchvision` first defines those
operators with plain-torch CPU kernels, then tells torchvision they exist. Traced models still
record ``torchvision::nms``/``roi_align``, which the TorchScript exporter turns into ONNX's
NonMaxSuppression and RoiAlign. Nothing happens when the compiled operators load.
"""

from __future__ import annotations

from typing import Any

_LIBRARY: Any = None  # the torch.library.Library must outlive the call that defines it


def _nms(boxes: Any, scores: Any, iou_threshold: float) -> Any:
    import torch

    order = torch.argsort(scores, descending=True, stable=True)
    boxes = boxes[order]
    x1, y1, x2, y2 = boxes.unbind(1)
    areas = (x2 - x1).clamp(min=0) * (y2 - y1).clamp(min=0)
    suppressed = torch.zeros(len(order), dtype=torch.bool)
    keep = []
    for i in range(len(order)):
        if suppressed[i]:
            continue
        keep.append(i)
        w = (torch.minimum(x2[i], x2) - torch.maximum(x1[i], x1)).clamp(min=0)
        h = (torch.minimum(y2[i], y2) - torch.maximum(y1[i], y1)).clamp(min=0)
        inter = w * h
        suppressed |= inter / (areas[i] + areas - inter) > iou_threshold
    return order[torch.tensor(keep, dtype=torch.long)]


def _roi_align(features: Any, rois: Any, spatial_scale: float, pooled_height: int, pooled_width: int,
               sampling_ratio: int, aligned: bool) -> Any:
    from torchvision.ops.roi_align import _roi_align

    return _roi_align(features, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned)


# plain functions, not lambdas: torchvision scripts some of its callers while tracing
def _has_ops() -> bool:
    return True


def _assert_has_ops() -> None:
    pass


def _compiled_ops_load() -> bool:
    import importlib.util
    from pathlib import Path

    import torch

    spec = importlib.util.find_spec("torchvision")
    if spec is None or spec.origin is None:
        return False
    for candidate in sorted(Path(spec.origin).parent.glob("_C.*")):
        try:
            torch.ops.load_library(str(candidate))
            return True
        except (OSError, RuntimeError):
            pass
    return False


_SCHEMAS = {
    "nms": "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms": "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "roi_align": "roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
                 "SymInt pooled_width, int sampling_ratio, bool aligned) -> Tensor",
}
_KERNELS = {"nms": _nms, "roi_align": _roi_align}


def _defined(name: str) -> bool:
    import torch

    try:
        getattr(torch.ops.torchvision, name)
        return True
    except (AttributeError, RuntimeError):
        return False


def import_torchvision() -> Any:
    """``import torchvision``, with pure-torch ``nms`` and ``roi_align`` where the compiled ones are missing."""
    global _LIBRARY
    import sys

    import torch

    if _LIBRARY is None and not _compiled_ops_load():
        # a FRAGMENT, since other code may already have defined some of these operators
        lib = torch.library.Library("torchvision", "FRAGMENT")
        for name, schema in _SCHEMAS.items():
            if not _defined(name):
                lib.define(schema)
                if name in _KERNELS:
                    lib.impl(name, _KERNELS[name], "CPU")
        _LIBRARY = lib
        if "torchvision" in sys.modules and sys.modules["torchvision"] is None:
            del sys.modules["torchvision"]  # hidden by code that found it broken: it imports now
        import importlib

        # import_module: the attribute torchvision.ops.roi_align is the function, not the module
        extension, boxes, roi_align = (importlib.import_module(f"torchvision.{name}")
                                       for name in ("extension", "ops.boxes", "ops.roi_align"))

        # torchvision decided at import that its operators are missing; they exist now
        extension._has_ops = roi_align._has_ops = _has_ops
        boxes._assert_has_ops = roi_align._assert_has_ops = _assert_has_ops
    import torchvision

    return torchvision
