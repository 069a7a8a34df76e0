"""The zoo layer's saved results: ``<zoo dir>/results/<provider>.json``, one file per provider.

A file is ``{"provider", "provider_version", "versions", "command", "models": {name: result}}``,
``result`` being :meth:`.runner.ZooResult.to_json` plus the ``sha256`` of the file it ran. A run of
a few models (``--only``) updates their entries and keeps the others, so the page of the whole zoo
can be assembled from runs of parts; the header fields are the latest run's.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, Mapping

from onnxplug_conformance.zoo.manifest import results_dir


def results_file(folder: Path, provider: str) -> Path:
    """Where ``provider``'s results are saved."""
    return results_dir(folder) / f"{provider}.json"


def save(folder: Path, provider: str, provider_version: str, versions: Mapping[str, str], command: str,
         models: Iterable[Mapping[str, Any]]) -> Path:
    """Merge ``models`` (result dicts with a ``name``) into ``provider``'s file and return its path."""
    path = results_file(folder, provider)
    try:
        previous = json.loads(path.read_text(encoding="utf-8")).get("models", {})
    except (FileNotFoundError, ValueError):
        previous = {}
    merged = {**previous, **{m["name"]: dict(m) for m in models}}
    document = {"provider": provider, "provider_version": provider_version, "versions": dict(versions),
                "command": command, "models": dict(sorted(merged.items()))}
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(partial, path)
    return path


def load_all(folder: Path) -> dict[str, dict[str, Any]]:
    """Every provider's saved results, by provider name (sorted)."""
    found: dict[str, dict[str, Any]] = {}
    directory = results_dir(folder)
    if not directory.is_dir():
        return found
    for path in sorted(directory.glob("*.json")):
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            continue
        if isinstance(document, dict) and isinstance(document.get("models"), dict):
            found[document.get("provider", path.stem)] = document
    return found
