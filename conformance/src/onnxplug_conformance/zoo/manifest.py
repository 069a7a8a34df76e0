"""Where the zoo lives on disk, and its manifest.

The cache folder is ``$ONNXPLUG_ZOO_DIR``, else ``$XDG_CACHE_HOME/onnxplug/zoo``, else
``~/.cache/onnxplug/zoo``. It holds ``models/<name>.onnx``, ``logs/<name>.log`` (a build's
output), ``results/<provider>.json`` (the zoo layer's results) and ``manifest.json``.

The manifest is ``{"format": 1, "models": {name: entry}}`` with one entry per model of the
registry, whose ``status`` is ``"built"``, ``"failed"`` (``error`` holds the exporter's error) or
``"not built"``. It is written with sorted keys and holds no timestamp, so a committed copy only
changes when a model does.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping

FORMAT = 1
MANIFEST_NAME = "manifest.json"
#: The committed copy, describing the whole corpus.
COMMITTED_MANIFEST = Path(__file__).resolve().parent / MANIFEST_NAME

BUILT, FAILED, NOT_BUILT = "built", "failed", "not built"


def zoo_dir() -> Path:
    """The zoo's cache folder (not created)."""
    explicit = os.environ.get("ONNXPLUG_ZOO_DIR")
    if explicit:
        return Path(explicit).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache).expanduser() / "onnxplug" / "zoo"


def model_file(folder: Path, name: str) -> Path:
    """Where model ``name`` is built."""
    return folder / "models" / f"{name}.onnx"


def results_dir(folder: Path) -> Path:
    """Where the zoo layer saves one JSON file of results per provider."""
    return folder / "results"


def load(folder: Path) -> dict[str, dict[str, Any]]:
    """The entries of ``folder``'s manifest by model name (empty when there is none yet)."""
    return load_file(folder / MANIFEST_NAME)


def load_file(path: Path) -> dict[str, dict[str, Any]]:
    """The entries of a manifest file (empty when the file does not exist)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("models"), dict):
        raise ValueError(f"{path}: not a zoo manifest of format {FORMAT}")
    return data["models"]


def dumps(entries: Mapping[str, Mapping[str, Any]]) -> str:
    """The manifest document: sorted keys, one level of indentation, a final newline."""
    return json.dumps({"format": FORMAT, "models": dict(entries)}, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def write_file(path: Path, entries: Mapping[str, Mapping[str, Any]]) -> None:
    """Write a manifest atomically (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(dumps(entries), encoding="utf-8")
    os.replace(partial, path)
