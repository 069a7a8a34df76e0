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
    """``transformers``, after ``torchvision`` (:func:`._torchvision_ops.import_torchvision`).

    ``transformers`` imports ``torchvision`` whenever it is installed, and one whose compiled
    operators do not load (PyPI's CUDA build beside a CPU torch) would take every model class down
    with it. Should torchvision still fail, it is hidden: text and audio models need none of it.
    """
    import importlib
    import sys

    from onnxplug_conformance.zoo.recipes._torchvision_ops import import_torchvision

    try:
        import_torchvision()
    except Exception:  # noqa: BLE001 - absent, or broken some other way (RuntimeError, OSError, ...)
        for name in [n for n in sys.modules if n == "torchvision" or n.startswith("torchvision.")]:
            del sys.modules[name]
        sys.modules["torchvision"] = None  # type: ignore[assignment]  # find_spec() -> None, import fails
        utils = sys.modules.get("transformers.utils.import_utils")
        if utils is not None:  # imported before: forget that it found torchvision
            utils.is_torchvision_available.cache_clear()
    return importlib.import_module("transformers")


def seeded(seed: int) -> None:
    """Seed torch so random weights are the same at every build."""
    import torch

    torch.manual_seed(seed)

