"""What a zoo model is: where it comes from, how it is built, and what it is fed.

A :class:`ZooModel` is data plus one ``build(path)`` callable that writes the ONNX file. Builders
import their heavy dependencies (torch, transformers, skl2onnx, ...) inside the function, so
listing the zoo needs none of them. Every model is fed at two shape sets (``shapes[0]`` and
``shapes[1]``), so dynamic axes run at two sizes; inputs are generated from a seed, never stored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from onnxplug.errors import OnnxplugError

#: How an input's values are drawn (see :mod:`.inputs`). Parameters go in :attr:`InputSpec.params`.
#: - ``normal``: standard normal floats (``scale`` multiplies);
#: - ``uniform``: floats in ``[low, high)`` (defaults 0, 1): images, audio;
#: - ``integers``: ints in ``[low, high)``: token ids (``high`` = vocabulary size), class ids;
#: - ``ones``: all ones (attention masks);
#: - ``mask``: ones with a zero tail of ``pad`` (default a quarter) positions of axis 1 on the second row
#:   (a padded batch; needs rank >= 2);
#: - ``positions``: ``arange`` along the last axis, broadcast (position ids), plus ``offset``;
#: - ``choice``: uniformly from ``values`` (strings or numbers);
#: - ``text``: strings of ``min_words``..``max_words`` random words from ``vocabulary`` (default: a small
#:   built-in one);
#: - ``constant``: filled with ``value``.
GENERATORS = ("normal", "uniform", "integers", "ones", "mask", "positions", "choice", "text", "constant")


@dataclass(frozen=True)
class InputSpec:
    """One graph input: its name, numpy dtype name, two concrete shapes and a value generator."""

    name: str
    dtype: str  # numpy dtype name: "float32", "int64", "object" (strings), "bool", ...
    shapes: tuple[tuple[int, ...], tuple[int, ...]]
    generator: str = "normal"
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ZooModel:
    """One model of the zoo.

    ``source`` names the project the model comes from with the version used (``"transformers 5.24.0"``
    is filled in at build time when ``source_package`` is set); ``licence`` is its licence where the
    file itself is redistributed (wheels). ``exporter`` is ``"torchscript"``, ``"dynamo"``,
    ``"skl2onnx"``, ``"onnxmltools"``, ``"onnxruntime-tools"`` or ``"wheel"``. ``quantized`` outputs may
    differ from the oracle by one unit. ``oracle`` is ``"onnxruntime"`` or ``"reference"`` (for models
    onnxruntime cannot run; say why in ``notes``). ``tier`` ``"ci"`` marks the smallest model of its
    family, the subset CI builds.
    """

    name: str
    family: str  # "transformers", "vision", "detection", "sklearn", "quantized", "ort-tools", "wheel"
    source_package: str  # the PyPI distribution it comes from ("transformers", "torchvision", ...)
    recipe: str  # one line: how it is built ("BertModel from BertConfig(hidden=64, layers=2)")
    exporter: str
    opset: int | None  # None: whatever the file declares (wheels)
    inputs: Sequence[InputSpec]
    build: Callable[[Path], None]  # writes the .onnx file at the given path
    licence: str = ""
    quantized: bool = False
    oracle: str = "onnxruntime"
    tier: str = "full"  # or "ci"
    notes: str = ""
    seed: int = 0
    source_version: str = ""  # the version used when it is not the installed one (wheels fetched by version)


class ZooSpecError(OnnxplugError, ValueError):
    """A zoo model's description cannot be used: unknown generator, missing parameter, bad shape set."""


class ZooBuildError(RuntimeError):
    """A recipe could not produce its model (the exporter's error is kept in the manifest)."""
