"""runport's deterministic scripted runtime (docs/scenarios.md).

``ScriptedRuntime`` plays a ``runport.core.Scenario`` — a ``runport.mock/v1`` file or a
``templiqx.mock/v1alpha1`` manifest — through the ``RuntimeAdapter`` port: one turn per call,
streamed events and receipts byte-identical on every run, a virtual clock instead of sleeps. It
lets tests, examples and the CLI exercise the whole streaming law with no network.
``create_adapter`` is the ``runport.adapters`` entry point behind ``--adapter mock``.
"""

from runport.mock._scripted import RuntimeStats, ScriptedRuntime, create_adapter

__all__ = ["RuntimeStats", "ScriptedRuntime", "create_adapter"]
