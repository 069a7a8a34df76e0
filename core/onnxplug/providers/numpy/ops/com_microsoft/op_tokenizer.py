"""com.microsoft Tokenizer (skl2onnx's text pipelines): the tokens of each string of a [C] or [N, C]
string tensor along a new last axis, padded with ``pad_value`` to the longest row, between \\x02
and \\x03 marks with ``mark``; tokens shorter than ``mincharnum`` characters are dropped.

Tokens are the matches of ``tokenexp``, or the text between matches of the ``separators`` (applied
one after the other to the pieces left by the previous ones); tokenexp "." or a single empty
separator gives one token per character. onnxruntime matches with RE2 in leftmost-longest mode:
here the ``regex`` package's POSIX mode does the same, with RE2's ASCII \\w, \\d, \\s
(``pip install regex``; without it the node fails with a KernelError saying so). An empty match
skips one character, as onnxruntime does."""

from __future__ import annotations

import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.registry import op

_START, _END = "\x02", "\x03"


def _compile(pattern: str):
    try:
        import regex
    except ImportError:
        raise RuntimeError("Tokenizer needs the 'regex' package for onnxruntime's leftmost-longest "
                           "matching: pip install regex") from None
    # RE2's \w, \d, \s and \b are ASCII classes
    return regex.compile(pattern, flags=regex.POSIX | regex.ASCII)


@op("Tokenizer", domain=DOMAIN)
class Tokenizer(NumpyKernel):
    def __init__(self, node, context):
        super().__init__(node, context)
        self.mark = bool(self.attr("mark", 0))
        self.pad = self.attr("pad_value", None)
        self.min_chars = int(self.attr("mincharnum", 0))
        separators, tokenexp = self.attr("separators", None), self.attr("tokenexp", None)
        if self.pad is None or self.min_chars <= 0:
            raise ValueError(f"{node.describe()}: pad_value and a positive mincharnum are required")
        if separators is None and not tokenexp:
            raise ValueError(f"{node.describe()}: separators or tokenexp is required")
        self.by_char = tokenexp == "." if separators is None else list(separators) == [""]
        if self.by_char and self.min_chars >= 2:
            raise ValueError(f"{node.describe()}: mincharnum {self.min_chars} is too big for character tokens")
        self.separators = [] if self.by_char or separators is None else [str(s) for s in separators]
        self.tokenexp = None if self.by_char or separators is not None else str(tokenexp)
        self._patterns = None  # compiled on first use, so a missing 'regex' fails the run, naming the node

    def compute(self, x):
        if x.ndim not in (1, 2):
            raise ValueError(f"{self.node.describe()}: input must be [C] or [N, C], got shape {list(x.shape)}")
        if self._patterns is None and not self.by_char:
            self._patterns = [_compile(p) for p in (self.separators or [self.tokenexp])]
        rows = [self._tokens(s if isinstance(s, str) else s.decode()) for s in x.reshape(-1)]
        width = max((len(r) for r in rows), default=0)
        if width == 0:
            return np.empty(x.shape + (0,), dtype=object)
        total = width + 2 * self.mark
        out = np.full((len(rows), total), self.pad, dtype=object)
        for i, row in enumerate(rows):
            if self.mark:
                out[i, 0], out[i, len(row) + 1] = _START, _END
            out[i, self.mark:self.mark + len(row)] = row
        return out.reshape(x.shape + (total,))

    def _tokens(self, text: str) -> list[str]:
        if self.by_char:
            return list(text)
        if self.tokenexp is not None:
            return self._matches(text)
        pieces = [text]
        for pattern in self._patterns:
            pieces = [token for piece in pieces for token in self._split(pattern, piece)]
        return pieces

    def _matches(self, text: str) -> list[str]:
        tokens, pos = [], 0
        pattern = self._patterns[0]
        while pos <= len(text):
            m = pattern.search(text, pos)
            if m is None:
                break
            if m.end() - m.start() >= self.min_chars:
                tokens.append(m.group())
                pos = m.end()
            else:
                pos = m.start() + 1
        return tokens

    def _split(self, pattern, text: str) -> list[str]:
        tokens, pos = [], 0
        while True:
            m = pattern.search(text, pos) if pos <= len(text) else None
            if m is None:
                if len(text) - pos >= self.min_chars:
                    tokens.append(text[pos:])
                return tokens
            if m.start() - pos >= self.min_chars:
                tokens.append(text[pos:m.start()])
            pos = m.end() if m.end() > m.start() else m.start() + 1
