"""The top-level ``onnxruntime`` module as onnxplug provides it: onnxplug's API, onnxruntime's
version attributes (:func:`onnxplug.capi.onnxruntime_version`), and stand-ins that raise
:class:`~onnxplug.errors.UnsupportedOptionError` for the names onnxplug refuses
(:mod:`onnxplug.ort_api_table`). The shim package's ``onnxruntime/__init__.py`` re-exports it.
"""

from __future__ import annotations

from typing import Any

from onnxplug import *  # noqa: F403
from onnxplug import __all__ as _onnxplug_all
from onnxplug import capi  # noqa: F401 - onnxruntime.capi
from onnxplug.capi import onnxruntime_version
from onnxplug.capi.onnxruntime_pybind11_state import get_version_string  # noqa: F401 - onnxruntime's version

__version__ = onnxruntime_version()
#: onnxruntime's module attributes that describe its build
version = __version__
package_name = "onnxplug"
cuda_version = ""
import_capi_exception = None
__author__ = "onnxplug, with onnxruntime's Python API"


def __getattr__(name: str) -> Any:
    from onnxplug.ort_api_table import refused_stand_in

    return refused_stand_in(name, "onnxruntime")


__all__ = sorted({*_onnxplug_all, "capi", "version", "package_name", "cuda_version", "import_capi_exception",
                  "get_version_string"} - {"__version__"})
