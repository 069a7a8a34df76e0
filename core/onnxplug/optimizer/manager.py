"""The pass manager: runs the passes of the chosen level until none changes the model."""

from __future__ import annotations

import importlib
import logging
import pkgutil
import threading
from dataclasses import dataclass
from typing import Sequence

from onnxplug.ir import Model
from onnxplug.optimizer.pass_base import GraphPass, PassResult
from onnxplug.provider import ExecutionProvider

logger = logging.getLogger("onnxplug.optimizer")

_registered: list[type[GraphPass]] | None = None
_lock = threading.Lock()


def registered_passes() -> list[type[GraphPass]]:
    """The built-in passes (modules under ``onnxplug.optimizer.passes``) plus those plugins register."""
    global _registered
    with _lock:
        if _registered is None:
            found: list[type[GraphPass]] = []
            from onnxplug.optimizer import passes
            from onnxplug.plugins import get_catalog

            for info in sorted(pkgutil.iter_modules(passes.__path__), key=lambda i: i.name):
                module = importlib.import_module(f"{passes.__name__}.{info.name}")
                found.extend(getattr(module, "PASSES", ()))
            get_catalog().pm.hook.onnxplug_register_passes(register=found.append)
            _registered = found
        return list(_registered)


@dataclass
class PassReport:
    """What one pass did over the whole optimization."""

    name: str
    runs: int
    changed: int
    counts: dict[str, int]


class PassManager:
    """Runs passes in order, repeating the sequence until a fixed point (at most ``max_rounds``)."""

    def __init__(self, passes: Sequence[GraphPass], max_rounds: int = 5) -> None:
        self.passes = list(passes)
        self.max_rounds = max_rounds

    def run(self, model: Model, providers: Sequence[ExecutionProvider]) -> list[PassReport]:
        """Optimize ``model`` in place and report per pass."""
        reports = {p.name: PassReport(p.name, 0, 0, {}) for p in self.passes}
        for _ in range(self.max_rounds):
            any_change = False
            for p in self.passes:
                result: PassResult = p.run(model, providers)
                report = reports[p.name]
                report.runs += 1
                if result.changed:
                    report.changed += 1
                    any_change = True
                for key, n in result.counts.items():
                    report.counts[key] = report.counts.get(key, 0) + n
            if not any_change:
                break
        for r in reports.values():
            logger.info("pass %s: changed %d time(s) %s", r.name, r.changed, r.counts)
        return list(reports.values())


def optimize_model(model: Model, level: int, providers: Sequence[ExecutionProvider]) -> list[PassReport]:
    """Run every registered pass whose level is at most ``level``."""
    passes = [cls() for cls in registered_passes() if int(cls.level) <= level]
    return PassManager(passes).run(model, providers)
