"""Compiled tree-ensemble walks: every row through every tree, in one function.

Trees are the flat node arrays of ``onnxplug_sdk.ml`` (global node indices, leaves pointing to
themselves); a leaf's weights are a CSR run ``leaf_start[node]:leaf_start[node + 1]`` of (target,
weight) pairs. Scores accumulate in float64, as the numpy provider's walker, and a target no
reached leaf scored ends as 0 with ``has`` False (onnxruntime's ScoreValue).
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: Node modes (as onnxplug_sdk.ml numbers them) and aggregate functions.
LEQ, LT, GTE, GT, EQ, NEQ, MEMBER, LEAF = range(8)
AVERAGE, SUM, MIN, MAX = range(4)
#: Post-transforms the fused classifier finish computes (others take the shared numpy rules).
POST_NONE, POST_SOFTMAX, POST_LOGISTIC = 0, 1, 2


@njit(nogil=True, cache=True)
def _leaf_of(x, r, node, feature, threshold, mode, true_next, false_next, missing_true, members, member_row):
    """The leaf row ``r`` of ``x`` reaches from ``node``; -1 when the walk does not end (a cycle)."""
    for _ in range(mode.size + 1):
        m = mode[node]
        if m == LEAF:
            return node
        v = x[r, feature[node]]
        th = threshold[node]
        if m == LEQ:
            go = v <= th
        elif m == LT:
            go = v < th
        elif m == GTE:
            go = v >= th
        elif m == GT:
            go = v > th
        elif m == EQ:
            go = v == th
        elif m == NEQ:
            go = v != th
        else:
            go = False
            row = member_row[node]
            for k in range(members.shape[1]):
                if members[row, k] == v:
                    go = True
                    break
        if not go and missing_true[node] and v != v:
            go = True
        node = true_next[node] if go else false_next[node]
    return -1


@njit(nogil=True, cache=True)
def _leaf_leq(x, r, node, feature, threshold, mode, true_next, false_next, missing_true):
    """``_leaf_of`` for a forest whose splits are all BRANCH_LEQ (most converters' output)."""
    for _ in range(mode.size + 1):
        if mode[node] == LEAF:
            return node
        v = x[r, feature[node]]
        go = v <= threshold[node] or (missing_true[node] and v != v)
        node = true_next[node] if go else false_next[node]
    return -1


@njit(nogil=True, cache=True)
def forest_scores(x, feature, threshold, mode, true_next, false_next, missing_true, roots,
                  leaf_start, leaf_target, leaf_weight, members, member_row, all_leq, how, scores, has):
    """Fill ``scores`` and ``has`` [rows, targets] for the rows of ``x`` under aggregate ``how``
    (``all_leq``: every split is BRANCH_LEQ, walked by the shorter loop).

    Returns False when some tree has a cycle (no leaf reached).
    """
    rows, targets = scores.shape
    trees = roots.size
    for r in range(rows):
        for t in range(targets):
            scores[r, t] = 0.0
            has[r, t] = False
        for i in range(trees):
            if all_leq:
                leaf = _leaf_leq(x, r, roots[i], feature, threshold, mode, true_next, false_next, missing_true)
            else:
                leaf = _leaf_of(x, r, roots[i], feature, threshold, mode, true_next, false_next, missing_true,
                                members, member_row)
            if leaf < 0:
                return False
            for k in range(leaf_start[leaf], leaf_start[leaf + 1]):
                t = leaf_target[k]
                w = leaf_weight[k]
                if not has[r, t]:
                    scores[r, t] = w
                    has[r, t] = True
                elif how == MIN:
                    scores[r, t] = min(scores[r, t], w)
                elif how == MAX:
                    scores[r, t] = max(scores[r, t], w)
                else:
                    scores[r, t] += w
        if how == AVERAGE:
            for t in range(targets):
                scores[r, t] /= trees
    return True


@njit(nogil=True, cache=True)
def classify_rows(scores, has, base, post, best, z):
    """onnxruntime's multiclass finish: base values added (their classes count as scored), the best
    scored class per row into ``best``, and the float32 scores after ``post`` into ``z``."""
    rows, classes = scores.shape
    nb = min(base.size, classes)
    for r in range(rows):
        top = -np.inf
        pick = 0
        for c in range(classes):
            s = scores[r, c]
            if c < nb:
                s += base[c]
                scores[r, c] = s
                has[r, c] = True
            if has[r, c] and s > top:
                top = s
                pick = c
            z[r, c] = np.float32(s)
        best[r] = pick
        transform_row(z, r, post)


@njit(nogil=True, cache=True)
def transform_row(z, r, post):
    """NONE, SOFTMAX or LOGISTIC of row ``r`` of float32 ``z``, in place (onnxruntime's ml_common)."""
    classes = z.shape[1]
    if post == POST_SOFTMAX:
        m = z[r, 0]
        for c in range(1, classes):
            m = max(m, z[r, c])
        total = np.float32(0.0)
        for c in range(classes):
            e = np.exp(z[r, c] - m)
            z[r, c] = e
            total += e
        for c in range(classes):
            z[r, c] = z[r, c] / total
    elif post == POST_LOGISTIC:
        for c in range(classes):
            v = z[r, c]
            e = np.float32(1.0) / (np.float32(1.0) + np.exp(-abs(v)))
            z[r, c] = np.float32(1.0) - e if v < 0 else e
