"""ONNX backend node test cases: deterministic generation, on-disk cache, loading.

The data is regenerated from the installed onnx package (see
:mod:`onnxplug_conformance.case_generation`) and cached in a folder keyed by the onnx
version.  The cache is built in a temporary sibling folder and renamed into place, so a
concurrent or interrupted run never leaves a half-written cache behind: the final folder
either does not exist or is complete.

Comparison helpers live in :mod:`.comparison` and :mod:`.random_ops` and are re-exported
here so callers need one import.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import ml_dtypes
import numpy as np
import onnx

from onnxplug_conformance.comparison import compare_outputs
from onnxplug_conformance.node_case import CaseDataError, DataSet, NodeCase, load_node_case
from onnxplug_conformance.random_ops import (
    RANDOM_OP_TYPES,
    compare_random_outputs,
    is_random_op_case,
)

__all__ = [
    "RANDOM_OP_TYPES",
    "CacheMismatchError",
    "CaseDataError",
    "CaseGenerationError",
    "DataSet",
    "NodeCase",
    "compare_outputs",
    "compare_random_outputs",
    "default_cache_dir",
    "ensure_cache",
    "generate_cases",
    "is_random_op_case",
    "load_cases",
    "read_manifest",
]

CACHE_ENV_VAR = "ONNXPLUG_CACHE_DIR"
MANIFEST_FILE = "manifest.json"
_PARTIAL_PREFIX = ".partial-"
_STALE_PARTIAL_SECONDS = 6 * 3600

# Fixed environment for the generator process: hash seed (set iteration order) and a
# single BLAS/OpenMP thread (reduction order of matmul-like numpy calls).
_DETERMINISTIC_ENV = {
    "PYTHONHASHSEED": "0",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}

log = logging.getLogger(__name__)


class CaseGenerationError(RuntimeError):
    """Raised when the onnx case generator process fails."""


class CacheMismatchError(RuntimeError):
    """Raised when an existing cache folder was generated for a different selection."""


def default_cache_dir() -> Path:
    """Cache folder for the installed onnx version.

    ``$ONNXPLUG_CACHE_DIR/node-tests/onnx-<version>`` when the variable is set, else
    ``~/.cache/onnxplug/node-tests/onnx-<version>``.
    """
    root = os.environ.get(CACHE_ENV_VAR)
    base = Path(root) if root else Path.home() / ".cache" / "onnxplug"
    return base / "node-tests" / f"onnx-{onnx.__version__}"


def _run_generator(output_dir: Path, op_type: str | None) -> int:
    """Run the generator in a fresh interpreter; returns the number of cases written."""
    command = [sys.executable, "-m", "onnxplug_conformance.case_generation"]
    command += ["--output", str(output_dir)]
    if op_type is not None:
        command += ["--op-type", op_type]
    env = {**os.environ, **_DETERMINISTIC_ENV}
    # The child must import this package the same way the parent did.
    package_root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise CaseGenerationError(
            f"case generator failed for op type {op_type!r} (exit {result.returncode}):\n"
            f"{result.stderr[-4000:]}"
        )
    return int(json.loads(result.stdout.strip().splitlines()[-1])["cases"])


def generate_cases(output_dir: Path, op_types: Sequence[str] | None = None) -> float:
    """Generate node cases into ``output_dir`` (no caching); returns seconds taken.

    ``op_types=None`` generates every case; otherwise one generator run per op type.
    """
    output_dir = Path(output_dir)
    started = time.perf_counter()
    selections: list[str | None] = [None] if op_types is None else list(op_types)
    count = sum(_run_generator(output_dir, op_type) for op_type in selections)
    seconds = time.perf_counter() - started
    manifest = {
        "onnx_version": onnx.__version__,
        "numpy_version": np.__version__,
        "ml_dtypes_version": ml_dtypes.__version__,
        "op_types": None if op_types is None else sorted(op_types),
        "case_count": count,
        "generation_seconds": round(seconds, 3),
    }
    # Written last: a folder with a manifest is a finished generation.
    (output_dir / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2, sort_keys=True))
    return seconds


def read_manifest(cache_dir: Path) -> dict:
    """The manifest of a finished generation (onnx version, case count, timing)."""
    path = Path(cache_dir) / MANIFEST_FILE
    if not path.is_file():
        raise CaseDataError(f"{cache_dir}: no {MANIFEST_FILE}; not a finished case cache")
    return json.loads(path.read_text())


def _remove_stale_partials(parent: Path) -> None:
    """Delete temp folders left by interrupted generations (old enough to be dead)."""
    now = time.time()
    for path in parent.glob(f"{_PARTIAL_PREFIX}*"):
        try:
            if now - path.stat().st_mtime > _STALE_PARTIAL_SECONDS:
                shutil.rmtree(path, ignore_errors=True)
        except FileNotFoundError:
            pass


def _check_selection(cache_dir: Path, op_types: Sequence[str] | None) -> None:
    wanted = None if op_types is None else sorted(op_types)
    found = read_manifest(cache_dir).get("op_types")
    if found != wanted:
        raise CacheMismatchError(
            f"{cache_dir} holds cases for op types {found!r}, requested {wanted!r}; "
            "use another cache folder"
        )


def ensure_cache(cache_dir: Path | None = None, op_types: Sequence[str] | None = None) -> Path:
    """Return a complete case cache folder, generating it atomically if missing."""
    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    if cache_dir.exists():
        _check_selection(cache_dir, op_types)
        return cache_dir
    parent = cache_dir.parent
    parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_partials(parent)
    partial = Path(tempfile.mkdtemp(prefix=f"{_PARTIAL_PREFIX}{cache_dir.name}-", dir=parent))
    partial.chmod(0o755)  # mkdtemp makes it private; the cache is a normal shared folder
    try:
        seconds = generate_cases(partial, op_types)
        try:
            partial.rename(cache_dir)
        except OSError:
            if not cache_dir.exists():  # a real failure, not a lost race
                raise
            log.info("another process finished %s first; using its cache", cache_dir)
        else:
            log.info("generated ONNX node test cases in %.1f s into %s", seconds, cache_dir)
    finally:
        if partial.exists():
            shutil.rmtree(partial, ignore_errors=True)
    _check_selection(cache_dir, op_types)
    return cache_dir


def load_cases(
    cache_dir: Path | None = None, op_types: Sequence[str] | None = None
) -> list[NodeCase]:
    """Load every cached node case (generating the cache first if needed), sorted by name.

    ``cache_dir`` is the onnx-version folder itself (default :func:`default_cache_dir`).
    ``op_types`` restricts generation to those op types; a cache made for one selection
    is not reused for another (:class:`CacheMismatchError`).
    """
    folder = ensure_cache(cache_dir, op_types)
    case_dirs = sorted(path for path in folder.iterdir() if path.is_dir())
    cases = [load_node_case(case_dir) for case_dir in case_dirs]
    expected = read_manifest(folder)["case_count"]
    if len(cases) != expected:
        raise CaseDataError(f"{folder}: manifest lists {expected} cases, found {len(cases)}")
    return cases
