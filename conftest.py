"""Loaded by every pytest run in this repository (each package's tests and ``tests/``).

Hypothesis profiles: ``bounded``, the default, keeps the README's test command within minutes;
``thorough`` runs twenty times as many examples of every property, on demand::

    HYPOTHESIS_PROFILE=thorough .venv/bin/tox run-parallel
    .venv/bin/tox run -e pkg-http -- --hypothesis-profile=thorough

A property whose examples are expensive (a loopback server, a subprocess) asks for a share of
the profile's count, ``max_examples=settings.default.max_examples // 4``, so both profiles keep
its relative weight; no property's strategy depends on the profile, only its example count.
"""

from __future__ import annotations

import os

try:
    from hypothesis import settings
except ImportError:  # the live tier installs no Hypothesis
    pass
else:
    settings.register_profile("bounded", max_examples=40, deadline=None, print_blob=True)
    settings.register_profile("thorough", max_examples=800, deadline=None, print_blob=True)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or "bounded")
