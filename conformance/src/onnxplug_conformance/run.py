"""One conformance run: the provider under test, its deviations, and the report of every outcome.

Registered by :mod:`.plugin` only when ``--provider`` is given. It marks listed deviations as
strict expected failures, classifies each test's outcome (see :mod:`.reporting`), prints the
table at the end and writes the JSON report.
"""

from __future__ import annotations

import platform
import time
from functools import cached_property
from pathlib import Path
from typing import Any, Generator

import pytest

from onnxplug_conformance.backend_cases import default_cache_dir
from onnxplug_conformance.case_labels import case_op
from onnxplug_conformance.deviations import LAYERS, Deviations, load_deviations
from onnxplug_conformance.node_case import NodeCase
from onnxplug_conformance.node_runner import NOT_CLAIMED
from onnxplug_conformance.plugin import SUITE_DIR
from onnxplug_conformance.provider_spec import ProviderUnderTest, resolve_provider
from onnxplug_conformance.reporting import ConformanceReport, TestRecord, summary_lines

#: Suite module -> layer.
MODULE_LAYERS = {"test_contract.py": "contract", "test_node_cases.py": "node", "test_models.py": "model",
                 "test_zoo.py": "zoo"}
_REASON_LIMIT = 1000


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {"python": platform.python_version()}
    for dist in ("onnxplug", "onnxplug-conformance", "onnx", "numpy", "onnxruntime"):
        try:
            found[dist] = version(dist)
        except PackageNotFoundError:
            continue
    return found


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return text.removeprefix("Skipped: ")


class ConformanceRun:
    """The state and hooks of a run with ``--provider``."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.provider: ProviderUnderTest = resolve_provider(config.getoption("onnxplug_provider"),
                                                            config.getoption("onnxplug_provider_options"))
        self.layers = {s.strip() for s in config.getoption("onnxplug_layers").split(",") if s.strip()}
        unknown = self.layers - set(LAYERS)
        if unknown:
            raise ValueError(f"--conformance-layers: unknown layer(s) {', '.join(sorted(unknown))}; "
                             f"choose from {', '.join(LAYERS)}")
        self.deviations: Deviations = load_deviations(self.provider.name, self.provider.cls,
                                                      config.getoption("onnxplug_deviations"))
        availability = self.provider.cls.availability()
        self.report = ConformanceReport(
            self.provider.name, self.provider.cls.version, dict(self.provider.options),
            bool(availability), availability.reason, _versions(),
            deviation_sources=list(self.deviations.sources))
        json_option = config.getoption("onnxplug_conformance_json")
        self.json_path = Path(json_option) if json_option else (
            Path(config.invocation_params.dir) / f"conformance-{self.provider.name}.json")
        self.zoo = None
        self.zoo_results_path: Path | None = None
        if "zoo" in self.layers:
            from onnxplug_conformance.zoo.layer import ZooLayer

            self.zoo = ZooLayer(self.provider.name, self.provider.options, config.getoption("onnxplug_zoo_only"),
                                config.getoption("onnxplug_zoo_tier"))
            if self.zoo.partial:
                self.report.complete = False
        self._items: dict[str, tuple[str, str, str]] = {}  # nodeid -> (layer, test id, op)
        self._started = time.perf_counter()
        self._cache_dir = str(default_cache_dir())  # kept out of reasons: reports read the same anywhere

    # --- for the suite's tests ------------------------------------------------------------------

    @cached_property
    def cases(self) -> list[NodeCase]:
        """The ONNX backend node cases (generated into the cache on first use)."""
        from onnxplug_conformance.contract.survey import node_cases

        return list(node_cases().values())  # loaded once, shared with the contract tests

    def require_available(self) -> None:
        """Skip the calling test when the provider cannot run here."""
        if not self.report.available:
            pytest.skip(f"provider {self.provider.name!r} is not available: {self.report.availability_reason}")

    def skips_path(self, path: Path) -> bool:
        """Whether a suite module belongs to a layer this run leaves out."""
        layer = MODULE_LAYERS.get(path.name)
        return layer is not None and layer not in self.layers

    # --- collection -------------------------------------------------------------------------------

    def _identify(self, item: pytest.Item) -> tuple[str, str, str] | None:
        path = Path(str(item.path)).resolve()
        if not path.is_relative_to(SUITE_DIR):
            return None
        layer = MODULE_LAYERS.get(path.name)
        if layer is None:
            return None
        params = getattr(getattr(item, "callspec", None), "params", {})
        if layer == "node":
            case = params.get("node_case")
            return (layer, case.name, case_op(case)) if isinstance(case, NodeCase) else None
        if layer == "model":
            return layer, params["model_name"], ""
        if layer == "zoo":
            model = params.get("zoo_model")
            return (layer, model.name, "") if model is not None else None
        return layer, item.name, ""

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Identify the suite's items and mark listed deviations as strict expected failures."""
        known: dict[str, set[str]] = {layer: set() for layer in LAYERS}
        for item in items:
            identity = self._identify(item)
            if identity is None:
                continue
            layer, test_id, _ = identity
            self._items[item.nodeid] = identity
            known[layer].add(test_id)
            deviation = self.deviations.lookup(layer, test_id)
            if deviation is not None:
                item.add_marker(pytest.mark.xfail(reason=f"deviation: {deviation.reason}", strict=True))
        if self.zoo is not None:  # a model left out by --zoo-only is no stale deviation
            from onnxplug_conformance.zoo.registry import all_models

            known["zoo"] |= {m.name for m in all_models()}
        for layer in LAYERS:
            if layer in self.layers:
                self.report.unknown_deviations += [f"{layer}:{i}" for i in
                                                   self.deviations.unknown_ids(layer, known[layer])]

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        """A run with deselected suite tests is partial (``-k``, ``--deselect``)."""
        if any(item.nodeid in self._items for item in items):
            self.report.complete = False
            for item in items:
                self._items.pop(item.nodeid, None)

    # --- outcomes ---------------------------------------------------------------------------------

    @staticmethod
    def _classify(report: pytest.TestReport, call: pytest.CallInfo[Any]) -> tuple[str, str] | None:
        if report.skipped:
            if hasattr(report, "wasxfail"):
                return "xfail", report.wasxfail
            reason = _skip_reason(report)
            return ("not-claimed" if reason.startswith(NOT_CLAIMED) else "skipped"), reason
        if report.failed:
            if call.excinfo is None:
                return "xpass", f"listed as a deviation but passed: {report.longrepr}"
            reason = call.excinfo.exconly()[:_REASON_LIMIT]
            if report.when != "call":
                return "error", f"{report.when}: {reason}"
            failed = call.excinfo.errisinstance((AssertionError, pytest.fail.Exception))
            return ("fail" if failed else "error"), reason
        return ("pass", "") if report.when == "call" else None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item,
                                  call: pytest.CallInfo[Any]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """Record the outcome of each phase of the suite's tests."""
        report = yield
        identity = self._items.get(item.nodeid)
        classified = self._classify(report, call) if identity is not None else None
        if classified is not None:
            classified = (classified[0], classified[1].replace(self._cache_dir, "<cache>"))
            layer, test_id, op = identity
            key = f"{layer}:{test_id}"
            if classified[0] == "not-claimed" and self.deviations.lookup(layer, test_id) is not None:
                # a listed failure the provider no longer runs: the listing is stale
                self.report.unknown_deviations.append(f"{key} (not claimed)")
            record = self.report.records.get(key)
            if record is None:
                self.report.records[key] = TestRecord(test_id, layer, classified[0], classified[1], op,
                                                      round(report.duration, 4))
            else:
                record.merge(classified[0], classified[1], round(report.duration, 4))
        return report

    # --- end of run -------------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Write the JSON report; stale deviations fail the run."""
        self.report.duration_s = time.perf_counter() - self._started
        self.json_path.parent.mkdir(parents=True, exist_ok=True)
        self.report.write_json(str(self.json_path))
        if self.zoo is not None:
            self.zoo_results_path = self.zoo.save(self.provider.cls.version, _versions())
        if self.report.unknown_deviations and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """Print the table."""
        mode = self.config.getoption("onnxplug_table")
        if mode == "none":
            return
        terminalreporter.write_sep("=", "onnxplug conformance")
        for line in summary_lines(self.report, per_op=mode == "full"):
            terminalreporter.write_line(line)
        if self.zoo is not None and self.zoo.results:
            from onnxplug_conformance.zoo.report import table_lines

            terminalreporter.write_line("")
            for line in table_lines(self.zoo.results):
                terminalreporter.write_line(line)
            if self.zoo_results_path is not None:
                terminalreporter.write_line(f"zoo results: {self.zoo_results_path}")
        terminalreporter.write_line(f"JSON report: {self.json_path}")
