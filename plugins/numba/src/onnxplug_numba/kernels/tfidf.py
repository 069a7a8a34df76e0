"""TfIdfVectorizer's n-gram counting, compiled: the pool's n-grams form a trie over dense token ids
(children of a node in CSR order, sorted, found by binary search), and every row is walked from
every start for every skip distance as onnxruntime does (unigrams counted once, not per skip).
"""

from __future__ import annotations

import numpy as np
from numba import njit


def build_trie(pool: list, ngram_counts: list[int], min_gram: int, max_gram: int):
    """(token ids by pool value, child_start, child_token, child_node, node_gram) of the pool's
    n-grams of the lengths in [min_gram, max_gram]; n-gram ids count from 1 over every length (0 on
    a node is a prefix only), as onnxruntime numbers them."""
    tokens: dict = {}
    for v in pool:
        tokens.setdefault(v, len(tokens))
    children: list[dict[int, int]] = [{}]
    gram = [0]
    ngram_id = 1
    size = 1
    for i, start in enumerate(ngram_counts):
        end = ngram_counts[i + 1] if i + 1 < len(ngram_counts) else len(pool)
        count = (end - start) // size if end > start else 0
        if count and min_gram <= size <= max_gram:
            at = start
            for _ in range(count):
                node, n = 0, 1
                while at < len(pool):
                    tok = tokens[pool[at]]
                    child = children[node].get(tok)
                    if child is None:
                        child = children[node][tok] = len(children)
                        children.append({})
                        gram.append(0)
                    at += 1
                    if n == size:
                        gram[child] = ngram_id
                        ngram_id += 1
                        break
                    node, n = child, n + 1
        else:
            ngram_id += count
        size += 1
    start_at = np.zeros(len(children) + 1, dtype=np.int64)
    child_token, child_node = [], []
    for node, kids in enumerate(children):
        for tok in sorted(kids):
            child_token.append(tok)
            child_node.append(kids[tok])
        start_at[node + 1] = len(child_token)
    return (tokens, start_at, np.asarray(child_token, dtype=np.int64), np.asarray(child_node, dtype=np.int64),
            np.asarray(gram, dtype=np.int64))


@njit(nogil=True, cache=True)
def _child(node, tok, child_start, child_token, child_node):
    lo, hi = child_start[node], child_start[node + 1]
    while lo < hi:
        mid = (lo + hi) // 2
        t = child_token[mid]
        if t == tok:
            return child_node[mid]
        if t < tok:
            lo = mid + 1
        else:
            hi = mid
    return -1


@njit(nogil=True, cache=True)
def count_ngrams(ids, min_gram, max_gram, max_skip, child_start, child_token, child_node, node_gram,
                 gram_index, counts):
    """counts[r, gram_index[g - 1]] += 1 for every pool n-gram g found in row r of token ``ids``
    [rows, C] (-1 for a token not in the pool)."""
    rows, c = ids.shape
    for r in range(rows):
        start_n = min_gram
        for skip in range(1, max_skip + 2):
            for start in range(c):
                if start + skip * (start_n - 1) >= c:
                    break
                item, node, n = start, 0, 1
                while child_start[node + 1] > child_start[node] and n <= max_gram and item < c:
                    tok = ids[r, item]
                    if tok < 0:
                        break
                    node = _child(node, tok, child_start, child_token, child_node)
                    if node < 0:
                        break
                    g = node_gram[node]
                    if n >= start_n and g != 0:
                        counts[r, gram_index[g - 1]] += 1
                    n += 1
                    item += skip
            if start_n == 1:  # unigrams are counted once, whatever the skip
                start_n += 1
                if start_n > max_gram:
                    break
