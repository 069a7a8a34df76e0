"""com.microsoft Tokenizer against onnxruntime: tokenexp, separators (several, regular expressions),
characters, marks, mincharnum, [C] and [N, C] input, rows without tokens."""

from __future__ import annotations

import numpy as np
import pytest

from tests.numpy_provider.com_microsoft.ms_oracle import assert_ms_matches

TEXTS = np.array([["the quick, brown fox", "jumps over  the lazy dog."], ["a b", "éte déjà vu, ça va?"]], dtype=object)


@pytest.mark.parametrize("mark", [0, 1])
@pytest.mark.parametrize("mincharnum", [1, 3])
@pytest.mark.parametrize("tokenexp", ["[a-zA-Z0-9_]+", "\\w+", "[a-z]+|[a-z]+ [a-z]+", "a|ab|abc"])
def test_tokenexp(mark, mincharnum, tokenexp):
    assert_ms_matches("Tokenizer", {"x": TEXTS}, mark=mark, mincharnum=mincharnum, pad_value="#", tokenexp=tokenexp)


@pytest.mark.parametrize("separators", [[" "], [" ", ","], [",", "\\s+"], ["o", "e"], ["[,.?]", " +"]])
@pytest.mark.parametrize("mark", [0, 1])
@pytest.mark.parametrize("mincharnum", [1, 2])
def test_separators(separators, mark, mincharnum):
    assert_ms_matches("Tokenizer", {"x": TEXTS[0]}, mark=mark, mincharnum=mincharnum, pad_value="<pad>",
                      separators=separators)


@pytest.mark.parametrize("spec", [{"tokenexp": "."}, {"separators": [""]}])
@pytest.mark.parametrize("mark", [0, 1])
def test_characters(spec, mark):
    assert_ms_matches("Tokenizer", {"x": TEXTS}, mark=mark, mincharnum=1, pad_value="#", **spec)


def test_no_tokens_at_all():
    x = np.array(["  ", ",,"], dtype=object)
    assert_ms_matches("Tokenizer", {"x": x}, mark=0, mincharnum=1, pad_value="#", tokenexp="[a-z]+")
