"""Seeded feeds of a zoo model at one of its two shape sets.

Every value comes from ``numpy.random.default_rng((model.seed, shape_set, input_index))``, so a
model's feeds are the same on every machine and at every run, each input has its own stream, and
the two shape sets differ. Arrays have the spec's dtype exactly; strings are object arrays of
``str``. A spec that cannot be honoured (unknown generator, missing ``high``, a mask of rank < 2)
raises :class:`~onnxplug_conformance.zoo.spec.ZooSpecError` naming the model and the input.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from onnxplug_conformance.zoo.spec import GENERATORS, InputSpec, ZooModel, ZooSpecError

#: Words of the ``text`` generator: plain English, so tokenisers and TF-IDF vocabularies meet
#: both known and unknown words.
WORDS = ("the", "a", "model", "runs", "on", "every", "provider", "fast", "slow", "cat", "dog", "house",
         "red", "green", "blue", "data", "graph", "node", "tensor", "value", "good", "bad", "is", "not",
         "and", "or", "with", "from", "to", "of", "city", "river", "music", "paper", "light", "night")


def _dtype(spec: InputSpec, where: str) -> np.dtype:
    try:
        return np.dtype(spec.dtype)
    except TypeError:
        raise ZooSpecError(f"{where}: unknown dtype {spec.dtype!r}") from None


def _param(params: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in params:
        raise ZooSpecError(f"{where}: generator needs the parameter {key!r}")
    return params[key]


def generate(spec: InputSpec, shape_set: int, rng: np.random.Generator, where: str = "") -> np.ndarray:
    """The values of one input at ``spec.shapes[shape_set]``."""
    where = where or f"input {spec.name!r}"
    if shape_set not in (0, 1):
        raise ZooSpecError(f"{where}: shape set must be 0 or 1, not {shape_set!r}")
    if len(spec.shapes) != 2:
        raise ZooSpecError(f"{where}: needs exactly two shape sets, has {len(spec.shapes)}")
    shape = tuple(int(d) for d in spec.shapes[shape_set])
    if any(d < 0 for d in shape):
        raise ZooSpecError(f"{where}: shape {shape} has a negative dimension")
    dtype = _dtype(spec, where)
    kind, p = spec.generator, spec.params
    if kind not in GENERATORS:
        raise ZooSpecError(f"{where}: unknown generator {kind!r}; known: {', '.join(GENERATORS)}")
    if kind == "normal":
        _floats_only(dtype, kind, where)
        values = rng.standard_normal(shape) * float(p.get("scale", 1.0)) + float(p.get("mean", 0.0))
    elif kind == "uniform":
        _floats_only(dtype, kind, where)
        values = rng.uniform(float(p.get("low", 0.0)), float(p.get("high", 1.0)), shape)
    elif kind == "integers":
        low, high = int(p.get("low", 0)), int(_param(p, "high", where))
        if high <= low:
            raise ZooSpecError(f"{where}: integers need low < high, got [{low}, {high})")
        values = rng.integers(low, high, shape)
    elif kind == "ones":
        values = np.ones(shape)
    elif kind == "mask":
        values = _mask(shape, p, where)
    elif kind == "positions":
        if not shape:
            raise ZooSpecError(f"{where}: positions need rank >= 1")
        values = np.broadcast_to(np.arange(shape[-1]) + int(p.get("offset", 0)), shape)
    elif kind == "choice":
        choices = list(_param(p, "values", where))
        if not choices:
            raise ZooSpecError(f"{where}: choice needs at least one value")
        picks = rng.integers(0, len(choices), shape)
        values = np.empty(shape, dtype=object)
        values.flat[:] = [choices[i] for i in picks.flat] if picks.size else []
    elif kind == "text":
        low, high = int(p.get("min_words", 1)), int(p.get("max_words", 6))
        words = tuple(str(w) for w in p.get("vocabulary", WORDS))
        if not words or not 0 <= low <= high:
            raise ZooSpecError(f"{where}: text needs a vocabulary and 0 <= min_words <= max_words")
        values = np.empty(shape, dtype=object)
        counts = rng.integers(low, high + 1, shape)
        values.flat[:] = [" ".join(words[i] for i in rng.integers(0, len(words), n)) for n in counts.flat] \
            if counts.size else []
    else:  # constant
        values = np.full(shape, _param(p, "value", where), dtype=object if dtype == object else None)
    if dtype == object:
        out = np.empty(shape, dtype=object)
        out.flat[:] = [str(v) for v in np.asarray(values, dtype=object).flat] if out.size else []
        return out
    return np.asarray(values).astype(dtype, order="C")  # ascontiguousarray would make a 0-d input 1-d


def _floats_only(dtype: np.dtype, kind: str, where: str) -> None:
    if dtype.kind not in "fc":
        raise ZooSpecError(f"{where}: generator {kind!r} gives floats, but the input is {dtype}")


def _mask(shape: tuple[int, ...], params: Mapping[str, Any], where: str) -> np.ndarray:
    """Ones, with the last ``pad`` positions of axis 1 zero on row 1 (a shorter, padded sequence)."""
    if len(shape) < 2:
        raise ZooSpecError(f"{where}: mask needs rank >= 2, shape is {shape}")
    values = np.ones(shape)
    length = shape[1]
    pad = int(params.get("pad", length // 4 if length > 1 else 0))
    if pad >= length and length:
        raise ZooSpecError(f"{where}: mask pad {pad} leaves no position of {length}")
    if shape[0] >= 2 and pad > 0:
        values[1, length - pad:] = 0
    return values


def feeds(model: ZooModel, shape_set: int) -> dict[str, np.ndarray]:
    """Every input of ``model`` at shape set ``shape_set`` (0 or 1), in the spec's order."""
    if shape_set not in (0, 1):
        raise ZooSpecError(f"zoo model {model.name!r}: shape set must be 0 or 1, not {shape_set!r}")
    out: dict[str, np.ndarray] = {}
    for index, spec in enumerate(model.inputs):
        rng = np.random.default_rng((int(model.seed), int(shape_set), index))
        out[spec.name] = generate(spec, shape_set, rng, f"zoo model {model.name!r}, input {spec.name!r}")
    return out
