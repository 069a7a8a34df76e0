"""Run an unmodified onnxruntime client on onnxplug.

::

    python -m onnxplug.as_onnxruntime app.py [args]      # or: -m module [args], -c code
    onnxplug exec -- python app.py [args]                # any command; its Python children too

Both put :func:`shim_path` first on ``PYTHONPATH`` and start the program, so its subprocesses get
onnxplug too; the installed onnxruntime, if any, stays installed and unused. In-process, :func:`install`
does the same before anything imports onnxruntime. onnxruntime's own Python tools (:data:`TOOL_MODULES`)
are not provided: importing one raises :class:`~onnxplug.errors.UnsupportedModuleError` naming it.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

from onnxplug.errors import UnsupportedModuleError

#: onnxruntime's Python tools, which run on onnxruntime itself and are not provided (``onnxruntime.<name>``).
TOOL_MODULES = ("quantization", "transformers", "tools", "backend", "datasets", "training")


def shim_path() -> str:
    """The directory holding the ``onnxruntime`` package that stands for onnxplug: its modules
    ``onnxruntime``, ``onnxruntime.capi``, ``onnxruntime.capi._pybind_state``,
    ``onnxruntime.capi.onnxruntime_pybind11_state`` and
    ``onnxruntime.capi.onnxruntime_inference_collection`` are onnxplug's. ``onnxruntime.__file__``
    lies here, and ``onnxruntime.__version__`` is ``1.32.0+onnxplug.<version>`` (see :mod:`onnxplug.capi`)."""
    return str(Path(__file__).resolve().parent / "shim")


def environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """A copy of ``env`` (default ``os.environ``) with :func:`shim_path` first on ``PYTHONPATH``."""
    result = dict(os.environ if env is None else env)
    parts = [p for p in result.get("PYTHONPATH", "").split(os.pathsep) if p and p != shim_path()]
    result["PYTHONPATH"] = os.pathsep.join([shim_path(), *parts])
    return result


def install(subprocesses: bool = False) -> None:
    """Make ``import onnxruntime`` give onnxplug in this interpreter (and, with ``subprocesses``,
    in the Python subprocesses it starts later). Raises
    :class:`~onnxplug.errors.UnsupportedModuleError` when onnxruntime itself is already imported."""
    loaded = sys.modules.get("onnxruntime")
    if loaded is not None and not is_installed():
        raise UnsupportedModuleError(
            f"onnxruntime is already imported in this process (from {getattr(loaded, '__file__', '?')}); call "
            f"onnxplug.as_onnxruntime.install() before anything imports it, or run the program with "
            f"python -m onnxplug.as_onnxruntime")
    if shim_path() not in sys.path:
        sys.path.insert(0, shim_path())
        importlib.invalidate_caches()
    if subprocesses:
        os.environ["PYTHONPATH"] = environment()["PYTHONPATH"]


def is_installed() -> bool:
    """Whether ``onnxruntime`` in this interpreter is onnxplug's (imported already or not)."""
    loaded = sys.modules.get("onnxruntime")
    if loaded is not None:
        return str(getattr(loaded, "__file__", "")).startswith(shim_path())
    return shim_path() in sys.path


def refuse_module(module: str) -> None:
    """What importing one of onnxruntime's Python tools does under onnxplug."""
    raise UnsupportedModuleError(
        f"{module} is one of onnxruntime's own Python tools, which onnxplug does not provide (it runs "
        f"models; quantizing, converting and optimizing them is onnxruntime's work): run it with onnxruntime "
        f"itself, outside python -m onnxplug.as_onnxruntime")
