"""The numpy provider's kernel registry. Op modules (``ops/<domain>/op_*.py``, one package per domain:
ai_onnx, ai_onnx_ml, com_onnxplug, com_microsoft) register into it with ``@op(...)``."""

from __future__ import annotations

import importlib
import pkgutil

from onnxplug.kernel import KernelRegistry


def _load_ops(registry: KernelRegistry) -> None:
    from onnxplug.plugins import extend_registry
    from onnxplug.providers.numpy import ops

    for info in pkgutil.iter_modules(ops.__path__):
        if info.ispkg:  # one subpackage per domain
            package = importlib.import_module(f"{ops.__name__}.{info.name}")
            for sub in pkgutil.iter_modules(package.__path__):
                if sub.name.startswith("op_"):
                    importlib.import_module(f"{package.__name__}.{sub.name}")
    extend_registry("numpy", registry)


REGISTRY = KernelRegistry("numpy", loader=_load_ops)
op = REGISTRY.kernel
"""Class decorator: ``@op("Relu")`` or ``@op("Clip", 1, 11, domain="")`` registers a kernel."""
