"""A loopback Vertex AI for the tests of the adapters that reach it (Gemini's and Anthropic's
Vertex modes): an OAuth token endpoint and the model routes, checked as Vertex AI checks them.

The token endpoint answers google-auth's refresh grant (``credentials()``, a user's) and a
service account's signed JWT grant (``service_account_info()``, whose signature it verifies
with the account's public key, as Google's endpoint does) with short-lived access tokens
(``ya29.loopback-N``); ``expire()`` revokes every token handed out so far, as an expiry
mid-batch does. A model route must have Vertex AI's shape
(``/v1/projects/{project}/locations/{location}/publishers/{publisher}/models/{model}:{verb}``,
or express mode's ``/v1/publishers/{publisher}/models/{model}:{verb}`` with an
``x-goog-api-key``), a live bearer token (or the express key), and, for Anthropic's models,
``anthropic_version`` in the body and no ``model``; otherwise the emulation answers as Vertex
AI does (404, 401, 400). What it plays back is each test's: ``replies`` are
``(content_type, body)`` pairs, the last one repeated.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final
from urllib.parse import parse_qs

__all__ = ["EXPRESS_KEY", "VertexEmulation", "VertexRequest"]

EXPRESS_KEY: Final = "loopback-express-key"
"""The API key the emulation's express mode accepts."""

_AUDIENCE: Final = "https://oauth2.googleapis.com/token"
"""The audience a service account's signed grant names, wherever it is posted."""

_ROUTE: Final = re.compile(
    r"/v1(?:/projects/(?P<project>[a-z][a-z0-9-]{4,28}[a-z0-9])"
    r"/locations/(?P<location>[a-z]+(?:-[a-z0-9]+)*))?"
    r"/publishers/(?P<publisher>google|anthropic)/models/(?P<model>[A-Za-z0-9._@-]+)"
    r":(?P<verb>generateContent|streamGenerateContent|rawPredict|streamRawPredict)"
)


@dataclass
class VertexRequest:
    """One request a model route accepted."""

    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    project: str | None
    location: str | None
    publisher: str
    model: str
    verb: str


@dataclass
class VertexEmulation:
    """Start it with ``with VertexEmulation(replies) as vertex:``; ``base_url`` is the host
    an adapter's ``base_url`` names, ``token_uri`` the token endpoint for the credentials."""

    replies: list[tuple[str, bytes]]
    requests: list[VertexRequest] = field(default_factory=list)
    refused: list[tuple[int, str]] = field(default_factory=list)
    """What the routes refused, as ``(status, why)``."""
    tokens_issued: int = 0
    _live: set[str] = field(default_factory=set)
    _keys: tuple[str, str] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __enter__(self) -> VertexEmulation:
        emulation = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                status, content_type, body = emulation._answer(self, raw)
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def token_uri(self) -> str:
        return f"{self.base_url}/token"

    def expire(self) -> None:
        """Every token handed out so far stops working (the next request gets a 401)."""
        with self._lock:
            self._live.clear()

    def credentials(self) -> Any:
        """google-auth user credentials whose refresh grant this emulation answers."""
        from google.oauth2.credentials import Credentials

        return Credentials(  # type: ignore[no-untyped-call]
            token=None,
            refresh_token="loopback-refresh-token",
            token_uri=self.token_uri,
            client_id="loopback-client",
            client_secret="loopback-secret",
        )

    def service_account_info(self) -> dict[str, str]:
        """A service account's key file (``"type": "service_account"``) whose signed grants
        this emulation's token endpoint verifies: what ``GOOGLE_APPLICATION_CREDENTIALS`` may
        name. Its RSA key is made for this emulation alone."""
        private, _ = self._key_pair()
        return {
            "type": "service_account",
            "project_id": "my-project-1",
            "private_key_id": "loopback-key",
            "private_key": private,
            "client_email": "runport@my-project-1.iam.gserviceaccount.com",
            "client_id": "1",
            "token_uri": self.token_uri,
        }

    def _key_pair(self) -> tuple[str, str]:
        with self._lock:
            if self._keys is None:
                from cryptography.hazmat.primitives import serialization
                from cryptography.hazmat.primitives.asymmetric import rsa

                key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
                private = key.private_bytes(
                    serialization.Encoding.PEM,
                    serialization.PrivateFormat.PKCS8,
                    serialization.NoEncryption(),
                )
                public = key.public_key().public_bytes(
                    serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
                )
                self._keys = (private.decode(), public.decode())
            return self._keys

    # -- the server's side --------------------------------------------------------------------

    def _answer(self, handler: BaseHTTPRequestHandler, raw: bytes) -> tuple[int, str, bytes]:
        path, _, query = handler.path.partition("?")
        if path == "/token":
            return self._token(raw)
        route = _ROUTE.fullmatch(path)
        if route is None:
            return self._refuse(404, f"no such route: {path}")
        headers = {name.lower(): value for name, value in handler.headers.items()}
        if route["project"] is None:
            if headers.get("x-goog-api-key") != EXPRESS_KEY:
                return self._refuse(401, "express mode needs its API key")
        else:
            token = headers.get("authorization", "").removeprefix("Bearer ")
            with self._lock:
                live = token in self._live
            if not live:
                return self._refuse(401, "no live OAuth token")
        try:
            body = json.loads(raw)
        except ValueError:
            return self._refuse(400, "the body is not JSON")
        if route["publisher"] == "anthropic":
            if body.get("anthropic_version") != "vertex-2023-10-16" or "model" in body:
                return self._refuse(400, "anthropic_version missing, or model in the body")
        elif route["verb"].startswith("stream") and parse_qs(query).get("alt") != ["sse"]:
            return self._refuse(400, "a Gemini stream is asked for with alt=sse")
        with self._lock:
            self.requests.append(
                VertexRequest(
                    path,
                    parse_qs(query),
                    headers,
                    body,
                    route["project"],
                    route["location"],
                    route["publisher"],
                    route["model"],
                    route["verb"],
                )
            )
            content_type, reply = self.replies[min(len(self.requests), len(self.replies)) - 1]
        return 200, content_type, reply

    def _token(self, raw: bytes) -> tuple[int, str, bytes]:
        form = parse_qs(raw.decode())
        if not (self._refresh_grant(form) or self._signed_grant(form)):
            return 400, "application/json", b'{"error": "invalid_grant"}'
        with self._lock:
            self.tokens_issued += 1
            token = f"ya29.loopback-{next(_NUMBERS)}"
            self._live.add(token)
        answer = {"access_token": token, "expires_in": 3600, "token_type": "Bearer"}
        return 200, "application/json", json.dumps(answer).encode()

    @staticmethod
    def _refresh_grant(form: dict[str, list[str]]) -> bool:
        return form.get("grant_type") == ["refresh_token"] and form.get("refresh_token") == [
            "loopback-refresh-token"
        ]

    def _signed_grant(self, form: dict[str, list[str]]) -> bool:
        if form.get("grant_type") != ["urn:ietf:params:oauth:grant-type:jwt-bearer"]:
            return False
        if self._keys is None or len(form.get("assertion", [])) != 1:
            return False
        from google.auth import exceptions, jwt

        try:
            claims = jwt.decode(  # type: ignore[no-untyped-call]
                form["assertion"][0], certs=self._keys[1], audience=_AUDIENCE
            )
        except (exceptions.GoogleAuthError, ValueError):
            return False
        return "https://www.googleapis.com/auth/cloud-platform" in str(claims.get("scope", ""))

    def _refuse(self, status: int, why: str) -> tuple[int, str, bytes]:
        with self._lock:
            self.refused.append((status, why))
        error = {"error": {"code": status, "message": why, "status": "REFUSED"}}
        return status, "application/json", json.dumps(error).encode()


_NUMBERS: Final = itertools.count(1)
