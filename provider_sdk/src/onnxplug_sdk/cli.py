"""The ``onnxplug-sdk`` command: ``onnxplug-sdk new NAME [--dir D]`` writes a provider package."""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from onnxplug.errors import OnnxplugError


def _new_command(args: argparse.Namespace) -> int:
    from onnxplug_sdk.scaffold import check_name, new_provider

    names = check_name(args.name)
    files = new_provider(args.name, args.dir)
    root = files[0].parent
    print(f"wrote provider {names.name!r} ({names.distribution}, package {names.package}) to {root}:")
    for path in files:
        print(f"  {path.relative_to(root)}")
    print(f"next: pip install -e {root}  &&  onnxplug providers  &&  pytest {root / 'tests'}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``onnxplug-sdk``."""
    parser = argparse.ArgumentParser(prog="onnxplug-sdk", description="Tools for writing onnxplug providers.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("new", help="write a ready-to-install provider package")
    p.add_argument("name", help="the provider's short name, e.g. 'mygpu' (lower case, digits, '_')")
    p.add_argument("--dir", help="folder to write the package into (default: ./NAME); must be empty or new")
    p.set_defaults(handler=_new_command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; errors print one line and exit with status 2."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except OnnxplugError as e:
        print(f"onnxplug-sdk: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
