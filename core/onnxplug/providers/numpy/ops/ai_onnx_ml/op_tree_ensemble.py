import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._ml_util import ML, transform_scores
from onnxplug.providers.numpy.ops._tree_util import LEAF, MEMBER, Forest
from onnxplug.providers.numpy.registry import op

_AGGREGATE = ("AVERAGE", "SUM", "MIN", "MAX")
_POST = ("NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT")


@op("TreeEnsemble", 5, domain=ML)
class TreeEnsemble(NumpyKernel):
    """ai.onnx.ml opset 5 trees: interior nodes and leaves in separate lists, set-membership splits.

    Leaves are appended after the interior nodes so one Forest walks both; the output keeps X's type.
    """

    def __init__(self, node, context):
        super().__init__(node, context)
        splits = np.asarray(self.attr("nodes_splits")).reshape(-1).astype(np.float64)
        n = splits.size
        modes = np.asarray(self.attr("nodes_modes")).reshape(-1).astype(np.int8)
        weights = np.asarray(self.attr("leaf_weights")).reshape(-1).astype(np.float64)
        targets = np.asarray(self.attr("leaf_targetids"), dtype=np.int64)
        n_targets = self.attr("n_targets") or int(targets.max(initial=0)) + 1

        def child(ids, leaf_flags):
            ids = np.asarray(ids, dtype=np.int64)
            return np.where(np.asarray(leaf_flags, dtype=bool), ids + n, ids)

        roots = np.asarray(self.attr("tree_roots"), dtype=np.int64)
        true_flags, false_flags = self.attr("nodes_trueleafs"), self.attr("nodes_falseleafs")
        true_ids, false_ids = self.attr("nodes_truenodeids"), self.attr("nodes_falsenodeids")
        # A degenerate tree is a single leaf: its root's children are the same leaf.
        single = [bool(true_flags[r] and false_flags[r] and true_ids[r] == false_ids[r]) for r in roots.tolist()]
        roots = np.where(single, np.asarray(true_ids, dtype=np.int64)[roots] + n, roots)
        leaf_modes = np.full(weights.size, LEAF, dtype=np.int8)
        missing = self.attr("nodes_missing_value_tracks_true") or [0] * n
        all_weights = np.zeros((n + weights.size, n_targets))
        has = np.zeros_like(all_weights, dtype=bool)
        all_weights[n + np.arange(weights.size), targets] = weights
        has[n + np.arange(weights.size), targets] = True
        members, member_row = _membership(self.attr("membership_values"), modes)
        self._forest = Forest(
            np.concatenate([np.asarray(self.attr("nodes_featureids"), dtype=np.int64), np.zeros(weights.size, np.int64)]),
            np.concatenate([splits, np.zeros(weights.size)]), np.concatenate([modes, leaf_modes]),
            np.concatenate([child(true_ids, true_flags), n + np.arange(weights.size)]),
            np.concatenate([child(false_ids, false_flags), n + np.arange(weights.size)]),
            np.concatenate([np.asarray(missing, dtype=bool), np.zeros(weights.size, bool)]),
            roots, all_weights, has, members, np.concatenate([member_row, np.zeros(weights.size, np.int64)]))

    def compute(self, x):
        how = _AGGREGATE[self.attr("aggregate_function", 1)]
        scores, _ = self._forest.aggregate(x, how)
        post = _POST[self.attr("post_transform", 0)]
        return np.asarray(transform_scores(scores, post) if post != "NONE" else scores, dtype=x.dtype)


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
