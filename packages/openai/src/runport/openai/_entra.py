"""Entra ID access tokens for a service principal, fetched over httpx and renewed before they
expire: the client-secret and workload-identity flows azure-identity's ``EnvironmentCredential``
and ``WorkloadIdentityCredential`` read from the same variables, with no dependency added
(adr/0072-entra-id-tokens-renewed-without-azure-identity.md)."""

from __future__ import annotations

import asyncio
import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final, NamedTuple
from urllib.parse import urlsplit

import httpx

from runport.contracts import ErrorCode
from runport.http import provider_text
from runport.ports import PortError

COGNITIVE_SERVICES_SCOPE: Final = "https://cognitiveservices.azure.com/.default"
"""The scope Azure OpenAI asks of a token."""

DEFAULT_AUTHORITY: Final = "https://login.microsoftonline.com"
"""Entra ID's public-cloud authority (``AZURE_AUTHORITY_HOST`` names another)."""

JWT_BEARER: Final = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
"""The ``client_assertion_type`` of a federated (workload identity) token."""

REFRESH_MARGIN_S: Final = 300.0
"""A token is renewed this long before it expires (azure-identity's margin), or at half its
lifetime when it lives less than twice as long."""

_TENANT = re.compile(r"[A-Za-z0-9.-]{1,256}")
"""A tenant id or domain as azure-identity accepts one: it goes into the token URL's path."""
_LOOPBACK: Final = frozenset({"127.0.0.1", "localhost", "::1"})


class _Token(NamedTuple):
    value: str
    renew_at: float
    expires_at: float


class EntraCredential:
    """An Entra ID service principal's access tokens for ``scope``, as a token provider.

    With ``client_secret`` it posts the client-credentials grant to
    ``{authority}/{tenant_id}/oauth2/v2.0/token``; with ``federated_token_file`` (workload
    identity) it posts the file's token as a ``client_assertion``, reading the file again for
    every token, as Kubernetes rotates it. Exactly one of the two is given.

    A token is kept and handed out until ``REFRESH_MARGIN_S`` before it expires (or half its
    lifetime, for a short one), then a new one is fetched; one thread fetches while the others
    wait for its token (thread-safe), and on the event loop the fetch runs on a worker thread.
    ``token(instead_of=t)`` is asked after the upstream refused ``t``: a new token, unless
    another caller already replaced ``t``. A token that cannot be had fails the call unsent:
    ``TQX_RUNTIME_PERMANENT`` when Entra ID refused (its error word and description, the
    secret and the assertion redacted), ``TQX_RUNTIME_UNAVAILABLE`` (or ``TQX_RUNTIME_TIMEOUT``)
    when it could not be reached or failed itself, ``TQX_RUNTIME_RATE_LIMITED`` on a 429,
    ``TQX_RUNTIME_INVALID_RESPONSE`` for an answer with no token. While a renewal fails, the
    token held is still handed out until it really expires.

    Give it as ``token_provider`` to ``AzureOpenAIChatAdapter`` or its async twin
    (``EntraTokenAuth`` asks it directly, so no event loop is blocked); ``from_environment``
    reads the variables the ``azure-openai`` entry point reads. ``clock`` (seconds,
    ``time.time`` by default) and ``http_client`` are for tests and proxies.
    """

    def __init__(
        self,
        *,
        tenant_id: str,
        client_id: str,
        client_secret: str | None = None,
        federated_token_file: str | os.PathLike[str] | None = None,
        authority: str = DEFAULT_AUTHORITY,
        scope: str = COGNITIVE_SERVICES_SCOPE,
        timeout: float = 30.0,
        http_client: httpx.Client | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if (
            type(tenant_id) is not str
            or not _TENANT.fullmatch(tenant_id)
            or not tenant_id.strip(".")
        ):
            raise ValueError(
                "tenant_id must be an Entra ID tenant (its id or domain: letters, digits, '.' "
                "and '-')"
            )
        if type(client_id) is not str or not client_id.strip() or not client_id.isprintable():
            raise ValueError("client_id must be the application's (client) id")
        if (client_secret is None) == (federated_token_file is None):
            raise ValueError(
                "an Entra ID credential needs one of client_secret and federated_token_file"
            )
        if client_secret is not None and not client_secret:
            raise ValueError("client_secret is empty")
        self.tenant_id = tenant_id
        self.client_id = client_id
        self.scope = scope
        self.token_url = f"{checked_authority(authority)}/{tenant_id}/oauth2/v2.0/token"
        self._secret = client_secret
        self._assertion_file = None if federated_token_file is None else Path(federated_token_file)
        self._timeout = timeout
        self._client = http_client
        self._clock = clock
        self._lock = threading.Lock()
        self._held: _Token | None = None
        self.fetched = 0
        """How many tokens were fetched (a count for logs and tests; never a token)."""

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> EntraCredential | None:
        """The credential the environment describes, as azure-identity reads it: a client
        secret (``AZURE_TENANT_ID``, ``AZURE_CLIENT_ID``, ``AZURE_CLIENT_SECRET``), else
        workload identity (``AZURE_FEDERATED_TOKEN_FILE`` with the same tenant and client);
        the authority from ``AZURE_AUTHORITY_HOST``. ``None`` when neither a secret nor a
        token file is set; a ``ValueError`` naming what is missing when one is set alone."""
        env = os.environ if environ is None else environ
        secret = env.get("AZURE_CLIENT_SECRET") or None
        token_file = env.get("AZURE_FEDERATED_TOKEN_FILE") or None
        if secret is None and token_file is None:
            return None
        named = "AZURE_CLIENT_SECRET" if secret else "AZURE_FEDERATED_TOKEN_FILE"
        missing = [name for name in ("AZURE_TENANT_ID", "AZURE_CLIENT_ID") if not env.get(name)]
        if missing:
            raise ValueError(f"{named} is set: Entra ID also needs {' and '.join(missing)}")
        return cls(
            tenant_id=env["AZURE_TENANT_ID"],
            client_id=env["AZURE_CLIENT_ID"],
            client_secret=secret,
            federated_token_file=None if secret else token_file,
            authority=env.get("AZURE_AUTHORITY_HOST") or DEFAULT_AUTHORITY,
        )

    def __repr__(self) -> str:
        how = "client secret" if self._secret is not None else "workload identity"
        return f"EntraCredential(tenant_id={self.tenant_id!r}, client_id={self.client_id!r}, {how})"

    def __call__(self) -> str:
        """A token provider's call: ``token()``."""
        return self.token()

    def token(self, *, instead_of: str | None = None) -> str:
        """A valid access token, fetched when none is held, when the one held is due for
        renewal, or when it is ``instead_of`` (a token the upstream refused)."""
        held = self._held
        if held is not None and held.value != instead_of and self._clock() < held.renew_at:
            return held.value
        with self._lock:
            held = self._held
            if held is not None and held.value != instead_of and self._clock() < held.renew_at:
                return held.value  # another caller renewed it while this one waited
            try:
                fresh = self._fetch()
            except PortError:
                if (
                    held is not None
                    and held.value != instead_of
                    and self._clock() < held.expires_at
                ):
                    return held.value  # not renewed yet, still good: the next call tries again
                raise
            self._held = fresh
            return fresh.value

    async def atoken(self, *, instead_of: str | None = None) -> str:
        """``token`` on the event loop: a held token at once, a fetch on a worker thread."""
        held = self._held
        if held is not None and held.value != instead_of and self._clock() < held.renew_at:
            return held.value
        return await asyncio.to_thread(self.token, instead_of=instead_of)

    # -- the token endpoint --------------------------------------------------------------------

    def _form(self) -> tuple[dict[str, str], tuple[str, ...]]:
        form = {
            "client_id": self.client_id,
            "scope": self.scope,
            "grant_type": "client_credentials",
        }
        if self._secret is not None:
            form["client_secret"] = self._secret
            return form, (self._secret,)
        assert self._assertion_file is not None
        try:
            assertion = self._assertion_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as error:
            raise PortError(
                ErrorCode.RUNTIME_PERMANENT,
                f"the federated token file (AZURE_FEDERATED_TOKEN_FILE) could not be read "
                f"({type(error).__name__})",
            ) from None
        if not assertion:
            raise PortError(
                ErrorCode.RUNTIME_PERMANENT,
                "the federated token file (AZURE_FEDERATED_TOKEN_FILE) is empty",
            )
        form["client_assertion"] = assertion
        form["client_assertion_type"] = JWT_BEARER
        return form, (assertion,)

    def _fetch(self) -> _Token:
        form, secrets = self._form()
        asked = self._clock()
        if self._client is None:
            # made once (its TLS context is the costly part) and kept; a fetch is rare, so
            # its connection is not kept open between fetches
            self._client = httpx.Client(timeout=self._timeout, headers={"Connection": "close"})
        try:
            answer = self._client.post(self.token_url, data=form)
        except httpx.HTTPError as error:
            kind = type(error).__name__
            code = (
                ErrorCode.RUNTIME_TIMEOUT
                if isinstance(error, httpx.TimeoutException)
                else ErrorCode.RUNTIME_UNAVAILABLE
            )
            raise PortError(
                code, f"the Entra ID token endpoint could not be reached ({kind})"
            ) from None
        body = _json(answer)
        if answer.status_code != 200:
            raise _refused(answer.status_code, body, secrets)
        token = body.get("access_token")
        lifetime = body.get("expires_in")
        if type(lifetime) is str and lifetime.isdigit():
            lifetime = int(lifetime)  # some clouds send it as a string
        if (
            type(token) is not str
            or not token
            or not (token.isascii() and token.isprintable())
            or type(lifetime) is not int
            or lifetime <= 0
        ):
            raise PortError(
                ErrorCode.RUNTIME_INVALID_RESPONSE,
                "the Entra ID token endpoint's answer has no access_token and expires_in",
            )
        self.fetched += 1
        margin = min(REFRESH_MARGIN_S, lifetime / 2)
        return _Token(token, asked + lifetime - margin, asked + lifetime)


def checked_authority(authority: str) -> str:
    """An authority host as a URL without a trailing slash: ``https`` (a bare host gets it),
    or ``http`` to a loopback host (a test's own token endpoint)."""
    if type(authority) is not str or not authority.strip():
        raise ValueError("the authority must be a host such as login.microsoftonline.com")
    if "://" not in authority:
        authority = f"https://{authority}"
    parts = urlsplit(authority.rstrip("/"))
    loopback = parts.scheme == "http" and parts.hostname in _LOOPBACK
    if not (parts.scheme == "https" or loopback) or not parts.hostname or parts.query:
        raise ValueError(
            "the authority must be an https URL such as https://login.microsoftonline.com "
            "(http only to a loopback host)"
        )
    return authority.rstrip("/")


def _json(answer: httpx.Response) -> dict[str, Any]:
    try:
        body = answer.json()
    except ValueError:
        return {}
    return body if type(body) is dict else {}


def _refused(status: int, body: dict[str, Any], secrets: tuple[str, ...]) -> PortError:
    word = provider_text(body.get("error"), secrets)
    said = provider_text(body.get("error_description"), secrets)
    detail = ": ".join(part for part in (word, said) if part)
    message = f"Entra ID gave no token (HTTP {status}{', ' + detail if detail else ''})"
    if status == 429:
        return PortError(ErrorCode.RUNTIME_RATE_LIMITED, message)
    if status >= 500:
        return PortError(ErrorCode.RUNTIME_UNAVAILABLE, message)
    return PortError(ErrorCode.RUNTIME_PERMANENT, message)
