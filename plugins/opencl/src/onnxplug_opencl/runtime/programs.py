"""OpenCL C sources shipped in ``onnxplug_opencl/kernels`` and a per-context cache of built programs.

Sources are ``.cl`` files; generated kernels fill ``${...}`` fields of a ``.cl`` template
(``string.Template``) so that the OpenCL code stays in the kernel files, not in Python strings.
Programs are cached per context by the hash of their final source, build options and device.
Generated sources carry no node or tensor names (fixed kernel names), so identical computations
from different nodes or sessions share one build here and in the driver's on-disk cache (PoCL's).
"""

from __future__ import annotations

import hashlib
import re
import string
import threading
import warnings
from functools import lru_cache
from importlib import resources
from typing import Any, Sequence

from onnxplug_opencl.errors import OpenCLBuildError


_INCLUDE = re.compile(r'^#include "([\w.]+)"$', re.MULTILINE)


@lru_cache(maxsize=None)
def kernel_source(filename: str) -> str:
    """The text of ``kernels/<filename>`` from the installed package, with each ``#include "f"``
    line replaced by the text of ``kernels/f`` (programs are built from strings, not files)."""
    text = (resources.files("onnxplug_opencl") / "kernels" / filename).read_text(encoding="utf-8")
    return _INCLUDE.sub(lambda m: kernel_source(m.group(1)), text)


def render(filename: str, **fields: Any) -> str:
    """A ``.cl`` template with its ``${name}`` fields filled; a missing field raises KeyError."""
    return string.Template(kernel_source(filename)).substitute({k: str(v) for k, v in fields.items()})


class ProgramCache:
    """Built programs and their kernels for one context, keyed by source, options and device.

    ``name`` arguments are only for error messages: two requests with the same source and options
    get the same program whatever name they give.
    """

    def __init__(self, context: Any, device: Any) -> None:
        self.context = context
        self.device = device
        self._device_tag = _device_tag(device)
        self._programs: dict[str, Any] = {}
        self._kernels: dict[tuple[str, str], Any] = {}
        self._by_text: dict[tuple[str, tuple[str, ...], str], Any] = {}
        self._lock = threading.Lock()
        self.builds = 0  # how many programs were compiled (not found in the cache)
        self.hits = 0  # how many program requests were served from the cache

    @staticmethod
    def key(source: str, options: Sequence[str], device: str = "") -> str:
        """The cache key of a source built with ``options`` for the device described by ``device``."""
        return hashlib.sha256("\0".join((device, " ".join(options), source)).encode()).hexdigest()

    def program(self, name: str, source: str, options: Sequence[str] = ()) -> Any:
        """The built program; a build failure raises :class:`OpenCLBuildError` with the build log."""
        key = self.key(source, options, self._device_tag)
        with self._lock:
            found = self._programs.get(key)
            if found is not None:
                self.hits += 1
                return found
            program = self._build(name, source, list(options))
            self._programs[key] = program
            self.builds += 1
            return program

    def kernel(self, name: str, source: str, kernel_name: str, options: Sequence[str] = ()) -> Any:
        """One kernel of the program (the same ``cl.Kernel`` object on every call)."""
        import pyopencl as cl

        # Launches ask for their kernel every time: a dict keyed by the strings themselves (whose
        # hashes Python caches) answers repeat requests without hashing the source again.
        fast_key = (source, tuple(options), kernel_name)
        found = self._by_text.get(fast_key)
        if found is not None:
            self.hits += 1  # diagnostics only: a rare lost increment between threads is harmless
            return found
        key = self.key(source, options, self._device_tag)
        found = self._kernels.get((key, kernel_name))
        if found is not None:
            self.hits += 1
            self._by_text[fast_key] = found
            return found
        program = self.program(name, source, options)
        with self._lock:
            found = self._kernels.get((key, kernel_name))
            if found is None:
                found = cl.Kernel(program, kernel_name)
                self._kernels[(key, kernel_name)] = found
            self._by_text[fast_key] = found
            return found

    def _build(self, name: str, source: str, options: list[str]) -> Any:
        import pyopencl as cl

        program = cl.Program(self.context, source)
        try:
            with warnings.catch_warnings():  # compiler chatter on success is not the user's concern
                warnings.simplefilter("ignore", cl.CompilerWarning)
                return program.build(options=options)
        except cl.Error as e:
            try:
                log = program.get_build_info(self.device, cl.program_build_info.LOG)
            except cl.Error:
                log = ""
            raise OpenCLBuildError(name, self.device.name.strip(), " ".join(options), log or str(e)) from None


def _device_tag(device: Any) -> str:
    """Platform, device name and driver version: what a binary built for ``device`` depends on."""
    try:
        return "|".join(str(v).strip() for v in (device.platform.name, device.name, device.driver_version))
    except Exception:  # a stand-in device object without these attributes: fall back to identity
        return repr(device)
