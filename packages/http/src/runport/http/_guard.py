"""The model-request guard: a process told ``RUNPORT_ALLOW_MODEL_REQUESTS=0`` (the pytest plugin
``runport.testing`` says so for every test that did not ask otherwise) sends no request to a real
provider. Both drivers ask it before a call opens, so nothing is connected when it refuses."""

from __future__ import annotations

import ipaddress
import os
from typing import Final

import httpx

from runport.contracts import ErrorCode
from runport.http._urls import redact_url
from runport.ports import PortError

__all__ = ["ALLOW_MODEL_REQUESTS", "model_request_refused", "reaches_no_provider"]

ALLOW_MODEL_REQUESTS: Final = "RUNPORT_ALLOW_MODEL_REQUESTS"
"""Unset, ``1``, ``true`` or ``yes``: requests go out. Any other value (``0``): only requests to
a host that is no provider's do."""

_ALLOWING: Final = frozenset({"1", "true", "yes"})

_RESERVED: Final = ("localhost", "test", "example", "invalid")
"""Names that never resolve to a provider (RFC 2606, RFC 6761): ``localhost`` and the reserved
top-level domains, and any name under them."""


def reaches_no_provider(host: str) -> bool:
    """Whether ``host`` is loopback (``127.0.0.0/8``, ``::1``, ``localhost``) or a reserved
    name: a server the test runs itself, or a name no provider can have."""
    name = host.rstrip(".").lower()
    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return any(name == tld or name.endswith("." + tld) for tld in _RESERVED)


def model_request_refused(url: httpx.URL) -> PortError | None:
    """The refusal of a request to ``url`` while model requests are not allowed, or ``None``."""
    value = os.environ.get(ALLOW_MODEL_REQUESTS)
    if value is None or value.strip().lower() in _ALLOWING or reaches_no_provider(url.host):
        return None
    return PortError(
        ErrorCode.ACCESS_DENIED,
        f"a model request to {redact_url(url)} was refused: {ALLOW_MODEL_REQUESTS}={value!r} "
        "allows requests only to loopback hosts (a test's own server). Script the model "
        "(runport.testing's scripted_model or function_model fixtures), or allow real "
        f"requests with {ALLOW_MODEL_REQUESTS}=1 or @pytest.mark.allow_model_requests",
    )
