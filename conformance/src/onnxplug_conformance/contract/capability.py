"""Contract tests of ``get_capability``: claims consistent with the kernels registered.

See :mod:`.survey` for what is checked on every node-case graph and model-suite graph. Here,
in addition, on the model suite: claims are deterministic, stay inside a partial view (as the
partitioner offers after higher-priority providers took their part), and a session assigns the
provider exactly the nodes it claimed.
"""

from __future__ import annotations

import pytest

import onnxplug as ort
from onnxplug.ir import load_model
from onnxplug.provider import ExecutionProvider, GraphView
from onnxplug.testing.model_suite import MODEL_NAMES

from onnxplug_conformance.contract.fixtures import NOT_CLAIMED, ProviderFixtures
from onnxplug_conformance.contract.survey import ClaimSurvey, check_claims
from onnxplug_conformance.model_runner import suite_model
from onnxplug_conformance.node_runner import session_options
from onnxplug_conformance.provider_spec import ProviderUnderTest


def _claimed_ids(provider: ExecutionProvider, view: GraphView) -> list[frozenset[str]]:
    return sorted((frozenset(n.name for n in cap.nodes) for cap in provider.get_capability(view)),
                  key=sorted)


class BaseCapabilityTests(ProviderFixtures):
    """The provider's claims (``get_capability``)."""

    def test_claims_are_consistent_with_kernels(self, claim_survey: ClaimSurvey) -> None:
        assert claim_survey.graphs > 0, "no graph could be surveyed"
        assert not claim_survey.problems, (f"{len(claim_survey.problems)} inconsistent claim(s):\n"
                                           + "\n".join(claim_survey.problems[:40]))

    @pytest.mark.parametrize("model_name", MODEL_NAMES)
    def test_claims_are_deterministic_and_stay_in_the_view(self, provider: ExecutionProvider,
                                                           model_name: str) -> None:
        graph = load_model(suite_model(model_name)).graph
        full = _claimed_ids(provider, GraphView(graph, graph.nodes))
        assert full == _claimed_ids(provider, GraphView(graph, graph.nodes)), "claims differ between two calls"
        later_half = graph.nodes[len(graph.nodes) // 2:]
        view = GraphView(graph, later_half)
        problems, _ = check_claims(provider, view, provider.get_capability(view),
                                   f"model {model_name}, second half of the nodes offered")
        assert not problems, "\n".join(problems[:20])

    @pytest.mark.parametrize("model_name", MODEL_NAMES)
    def test_session_assigns_exactly_the_claimed_nodes(self, claim_survey: ClaimSurvey,
                                                       provider_under_test: ProviderUnderTest,
                                                       model_name: str) -> None:
        claimed = claim_survey.model_claims.get(model_name)
        if not claimed:
            pytest.skip(f"{NOT_CLAIMED}: the provider claims no node of {model_name}")
        session = ort.InferenceSession(suite_model(model_name), session_options(fallback_disabled=False),
                                       providers=[provider_under_test.spec])
        assigned = {a.node_name for a in session.get_node_assignments() if a.provider == provider_under_test.name}
        assert assigned == claimed, (f"assigned but not claimed: {sorted(assigned - claimed)[:10]}; "
                                     f"claimed but not assigned: {sorted(claimed - assigned)[:10]}")
