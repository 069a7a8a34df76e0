"""``python -m onnxplug.as_onnxruntime (SCRIPT | -m MODULE | -c CODE) [ARGS...]``: run a Python
program with ``import onnxruntime`` giving onnxplug (see :mod:`onnxplug.as_onnxruntime`)."""

from __future__ import annotations

import os
import subprocess
import sys

from onnxplug.as_onnxruntime import environment

USAGE = "usage: python -m onnxplug.as_onnxruntime (SCRIPT | -m MODULE | -c CODE) [ARGS...]"


def main(argv: list[str]) -> int:
    """Start ``python`` with the given arguments and the shim first on ``PYTHONPATH``."""
    if not argv or argv[0] in ("-h", "--help") or (argv[0] in ("-m", "-c") and len(argv) < 2):
        print(USAGE, file=sys.stderr)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    command = [sys.executable, *argv]
    env = environment()
    if os.name == "posix":
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(sys.executable, command, env)  # the program takes this process over (signals, exit code)
    return subprocess.call(command, env=env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
