"""The pytest plugin (entry point ``pytest11``): inert unless ``--provider`` is given.

Installed, it only adds its command-line options; its own test modules (``suite/``) are never
collected and it defines no fixture until a run asks for a provider::

    pytest --pyargs onnxplug_conformance --provider numpy [--provider-option K=V]
           [--conformance-json report.json] [--deviations FILE] [--conformance-layers node,model]

Then :class:`~onnxplug_conformance.run.ConformanceRun` runs the provider's cases with its deviations
and reports them. The option's registered name is ``--onnxplug-provider``; ``--provider`` is accepted
only on a command line that names this package, so no other project's ``--provider`` can clash.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

SUITE_DIR = Path(__file__).resolve().parent / "suite"
RUN_PLUGIN_NAME = "onnxplug-conformance-run"
DEFAULT_LAYERS = "contract,node,model"


PACKAGE = "onnxplug_conformance"


def pytest_addoption(parser: pytest.Parser) -> None:
    """The suite's options; they do nothing unless ``--provider`` is given."""
    group = parser.getgroup("onnxplug-conformance", "onnxplug conformance suite (inactive without --provider)")
    group.addoption("--onnxplug-provider", dest="onnxplug_provider", default=None, metavar="NAME",
                    help="run the conformance suite on this provider: an installed name or alias, "
                         "'null', or module:Class (spelled --provider with --pyargs onnxplug_conformance)")
    group.addoption("--provider-option", dest="onnxplug_provider_options", action="append", default=[],
                    metavar="KEY=VALUE", help="option for the provider under test (repeatable)")
    group.addoption("--conformance-json", dest="onnxplug_conformance_json", default=None, metavar="PATH",
                    help="where to write the JSON report (default ./conformance-<provider>.json)")
    group.addoption("--deviations", dest="onnxplug_deviations", action="append", default=[], metavar="FILE",
                    help="extra expected-failure list (.toml or .json; repeatable)")
    group.addoption("--conformance-layers", dest="onnxplug_layers", default=DEFAULT_LAYERS, metavar="LIST",
                    help=f"comma-separated layers to run (default {DEFAULT_LAYERS})")
    group.addoption("--zoo-only", dest="onnxplug_zoo_only", default=None, metavar="A,B",
                    help="zoo layer: only these comma-separated models (default: every model)")
    group.addoption("--zoo-tier", dest="onnxplug_zoo_tier", default=None, metavar="TIER",
                    help="zoo layer: only models of this tier (ci: the smallest of each family)")
    group.addoption("--conformance-table", dest="onnxplug_table", default="full",
                    choices=("full", "summary", "none"),
                    help="print the table with per-op rows (full), layers only (summary), or not at all")


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(args: list[str]) -> None:
    """Read ``--provider`` as ``--onnxplug-provider`` when the command line names this package."""
    if PACKAGE not in args and not any(a.startswith(f"{PACKAGE}.") for a in args):
        return
    args[:] = ["--onnxplug-provider" if a == "--provider"
               else "--onnxplug-provider=" + a.split("=", 1)[1] if a.startswith("--provider=") else a
               for a in args]


def _active(config: pytest.Config) -> bool:
    return bool(config.getoption("onnxplug_provider", None))


def pytest_configure(config: pytest.Config) -> None:
    """Register the run when a provider was asked for."""
    if not _active(config):
        return
    from onnxplug_conformance.provider_spec import ProviderSpecError
    from onnxplug_conformance.run import ConformanceRun

    try:
        run = ConformanceRun(config)
    except (ProviderSpecError, ValueError) as e:
        raise pytest.UsageError(f"onnxplug conformance: {e}") from None
    config.pluginmanager.register(run, RUN_PLUGIN_NAME)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> Any:
    """Keep the suite's own test modules out of every run that did not ask for a provider."""
    try:
        inside = collection_path.resolve().is_relative_to(SUITE_DIR)
    except OSError:
        return None
    if not inside:
        return None
    if not _active(config):
        return True
    run = config.pluginmanager.get_plugin(RUN_PLUGIN_NAME)
    return True if run is not None and run.skips_path(collection_path) else None
