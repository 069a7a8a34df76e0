"""Exporting a torch module to ONNX with either of torch's exporters, with dynamic axes."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence


def export(module: Any, args: tuple[Any, ...], path: Path, *, input_names: Sequence[str],
           output_names: Sequence[str], dynamic_axes: Mapping[str, Mapping[int, str]],
           opset: int, exporter: str = "torchscript", kwargs: Mapping[str, Any] | None = None) -> None:
    """Export ``module(*args)`` to ``path``: ``exporter`` is ``"torchscript"`` (``dynamo=False``) or
    ``"dynamo"`` (``torch.export`` + onnxscript). Weights are kept inside the file."""
    import torch

    module = module.eval()
    with torch.no_grad():
        if exporter == "torchscript":
            torch.onnx.export(module, args, str(path), input_names=list(input_names),
                              output_names=list(output_names), dynamic_axes={k: dict(v) for k, v in dynamic_axes.items()},
                              opset_version=opset, dynamo=False, kwargs=dict(kwargs or {}))
        elif exporter == "dynamo":
            program = torch.onnx.export(module, args, kwargs=dict(kwargs or {}), input_names=list(input_names),
                                        output_names=list(output_names),
                                        dynamic_axes={k: dict(v) for k, v in dynamic_axes.items()},
                                        opset_version=opset, dynamo=True, external_data=False)
            program.save(str(path), external_data=False)
        else:
            raise ValueError(f"unknown exporter {exporter!r}")


def import_transformers() -> Any:
    """``transformers``, importable even where ``torchvision`` is not.

    ``transformers`` imports ``torchvision`` whenever it is installed; a wheel built for another torch
    (PyPI's CUDA build beside a CPU torch) fails in its own import and takes every model class down
    with it. Text and audio models need none of it, so a broken one is hidden from the process.
    """
    import importlib
    import sys

    try:
        importlib.import_module("torchvision")
    except Exception:  # noqa: BLE001 - any failure of a broken install (RuntimeError, OSError, ...)
        for name in [n for n in sys.modules if n == "torchvision" or n.startswith("torchvision.")]:
            del sys.modules[name]
        sys.modules["torchvision"] = None  # type: ignore[assignment]  # find_spec() -> None, import fails
    return importlib.import_module("transformers")


def seeded(seed: int) -> None:
    """Seed torch so random weights are the same at every build."""
    import torch

    torch.manual_seed(seed)


_TORCHVISION_LIBRARY = []  # keeps the Library object alive: its definitions last as long as it does


def ensure_torchvision_importable() -> None:
    """Let ``import transformers`` / ``import torchvision`` work beside a CPU torch whose torchvision
    wheel's C++ operators do not load: torchvision registers fake kernels for ``torchvision::nms``
    and ``qnms`` at import, which fails unless the operators exist. Defines them with pure-Python
    CPU kernels (greedy NMS) when they are missing; a no-op when torchvision's own library loaded."""
    import torch

    try:
        torch.ops.torchvision.nms
        return
    except (AttributeError, RuntimeError):
        pass
    lib = torch.library.Library("torchvision", "DEF")
    lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")

    def nms(dets, scores, iou_threshold):
        order = torch.argsort(scores, descending=True)
        keep = []
        x1, y1, x2, y2 = dets.unbind(1)
        areas = (x2 - x1).clamp(min=0) * (y2 - y1).clamp(min=0)
        suppressed = torch.zeros(len(dets), dtype=torch.bool)
        for i in order.tolist():
            if suppressed[i]:
                continue
            keep.append(i)
            w = (torch.minimum(x2[i], x2) - torch.maximum(x1[i], x1)).clamp(min=0)
            h = (torch.minimum(y2[i], y2) - torch.maximum(y1[i], y1)).clamp(min=0)
            inter = w * h
            suppressed |= inter / (areas[i] + areas - inter) > iou_threshold
        return torch.tensor(keep, dtype=torch.int64)

    lib.impl("nms", nms, "CPU")
    lib.impl("qnms", nms, "CPU")
    _TORCHVISION_LIBRARY.append(lib)
