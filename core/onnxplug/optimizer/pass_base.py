"""The base class of optimizer passes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Sequence

from onnxplug.errors import OnnxplugError
from onnxplug.options import GraphOptimizationLevel

if TYPE_CHECKING:
    from onnxplug.ir import Model
    from onnxplug.optimizer.rewrite import GraphIndex
    from onnxplug.optimizer.support import ProviderSupport
    from onnxplug.provider import ExecutionProvider


class PassError(OnnxplugError, RuntimeError):
    """An optimizer pass failed or left an invalid graph; the message names the pass."""


@dataclass
class PassResult:
    """Whether a pass changed the model, and counts of what it did (e.g. ``{"removed": 3}``)."""

    changed: bool
    counts: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_counts(cls, counts: dict[str, int]) -> PassResult:
        """A result that changed the model when any count is positive (zero counts dropped)."""
        kept = {k: v for k, v in counts.items() if v}
        return cls(bool(kept), kept)


class GraphPass:
    """One rewrite of the model. Subclasses set ``level`` and implement ``run``.

    A pass changes the model in place and returns a :class:`PassResult` saying whether it did.
    """

    #: The lowest optimization level at which the pass runs.
    level: ClassVar[GraphOptimizationLevel] = GraphOptimizationLevel.ORT_ENABLE_BASIC
    #: A short description of what the pass changes.
    changes: ClassVar[str] = ""
    #: Position among the passes of the same level (lower runs first); ties go by name.
    order: ClassVar[int] = 100

    @property
    def name(self) -> str:
        """The pass's name in logs and in ``onnxplug optimize`` output."""
        return type(self).__name__

    def run(self, model: Model, providers: Sequence[ExecutionProvider]) -> PassResult:
        """Rewrite ``model`` in place."""
        raise NotImplementedError


@dataclass
class RewriteContext:
    """What a per-graph rewrite may consult besides the graph: the model and the session's providers."""

    model: Model
    providers: Sequence[ExecutionProvider]
    support: ProviderSupport


class GraphRewritePass(GraphPass):
    """A pass applied to the main graph and to every subgraph, one :class:`GraphIndex` each.

    Subclasses implement :meth:`rewrite` and return counts of what they did.
    """

    def run(self, model: Model, providers: Sequence[ExecutionProvider]) -> PassResult:
        from onnxplug.optimizer.rewrite import GraphIndex, NameSource, model_graphs
        from onnxplug.optimizer.support import ProviderSupport

        names = NameSource(model)
        context = RewriteContext(model, providers, ProviderSupport(providers))
        totals: dict[str, int] = {}
        for graph in model_graphs(model):
            for key, n in self.rewrite(GraphIndex(graph, names), context).items():
                totals[key] = totals.get(key, 0) + n
        return PassResult.from_counts(totals)

    def rewrite(self, index: GraphIndex, context: RewriteContext) -> dict[str, int]:
        """Rewrite one graph through ``index``; return counts such as ``{"removed": 2}``."""
        raise NotImplementedError
