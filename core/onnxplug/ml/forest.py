"""Tree ensembles (TreeEnsembleRegressor/Classifier, TreeEnsemble) as flat node arrays, and a
vectorised numpy walker over them.

``classifier_forest``, ``regressor_forest`` and ``ensemble_forest`` parse a node's attributes into a
Forest once. The walker moves every (sample, tree) pair down at once: each step gathers the current
node's feature and threshold for all pairs and moves them to the true or false child, for as many
steps as the deepest tree, so the Python loop runs per tree level, never per sample.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Node modes, numbered as TreeEnsemble (ai.onnx.ml opset 5) numbers them; LEAF marks leaves.
LEQ, LT, GTE, GT, EQ, NEQ, MEMBER, LEAF = range(8)
MODE_NAMES = {"BRANCH_LEQ": LEQ, "BRANCH_LT": LT, "BRANCH_GTE": GTE, "BRANCH_GT": GT,
              "BRANCH_EQ": EQ, "BRANCH_NEQ": NEQ, "BRANCH_MEMBER": MEMBER, "LEAF": LEAF}
#: Samples evaluated together, bounding the [samples, trees, targets] temporaries.
_CHUNK_ELEMENTS = 1 << 22


@dataclass
class Forest:
    """Trees as flat node arrays (global node indices); leaves carry dense per-target weights."""

    feature: np.ndarray  # int64 per node
    threshold: np.ndarray  # float64 per node
    mode: np.ndarray  # int8 per node
    true_next: np.ndarray  # int64 per node (leaves point to themselves)
    false_next: np.ndarray
    missing_true: np.ndarray  # bool per node: NaN inputs take the true branch
    roots: np.ndarray  # int64 per tree
    weights: np.ndarray  # float64 [nodes, targets]
    has_weight: np.ndarray  # bool [nodes, targets]
    members: np.ndarray | None = None  # float64 [member nodes, max set size], NaN-padded
    member_row: np.ndarray | None = None  # int64 per node: its row in ``members``

    def leaves(self, x: np.ndarray) -> np.ndarray:
        """The leaf each sample reaches in each tree: [N, trees] node indices."""
        x = x.astype(np.float64)
        rows = np.arange(x.shape[0])[:, None]
        cur = np.broadcast_to(self.roots, (x.shape[0], self.roots.size)).copy()
        uniform = np.unique(self.mode[self.mode != LEAF])
        for _ in range(self.mode.size + 1):
            mode = self.mode[cur]
            active = mode != LEAF
            if not active.any():
                return cur
            value = x[rows, self.feature[cur]]
            cond = self._compare(value, cur, mode, uniform)
            cond |= self.missing_true[cur] & np.isnan(value)
            cur = np.where(active, np.where(cond, self.true_next[cur], self.false_next[cur]), cur)
        raise ValueError("tree ensemble: a tree has a cycle (no leaf reached)")

    def _compare(self, value: np.ndarray, cur: np.ndarray, mode: np.ndarray, uniform: np.ndarray) -> np.ndarray:
        th = self.threshold[cur]
        tests = {LEQ: lambda: value <= th, LT: lambda: value < th, GTE: lambda: value >= th,
                 GT: lambda: value > th, EQ: lambda: value == th, NEQ: lambda: value != th,
                 MEMBER: lambda: (value[..., None] == self.members[self.member_row[cur]]).any(axis=-1)}
        if uniform.size == 1:  # the usual case: one comparison for every node
            return tests[int(uniform[0])]()
        cond = np.zeros(cur.shape, dtype=bool)
        for m in uniform.tolist():
            cond |= (mode == m) & tests[m]()
        return cond

    def aggregate(self, x: np.ndarray, how: str) -> tuple[np.ndarray, np.ndarray]:
        """Per-sample target scores (float64) and whether any reached leaf scored each target.

        ``how`` is SUM, AVERAGE, MIN or MAX; targets no leaf scored hold 0.
        """
        n, targets = x.shape[0], self.weights.shape[1]
        scores = np.zeros((n, targets))
        has = np.zeros((n, targets), dtype=bool)
        step = max(1, _CHUNK_ELEMENTS // max(1, self.roots.size * targets))
        for start in range(0, n, step):
            leaf = self.leaves(x[start:start + step])
            w, h = self.weights[leaf], self.has_weight[leaf]  # [n, trees, targets]
            if how in ("SUM", "AVERAGE"):
                s = w.sum(axis=1)
                if how == "AVERAGE":
                    s /= self.roots.size
            elif how == "MIN":
                s = np.where(h, w, np.inf).min(axis=1)
            elif how == "MAX":
                s = np.where(h, w, -np.inf).max(axis=1)
            else:
                raise ValueError(f"unknown aggregate_function {how!r}")
            hs = h.any(axis=1)
            scores[start:start + step] = np.where(hs, s, 0.0)
            has[start:start + step] = hs
        return scores, has


def tensor_or_list(kernel, name: str) -> list | None:
    """An attribute given as a list (``name``) or as a tensor (``name_as_tensor``, ml opset 3)."""
    values = kernel.attr(name)
    if values is None or len(values) == 0:
        tensor = kernel.attr(name + "_as_tensor")
        return None if tensor is None else np.asarray(tensor).reshape(-1).tolist()
    return list(values)


def build_forest(tree_ids, node_ids, features, thresholds, modes, true_ids, false_ids, missing_true,
                 leaf_tree_ids, leaf_node_ids, leaf_targets, leaf_weights, n_targets) -> Forest:
    """A Forest from the node lists of TreeEnsembleRegressor/Classifier (ids local to each tree)."""
    tree_ids = np.asarray(tree_ids, dtype=np.int64)
    node_ids = np.asarray(node_ids, dtype=np.int64)
    index = {(t, n): i for i, (t, n) in enumerate(zip(tree_ids.tolist(), node_ids.tolist()))}
    mode = np.array([MODE_NAMES[m] if isinstance(m, str) else int(m) for m in modes], dtype=np.int8)
    count = len(index)

    def resolve(children):
        out = np.arange(count, dtype=np.int64)
        for i, (t, c) in enumerate(zip(tree_ids.tolist(), np.asarray(children, dtype=np.int64).tolist())):
            if mode[i] != LEAF:
                out[i] = index[(t, c)]
        return out

    true_next, false_next = resolve(true_ids), resolve(false_ids)
    children = set(true_next[mode != LEAF].tolist()) | set(false_next[mode != LEAF].tolist())
    roots = {}
    for i, t in enumerate(tree_ids.tolist()):
        if i not in children:
            roots.setdefault(t, i)
    weights = np.zeros((count, n_targets))
    has = np.zeros((count, n_targets), dtype=bool)
    leaf_rows = np.array([index[(t, n)] for t, n in zip(np.asarray(leaf_tree_ids).tolist(),
                                                           np.asarray(leaf_node_ids).tolist())], dtype=np.int64)
    leaf_targets = np.asarray(leaf_targets, dtype=np.int64)
    np.add.at(weights, (leaf_rows, leaf_targets), np.asarray(leaf_weights, dtype=np.float64))
    has[leaf_rows, leaf_targets] = True
    missing = np.zeros(count, dtype=bool)
    if missing_true is not None and len(missing_true):
        missing = np.asarray(missing_true, dtype=bool)
    features = np.where(mode == LEAF, 0, np.asarray(features, dtype=np.int64))  # leaves read no feature
    return Forest(features, np.asarray(thresholds, dtype=np.float64), mode,
                  true_next, false_next, missing, np.array(list(roots.values()), dtype=np.int64), weights, has)


def classifier_forest(kernel, n_classes: int) -> Forest:
    """The Forest of a TreeEnsembleClassifier node (attributes or their ``_as_tensor`` forms)."""
    a = kernel.attr
    return build_forest(
        a("nodes_treeids"), a("nodes_nodeids"), a("nodes_featureids"), tensor_or_list(kernel, "nodes_values"),
        a("nodes_modes"), a("nodes_truenodeids"), a("nodes_falsenodeids"), a("nodes_missing_value_tracks_true"),
        a("class_treeids"), a("class_nodeids"), np.asarray(a("class_ids"), dtype=np.int64),
        tensor_or_list(kernel, "class_weights"), n_classes)


def regressor_forest(kernel) -> Forest:
    """The Forest of a TreeEnsembleRegressor node (``n_targets`` targets)."""
    a = kernel.attr
    return build_forest(
        a("nodes_treeids"), a("nodes_nodeids"), a("nodes_featureids"), tensor_or_list(kernel, "nodes_values"),
        a("nodes_modes"), a("nodes_truenodeids"), a("nodes_falsenodeids"), a("nodes_missing_value_tracks_true"),
        a("target_treeids"), a("target_nodeids"), a("target_ids"), tensor_or_list(kernel, "target_weights"),
        a("n_targets", 1))


def ensemble_forest(kernel) -> Forest:
    """The Forest of a TreeEnsemble node (ai.onnx.ml opset 5): interior nodes and leaves come in
    separate lists, so leaves are appended after the interior nodes and one Forest walks both."""
    a = kernel.attr
    splits = np.asarray(a("nodes_splits")).reshape(-1).astype(np.float64)
    n = splits.size
    modes = np.asarray(a("nodes_modes")).reshape(-1).astype(np.int8)
    weights = np.asarray(a("leaf_weights")).reshape(-1).astype(np.float64)
    targets = np.asarray(a("leaf_targetids"), dtype=np.int64)
    n_targets = a("n_targets") or int(targets.max(initial=0)) + 1

    def child(ids, leaf_flags):
        ids = np.asarray(ids, dtype=np.int64)
        return np.where(np.asarray(leaf_flags, dtype=bool), ids + n, ids)

    roots = np.asarray(a("tree_roots"), dtype=np.int64)
    true_flags, false_flags = a("nodes_trueleafs"), a("nodes_falseleafs")
    true_ids, false_ids = a("nodes_truenodeids"), a("nodes_falsenodeids")
    # A degenerate tree is a single leaf: its root's children are the same leaf.
    single = [bool(true_flags[r] and false_flags[r] and true_ids[r] == false_ids[r]) for r in roots.tolist()]
    roots = np.where(single, np.asarray(true_ids, dtype=np.int64)[roots] + n, roots)
    leaf_modes = np.full(weights.size, LEAF, dtype=np.int8)
    missing = a("nodes_missing_value_tracks_true") or [0] * n
    all_weights = np.zeros((n + weights.size, n_targets))
    has = np.zeros_like(all_weights, dtype=bool)
    all_weights[n + np.arange(weights.size), targets] = weights
    has[n + np.arange(weights.size), targets] = True
    members, member_row = _membership(a("membership_values"), modes)
    return Forest(
        np.concatenate([np.asarray(a("nodes_featureids"), dtype=np.int64), np.zeros(weights.size, np.int64)]),
        np.concatenate([splits, np.zeros(weights.size)]), np.concatenate([modes, leaf_modes]),
        np.concatenate([child(true_ids, true_flags), n + np.arange(weights.size)]),
        np.concatenate([child(false_ids, false_flags), n + np.arange(weights.size)]),
        np.concatenate([np.asarray(missing, dtype=bool), np.zeros(weights.size, bool)]),
        roots, all_weights, has, members, np.concatenate([member_row, np.zeros(weights.size, np.int64)]))


def _membership(values, modes):
    """Set members of each BRANCH_MEMBER node (NaN-separated in order), as a NaN-padded matrix."""
    member_row = np.zeros(modes.size, dtype=np.int64)
    if values is None:
        if (modes == MEMBER).any():
            raise ValueError("TreeEnsemble: set-membership nodes need membership_values")
        return None, member_row
    flat = np.asarray(values).reshape(-1).astype(np.float64)
    sets, current = [], []
    for v in flat.tolist():
        if v != v:
            sets.append(current)
            current = []
        else:
            current.append(v)
    member_nodes = np.flatnonzero(modes == MEMBER)
    if len(sets) != member_nodes.size:
        raise ValueError(f"TreeEnsemble: {len(sets)} member sets for {member_nodes.size} set-membership nodes")
    width = max((len(s) for s in sets), default=1) or 1
    table = np.full((max(len(sets), 1), width), np.nan)
    for i, s in enumerate(sets):
        table[i, :len(s)] = s
    member_row[member_nodes] = np.arange(member_nodes.size)
    return table, member_row
