"""The onnxplug model suite: realistic ONNX models built with onnx.helper (no torch needed).

Every model is opset 17 (default domain), IR version 8, float32, with a symbolic "batch"
dimension on its inputs and outputs. Weights come from np.random.default_rng(seed), so
`build(name, seed)` is deterministic.

Command line::

    python -m onnxplug.testing.model_suite --list
    python -m onnxplug.testing.model_suite resnet18 -o resnet18.onnx [--seed 0]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from types import ModuleType

import numpy as np
import onnx

from onnxplug.testing.models import (
    bilstm,
    gru,
    if_model,
    loop_model,
    mobilenetv2,
    resnet18,
    transformer_encoder,
)

_MODULES: dict[str, ModuleType] = {
    "resnet18": resnet18,
    "mobilenetv2": mobilenetv2,
    "transformer_encoder": transformer_encoder,
    "bilstm": bilstm,
    "gru": gru,
    "if_model": if_model,
    "loop_model": loop_model,
}

MODEL_NAMES: tuple[str, ...] = tuple(_MODULES)


def _module(name: str) -> ModuleType:
    """The module defining `name`, or ValueError listing the valid names."""
    try:
        return _MODULES[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown model {name!r}; valid names are: {', '.join(MODEL_NAMES)}"
        ) from None


def build(name: str, seed: int = 0) -> onnx.ModelProto:
    """Build model `name` with weights drawn from np.random.default_rng(seed)."""
    builder: Callable[[int], onnx.ModelProto] = _module(name).build
    return builder(seed)


def sample_inputs(name: str, batch: int = 1, seed: int = 0) -> dict[str, np.ndarray]:
    """Feeds for model `name`: a dict from input name to a float32 array with `batch` rows.

    For "if_model" the seed also picks the If branch: even -> then_branch, odd -> else_branch.
    """
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    feeds: Callable[[int, int], dict[str, np.ndarray]] = _module(name).sample_inputs
    return feeds(batch, seed)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: write one model to a file, or list the model names."""
    parser = argparse.ArgumentParser(
        prog="python -m onnxplug.testing.model_suite",
        description="Build a model of the onnxplug suite and save it as .onnx.",
    )
    parser.add_argument("name", nargs="?", help=f"one of: {', '.join(MODEL_NAMES)}")
    parser.add_argument("-o", "--output", help="path of the .onnx file to write")
    parser.add_argument("--seed", type=int, default=0, help="weight seed (default 0)")
    parser.add_argument("--list", action="store_true", help="print the model names and exit")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(MODEL_NAMES))
        return 0
    if args.name is None or args.output is None:
        parser.error("NAME and -o OUTPUT are required unless --list is given")
    if args.name not in MODEL_NAMES:
        parser.error(f"unknown model {args.name!r}; valid names are: {', '.join(MODEL_NAMES)}")
    onnx.save_model(build(args.name, args.seed), args.output)
    print(f"wrote {args.name} (seed {args.seed}) to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
