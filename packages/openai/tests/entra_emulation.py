"""A loopback emulation of Entra ID's token endpoint, checking what Entra checks, and an Azure
OpenAI resource that takes only the token Entra issued last.

``TokenEndpoint`` answers ``POST /{tenant}/oauth2/v2.0/token`` as
login.microsoftonline.com does: a form body (``application/x-www-form-urlencoded``), the
tenant in the path, ``grant_type=client_credentials``, a registered ``client_id``, a scope
ending in ``/.default``, and exactly one client credential: the secret, or a
``client_assertion`` of type ``…:jwt-bearer`` equal to the federated token it holds now. Each
refusal carries Entra's own ``error`` word, an ``AADSTS`` code and ``error_codes``; every
token issued is JWT-shaped, numbered, and lives ``lifetime`` seconds (``expires_in``).

``CurrentTokenOnly`` is the suite's Azure emulation taking, as a bearer, only the endpoint's
latest token, until the test says it expired (``endpoint.expire()``) or that none is taken
any more (``endpoint.refuse_all``)."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

from runport.conformance import PROTOCOLS, Refusal

TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"
CLIENT_ID = "0f3a4c1e-5b6d-4e2f-8a9b-1c2d3e4f5a6b"
SECRET = "s3cr3t~Q8"  # short and plain: no key-shaped rule would catch it
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
SCOPE = "https://cognitiveservices.azure.com/.default"


def jwt_shaped(number: int) -> str:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    claims = {"aud": "https://cognitiveservices.azure.com", "tid": TENANT, "n": number}
    return f"{part({'typ': 'JWT', 'alg': 'RS256'})}.{part(claims)}.c2lnbmF0dXJl{number}"


class TokenEndpoint:
    """Entra ID's v2 token endpoint on 127.0.0.1; ``authority`` is its base URL. ``forms``
    records each request's form (and ``paths`` its path); ``issued`` the tokens given."""

    def __init__(self, *, lifetime: int = 3599, assertion: str | None = None) -> None:
        self.lifetime = lifetime
        self.assertion = assertion
        """The federated token the client's file must hold (workload identity)."""
        self.forms: list[dict[str, list[str]]] = []
        self.paths: list[str] = []
        self.content_types: list[str] = []
        self.issued: list[str] = []
        self.expired: set[str] = set()
        self.refuse_all = False
        self.named_as: str | None = None
        self.failing: tuple[int, dict[str, Any]] | None = None
        """An answer given to every request while set (a 500, a 429 …)."""
        self._lock = threading.Lock()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                status, answer = endpoint.answer(
                    self.path, self.headers.get("Content-Type", ""), body
                )
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                # the OpenID configuration MSAL reads before its first token
                data = json.dumps(endpoint.openid_configuration(self.path)).encode()
                self.send_response(200 if data != b"{}" else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        self.authority = f"http://127.0.0.1:{self._server.server_address[1]}"

    def openid_configuration(self, path: str) -> dict[str, Any]:
        """``/{tenant}/v2.0/.well-known/openid-configuration``, naming the token endpoint under
        ``named_as`` (the https authority a client was given), else ``authority``."""
        if path != f"/{TENANT}/v2.0/.well-known/openid-configuration":
            return {}
        base = f"{self.named_as or self.authority}/{TENANT}"
        return {
            "token_endpoint": f"{base}/oauth2/v2.0/token",
            "authorization_endpoint": f"{base}/oauth2/v2.0/authorize",
            "issuer": f"{base}/v2.0",
        }

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # -- what Entra checks -------------------------------------------------------------------

    def answer(self, path: str, content_type: str, body: bytes) -> tuple[int, dict[str, Any]]:
        form = parse_qs(body.decode(), keep_blank_values=True)
        with self._lock:
            self.forms.append(form)
            self.paths.append(path)
            self.content_types.append(content_type)
            if self.failing is not None:
                return self.failing
            refused = self._refusal(path, content_type, form)
            if refused is not None:
                return refused
            token = jwt_shaped(len(self.issued) + 1)
            self.issued.append(token)
        return 200, {
            "token_type": "Bearer",
            "expires_in": self.lifetime,
            "ext_expires_in": self.lifetime,
            "access_token": token,
        }

    def _refusal(
        self, path: str, content_type: str, form: dict[str, list[str]]
    ) -> tuple[int, dict[str, Any]] | None:
        def one(name: str) -> str | None:
            values = form.get(name)
            return values[0] if values and len(values) == 1 else None

        if path != f"/{TENANT}/oauth2/v2.0/token":
            tenant = path.strip("/").split("/")[0]
            return _error(400, "invalid_request", 90002, f"Tenant '{tenant}' not found.")
        if content_type.split(";")[0].strip() != "application/x-www-form-urlencoded":
            return _error(400, "invalid_request", 900144, "The request body must be a form.")
        if one("grant_type") != "client_credentials":
            return _error(400, "unsupported_grant_type", 70003, "The grant type is unsupported.")
        if one("client_id") != CLIENT_ID:
            return _error(400, "unauthorized_client", 700016, "Application not found.")
        if one("scope") != SCOPE:
            return _error(400, "invalid_scope", 1002012, "The scope is not valid.")
        secret, assertion = one("client_secret"), one("client_assertion")
        if (secret is None) == (assertion is None):
            return _error(400, "invalid_request", 900144, "One client credential is required.")
        if assertion is not None:
            if one("client_assertion_type") != ASSERTION_TYPE:
                return _error(400, "invalid_request", 7000218, "client_assertion_type invalid.")
            if assertion != self.assertion:
                return _error(400, "invalid_client", 700024, "Client assertion is not valid.")
        elif secret != SECRET:
            # Entra's real text does not quote the secret; this one does, bare, so a test
            # proves it is redacted before any message shows it
            return _error(401, "invalid_client", 7000215, f"Invalid client secret {secret}.")
        return None

    # -- what the Azure emulation takes ------------------------------------------------------

    def accepts(self, token: str) -> bool:
        with self._lock:
            return (
                not self.refuse_all
                and bool(self.issued)
                and token == self.issued[-1]
                and token not in self.expired
            )

    def expire(self) -> None:
        """The token issued last has expired (Azure now refuses it)."""
        with self._lock:
            self.expired.update(self.issued)


def _error(status: int, word: str, code: int, said: str) -> tuple[int, dict[str, Any]]:
    return status, {
        "error": word,
        "error_description": f"AADSTS{code}: {said} Trace ID: 0a1b Correlation ID: 2c3d",
        "error_codes": [code],
        "timestamp": "2026-12-07 23:59:59Z",
    }


AzureOpenAIChat: Any = type(PROTOCOLS["azure-openai-chat"])


class _Current:
    """The tokens the Azure emulation takes: ``endpoint``'s current one."""

    def __init__(self, emulation: CurrentTokenOnly) -> None:
        self.emulation = emulation

    def __contains__(self, token: object) -> bool:
        return type(token) is str and self.emulation.takes(token)


class CurrentTokenOnly(AzureOpenAIChat):  # type: ignore[misc]
    """The Azure emulation taking only ``endpoint``'s current token (``accepts``); with
    ``expire_after`` set, the token expires once it has been taken that many times; with
    ``refuse_from`` (1-based), that request and every later one is refused."""

    def __init__(
        self,
        endpoint: TokenEndpoint,
        *,
        expire_after: int | None = None,
        refuse_from: int | None = None,
    ) -> None:
        super().__init__()
        self.tokens = _Current(self)
        self.entra = endpoint
        self.expire_after = expire_after
        self.refuse_from = refuse_from
        self.taken: dict[str, int] = {}
        self.sent: list[str] = []
        """The bearer of every request, in order."""

    def check(self, request: Any, case: Any) -> Any:
        """Azure's refusal, but quoting the refused token back, bare (Azure does not; this
        one does, so a test proves a renewed token is redacted wherever a message goes)."""
        refusal = super().check(request, case)
        if refusal is None or refusal.status != 401:
            return refusal
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        said = {"error": {"code": "401", "message": f"token {token} is not valid here"}}
        return Refusal(401, json.dumps(said).encode(), refusal.reason)

    def takes(self, token: str) -> bool:
        self.sent.append(token)
        if self.refuse_from is not None and len(self.sent) >= self.refuse_from:
            self.entra.refuse_all = True
        if self.entra.accepts(token) and self.expire_after is not None:
            self.taken[token] = self.taken.get(token, 0) + 1
            if self.taken[token] > self.expire_after:
                self.entra.expire()
        return self.entra.accepts(token)


@contextmanager
def token_endpoint(**keywords: Any) -> Iterator[TokenEndpoint]:
    endpoint = TokenEndpoint(**keywords)
    try:
        yield endpoint
    finally:
        endpoint.close()
