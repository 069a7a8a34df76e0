"""Whether CuPy can run here, asked of CuPy itself, and what devices it sees.

Nothing here raises: every failure becomes a reason string quoting CuPy's (or CUDA's) own error,
e.g. ``cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

INSTALL_HINT = ("install CuPy for your CUDA version: pip install 'onnxplug-cupy[cuda12]' "
                "(or [cuda13])")


@dataclass(frozen=True)
class ProbeResult:
    """What the probe found: available or not, the reason, and one line per device."""

    available: bool
    reason: str = ""
    devices: tuple[str, ...] = field(default_factory=tuple)


def _error_text(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0] if text else type(e).__name__


def import_cupy() -> tuple[Any | None, str]:
    """``(cupy, "")``, or ``(None, reason)`` when CuPy cannot be imported."""
    try:
        import cupy
    except ImportError as e:
        return None, f"CuPy is not installed ({_error_text(e)}); {INSTALL_HINT}"
    except Exception as e:  # a broken CuPy install raises other errors at import
        return None, f"CuPy failed to import: {type(e).__name__}: {_error_text(e)}"
    return cupy, ""


def probe(device_id: int | None = None) -> ProbeResult:
    """Ask CuPy how many CUDA devices there are (this loads the driver), then check NVRTC,
    which compiles this provider's kernels. ``device_id``, if given, must be one of them."""
    cupy, reason = import_cupy()
    if cupy is None:
        return ProbeResult(False, reason)
    try:
        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as e:  # cupy_backends.cuda.api.runtime.CUDARuntimeError and friends
        return ProbeResult(False, f"CuPy {cupy.__version__} cannot use CUDA: {_error_text(e)}")
    if count == 0:
        return ProbeResult(False, f"CuPy {cupy.__version__}: no CUDA device found")
    if device_id is not None and not 0 <= device_id < count:
        return ProbeResult(False, f"CuPy sees {count} CUDA device(s); device_id {device_id} does not exist")
    try:
        cupy.cuda.nvrtc.getVersion()
    except Exception as e:  # libnvrtc not found: kernels could not be compiled
        return ProbeResult(False, f"CuPy {cupy.__version__} cannot load NVRTC to compile kernels: "
                                  f"{_error_text(e)}; pip install 'onnxplug-cupy[cuda12-toolkit]' "
                                  "or install the CUDA toolkit")
    return ProbeResult(True, "", tuple(_describe(cupy, i) for i in range(count)))


def _describe(cupy: Any, index: int) -> str:
    try:
        props = cupy.cuda.runtime.getDeviceProperties(index)
        name = props.get("name", b"?")
        name = name.decode(errors="replace") if isinstance(name, bytes) else str(name)
        memory = int(props.get("totalGlobalMem", 0)) / 2**30
        runtime = cupy.cuda.runtime.runtimeGetVersion()
        return (f"cuda:{index} {name} ({memory:.1f} GiB, compute {props.get('major')}.{props.get('minor')}, "
                f"CUDA runtime {runtime // 1000}.{runtime % 1000 // 10}, CuPy {cupy.__version__})")
    except Exception as e:
        return f"cuda:{index} (properties unavailable: {_error_text(e)})"
