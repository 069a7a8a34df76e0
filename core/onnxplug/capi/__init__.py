"""onnxruntime's ``onnxruntime.capi`` package, for clients that import it.

``onnxruntime_pybind11_state`` (and ``_pybind_state``, which re-exports it) holds the names clients
take from onnxruntime's compiled module: its status exceptions (``Fail``, ``InvalidArgument``, ...
from :mod:`onnxplug.ort_status`, the bases of :mod:`onnxplug.errors`) and the top-level API;
``onnxruntime_inference_collection`` holds the Python classes (``InferenceSession``, ``IOBinding``,
``OrtValue``). Under ``python -m onnxplug.as_onnxruntime`` these modules are ``onnxruntime.capi.*``.
``__version__`` and ``get_version_string()`` read ``1.32.0+onnxplug.0.1.0``, a PEP 440 local version
of the mirrored onnxruntime release; ``onnxplug.__version__`` stays onnxplug's own.
"""

from __future__ import annotations

#: The onnxruntime release whose Python API onnxplug mirrors.
ONNXRUNTIME_API_VERSION = "1.32.0"


def onnxruntime_version() -> str:
    """The version reported to onnxruntime clients: ``<onnxruntime API version>+onnxplug.<onnxplug version>``."""
    from onnxplug import __version__

    return f"{ONNXRUNTIME_API_VERSION}+onnxplug.{__version__}"
