"""How the depthwise columns formulation reads a unit's scratch: tap groups and plans (see depthwise).

A plan depends only on a convolution's geometry (kernel, strides, dilations, pads, input size), never on
its channels or values, so each geometry's plan is built once and kept (``geometry``); plans are read,
never changed, by every unit and thread. Building one is Python work per tap group, and a long-stride
1-D convolution has one group per stride phase: rebuilt on every call it outweighed the convolution.
"""

from __future__ import annotations

import math
from itertools import product
from typing import Sequence

import numpy as np


class _TapGroup:
    """The kernel offsets that read one stride phase: per axis an evenly spaced run of kernel
    indices, whose reads are evenly spaced in the phase's flattened rows too, so the whole group is
    one strided view of the scratch."""

    def __init__(self, phase: int, axes: Sequence[tuple[list[int], int, int]], kernel: Sequence[int],
                 row_strides: Sequence[int]) -> None:
        self.phase = phase
        #: per axis: how many kernel indices, and the step of their reads in the flattened rows
        self.counts = tuple(len(idx) for idx, _, _ in axes)
        self.steps = tuple(step * r for (_, _, step), r in zip(axes, row_strides))
        #: per axis: the phase row the first offset reads
        self.firsts = tuple(first for _, first, _ in axes)
        #: where the first offset's run starts in the phase's flattened rows
        self.offset = sum(first * r for first, r in zip(self.firsts, row_strides))
        #: the flat kernel index of each offset, in the view's order
        self.taps = [int(np.ravel_multi_index(idx, kernel)) for idx in product(*(idx for idx, _, _ in axes))]


def _tap_groups(sh, row_strides: Sequence[int]) -> list[_TapGroup]:
    """Kernel offsets grouped by the stride phase they read, in phase order."""
    per_axis = []  # per axis: [(phase, kernel indices, first row, row step)]
    for k, d, s in zip(sh.kernel, sh.dilations, sh.strides):
        runs = []
        for phase in range(s):
            idx = [i for i in range(k) if i * d % s == phase]
            if idx:
                # indices i0 + j * s / gcd(d, s) read rows (i0 * d) // s + j * d / gcd(d, s)
                step = (idx[1] * d - idx[0] * d) // s if len(idx) > 1 else 0
                runs.append((phase, idx, idx[0] * d // s, step))
        per_axis.append(runs)
    groups = []
    for combo in product(*per_axis):
        phase = int(np.ravel_multi_index([r[0] for r in combo], sh.strides))
        groups.append(_TapGroup(phase, [(r[1], r[2], r[3]) for r in combo], sh.kernel, row_strides))
    return groups


class _Plan:
    """Where a unit's scratch holds the input, and how its columns are read from the scratch.

    The scratch holds, per stride phase and channel, the phase's padded positions as rows
    (``stored`` per axis, flattened) between two margins. For 2-D images whose input columns
    fit in as many columns as the output has (any padded conv of MobileNet's), a phase row keeps
    only ``out_w`` columns, starting at its first input column: a tap's run then covers exactly
    the outputs (no padding columns between rows), so the matmul writes the output itself. Its
    reads past either end of a row wrap into the next or previous row; they belong to padding,
    and are zeroed in the columns (``fixes``).
    """

    def __init__(self, sh) -> None:
        nd, out_sp = sh.nd, sh.out_sp
        rows = [-(-sh.padded[i] // sh.strides[i]) for i in range(nd)]
        placed = [sh.input_slices(rows, phase, sh.strides) for phase in np.ndindex(*sh.strides)]
        self.compact = nd == 2 and all(found is None or found[0][-1].stop - found[0][-1].start <= out_sp[-1]
                                       for found in placed)
        stored = rows[:-1] + [out_sp[-1]] if self.compact else rows
        # per phase: the stored window's first phase column on the last axis
        first_col = [found[0][-1].start if self.compact and found is not None else 0 for found in placed]
        self.stored = stored
        self.plane = math.prod(stored)
        row_strides = [math.prod(stored[i + 1:]) for i in range(nd)]
        self.length = sum((o - 1) * r for o, r in zip(out_sp, row_strides)) + 1
        #: whether a tap's run is laid out as the output (no padding columns between output rows)
        self.direct = self.length == math.prod(out_sp)
        self.grid_len = out_sp[0] * row_strides[0]
        self.groups = _tap_groups(sh, row_strides)
        starts = [g.offset - first_col[g.phase] * row_strides[-1] for g in self.groups]
        ends = [st + sum((n - 1) * step for n, step in zip(g.counts, g.steps)) + self.length
                for st, g in zip(starts, self.groups)]
        self.margin = max(0, -min(starts))
        self.phase_len = self.margin + self.plane + max(0, max(ends) - self.plane)
        #: per tap group: where its first run starts in a channel's phase row
        self.starts = [self.margin + st for st in starts]
        #: (phase, scratch slices, strided input slices) of the copies of the input
        self.copies = []
        for phase_idx, found in enumerate(placed):
            if found is not None:
                dst = list(found[0])
                dst[-1] = slice(dst[-1].start - first_col[phase_idx], dst[-1].stop - first_col[phase_idx])
                self.copies.append((phase_idx, tuple(dst), found[1]))
        #: (phase, slices of its stored rows) the input does not cover: padding, zeroed per unit.
        #: The margins are not: only wrapped reads (zeroed in the columns) and dropped positions
        #: read them.
        self.zeros: list[tuple[int, tuple[slice, ...]]] = []
        for phase_idx, found in enumerate(placed):
            if found is None:
                self.zeros.append((phase_idx, (slice(None),) * nd))
                continue
            dst = self.copies[[c[0] for c in self.copies].index(phase_idx)][1]
            for axis, (d, size) in enumerate(zip(dst, stored)):
                for gap in (slice(0, d.start), slice(d.stop, size)):
                    if gap.start < gap.stop:
                        self.zeros.append((phase_idx, (slice(None),) * axis + (gap,)))
        #: (first column of a tap group, its shape (taps per axis), index of the wrapped reads in
        #: its columns shaped (channels, *taps per axis, *out))
        self.fixes: list[tuple[int, tuple[int, ...], tuple]] = []
        if self.compact:
            t0, width = 0, out_sp[-1]
            for g in self.groups:
                for j in range(g.counts[-1]):
                    shift = g.firsts[-1] + j * g.steps[-1] - first_col[g.phase]
                    for bad in (slice(0, min(width, -shift)), slice(max(0, width - shift), width)):
                        if bad.start < bad.stop:
                            self.fixes.append((t0, g.counts, (slice(None),) * nd + (j, slice(None), bad)))
                t0 += len(g.taps)


#: The plans by geometry; cleared when full (a model runs the same few geometries every run).
_PLANS: dict[tuple, tuple["_Plan", list[int], int]] = {}
_MAX_PLANS = 256


def geometry(sh) -> tuple["_Plan", list[int], int]:
    """(plan, column order of the taps, how far the last tap group's runs reach past the unit's
    last phase row) of ``sh``'s geometry, built once. Plans are never changed after building."""
    key = (sh.kernel, tuple(sh.strides), tuple(sh.dilations), tuple(sh.begin), tuple(sh.padded), tuple(sh.in_sp))
    found = _PLANS.get(key)
    if found is None:
        plan = _Plan(sh)
        order = [t for g in plan.groups for t in g.taps]
        tail = max(st + sum((n - 1) * step for n, step in zip(g.counts, g.steps))
                   for g, st in zip(plan.groups, plan.starts))
        if len(_PLANS) >= _MAX_PLANS:
            _PLANS.clear()
        found = _PLANS[key] = (plan, order, tail)
    return found
