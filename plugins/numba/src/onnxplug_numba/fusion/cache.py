"""The on-disk home of generated kernels: one module file per distinct source.

numba's ``cache=True`` needs a real source file: it stores machine code in ``__pycache__`` beside
it, keyed by the file's path and modification time. Files are named by the hash of their source
and written once (atomically), so a second process finds both the module and its machine code.

What makes two kernels' machine code differ is all in that hash or the folder: the loop itself, the
dtypes and loop kinds (header comments), the ``@njit`` flags (fastmath, error_model), the version of
the inlined helpers (header comment), and the numba/Python versions (folder name). The generated
source names no tensor or node (see ``codegen``), so one module serves every chain computing the
same thing, in this process (``_loaded``) and on disk.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
import threading
from pathlib import Path
from types import ModuleType

import numba

CACHE_ENV_VAR = "ONNXPLUG_NUMBA_CACHE_DIR"

_loaded: dict[str, ModuleType] = {}
_lock = threading.Lock()


def cache_dir() -> Path:
    """``$ONNXPLUG_NUMBA_CACHE_DIR``, else ``~/.cache/onnxplug/numba``; one subfolder per
    numba and Python version, since machine code is not portable between them."""
    root = os.environ.get(CACHE_ENV_VAR)
    base = Path(root) if root else Path.home() / ".cache" / "onnxplug" / "numba"
    return base / f"numba-{numba.__version__}-py{sys.version_info[0]}{sys.version_info[1]}"


def module_for(source: str) -> ModuleType:
    """Import (writing first if needed) the generated module holding ``source``."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:24]
    with _lock:
        module = _loaded.get(digest)
        if module is not None:
            return module
        folder = cache_dir()
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"k_{digest}.py"
        if not path.is_file():
            # write-then-rename: another process never imports a half-written file, and an
            # existing file keeps its mtime, so numba's index for it stays valid
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".k_", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(source)
            os.replace(tmp, path)
        name = f"onnxplug_numba_generated.k_{digest}"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        _loaded[digest] = module
        return module
