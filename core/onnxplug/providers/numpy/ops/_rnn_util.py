"""Shared machinery of RNN, GRU and LSTM: attributes, activations, input preparation, outputs.

The input projection X @ W^T (plus the biases that can be folded) is one matmul over all time
steps. In the general path both directions of a bidirectional layer advance together: their states
are stacked as (directions, batch, hidden) so each time step costs one batched matmul and a few
elementwise calls. The reverse direction is fed its inputs in reversed order (per sequence length)
and its outputs are put back in time order at the end. The default-activation fast paths of GRU and
LSTM (helpers at the end of this module) run one direction at a time instead.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from onnxplug.providers.numpy.runtime.blas import ISOLATED_THREADED_MACS, aligned, matmul
from onnxplug.providers.numpy.ops._base import NumpyKernel

Activation = Callable[[np.ndarray], np.ndarray]

_USES_ALPHA = {"affine": 1.0, "leakyrelu": 0.01, "thresholdedrelu": 1.0, "scaledtanh": 1.0,
               "hardsigmoid": 0.2, "elu": 1.0}
_USES_BETA = {"affine": 0.0, "scaledtanh": 1.0, "hardsigmoid": 0.5}


def _sigmoid(x: np.ndarray) -> np.ndarray:
    """Sigmoid in place through tanh (no overflow): 0.5 * tanh(x / 2) + 0.5."""
    x *= 0.5
    np.tanh(x, out=x)
    x *= 0.5
    x += 0.5
    return x


def make_activation(name: str, alpha: float | None, beta: float | None) -> Activation:
    """An in-place activation function (it may overwrite and return its argument)."""
    key = name.lower()
    a = _USES_ALPHA.get(key) if alpha is None else alpha
    b = _USES_BETA.get(key) if beta is None else beta
    if key == "tanh":
        return lambda x: np.tanh(x, out=x)
    if key == "sigmoid":
        return _sigmoid
    if key == "relu":
        return lambda x: np.maximum(x, 0, out=x)
    if key == "affine":
        return lambda x: np.add(np.multiply(x, a, out=x), b, out=x)
    if key == "leakyrelu":
        return lambda x: np.where(x >= 0, x, x * a).astype(x.dtype, copy=False)
    if key == "thresholdedrelu":
        return lambda x: np.where(x >= a, x, 0).astype(x.dtype, copy=False)
    if key == "scaledtanh":
        return lambda x: np.multiply(np.tanh(np.multiply(x, b, out=x), out=x), a, out=x)
    if key == "hardsigmoid":
        return lambda x: np.clip(np.add(np.multiply(x, a, out=x), b, out=x), 0, 1, out=x)
    if key == "elu":
        return lambda x: np.where(x >= 0, x, np.expm1(np.minimum(x, 0)) * a).astype(x.dtype, copy=False)
    if key == "softsign":
        return lambda x: np.divide(x, np.abs(x) + 1, out=x)
    if key == "softplus":
        return lambda x: np.logaddexp(x.dtype.type(0), x, out=x)
    raise ValueError(f"unknown RNN activation function {name!r}")


class RecurrentKernel(NumpyKernel):
    """Base of RNN, GRU and LSTM: parses the common attributes once."""

    #: Gates per cell and the default activation names (per direction).
    gates: int = 1
    default_activations: tuple[str, ...] = ("Tanh",)

    def __init__(self, node, context) -> None:
        super().__init__(node, context)
        #: derived weights keyed by the identity of their sources (constant initializers in practice);
        #: filled at most once per distinct source, so concurrent runs at worst build an entry twice
        self._derived: dict[str, tuple[tuple[object, ...], np.ndarray]] = {}
        direction = self.attr("direction", "forward")
        if direction not in ("forward", "reverse", "bidirectional"):
            raise ValueError(f"{node.describe()}: unknown direction {direction!r}")
        self.direction = direction
        self.num_directions = 2 if direction == "bidirectional" else 1
        self.layout = int(self.attr("layout", 0))
        clip = self.attr("clip", None)
        self.clip = None if clip is None else float(clip)
        per_dir = len(self.default_activations)
        names = list(self.attr("activations", None) or self.default_activations * self.num_directions)
        if len(names) == per_dir and self.num_directions == 2:
            names = names * 2
        alphas = list(self.attr("activation_alpha", None) or [])
        betas = list(self.attr("activation_beta", None) or [])
        acts, names_lower = [], []
        for name in names:
            key = name.lower()
            alpha = alphas.pop(0) if key in _USES_ALPHA and alphas else None
            beta = betas.pop(0) if key in _USES_BETA and betas else None
            acts.append(make_activation(name, alpha, beta))
            names_lower.append((key, alpha, beta))
        #: activations[slot] is one function when both directions agree, else a list per direction
        self.activations: list[Activation | list[Activation]] = []
        for slot in range(per_dir):
            per = [acts[d * per_dir + slot] for d in range(self.num_directions)]
            same = all(names_lower[d * per_dir + slot] == names_lower[slot] for d in range(self.num_directions))
            self.activations.append(per[0] if same else per)
        self.default_acts = [n[0] for n in names_lower[:per_dir]] == [a.lower() for a in self.default_activations] \
            and all(n[0] == names_lower[i % per_dir][0] for i, n in enumerate(names_lower))

    def derived(self, name: str, sources: Sequence[object], build: Callable[[], Any]) -> Any:
        """``build()``, cached while ``sources`` are the very same objects as last time; an array on
        a cache-line boundary (the step products read R in place: see ``blas.ALIGNMENT``)."""
        entry = self._derived.get(name)
        if entry is not None and len(entry[0]) == len(sources) and all(
                a is b for a, b in zip(entry[0], sources)):
            return entry[1]
        value = build()
        if value.__class__ is np.ndarray:
            value = aligned(value)
        self._derived[name] = (tuple(sources), value)
        return value

    def act(self, slot: int, x: np.ndarray) -> np.ndarray:
        """Apply activation ``slot`` to stacked (directions, ...) values, per direction when they differ."""
        f = self.activations[slot]
        if self.clip is not None:
            np.clip(x, -self.clip, self.clip, out=x)
        if not isinstance(f, list):
            return f(x)
        return np.stack([fd(x[d]) for d, fd in enumerate(f)])

    def is_reverse(self, d: int) -> bool:
        """Whether direction ``d`` runs back to front."""
        return self.direction == "reverse" or d == 1

    def full_lengths(self, x: np.ndarray, seq_lens: np.ndarray | None) -> bool:
        """Whether every sequence runs all steps (no ``sequence_lens``, or all equal to the length)."""
        if seq_lens is None:
            return True
        seq = x.shape[1 if self.layout == 1 else 0]
        return bool(np.all(np.asarray(seq_lens) == seq))

    # --- inputs -------------------------------------------------------------------------------
    def prepare(self, x: np.ndarray, w: np.ndarray, r: np.ndarray, b: np.ndarray | None,
                seq_lens: np.ndarray | None, foldable_bias: Sequence[bool]) -> "Prepared":
        """Project the inputs for all steps; returns the per-step feed and the bookkeeping."""
        if self.layout == 1:
            x = x.transpose(1, 0, 2)
        seq, batch, _ = x.shape
        d_count = self.num_directions
        gh = w.shape[1]
        hidden = gh // self.gates
        dtype = x.dtype
        # input projection for every step and direction: (D, S*B, G*H)
        xw = matmul(x.reshape(seq * batch, -1), w.transpose(0, 2, 1),
                    threaded_macs=ISOLATED_THREADED_MACS).reshape(d_count, seq, batch, gh)
        rb = None
        if b is not None:
            bias, rb = self.derived(f"bias {foldable_bias}", (b,), lambda: _fold_bias(b, foldable_bias, dtype))
            xw += bias
        lens = None
        if seq_lens is not None:
            lens = np.asarray(seq_lens, dtype=np.int64).reshape(-1)
            if np.all(lens == seq):
                lens = None
        order = None  # time index fed at step t, per batch entry (only needed with lengths)
        if lens is not None:
            t = np.arange(seq)[:, None]
            order = np.where(t < lens[None, :], lens[None, :] - 1 - t, t)
        reversed_dirs = [d for d in range(d_count) if self.is_reverse(d)]
        for d in reversed_dirs:  # a reversed direction reads its inputs back to front
            xw[d] = xw[d][order, np.arange(batch)[None, :]] if lens is not None else xw[d][::-1].copy()
        feed = xw.transpose(1, 0, 2, 3)  # (S, D, B, G*H), a view
        active = None
        if lens is not None:
            active = (np.arange(seq)[:, None] < lens[None, :])[:, None, :, None]  # (S, 1, B, 1)
        return Prepared(feed, r.transpose(0, 2, 1).astype(dtype, copy=False), rb, hidden, seq, batch,
                        order, reversed_dirs, lens, active)

    def initial_state(self, value: np.ndarray | None, p: "Prepared") -> np.ndarray:
        """An initial state as (D, B, H), zeros when omitted."""
        if value is None:
            return np.zeros((self.num_directions, p.batch, p.hidden), dtype=p.feed.dtype)
        value = value.transpose(1, 0, 2) if self.layout == 1 else value
        return np.array(value, dtype=p.feed.dtype)

    # --- outputs ------------------------------------------------------------------------------
    def finish(self, ys: np.ndarray, states: Sequence[np.ndarray], p: "Prepared") -> tuple:
        """Y in time order (zeros past each sequence length) plus the final states, in ``layout``."""
        if p.lens is not None:
            ys *= p.active
        for d in p.reversed_dirs:
            ys[:, d] = ys[:, d][p.order, np.arange(p.batch)[None, :]] if p.lens is not None else ys[::-1, d]
        if self.layout == 1:
            return (ys.transpose(2, 0, 1, 3),) + tuple(s.transpose(1, 0, 2) for s in states)
        return (ys,) + tuple(states)


def _fold_bias(b: np.ndarray, foldable: Sequence[bool], dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """(input bias (D, 1, 1, G*H) with the foldable recurrent gates added, the recurrent bias left
    over (D, G*H)), from B = [Wb, Rb] (D, 2*G*H)."""
    gh = b.shape[1] // 2
    wb, rb = b[:, :gh], b[:, gh:]
    fold = np.repeat(np.asarray(foldable, dtype=bool), gh // len(foldable))
    bias = (wb + np.where(fold, rb, 0)).astype(dtype, copy=False)
    return bias[:, None, None, :], np.where(fold, 0, rb).astype(dtype, copy=False)


class Prepared:
    """What the step loop needs: per-step feeds (S, D, B, G*H), R^T (D, H, G*H), unfolded R bias."""

    def __init__(self, feed, rt, rb, hidden, seq, batch, order, reversed_dirs, lens, active) -> None:
        self.feed = feed
        self.rt = rt
        self.rb = rb
        self.hidden = hidden
        self.seq = seq
        self.batch = batch
        self.order = order
        self.reversed_dirs = reversed_dirs
        self.lens = lens
        self.active = active

    def step_mask(self, t: int) -> np.ndarray | None:
        """(1, B, 1) booleans: which batch entries still run at step ``t`` (None when all do)."""
        return None if self.active is None else self.active[t]


# --- fast paths ---------------------------------------------------------------------------------
# The default-activation loops run one direction at a time: a direction's R (256 KiB for an LSTM of
# hidden size 128) stays in the L2 cache through its whole sequence, while both directions' together
# overflow it. Values are gate-major, (G*H, B): every gate is a contiguous block, so each elementwise
# call takes numpy's contiguous fast path, and a step's product is R h with M = G*H rows; the
# LSTM's batches of 4 to 12 run gate-blocked instead (see ``blocked_steps``). Sigmoids are
# 1 / (1 + exp(-x)) with the minus folded into the weights: exp costs half of tanh per value.

#: LSTM batches of this many rows, and fewer than BLOCKED_MAX_MACS multiply-adds per gate product, run
#: their steps gate-blocked (see ``blocked_steps``).
BLOCKED_MIN_BATCH, BLOCKED_MAX_BATCH = 4, 12
BLOCKED_MAX_MACS = 1 << 20


def blocked_steps(batch: int, hidden: int) -> bool:
    """Whether an LSTM fast path runs gate-blocked: values (G, B, H), each gate a contiguous (B, H)
    block, and a step's product one batched matmul h (B, H) @ R_g^T (G, H, H), whose small products
    OpenBLAS runs without packing R; gate-major, R h packs R every step. Batches of 2, of 16 and
    above, or B x H x H past 2^20 run slower blocked (docs/benchmarks.md)."""
    return BLOCKED_MIN_BATCH <= batch <= BLOCKED_MAX_BATCH and batch * hidden * hidden < BLOCKED_MAX_MACS


def gate_scale(kernel: RecurrentKernel, hidden: int, dtype: np.dtype) -> np.ndarray:
    """(G*H,): -1 over the sigmoid gates (the first G - 1), 1 over the last (cached)."""
    def build() -> np.ndarray:
        scale = np.ones(kernel.gates * hidden, dtype=dtype)
        scale[:(kernel.gates - 1) * hidden] = -1
        return scale
    return kernel.derived(f"gate scale {hidden} {dtype.char}", (), build)  # str(dtype) is slow Python


def fast_feed(kernel: RecurrentKernel, x: np.ndarray, w: np.ndarray, b: np.ndarray | None,
              scale: np.ndarray, foldable: Sequence[bool], order: Sequence[int],
              blocked: bool = False) -> list[np.ndarray]:
    """Every step's input projection, gate-major: per direction (S, G*H, B) in the order the
    direction runs (a reverse direction reads its inputs back to front: all sequences are full);
    ``blocked``, (S, G*B, H): gate blocks of (B, H) (see ``blocked_steps``).

    Gate blocks come in ``order`` (ONNX gate indices), columns times ``scale``; the foldable biases
    ride on a column of ones. Both directions come out of one product, ``[x, 1] @ [W_0 | W_1]``,
    and x is copied once; a reverse direction gets a reversed view.
    """
    if kernel.layout == 1:
        x = x.transpose(1, 0, 2)
    seq, batch, size = x.shape
    d_count = kernel.num_directions
    dtype = scale.dtype
    wa = kernel.derived("w_aug", (w, b), lambda: _augmented_input_weights(w, b, scale, foldable, order))
    xa = np.empty((seq, batch, size + 1), dtype=dtype)
    xa[..., size] = 1
    xa[..., :size] = x
    gh = wa.shape[-1] // d_count
    proj = matmul(xa.reshape(seq * batch, size + 1), wa, threaded_macs=ISOLATED_THREADED_MACS)
    proj = proj.reshape(seq, batch, d_count, gh)
    if batch == 1:  # (S, 1, D, G*H): each step's gates are already a contiguous column
        feed = proj.transpose(2, 0, 3, 1)
    elif blocked:
        g = kernel.gates
        blocks = proj.reshape(seq, batch, d_count, g, gh // g).transpose(2, 0, 3, 1, 4)
        feed = np.ascontiguousarray(blocks).reshape(d_count, seq, g * batch, gh // g)
    else:
        feed = np.ascontiguousarray(proj.transpose(2, 0, 3, 1))
    return [feed[d, ::-1] if kernel.is_reverse(d) else feed[d] for d in range(d_count)]


def _gate_rows(a: np.ndarray, order: Sequence[int]) -> np.ndarray:
    """``a`` (D, G*H, ...) with its gate blocks of rows in ``order``."""
    d, gh = a.shape[:2]
    return a.reshape((d, len(order), gh // len(order)) + a.shape[2:])[:, list(order)].reshape(a.shape)


def _augmented_input_weights(w: np.ndarray, b: np.ndarray | None, scale: np.ndarray,
                             foldable: Sequence[bool], order: Sequence[int]) -> np.ndarray:
    """[W^T; Wb + foldable Rb] per direction, side by side: (I + 1, D * G*H), gate blocks in
    ``order``, columns times ``scale``."""
    d, gh, size = w.shape
    out = np.empty((d, size + 1, gh), dtype=scale.dtype)
    out[:, :size] = _gate_rows(w, order).transpose(0, 2, 1)
    if b is None:
        out[:, size] = 0
    else:
        fold = np.repeat(np.asarray(foldable, dtype=bool), gh // len(foldable))
        out[:, size] = _gate_rows(b[:, :gh] + np.where(fold, b[:, gh:], 0), order)
    out *= scale
    return np.ascontiguousarray(out.transpose(1, 0, 2)).reshape(size + 1, d * gh)


def recurrent_weights(kernel: RecurrentKernel, r: np.ndarray, scale: np.ndarray, order: Sequence[int],
                      batch: int, blocked: bool = False) -> np.ndarray:
    """R (D, G*H, H), gate blocks in ``order``, rows times ``scale``, laid out for ``step_products``:
    transposed to R^T (D, H, G*H) for a single batch row; ``blocked``, each gate's R_g^T, (D, G, H, H)
    (cached; all contiguous)."""
    def build(transposed: bool) -> np.ndarray:
        scaled = _gate_rows(r.astype(scale.dtype), order) * scale[:, None]
        return np.ascontiguousarray(scaled.transpose(0, 2, 1) if transposed else scaled)

    def build_blocked() -> np.ndarray:
        d, gh, h = r.shape
        return np.ascontiguousarray(build(False).reshape(d, gh // h, h, h).transpose(0, 1, 3, 2))
    if blocked:
        return kernel.derived("r_blocked", (r,), build_blocked)
    if batch == 1:
        return kernel.derived("rt_scaled", (r,), lambda: build(True))
    return kernel.derived("r_scaled", (r,), lambda: build(False))


def step_products(weights: np.ndarray, states: np.ndarray, out: np.ndarray) -> list[tuple]:
    """Per step, (bound ndarray.dot, operand, output) computing R h_t into ``out`` (G*H, B) from
    ``states[t]`` (H, B): with one batch row as h^T R^T into out^T (the same memory; a row vector
    times R^T is faster than R times a column). ndarray.dot makes the same BLAS call as
    np.matmul with less dispatch. Gate-blocked ``weights`` (G, H, H) (see ``blocked_steps``)
    take h_t (B, H) into ``out`` (G*B, H) as one batched np.matmul."""
    if weights.ndim == 3:
        blocks = out.reshape(weights.shape[0], -1, out.shape[1])
        return [(functools.partial(np.matmul, h), weights, blocks) for h in states]
    if out.shape[1] == 1:
        return [(h.T.dot, weights, out.T) for h in states]
    return [(weights.dot, h, out) for h in states]


def finish_direction(ys: np.ndarray, d: int, reverse: bool, states: np.ndarray,
                     blocked: bool = False) -> np.ndarray:
    """Copy a direction's states (S + 1, H, B) (slot 0 initial, step order; ``blocked``, (S + 1, B,
    H)) into ``ys[:, d]`` (S, B, H) in time order; return the final h (B, H)."""
    steps = states[1:]
    if blocked:
        ys[:, d] = steps[::-1] if reverse else steps
        return states[-1]
    ys[:, d] = (steps[::-1] if reverse else steps).transpose(0, 2, 1)
    return states[-1].T


def fast_outputs(kernel: RecurrentKernel, ys: np.ndarray, states: Sequence[np.ndarray]) -> tuple:
    """Y (S, D, B, H) and final states (D, B, H) in the node's ``layout``."""
    if kernel.layout == 1:
        return (ys.transpose(2, 0, 1, 3),) + tuple(s.transpose(1, 0, 2) for s in states)
    return (ys,) + tuple(states)
