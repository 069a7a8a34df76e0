"""A Forest walker for few samples: every split decided at once, then one gather per tree level.

For a chunk of n rows, ``next[r, node]`` (the child row r moves to from ``node``, as a flat index
``r * nodes + child``) is computed for every node with a handful of array operations; the walk is
then ``cur = next[cur]`` repeated ``depth`` times (leaves point to themselves). Per-row index tables
are cached per chunk size. When n * nodes outweighs n * trees * depth (large batches of deep
forests) the level-by-level ``Forest.leaves`` is used instead. Both give the same leaves, so
aggregated scores equal ``Forest.aggregate``'s (same reductions on the same leaf weights).
"""

from __future__ import annotations

import numpy as np

from onnxplug.ml.forest import EQ, GT, GTE, LEAF, LEQ, LT, NEQ, Forest

#: Most (row, node) pairs decided at once; larger batches are walked in chunks.
_MAX_PAIRS = 1 << 18
_PLANS = 8
_UFUNCS = {LEQ: np.less_equal, LT: np.less, GTE: np.greater_equal, GT: np.greater, EQ: np.equal,
           NEQ: np.not_equal}


def forest_depth(forest: Forest) -> int:
    """Levels from the roots to the deepest leaf (interior-node steps)."""
    cur, depth = np.unique(forest.roots), 0
    while True:
        cur = cur[forest.mode[cur] != LEAF]
        if cur.size == 0:
            return depth
        depth += 1
        if depth > forest.mode.size:
            raise ValueError("tree ensemble: a tree has a cycle (no leaf reached)")
        cur = np.unique(np.concatenate([forest.true_next[cur], forest.false_next[cur]]))


class ForestWalker:
    """Leaves and aggregated scores of one Forest; attributes prepared once per node."""

    def __init__(self, forest: Forest):
        self.forest = f = forest
        self.nodes, self.trees = f.mode.size, f.roots.size
        self.depth = forest_depth(f)
        interior = f.mode[f.mode != LEAF]
        self.uniform = np.unique(interior)
        self.missing = bool(f.missing_true.any())
        # Targets some tree scores at every one of its leaves: every sample has a score there.
        leaf_has = f.has_weight & (f.mode == LEAF)[:, None]
        self.always_has = self._always_scored(leaf_has)
        self._plans: dict[int, tuple] = {}

    def _always_scored(self, leaf_has: np.ndarray) -> bool:
        f = self.forest
        tree_of = np.full(self.nodes, -1, dtype=np.int64)
        cur, tree = f.roots.copy(), np.arange(self.trees)
        for _ in range(self.depth + 1):
            tree_of[cur] = tree
            inner = f.mode[cur] != LEAF
            cur, tree = np.concatenate([f.true_next[cur[inner]], f.false_next[cur[inner]]]), np.tile(tree[inner], 2)
        leaves = np.flatnonzero((f.mode == LEAF) & (tree_of >= 0))
        if leaves.size == 0:
            return False
        every = np.ones((self.trees, leaf_has.shape[1]), dtype=bool)
        np.logical_and.at(every, tree_of[leaves], leaf_has[leaves])
        return bool(every.any(axis=0).all())

    def _plan(self, n: int) -> tuple:
        """Flat indices ``node * n + row`` of each node's false child and the true child's offset."""
        plan = self._plans.get(n)
        if plan is None:
            f, rows = self.forest, np.arange(n, dtype=np.int32)
            false_g = (f.false_next.astype(np.int32) * n)[:, None] + rows
            delta = ((f.true_next - f.false_next).astype(np.int32) * n)[:, None]
            plan = (false_g, np.broadcast_to(delta, false_g.shape).copy(), (f.roots.astype(np.int32) * n)[:, None] + rows)
            if len(self._plans) >= _PLANS:
                self._plans.pop(next(iter(self._plans)))
            self._plans[n] = plan
        return plan

    def _all_nodes_cheaper(self, n: int) -> bool:
        return n * self.nodes * 4 + 6000 <= self.depth * (n * self.trees * 12 + 10000)

    def _conditions(self, x: np.ndarray) -> np.ndarray:
        """Whether each node's test holds for each row: bool [nodes, n]."""
        f = self.forest
        xt = np.ascontiguousarray(x.T, dtype=np.float64)
        value = np.take(xt, f.feature, axis=0)
        test = _UFUNCS.get(int(self.uniform[0])) if self.uniform.size == 1 else None
        if test is not None:
            cond = test(value, f.threshold[:, None])
        else:
            ids = np.broadcast_to(np.arange(self.nodes), (x.shape[0], self.nodes))
            cond = f._compare(value.T, ids, f.mode, self.uniform).T
        if self.missing and np.isnan(xt).any():
            cond |= f.missing_true[:, None] & np.isnan(value)
        return cond

    def _walk(self, x: np.ndarray) -> np.ndarray:
        """The reached leaves as [trees, n] node indices (``n * nodes`` within ``_MAX_PAIRS``)."""
        n = x.shape[0]
        false_g, delta, cur = self._plan(n)
        step = np.multiply(self._conditions(x), delta).reshape(-1)
        step += false_g.reshape(-1)
        for _ in range(self.depth):
            cur = step.take(cur)
        return cur // n

    def leaves(self, x: np.ndarray) -> np.ndarray:
        """The leaf each row of ``x`` [n, F] reaches in each tree: [n, trees] node indices."""
        n = x.shape[0]
        if n == 0 or n * self.nodes > _MAX_PAIRS or not self._all_nodes_cheaper(n):
            return self.forest.leaves(x)
        return self._walk(x).T

    def aggregate(self, x: np.ndarray, how: str) -> tuple[np.ndarray, np.ndarray]:
        """As ``Forest.aggregate``: per-sample target scores (float64) and which targets were scored."""
        n, step = x.shape[0], max(1, _MAX_PAIRS // self.nodes)
        if how not in ("SUM", "AVERAGE") or n == 0 or not self._all_nodes_cheaper(min(n, step)):
            return self.forest.aggregate(x, how)
        if n <= step:
            return self._sum(x, how)
        parts = [self._sum(x[i:i + step], how) for i in range(0, n, step)]
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])

    def _sum(self, x: np.ndarray, how: str) -> tuple[np.ndarray, np.ndarray]:
        f = self.forest
        leaf = self._walk(x)
        s = np.take(f.weights, leaf, axis=0).sum(axis=0)  # tree after tree, as onnxruntime adds them
        if how == "AVERAGE":
            s /= self.trees
        if self.always_has:
            return s, np.ones(s.shape, dtype=bool)
        hs = np.take(f.has_weight, leaf, axis=0).any(axis=0)
        return np.where(hs, s, 0.0), hs
