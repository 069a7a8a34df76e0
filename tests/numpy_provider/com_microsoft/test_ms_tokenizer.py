"""com.microsoft Tokenizer against onnxruntime: tokenexp, separators (several, regular expressions),
characters, marks, mincharnum, [C] and [N, C] input, rows without tokens; without the regex
package, a KernelError naming it. The matching tests need regex (tox's core env installs it)."""

from __future__ import annotations

import builtins
import importlib.util

import numpy as np
import pytest

from onnxplug.errors import KernelError
from tests.numpy_provider.com_microsoft.ms_oracle import assert_ms_matches, ms_model, ours_run

TEXTS = np.array([["the quick, brown fox", "jumps over  the lazy dog."], ["a b", "éte déjà vu, ça va?"]], dtype=object)


needs_regex = pytest.mark.skipif(not importlib.util.find_spec("regex"), reason="the regex package is not installed")


@needs_regex
@pytest.mark.parametrize("mark", [0, 1])
@pytest.mark.parametrize("mincharnum", [1, 3])
@pytest.mark.parametrize("tokenexp", ["[a-zA-Z0-9_]+", "\\w+", "[a-z]+|[a-z]+ [a-z]+", "a|ab|abc"])
def test_tokenexp(mark, mincharnum, tokenexp):
    assert_ms_matches("Tokenizer", {"x": TEXTS}, mark=mark, mincharnum=mincharnum, pad_value="#", tokenexp=tokenexp)


@needs_regex
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


@needs_regex
def test_no_tokens_at_all():
    x = np.array(["  ", ",,"], dtype=object)
    assert_ms_matches("Tokenizer", {"x": x}, mark=0, mincharnum=1, pad_value="#", tokenexp="[a-z]+")


def test_without_regex_the_node_fails_naming_the_package(monkeypatch):
    real_import = builtins.__import__

    def no_regex(name, *args, **kwargs):
        if name == "regex":
            raise ImportError("no regex here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_regex)
    x = np.array(["a b"], dtype=object)
    with pytest.raises(KernelError, match=r"Tokenizer.*pip install regex"):
        ours_run(ms_model("Tokenizer", {"x": x}, mark=0, mincharnum=1, pad_value="#", tokenexp="[a-z]+"), {"x": x},
                 [np.array([["a", "b"]], dtype=object)])
