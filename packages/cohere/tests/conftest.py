"""The provider kit's fixtures (``runport.conformance.providers``), found by name."""

from __future__ import annotations

from runport.conformance.providers import client, playback  # noqa: F401  (fixtures, found by name)
