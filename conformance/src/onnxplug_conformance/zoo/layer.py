"""The ``zoo`` layer of a conformance run: which models it checks, how one is checked, what is saved.

One test per selected model (``--zoo-only``, ``--zoo-tier``; ids are model names). A model that is
not built is skipped with its build error (or the command that builds it) as the reason. A built
one runs through :func:`.runner.run_zoo_model`: an exception of the runtime is an ``error``
(:class:`ZooRunError`), a mismatch a ``fail``, and a match of which the provider ran no node is
"not claimed", as in the other layers. Every result is kept and, at the end of the run, merged into
``results/<provider>.json`` in the zoo folder.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any, Mapping

import pytest

from onnxplug_conformance.node_runner import NOT_CLAIMED
from onnxplug_conformance.zoo import manifest, results
from onnxplug_conformance.zoo.build import build_command
from onnxplug_conformance.zoo.registry import select
from onnxplug_conformance.zoo.runner import run_zoo_model
from onnxplug_conformance.zoo.spec import ZooModel

ONNXRUNTIME_MISSING = ("the zoo compares with onnxruntime, which is not installed "
                       "(pip install 'onnxplug-conformance[models]')")


class ZooRunError(RuntimeError):
    """The runtime raised while running a zoo model (the message is ``Type: first line``)."""


class ZooLayer:
    """The zoo models of one run on one provider, and their results."""

    def __init__(self, provider: str, options: Mapping[str, Any] | None = None, only: str | None = None,
                 tier: str | None = None, folder: Path | None = None) -> None:
        self.provider = provider
        self.options = dict(options or {})
        self.only, self.tier = only, tier
        self.folder = folder or manifest.zoo_dir()
        try:
            self.models: list[ZooModel] = select(only, tier)
        except KeyError as e:
            raise ValueError(str(e.args[0])) from None
        self.results: list[dict[str, Any]] = []

    @property
    def partial(self) -> bool:
        """Whether only part of the zoo was selected."""
        return bool(self.only or self.tier)

    @cached_property
    def entries(self) -> dict[str, dict[str, Any]]:
        """The cache folder's manifest, read once per run."""
        return manifest.load(self.folder)

    def check(self, model: ZooModel) -> None:
        """Run one model; skip, fail or raise as the module docstring says."""
        entry = self.entries.get(model.name)
        path = manifest.model_file(self.folder, model.name)
        if entry is not None and entry.get("status") == manifest.FAILED:
            pytest.skip(f"not built: {entry.get('error', '')}")
        if entry is None or entry.get("status") != manifest.BUILT or not path.is_file():
            pytest.skip(f"not built yet: {build_command([model.name])}")
        if model.oracle == "onnxruntime":
            pytest.importorskip("onnxruntime", reason=ONNXRUNTIME_MISSING)
        result = run_zoo_model(model, path, self.provider, self.options)
        result.error = result.error.replace(str(self.folder), "<zoo>")  # results read the same anywhere
        self.results.append({**result.to_json(), "sha256": entry.get("sha256", "")})
        if result.error:
            raise ZooRunError(result.error)
        if result.problems:
            raise AssertionError(f"{model.name} differs from {model.oracle}:\n" + "\n".join(result.problems))
        if not result.claimed:
            pytest.skip(f"{NOT_CLAIMED}: provider {self.provider!r} runs none of the {result.nodes} nodes "
                        f"of {model.name}")

    def command(self) -> str:
        """The command line that repeats this run."""
        parts = ["onnxplug conformance", self.provider, "--zoo"]
        if self.only:
            parts += ["--only", self.only]
        if self.tier:
            parts += ["--tier", self.tier]
        return " ".join(parts)

    def save(self, provider_version: str, versions: Mapping[str, str]) -> Path | None:
        """Merge this run's results into the provider's file; None when nothing ran."""
        if not self.results:
            return None
        return results.save(self.folder, self.provider, provider_version, versions, self.command(), self.results)
