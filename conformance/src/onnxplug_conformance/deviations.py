"""Deviations: a provider's expected failures, kept as data (test id -> reason), never as test edits.

A deviation file (TOML or JSON) has one table per layer (see :class:`Deviations`). Sources merge in a
fixed order, later ones winning for the same id (:func:`load_deviations`). Listed tests run as strict
expected failures: a listed test that passes fails the run, and an id that names no test of the run
fails it too, so a list cannot go stale.

``python -m onnxplug_conformance.deviations REPORT.json`` prints a TOML skeleton listing every
test that failed or errored in a report, with its failure as the first draft of the reason.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any, Iterable

LAYERS = ("contract", "node", "model", "zoo")
SHIPPED_DIR = Path(__file__).resolve().parent / "deviation_lists"


class DeviationFileError(ValueError):
    """A deviation file or mapping is malformed; the message names the file and the entry."""


@dataclass(frozen=True)
class Deviation:
    """One expected failure: why, and where that was written down."""

    reason: str
    source: str


@dataclass
class Deviations:
    """Expected failures by layer and test id. A file holds one table per layer::

        # deviation_lists/numpy.toml
        [node]                      # ONNX backend node tests, by case name
        test_foo_bar = "why it fails, and what would fix it"
        [model]                     # model-suite tests, by model name
        [contract]                  # contract tests, by test name with parameters
        "test_round_trip[bfloat16]" = "..."
        [zoo]                       # zoo models, by model name
        # expected to fail only where an optional module is missing
        test_baz = {reason = "needs Pillow", without = "PIL"}
    """

    entries: dict[str, dict[str, Deviation]] = field(default_factory=lambda: {layer: {} for layer in LAYERS})
    sources: list[str] = field(default_factory=list)

    def add(self, data: Mapping[str, Any], source: str) -> None:
        """Merge one file's or mapping's content; entries override earlier ones with the same id."""
        if not isinstance(data, Mapping):
            raise DeviationFileError(f"{source}: expected a table of layers, got {type(data).__name__}")
        for layer, table in data.items():
            if layer not in LAYERS:
                raise DeviationFileError(f"{source}: unknown section [{layer}]; sections are "
                                         f"{', '.join(LAYERS)}")
            if not isinstance(table, Mapping):
                raise DeviationFileError(f"{source}: [{layer}] must be a table of test id = reason")
            for test_id, reason in table.items():
                if isinstance(reason, Mapping):  # {reason = "...", without = "module"}
                    reason, without = reason.get("reason"), reason.get("without")
                    if not isinstance(without, str) or not without.strip():
                        raise DeviationFileError(f"{source}: [{layer}] {test_id!r}: a table entry needs "
                                                 f"'reason' and 'without' (a module name)")
                    if importlib.util.find_spec(without.strip()) is not None:
                        continue  # the test is expected to pass where the module is installed
                if not isinstance(reason, str) or not reason.strip():
                    raise DeviationFileError(f"{source}: [{layer}] {test_id!r} needs a non-empty reason string")
                self.entries[layer][str(test_id)] = Deviation(reason.strip(), source)
        self.sources.append(source)

    def lookup(self, layer: str, test_id: str) -> Deviation | None:
        """The deviation listed for a test, if any."""
        return self.entries.get(layer, {}).get(test_id)

    def unknown_ids(self, layer: str, known: Iterable[str]) -> list[str]:
        """Listed ids of ``layer`` that name none of the ``known`` tests (stale or mistyped)."""
        known_set = set(known)
        return sorted(i for i in self.entries.get(layer, {}) if i not in known_set)

    def count(self) -> int:
        """How many expected failures are listed, over all layers."""
        return sum(len(table) for table in self.entries.values())


def read_file(path: str | PathLike[str]) -> dict[str, Any]:
    """Parse a ``.toml`` or ``.json`` deviation file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise DeviationFileError(f"cannot read deviation file {path}: {e.strerror or e}") from None
    try:
        if path.suffix == ".json":
            return json.loads(text)
        if path.suffix == ".toml":
            return _toml_loads(text)
    except ValueError as e:  # json.JSONDecodeError and tomllib.TOMLDecodeError both are
        raise DeviationFileError(f"{path}: {e}") from None
    raise DeviationFileError(f"{path}: deviation files are .toml or .json")


def _toml_loads(text: str) -> dict[str, Any]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    return tomllib.loads(text)


def shipped_file(provider_name: str) -> Path | None:
    """The deviation file this package ships for ``provider_name``, if any."""
    for suffix in (".toml", ".json"):
        path = SHIPPED_DIR / f"{provider_name}{suffix}"
        if path.is_file():
            return path
    return None


def load_deviations(provider_name: str, provider_class: type | None = None,
                    extra_files: Iterable[str | PathLike[str]] = ()) -> Deviations:
    """Merge, in this order (later ones win for the same id): the list shipped with this package
    (``deviation_lists/<provider>.toml`` or ``.json``); the provider class's optional
    ``conformance_deviations`` attribute (a path to such a file, or a mapping of the same shape, so a
    provider package ships its own list); ``extra_files`` (the run's ``--deviations PATH``)."""
    deviations = Deviations()
    shipped = shipped_file(provider_name)
    if shipped is not None:  # named relative to the package, so reports read the same anywhere
        deviations.add(read_file(shipped), f"{__package__}/{SHIPPED_DIR.name}/{shipped.name}")
    own = getattr(provider_class, "conformance_deviations", None) if provider_class else None
    if own is not None:
        label = f"{provider_class.__module__}.{provider_class.__qualname__}.conformance_deviations"
        if isinstance(own, Mapping):
            deviations.add(own, label)
        elif isinstance(own, (str, PathLike)):
            deviations.add(read_file(own), str(own))
        else:
            raise DeviationFileError(f"{label} must be a path or a mapping, not {type(own).__name__}")
    for path in extra_files:
        deviations.add(read_file(path), str(path))
    return deviations


def skeleton_from_report(report: Mapping[str, Any]) -> str:
    """TOML listing every failed or errored test of a JSON report, its failure as the reason."""
    lines = [f"# Expected failures of provider {report.get('provider', '?')!r}: test id = reason.",
             "# Drafted from a report; replace each reason with why the test fails."]
    tests = report.get("tests", {})
    for layer in LAYERS:
        rows = [(t["id"], t.get("reason", "")) for t in tests.values()
                if t.get("layer") == layer and t.get("outcome") in ("fail", "error")]
        if not rows:
            continue
        lines += ["", f"[{layer}]"]
        for test_id, reason in sorted(rows):
            first = (reason.strip().splitlines() or ["fails"])[0][:300]
            lines.append(f"{json.dumps(test_id)} = {json.dumps(first)}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Print a deviation skeleton drafted from a JSON report."""
    parser = argparse.ArgumentParser(prog="python -m onnxplug_conformance.deviations",
                                     description="Draft a deviation file from a conformance report.")
    parser.add_argument("report", type=Path)
    args = parser.parse_args(argv)
    sys.stdout.write(skeleton_from_report(json.loads(args.report.read_text(encoding="utf-8"))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
