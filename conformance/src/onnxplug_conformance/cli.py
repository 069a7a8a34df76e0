"""``onnxplug conformance NAME [--json report.json] [-k EXPR] [extra pytest args]``.

Runs ``pytest --pyargs onnxplug_conformance --provider NAME`` in this process with the suite's
own pytest configuration, so the project it is started from cannot change what it collects.
Options not listed below are passed to pytest (``-x``, ``-v``, ``--maxfail=3``...).

``--zoo`` runs the zoo layer alone (``--only``, ``--tier`` select models): models of the selection
never built are built first (``--no-build``: say the command instead), and ``--zoo-doc PATH``
writes the zoo's page from every provider's saved results afterwards.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from onnxplug_conformance.plugin import DEFAULT_LAYERS, SUITE_DIR

PLUGIN_MODULE = "onnxplug_conformance.plugin"


def build_parser() -> argparse.ArgumentParser:
    """Options of ``onnxplug conformance``."""
    parser = argparse.ArgumentParser(
        prog="onnxplug conformance",
        description="Run the onnxplug conformance suite (contract, ONNX node and model tests) on a provider.",
        epilog="Other options are passed to pytest.")
    parser.add_argument("provider", help="installed provider name or alias, 'null', or module:Class")
    parser.add_argument("--json", dest="json_path", metavar="PATH",
                        help="JSON report path (default ./conformance-<provider>.json)")
    parser.add_argument("-k", dest="keyword", metavar="EXPR", help="only tests matching this pytest -k expression")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="provider option (repeatable)")
    parser.add_argument("--deviations", action="append", default=[], metavar="FILE",
                        help="extra expected-failure list (.toml or .json; repeatable)")
    parser.add_argument("--layers", default=DEFAULT_LAYERS, metavar="LIST",
                        help=f"comma-separated layers (default {DEFAULT_LAYERS})")
    parser.add_argument("--table", choices=("full", "summary", "none"), default="full",
                        help="per-op rows (full), layer rows only (summary), or no table")
    zoo = parser.add_argument_group("zoo", "real models from other projects (layer 'zoo')")
    zoo.add_argument("--zoo", action="store_true", help="run only the zoo layer")
    zoo.add_argument("--only", metavar="A,B", help="zoo models to run (comma-separated; default all)")
    zoo.add_argument("--tier", metavar="TIER", help="only zoo models of this tier (ci: the smallest of each family)")
    zoo.add_argument("--no-build", action="store_true", help="do not build missing zoo models; say how instead")
    zoo.add_argument("--zoo-doc", metavar="PATH", help="write the zoo's markdown page here after the run")
    return parser


def pytest_args(args: argparse.Namespace, extra: Sequence[str]) -> list[str]:
    """The pytest command line for parsed ``onnxplug conformance`` options."""
    argv = ["--pyargs", "onnxplug_conformance", "-p", PLUGIN_MODULE, "-p", "no:cacheprovider",
            "-c", str(SUITE_DIR / "conformance.ini"), "--rootdir", str(Path.cwd()),
            "--onnxplug-provider", args.provider, "--conformance-layers", args.layers,
            "--conformance-table", args.table,
            *(["--zoo-only", args.only] if args.only else []), *(["--zoo-tier", args.tier] if args.tier else []),
            # this module imported the package before pytest could rewrite its asserts; the
            # suite's assertions carry their own messages, so the warning says nothing useful
            "-W", "ignore::pytest.PytestAssertRewriteWarning"]
    if args.json_path:
        argv += ["--conformance-json", args.json_path]
    if args.keyword:
        argv += ["-k", args.keyword]
    for item in args.option:
        argv += ["--provider-option", item]
    for path in args.deviations:
        argv += ["--deviations", path]
    if not any(a in ("-v", "-vv", "-q", "-qq") or a.startswith(("--verbose", "--quiet")) for a in extra):
        argv.append("-q")
    return argv + list(extra)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the suite; the exit code is pytest's (0 when every claimed test passed or was expected to fail)."""
    import pytest

    parser = build_parser()
    args, extra = parser.parse_known_args(list(sys.argv[1:] if argv is None else argv))
    if args.zoo:
        args.layers = "zoo"
        try:
            _prepare_zoo(args)
        except KeyError as e:
            parser.error(str(e.args[0]))
    elif args.only or args.tier or args.zoo_doc:
        parser.error("--only, --tier and --zoo-doc go with --zoo")
    code = int(pytest.main(pytest_args(args, extra)))
    if args.zoo_doc:
        from onnxplug_conformance.zoo.report import write

        print(f"zoo page: {write(Path(args.zoo_doc))}")
    return code


def _prepare_zoo(args: argparse.Namespace) -> None:
    """Build the selected zoo models never built nor tried (or print the command that would)."""
    from onnxplug_conformance.zoo.build import build_all, build_command, missing
    from onnxplug_conformance.zoo.manifest import zoo_dir
    from onnxplug_conformance.zoo.registry import select

    folder = zoo_dir()
    todo = missing(select(args.only, args.tier), folder)
    if not todo:
        return
    names = [m.name for m in todo]
    if args.no_build:
        print(f"{len(todo)} zoo model(s) not built (their tests skip); build them with: "
              f"{build_command(names if args.only else (), args.tier)}", flush=True)
        return
    print(f"building {len(todo)} zoo model(s) into {folder}", flush=True)
    build_all(todo, folder, progress=lambda line: print(line, flush=True))


if __name__ == "__main__":
    sys.exit(main())
