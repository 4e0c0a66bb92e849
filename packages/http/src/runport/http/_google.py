"""Vertex AI: where a Google Cloud project's models are posted to (``Vertex``), and the OAuth
token that signs each request (``GoogleAuth``, google-auth's credentials refreshed before they
expire; the extra ``runport[vertex]``). Gemini's and Anthropic's adapters share both
(docs/providers-anthropic-gemini.md)."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import AsyncGenerator, Generator, Mapping
from dataclasses import dataclass
from typing import Any, Final

import httpx

from runport.contracts import ErrorCode
from runport.core import redact_secrets
from runport.http._guard import model_request_refused
from runport.ports import PortError

__all__ = ["CLOUD_PLATFORM", "GoogleAuth", "Vertex", "on_vertex"]

CLOUD_PLATFORM: Final = "https://www.googleapis.com/auth/cloud-platform"
"""The OAuth scope Vertex AI asks of a token."""

_PROJECT: Final = re.compile(r"[a-z][a-z0-9-]{4,28}[a-z0-9]")
"""A Google Cloud project id: 6 to 30 lowercase letters, digits and hyphens."""
_LOCATION: Final = re.compile(r"[a-z]+(?:-[a-z0-9]+)*")
"""A region (``us-central1``, ``europe-west4``) or ``global``."""


@dataclass(frozen=True, slots=True)
class Vertex:
    """A model on Vertex AI: in ``project`` at ``location`` (``global`` by default), signed by
    an OAuth token; or, with no project, Vertex's express mode, signed by an API key.

    ``base_url`` is the regional host (``https://us-central1-aiplatform.googleapis.com``;
    ``global`` and express mode use ``https://aiplatform.googleapis.com``); ``models(publisher)``
    the path of a publisher's models under it."""

    project: str | None = None
    location: str = "global"

    def __post_init__(self) -> None:
        if self.project is not None and not _PROJECT.fullmatch(self.project):
            raise ValueError(
                f"project must be a Google Cloud project id (6 to 30 lowercase letters, digits "
                f"and hyphens), not {self.project!r}"
            )
        if not _LOCATION.fullmatch(self.location):
            raise ValueError(
                f"location must be a Vertex AI region such as us-central1, or global, not "
                f"{self.location!r}"
            )

    @property
    def base_url(self) -> str:
        if self.location == "global" or self.project is None:
            return "https://aiplatform.googleapis.com"
        return f"https://{self.location}-aiplatform.googleapis.com"

    def models(self, publisher: str) -> str:
        """``v1/projects/{project}/locations/{location}/publishers/{publisher}/models``, or,
        in express mode, ``v1/publishers/{publisher}/models``."""
        if self.project is None:
            return f"v1/publishers/{publisher}/models"
        return f"v1/projects/{self.project}/locations/{self.location}/publishers/{publisher}/models"


def on_vertex(
    keywords: dict[str, Any],
    *,
    vertex: bool,
    project: str | None,
    location: str | None,
    express: bool = True,
) -> Vertex | None:
    """A provider's Vertex keywords read once (``vertex``, ``project``, ``location``): the
    ``Vertex`` its codec posts to, or ``None`` for the provider's own API. A project means
    Vertex; its requests are signed by ``GoogleAuth`` (the default credentials) unless the
    caller gave ``auth`` or a client of their own, and an ``api_key`` is refused. Without a
    project, ``vertex=True`` is express mode (an API key, where the publisher has one). The
    base URL defaults to the location's host. ``keywords`` (the driver's and the provider's
    shared ones) are completed in place."""
    if project is None and location is not None:
        raise ValueError("location needs a project (Vertex AI's models are a project's)")
    if project is None and not vertex:
        return None
    place = Vertex(project, location or "global")
    if keywords.get("base_url") is None:
        keywords["base_url"] = place.base_url
    if project is not None:
        if keywords.get("api_key"):
            raise ValueError(
                "a Vertex AI project is reached with OAuth tokens, not an api_key: drop "
                "api_key (tokens come from google-auth's default credentials, or pass auth=)"
            )
        if keywords.get("auth") is None and keywords.get("http_client") is None:
            keywords["auth"] = GoogleAuth()
    elif not express:
        raise ValueError("this publisher's models on Vertex AI need a project (project=)")
    elif not keywords.get("api_key"):
        raise ValueError("Vertex AI's express mode (vertex=True, no project) needs an api_key")
    return place


class GoogleAuth(httpx.Auth):
    """Signs each request with a Google OAuth access token (``Authorization: Bearer``).

    ``credentials`` are google-auth credentials; by default the application's default
    credentials (``google.auth.default``: ``GOOGLE_APPLICATION_CREDENTIALS``, the gcloud
    login, the metadata server), scoped to ``CLOUD_PLATFORM``. The token is refreshed before
    it expires (google-auth's own margin); a request answered 401 gets one fresh token and is
    sent once more, and a second 401 is the caller's (``TQX_RUNTIME_PERMANENT``, as any). A
    token that cannot be had fails the call before anything is sent: ``TQX_RUNTIME_PERMANENT``
    when the token endpoint refused it, ``TQX_RUNTIME_UNAVAILABLE`` when it could not be reached
    (a ``PortError`` the auth raises, which the drivers pass on). Refreshing is google-auth's
    blocking call: on the event loop it runs on a worker thread. The token endpoint is reached
    with httpx, under the same guard as a model request in tests
    (``RUNPORT_ALLOW_MODEL_REQUESTS``)."""

    requires_request_body = True  # a request sent again after a 401 carries its body again

    def __init__(self, credentials: Any = None, *, scopes: tuple[str, ...] = (CLOUD_PLATFORM,)):
        if credentials is None:
            credentials = _default_credentials(scopes)
        self.credentials = credentials
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"GoogleAuth({type(self.credentials).__name__})"

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response]:
        self._sign(request, fresh=False)
        response = yield request
        if response.status_code == 401:
            self._sign(request, fresh=True)
            yield request

    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        await asyncio.to_thread(self._sign, request, fresh=False)
        response = yield request
        if response.status_code == 401:
            await asyncio.to_thread(self._sign, request, fresh=True)
            yield request

    def _sign(self, request: httpx.Request, *, fresh: bool) -> None:
        from google.auth import exceptions

        with self._lock:
            credentials = self.credentials
            if fresh or not credentials.valid:
                try:
                    credentials.refresh(_Transport())
                except exceptions.TransportError as error:
                    raise _no_token(ErrorCode.RUNTIME_UNAVAILABLE, error) from None
                except exceptions.GoogleAuthError as error:
                    raise _no_token(ErrorCode.RUNTIME_PERMANENT, error) from None
            headers: dict[str, str] = {}
            credentials.apply(headers)
        for name, value in headers.items():
            request.headers[name] = value


def _default_credentials(scopes: tuple[str, ...]) -> Any:
    try:
        import google.auth
    except ImportError:  # pragma: no cover - the message names the extra
        raise ImportError(
            "Vertex AI's OAuth tokens need google-auth: pip install 'runport[vertex]'"
        ) from None
    credentials, _ = google.auth.default(scopes=list(scopes))
    return credentials


def _no_token(code: ErrorCode, error: Exception) -> PortError:
    """The call's failure when no token could be had (the credentials refused, or the token
    endpoint not reached), the error's words redacted and cut."""
    said = redact_secrets(str(error))[:200]
    return PortError(code, f"no access token for the upstream ({said})")


class _Response:
    """google-auth's view of an HTTP response (``google.auth.transport.Response``)."""

    def __init__(self, response: httpx.Response) -> None:
        self.status = response.status_code
        self.headers = response.headers
        self.data = response.content


class _Transport:
    """google-auth's transport (``google.auth.transport.Request``) over httpx: what a token
    refresh posts to the token endpoint, with no ``requests`` package needed."""

    def __call__(
        self,
        url: str,
        method: str = "GET",
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        **_: Any,
    ) -> _Response:
        refused = model_request_refused(httpx.URL(url))
        if refused is not None:
            raise _transport_error(refused.message)
        try:
            with httpx.Client(timeout=timeout or 30.0) as client:
                answer = client.request(method, url, content=body, headers=headers)
        except httpx.HTTPError as error:
            raise _transport_error(f"the token endpoint could not be reached: {error}") from None
        return _Response(answer)


def _transport_error(message: str) -> Exception:
    from google.auth import exceptions

    return exceptions.TransportError(message)  # type: ignore[no-untyped-call]
