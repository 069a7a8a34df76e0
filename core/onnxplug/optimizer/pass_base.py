"""The base class of optimizer passes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Sequence

from onnxplug.options import GraphOptimizationLevel

if TYPE_CHECKING:
    from onnxplug.ir import Model
    from onnxplug.provider import ExecutionProvider


@dataclass
class PassResult:
    """Whether a pass changed the model, and counts of what it did (e.g. ``{"removed": 3}``)."""

    changed: bool
    counts: dict[str, int] = field(default_factory=dict)


class GraphPass:
    """One rewrite of the model. Subclasses set ``level`` and implement ``run``.

    A pass changes the model in place and returns a :class:`PassResult` saying whether it did.
    """

    #: The lowest optimization level at which the pass runs.
    level: ClassVar[GraphOptimizationLevel] = GraphOptimizationLevel.ORT_ENABLE_BASIC
    #: A short description of what the pass changes.
    changes: ClassVar[str] = ""

    @property
    def name(self) -> str:
        """The pass's name in logs and in ``onnxplug optimize`` output."""
        return type(self).__name__

    def run(self, model: Model, providers: Sequence[ExecutionProvider]) -> PassResult:
        """Rewrite ``model`` in place."""
        raise NotImplementedError
