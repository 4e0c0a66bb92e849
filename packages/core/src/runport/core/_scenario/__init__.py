"""The scenario a scripted runtime plays (docs/scenarios.md).

A scenario is domain data, so it lives here in core rather than in the mock: the conformance
suite, ``runport scenarios check`` and ``runport.mock.ScriptedRuntime`` all read the same
``Scenario``. Two file formats load into it — ``runport.mock/v1`` (``_mock_v1``) and templiqx's
``templiqx.mock/v1alpha1`` (``_templiqx``) — both read through core's bounded document reader
and both strict: an unknown field, kind or API version is an error, never ignored, because a
typo in a test fixture must not silently change what a test proves. What a scenario states
its outcome will be is a ``ScenarioExpectations`` (``_expectations``), kept apart from what is
played (``_model``). Anything refused raises ``ScenarioError`` (code ``TQX_DATA_INVALID``)
naming the file, the turn and event index and the offending kind or field (``_decoding``).
"""

from runport.core._scenario._decoding import ScenarioError
from runport.core._scenario._expectations import (
    DocumentExpectation,
    EvidenceExpectation,
    PartDigest,
    ScenarioExpectations,
    part_digests,
)
from runport.core._scenario._load import load_scenario, parse_scenario
from runport.core._scenario._model import (
    API_VERSION,
    TEMPLIQX_API_VERSION,
    CitationEvent,
    DelayEvent,
    DeltaEvent,
    FailEvent,
    FileDeltaEvent,
    FinishEvent,
    ReasoningDeltaEvent,
    Scenario,
    ScenarioEvent,
    ScenarioTurn,
    ServerToolCallEvent,
    ServerToolResultEvent,
    ToolCallDeltaEvent,
    UsageEvent,
)

__all__ = [
    "API_VERSION",
    "TEMPLIQX_API_VERSION",
    "CitationEvent",
    "DelayEvent",
    "DeltaEvent",
    "DocumentExpectation",
    "EvidenceExpectation",
    "FailEvent",
    "FileDeltaEvent",
    "FinishEvent",
    "PartDigest",
    "ReasoningDeltaEvent",
    "Scenario",
    "ScenarioError",
    "ScenarioEvent",
    "ScenarioExpectations",
    "ScenarioTurn",
    "ServerToolCallEvent",
    "ServerToolResultEvent",
    "ToolCallDeltaEvent",
    "UsageEvent",
    "load_scenario",
    "parse_scenario",
    "part_digests",
]
