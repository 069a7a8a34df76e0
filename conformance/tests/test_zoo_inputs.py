"""The zoo's seeded input generators: dtypes, shapes, ranges, determinism, refusals."""

from __future__ import annotations

import numpy as np
import pytest

from onnxplug.errors import OnnxplugError
from onnxplug_conformance.zoo.inputs import WORDS, feeds, generate
from onnxplug_conformance.zoo.spec import GENERATORS, InputSpec, ZooModel, ZooSpecError

SHAPES = ((2, 6), (3, 11))


def _model(*inputs: InputSpec, seed: int = 0) -> ZooModel:
    return ZooModel("m", "vision", "onnx", "r", "onnx.helper", 17, inputs, lambda path: None, seed=seed)


def _one(spec: InputSpec, shape_set: int = 0, seed: int = 0) -> np.ndarray:
    return feeds(_model(spec, seed=seed), shape_set)[spec.name]


CASES = {
    "normal": InputSpec("a", "float32", SHAPES, "normal", {"scale": 2.0}),
    "uniform": InputSpec("a", "float16", SHAPES, "uniform", {"low": -1.0, "high": 3.0}),
    "integers": InputSpec("a", "int32", SHAPES, "integers", {"low": 5, "high": 9}),
    "ones": InputSpec("a", "int64", SHAPES, "ones"),
    "mask": InputSpec("a", "bool", SHAPES, "mask"),
    "positions": InputSpec("a", "int64", SHAPES, "positions", {"offset": 2}),
    "choice": InputSpec("a", "object", SHAPES, "choice", {"values": ["x", "y", "z"]}),
    "text": InputSpec("a", "object", SHAPES, "text", {"min_words": 2, "max_words": 3}),
    "constant": InputSpec("a", "float64", SHAPES, "constant", {"value": 0.25}),
}


def test_every_generator_is_covered() -> None:
    assert set(CASES) == set(GENERATORS)


@pytest.mark.parametrize("kind", sorted(CASES))
@pytest.mark.parametrize("shape_set", [0, 1])
def test_dtype_and_shape_follow_the_spec(kind: str, shape_set: int) -> None:
    spec = CASES[kind]
    value = _one(spec, shape_set)
    assert isinstance(value, np.ndarray)
    assert value.dtype == np.dtype(spec.dtype)
    assert value.shape == spec.shapes[shape_set]
    if spec.dtype == "object":
        assert all(type(v) is str for v in value.flat)



@pytest.mark.parametrize("kind", ["constant", "integers", "normal"])
def test_a_0d_input_stays_0d(kind: str) -> None:
    # silero-vad's sample rate is a 0-d int64: a generator must not feed it as shape (1,)
    params = {"constant": {"value": 16000}, "integers": {"low": 0, "high": 4}, "normal": {}}[kind]
    spec = InputSpec("sr", "float32" if kind == "normal" else "int64", ((), ()), kind, params)
    value = _one(spec)
    assert value.shape == () and value.ndim == 0


@pytest.mark.parametrize("kind", sorted(CASES))
def test_same_seed_same_values_other_seed_or_shape_set_other_values(kind: str) -> None:
    spec = CASES[kind]
    np.testing.assert_array_equal(_one(spec), _one(spec))
    if kind in ("normal", "uniform", "integers", "choice", "text"):
        assert not np.array_equal(_one(spec, seed=0), _one(spec, seed=1))
        assert not np.array_equal(_one(spec, 0)[:2, :6], _one(spec, 1)[:2, :6])


def test_inputs_of_one_model_draw_from_separate_streams() -> None:
    a, b = (InputSpec(n, "float32", SHAPES, "normal") for n in ("a", "b"))
    values = feeds(_model(a, b), 0)
    assert list(values) == ["a", "b"]
    assert not np.array_equal(values["a"], values["b"])


def test_ranges() -> None:
    ids = _one(InputSpec("ids", "int64", ((64, 64), (1, 1)), "integers", {"high": 30522}))
    assert ids.min() >= 0 and ids.max() < 30522 and len(np.unique(ids)) > 1000
    low = _one(CASES["integers"])
    assert set(np.unique(low)) <= {5, 6, 7, 8}
    image = _one(InputSpec("img", "float32", ((2, 3, 16, 16), (1, 3, 8, 8)), "uniform"))
    assert image.min() >= 0.0 and image.max() < 1.0
    scaled = _one(InputSpec("x", "float32", ((10000,), (1,)), "normal", {"scale": 3.0, "mean": 1.0}))
    assert abs(scaled.mean() - 1.0) < 0.2 and 2.7 < scaled.std() < 3.3
    assert (_one(CASES["ones"]) == 1).all()
    assert (_one(CASES["constant"]) == 0.25).all()


def test_mask_pads_the_second_row() -> None:
    mask = _one(InputSpec("m", "int64", ((3, 8), (1, 4)), "mask"))
    np.testing.assert_array_equal(mask[0], np.ones(8))
    np.testing.assert_array_equal(mask[1], [1, 1, 1, 1, 1, 1, 0, 0])  # a quarter of 8 padded
    np.testing.assert_array_equal(mask[2], np.ones(8))
    single = _one(InputSpec("m", "int64", ((3, 8), (1, 4)), "mask"), 1)
    np.testing.assert_array_equal(single, np.ones((1, 4)))  # one row: nothing to pad
    padded = _one(InputSpec("m", "int64", ((2, 5), (1, 4)), "mask", {"pad": 3}))
    np.testing.assert_array_equal(padded[1], [1, 1, 0, 0, 0])


def test_positions_count_along_the_last_axis() -> None:
    np.testing.assert_array_equal(_one(CASES["positions"]), np.tile(np.arange(2, 8), (2, 1)))


def test_choice_and_text_draw_from_their_vocabularies() -> None:
    assert set(_one(CASES["choice"], 1).flat) <= {"x", "y", "z"}
    numbers = _one(InputSpec("n", "int64", SHAPES, "choice", {"values": [3, 7]}))
    assert numbers.dtype == np.int64 and set(numbers.flat) <= {3, 7}
    for text in _one(CASES["text"]).flat:
        words = text.split(" ")
        assert 2 <= len(words) <= 3 and set(words) <= set(WORDS)
    own = _one(InputSpec("t", "object", ((20,), (1,)), "text", {"vocabulary": ["alpha", "beta"], "max_words": 4}))
    assert {w for text in own.flat for w in text.split()} == {"alpha", "beta"}


@pytest.mark.parametrize("spec, match", [
    (InputSpec("a", "float32", SHAPES, "gaussian"), "unknown generator 'gaussian'"),
    (InputSpec("a", "int64", SHAPES, "integers"), "needs the parameter 'high'"),
    (InputSpec("a", "int64", SHAPES, "integers", {"low": 3, "high": 3}), "low < high"),
    (InputSpec("a", "int64", ((4,), (5,)), "mask"), "rank >= 2"),
    (InputSpec("a", "int64", SHAPES, "normal"), "gives floats, but the input is int64"),
    (InputSpec("a", "float32", SHAPES, "choice"), "needs the parameter 'values'"),
    (InputSpec("a", "float32", ((1, -1), (1, 2)), "normal"), "negative dimension"),
    (InputSpec("a", "floaty", SHAPES, "normal"), "unknown dtype 'floaty'"),
])
def test_unusable_specs_raise_a_typed_error_naming_the_model_and_input(spec: InputSpec, match: str) -> None:
    with pytest.raises(ZooSpecError, match=match) as info:
        feeds(_model(spec), 0)
    assert isinstance(info.value, OnnxplugError)
    assert "zoo model 'm', input 'a'" in str(info.value)


def test_shape_set_is_0_or_1() -> None:
    with pytest.raises(ZooSpecError, match="shape set must be 0 or 1"):
        feeds(_model(CASES["normal"]), 2)
    with pytest.raises(ZooSpecError, match="shape set"):
        generate(CASES["normal"], -1, np.random.default_rng(0))
