"""com.microsoft MurmurHash3: MurmurHash3_x86_32 with ``seed`` of each key's bytes (an int32 /
uint32 key's 4 little-endian bytes, a string's UTF-8 bytes); uint32 output with ``positive`` (the
default), else the same bits as int32. Integer keys are hashed vectorised (uint32 arithmetic wraps
as the C code's does)."""

import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.registry import op

_C1, _C2 = 0xCC9E2D51, 0x1B873593
_MASK = 0xFFFFFFFF


def _rotl(x, r):
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _fmix(h):
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    return h


def hash_words(words: np.ndarray, seed: int) -> np.ndarray:
    """The hash of each uint32 word (one 4-byte block), vectorised."""
    k = words * np.uint32(_C1)
    k = _rotl(k, 15) * np.uint32(_C2)
    h = np.full(words.shape, seed & _MASK, np.uint32) ^ k
    h = _rotl(h, 13) * np.uint32(5) + np.uint32(0xE6546B64)
    return _fmix(h ^ np.uint32(4))


def hash_bytes(data: bytes, seed: int) -> int:
    """MurmurHash3_x86_32 of ``data``."""
    h = seed & _MASK
    blocks = len(data) // 4
    for i in range(blocks):
        k = int.from_bytes(data[4 * i:4 * i + 4], "little")
        k = (k * _C1) & _MASK
        k = ((k << 15) | (k >> 17)) & _MASK
        h ^= (k * _C2) & _MASK
        h = ((h << 13) | (h >> 19)) & _MASK
        h = (h * 5 + 0xE6546B64) & _MASK
    tail = data[4 * blocks:]
    if tail:
        k = int.from_bytes(tail, "little")
        k = (k * _C1) & _MASK
        k = ((k << 15) | (k >> 17)) & _MASK
        h ^= (k * _C2) & _MASK
    h ^= len(data)
    return int(_fmix(np.array(h, np.uint32)))


@op("MurmurHash3", domain=DOMAIN)
class MurmurHash3(NumpyKernel):
    def compute(self, keys):
        seed = int(self.attr("seed", 0))
        if keys.dtype == object:
            hashes = np.array([hash_bytes(k.encode() if isinstance(k, str) else bytes(k), seed)
                               for k in keys.reshape(-1)], np.uint32).reshape(keys.shape)
        elif keys.dtype in (np.int32, np.uint32):
            with np.errstate(over="ignore"):
                hashes = hash_words(np.ascontiguousarray(keys).view(np.uint32), seed)
        else:
            raise ValueError(f"{self.node.describe()}: keys of type {keys.dtype} are not supported "
                             "(int32, uint32, string)")
        return hashes if self.attr("positive", 1) else hashes.view(np.int32)
