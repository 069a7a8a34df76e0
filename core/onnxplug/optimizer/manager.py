"""The pass manager: runs the passes of each level, lowest level first, until none changes the model.

As onnxruntime does, the levels run in stages: every basic pass until a fixed point, then the
extended passes, then the layout passes. After each pass that changed something the graph is
re-sorted and re-checked, so a faulty pass fails with :class:`PassError` naming it. At the end,
fused ops of the project's domain get function bodies so the model saves as portable ONNX.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from dataclasses import dataclass
from typing import Sequence

from onnxplug.errors import OnnxplugError
from onnxplug.ir import Model
from onnxplug.ir.validate import sort_and_check
from onnxplug.logs import get_logger
from onnxplug.optimizer.functions import attach_functions
from onnxplug.optimizer.pass_base import GraphPass, PassError, PassResult
from onnxplug.optimizer.rewrite import prune_value_info
from onnxplug.provider import ExecutionProvider

logger = get_logger("onnxplug.optimizer")

_registered: list[type[GraphPass]] | None = None
_lock = threading.Lock()


def registered_passes() -> list[type[GraphPass]]:
    """The built-in passes (modules under ``onnxplug.optimizer.passes``) plus those plugins register,
    sorted by (level, order, name)."""
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
        return sorted(_registered, key=lambda c: (int(c.level), c.order, c.__name__))


def reset_registered_passes() -> None:
    """Forget the pass list, so the next call asks plugins again (for tests that add passes)."""
    global _registered
    with _lock:
        _registered = None


@dataclass
class PassReport:
    """What one pass did over the whole optimization."""

    name: str
    runs: int
    changed: int
    counts: dict[str, int]


class PassManager:
    """Runs passes in order, repeating the sequence until a fixed point (at most ``max_rounds``)."""

    def __init__(self, passes: Sequence[GraphPass], max_rounds: int = 6) -> None:
        self.passes = list(passes)
        self.max_rounds = max_rounds

    def run(self, model: Model, providers: Sequence[ExecutionProvider]) -> list[PassReport]:
        """Optimize ``model`` in place and report per pass."""
        reports = {p.name: PassReport(p.name, 0, 0, {}) for p in self.passes}
        for _ in range(self.max_rounds):
            any_change = False
            for p in self.passes:
                result = _run_one(p, model, providers)
                report = reports[p.name]
                report.runs += 1
                if result.changed:
                    report.changed += 1
                    any_change = True
                for key, n in result.counts.items():
                    report.counts[key] = report.counts.get(key, 0) + n
            if not any_change:
                break
        return list(reports.values())


def _run_one(p: GraphPass, model: Model, providers: Sequence[ExecutionProvider]) -> PassResult:
    try:
        result = p.run(model, providers)
    except OnnxplugError:
        raise
    except Exception as e:
        raise PassError(f"model {model.source}: optimizer pass {p.name} failed: {type(e).__name__}: {e}") from e
    if result.changed:
        try:
            sort_and_check(model.source, model.graph)
        except OnnxplugError as e:
            raise PassError(f"optimizer pass {p.name} left an invalid graph: {e}") from e
    return result


def optimize_model(model: Model, level: int, providers: Sequence[ExecutionProvider]) -> list[PassReport]:
    """Run every registered pass whose level is at most ``level``, one level after another.

    Returns one report per pass, in the order the passes ran.
    """
    classes = [cls for cls in registered_passes() if int(cls.level) <= level]
    reports: list[PassReport] = []
    for stage in sorted({int(cls.level) for cls in classes}):
        passes = [cls() for cls in classes if int(cls.level) == stage]
        reports.extend(PassManager(passes).run(model, providers))
    if len(reports) > 0:  # later stages leave dead nodes behind (cancelled Transposes): sweep once
        from onnxplug.optimizer.passes.dead_node_elimination import DeadNodeElimination

        sweep = _run_one(DeadNodeElimination(), model, providers)
        for r in reports:
            if r.name == "DeadNodeElimination":
                for key, n in sweep.counts.items():
                    r.counts[key] = r.counts.get(key, 0) + n
    prune_value_info(model)
    for domain, version in model.graph.opsets.items():  # domains fused ops brought in
        model.opsets.setdefault(domain, version)
    attach_functions(model)
    for r in reports:
        logger.info("pass %s: changed %d time(s) %s", r.name, r.changed, r.counts)
    return reports
